"""The command line's account of a config Hydra could not compose: one line naming the key, value and choices."""

from __future__ import annotations

from judgebias.run import composition_error

HYDRA_ENUM = """Error merging override cache.mode=usee
Invalid value 'usee', expected one of [use, refresh, off, only]
    full_key: cache.mode
    reference_type=CacheConfig
    object_type=CacheConfig

Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.
"""

HYDRA_OPTION = """In 'config': Could not find 'judge/nope'

Available options in 'judge':
\talways_a
\tgpt4o
\tnoisy
Config search path:
\tprovider=hydra, path=pkg://hydra.conf
\tprovider=main, path=pkg://judgebias.conf

Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.
"""


def test_a_wrong_choice_names_the_key_the_value_and_the_allowed_values() -> None:
    """A value outside a closed set is one line: key='value' and the values to use instead."""
    assert "cache.mode='usee' is not allowed: use one of use, refresh, off, only" == composition_error(HYDRA_ENUM)


def test_an_unknown_option_lists_the_options_on_one_line() -> None:
    """An unknown config option names it and lists the available ones, without Hydra's search path."""
    assert (
        "In 'config': Could not find 'judge/nope'; Available options in 'judge': always_a, gpt4o, noisy"
        == composition_error(HYDRA_OPTION)
    )


def test_a_type_error_keeps_the_override_and_the_reason() -> None:
    """A value of the wrong type keeps the override as typed and why it was refused."""
    text = "Error merging override max_concurrency=abc\nValue 'abc' of type 'str' could not be converted to Integer\n"

    assert (
        "override max_concurrency=abc; Value 'abc' of type 'str' could not be converted to Integer"
        == composition_error(text)
    )
