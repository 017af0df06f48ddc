"""A value outside a closed set fails when Hydra composes the config, said in one line with the allowed values."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_module
from hydra.errors import ConfigCompositionException

from judgebias.cli.config_errors import composition_message
from judgebias.cli.schemas import register_schemas


def composition_failure(*overrides: str) -> BaseException:
    """The exception Hydra raises composing the shipped config with these overrides."""
    register_schemas()
    with (
        initialize_config_module(config_module="judgebias.conf", version_base="1.3"),
        pytest.raises(ConfigCompositionException) as raised,
    ):
        compose(config_name="config", overrides=list(overrides))
    return raised.value


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("cache.mode=usee", "cache.mode='usee' is not allowed: use one of use, refresh, off, only"),
        ("rubric.labels=letter", "rubric.labels='letter' is not allowed: use one of letters, numbers, tags"),
        (
            "rubric.parser=json",
            "rubric.parser='json' is not allowed: use one of label, brackets, llmbar, pandalm, arenahard",
        ),
        ("progress=yes", "progress='yes' is not allowed: use one of auto, on, off"),
        (
            "judge.strategy=random",
            "judge.strategy='random' is not allowed: use one of always_a, longer, noisy, formatted",
        ),
    ],
)
def test_a_value_outside_a_closed_set_is_refused_at_composition(override: str, expected: str) -> None:
    """Each closed setting refuses an unknown value before anything runs, naming the values it takes."""
    assert expected == composition_message(composition_failure(override))


def test_shipped_options_compose_with_the_enums() -> None:
    """Every shipped choice of a closed setting is one of its enum's values (the YAMLs still compose)."""
    register_schemas()
    with initialize_config_module(config_module="judgebias.conf", version_base="1.3"):
        cfg = compose(config_name="config", overrides=["judge=gpt4o", "rubric=pandalm", "cache.mode=only"])
    assert ("openai", "numbers", "pandalm", "only") == (
        cfg.judge.backend,
        cfg.rubric.labels,
        cfg.rubric.parser,
        cfg.cache.mode,
    )
