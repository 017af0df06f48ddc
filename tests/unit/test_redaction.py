"""Redaction: credentials out of any text that leaves the process, with no state shared between runs."""

from __future__ import annotations

import pytest

from judgebias.core.redaction import REDACTED, Redactor, key_env_names, replace_secrets


def test_the_value_of_a_named_key_variable_is_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    """A key read from the env var a judge names never survives in the text, whatever its shape."""
    monkeypatch.setenv("MY_GATEWAY_KEY", "plainvalue-without-prefix")
    redact = Redactor.for_config({"judge": {"api_key_env": "MY_GATEWAY_KEY"}})

    assert f"key={REDACTED}; again {REDACTED}" == redact(
        "key=plainvalue-without-prefix; again plainvalue-without-prefix"
    )


def test_key_shaped_strings_are_redacted_without_knowing_them() -> None:
    """sk- keys, bearer tokens, key=value pairs and passwords in URLs are removed by their shape."""
    text = "sk-abcdefghijklmnop Bearer abcdefghijklmnopq api_key=hunter22 redis://user:pw@host"

    assert f"{REDACTED} Bearer {REDACTED} api_key={REDACTED} redis://{REDACTED}@host" == Redactor()(text)


def test_two_redactors_do_not_share_what_they_redact(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's key variables are its own: another run's redactor does not learn them."""
    monkeypatch.setenv("ONE_KEY", "secret-of-run-one")
    Redactor.for_config({"api_key_env": "ONE_KEY"})

    assert "secret-of-run-one" == Redactor()("secret-of-run-one")


def test_short_values_are_not_redacted_by_value() -> None:
    """A value under eight characters is too likely to be ordinary text to replace everywhere."""
    assert ("a short x", f"long {REDACTED}") == (
        replace_secrets("a short x", ["x"]),
        replace_secrets("long 12345678", ["12345678"]),
    )


def test_key_variable_names_are_collected_from_judge_and_ensemble() -> None:
    """Every api_key_env in a plain config is found, in nested judges and lists alike."""
    config = {"judge": {"api_key_env": "A"}, "ensemble": {"x": {"api_key_env": "B"}, "y": {"api_key_env": None}}}

    assert {"A", "B"} == key_env_names(config) | key_env_names([{"api_key_env": "A"}])


def test_the_redis_url_named_by_cache_url_env_is_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Redis URL (password and all) in the variable `cache.url_env` names never survives redaction."""
    monkeypatch.setenv("MY_REDIS_URL", "redis://:hunter2-pass-word@10.0.0.5:6379/0")
    redact = Redactor.for_config({"cache": {"backend": "redis", "url_env": "MY_REDIS_URL"}})
    assert f"lost {REDACTED}" == redact("lost redis://:hunter2-pass-word@10.0.0.5:6379/0")


def test_the_env_vars_behind_extra_headers_are_redacted() -> None:
    """key_env_names names the variables that judge.extra_headers read, so their values never reach a page."""
    config = {
        "judge": {"api_key_env": "OPENAI_API_KEY", "extra_headers": {"HTTP-Referer": "SITE_URL", "api-key": "AZ"}}
    }
    assert {"OPENAI_API_KEY", "SITE_URL", "AZ"} == key_env_names(config)
