"""One rule for "is this one of OpenAI's reasoning models", asked before a run (the config check) and after it
(the provenance figures): both give the same answer for every name, against a list written out by hand."""

from __future__ import annotations

import pytest

from judgebias.config.checks import is_reasoning_model as judge_is_reasoning
from judgebias.config.schema import JudgeConfig
from judgebias.figures import provenance

REASONING = ["o1", "o1-pro", "o3-mini", "o4-mini", "openai/o4-mini", "gpt-5", "gpt-5-mini", "gpt-5.1", "o3-2025-04-16"]
NOT_REASONING = [
    "gpt-4o",
    "gpt-5o",
    "o1pro",
    "gpt-4.1",
    "openai/gpt-4o-mini",
    "llama-3-70b",
    "gpt-50",
    "ollama/mistral",
]


@pytest.mark.parametrize("name", REASONING + NOT_REASONING)
def test_the_config_check_and_the_provenance_figures_agree(name: str) -> None:
    expected = name in REASONING
    judge = JudgeConfig(backend="openai", name="j", model=name)  # type: ignore[arg-type]
    assert expected == judge_is_reasoning(judge) == provenance.is_reasoning_model(name)
