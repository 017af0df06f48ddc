"""A backend of one's own, paid and sending batches without being OpenAI's (tests/batch/inline_provider.py),
registered with its capabilities: the spending-cap, reply-room and batch checks ask what it can do, never its name,
and a whole run in batch mode goes through its transport. The provider's own log is the oracle."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from judgebias.backends import BACKENDS, build_backend, register_backend
from judgebias.config.checks import (
    CAPABILITIES,
    Capabilities,
    check_batch,
    check_cap,
    check_judge,
    check_reply_room,
    unread_settings,
)
from judgebias.config.schema import (
    BatchSettings,
    CacheMode,
    JudgeConfig,
    JudgeMode,
    RubricConfig,
    Strategy,
)
from judgebias.core.errors import UserError
from judgebias.engine.runner import run_experiment
from tests.batch.inline_provider import InlineBatches, InlineJudge, InlineProvider
from tests.reliability.helpers import config_of

KIND = "inline"


def needs_a_model(judge: JudgeConfig) -> None:
    """The provider's own check: its batches name a model."""
    if not judge.model:
        raise UserError(f"judge {judge.name!r}: backend={KIND} needs judge.model")


@pytest.fixture
def provider() -> Iterator[InlineProvider]:
    """The provider on 127.0.0.1, registered as judge.backend=inline for the test (and forgotten after)."""
    with InlineProvider() as running:
        register_backend(
            KIND,
            lambda config, rubric, judgments: InlineJudge(InlineBatches(running.url, model=str(config.model))),
            Capabilities(paid=True, counts_tokens=True, batches=True, check=needs_a_model, group=BatchSettings),
        )
        try:
            yield running
        finally:
            BACKENDS.pop(KIND)
            CAPABILITIES.pop(KIND)


def inline_judge(**changes: object) -> JudgeConfig:
    """A judge of that backend in batch mode."""
    judge = JudgeConfig(backend=KIND, name="mine", model="test-model", mode=JudgeMode.batch)
    for name, value in changes.items():
        setattr(judge, name, value)
    return judge


def test_the_checks_ask_what_the_backend_can_do(provider: InlineProvider) -> None:
    """Paid: a cost cap needs its reply bound and a price. Counts tokens: the rubric's reply must fit. Sends
    batches: batch mode is accepted for it, refused for a free scripted judge. Its own check runs."""
    with pytest.raises(UserError, match=r"max_cost_usd=1 needs judge\.max_tokens"):
        check_cap(inline_judge(max_tokens=None), 1.0, None)
    with pytest.raises(UserError, match=r"max_cost_usd=1 with no price"):
        check_cap(inline_judge(max_tokens=16), 1.0, None)
    check_cap(inline_judge(max_tokens=16, price_input_per_mtok=1.0, price_output_per_mtok=2.0), 1.0, None)
    explaining = RubricConfig(name="explains", system="s", user="u", min_reply_tokens=200)
    with pytest.raises(UserError, match=r"judge\.max_tokens=16 is too few for rubric=explains"):
        check_reply_room(inline_judge(max_tokens=16), explaining)
    check_batch(inline_judge(), CacheMode.use)
    scripted = JudgeConfig(backend="scripted", name="s", mode=JudgeMode.batch)
    with pytest.raises(UserError, match=r"needs a backend that sends batches \(openai, inline\)"):
        check_batch(scripted, CacheMode.use)
    with pytest.raises(UserError, match=r"backend=inline needs judge\.model"):
        check_judge(inline_judge(model=None))
    assert [] == unread_settings(inline_judge(temperature=0.5))  # its declared group: an endpoint's and a batch's
    assert ["judge.first_bias=0.5"] == [
        key
        for note in unread_settings(inline_judge(first_bias=0.5))
        for key in re.findall(r"judge\.\w+=\S+(?=:)", note)
    ]
    assert isinstance(build_backend(inline_judge(), explaining, None), InlineJudge)


def test_a_run_in_batch_mode_goes_through_the_backends_own_transport(provider: InlineProvider, tmp_path: Path) -> None:
    """Chosen by name in the config, as a shipped backend is. Four items in batch mode: one batch at the provider
    with both orders of each (8 requests), every verdict from its answers, nothing sent live (InlineJudge fails a
    live call); a rerun asks nothing again."""
    config = config_of(
        "judge=gpt4o", f"judge.backend={KIND}", "judge.mode=batch", "data.limit=4", "judge.max_tokens=16"
    )

    summary = run_experiment(config, tmp_path / "run", echo=lambda _: None)

    assert (1, 8) == (provider.log.created, provider.log.requests)
    lines = [json.loads(line) for line in (tmp_path / "run" / "verdicts.jsonl").open(encoding="utf-8")]
    assert 4 == len(lines) == summary["n_items"]
    again = run_experiment(config, tmp_path / "again", echo=lambda _: None)
    assert (1, 8) == (provider.log.created, provider.log.requests) and again["calls_cached"] == 8


@pytest.mark.parametrize("kind", ["openai", "scripted"])
def test_a_shipped_backends_declared_capabilities_are_what_it_does(kind: str) -> None:
    """What the checks are told a shipped backend can do is what the backend built for a run says of itself: paid
    (cached, key checked) and with a batch transport, or neither."""
    judge = JudgeConfig(backend=kind, name="j", model="m", base_url="http://127.0.0.1:9/v1", strategy=Strategy.longer)
    rubric = config_of().rubric

    built = build_backend(judge, rubric, None)

    declared = CAPABILITIES[kind]
    assert (declared.paid, declared.batches) == (built.paid, built.batch_transport() is not None)
