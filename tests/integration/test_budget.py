"""The spending cap (max_cost_usd, max_tokens_total): a call is admitted only while what is spent plus the worst
case of every call in flight stays within the cap; a rerun with a higher cap continues from the cache."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

import judgebias
from judgebias.core.errors import UserError
from judgebias.devserver.server import RunningServer
from judgebias.engine.runner import run_experiment
from tests.helpers import InProcessCli, write_items
from tests.reliability.helpers import config_of, pairs

ITEMS = 12
CALLS = 2 * ITEMS
PRICED = ("judge.price_input_per_mtok=2.0", "judge.price_output_per_mtok=8.0")


def run(
    tmp_path: Path, name: str, judge: RunningServer, *overrides: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run the dev server's judge in-process on 12 pairs into tmp_path/name; the summary and verdicts.jsonl lines."""
    data = tmp_path / "items.jsonl"
    if not data.exists():
        write_items(data, pairs(ITEMS))
    out = tmp_path / name
    out.mkdir()
    config = config_of(
        "judge=local",
        f"judge.base_url={judge.url}",
        "judge.api_key_env=null",
        f"data.path={data}",
        "data=jsonl",
        f"cache.dir={tmp_path / 'cache'}",
        "bootstrap.resamples=0",
        "report=false",
        "progress=off",
        "max_concurrency=2",
        *PRICED,
        *overrides,
    )
    summary = dict(run_experiment(config, out, echo=lambda _: None))
    if not (out / "verdicts.jsonl").exists():
        return summary, []
    lines = [json.loads(line) for line in (out / "verdicts.jsonl").read_text(encoding="utf-8").splitlines()]
    return summary, lines


def estimate(tmp_path: Path, judge: RunningServer) -> dict[str, Any]:
    """The dry run's estimate of the whole run (its calls, prompt tokens, cost)."""
    summary, _ = run(tmp_path, "dry", judge, "dry_run=true")
    return summary


def whole_run_usage(tmp_path: Path, judge: RunningServer) -> tuple[float, int]:
    """What the whole run is billed, by the server's own usage counts: (USD at PRICED, tokens), from a run into a
    cache of its own (so the capped runs find nothing cached)."""
    summary, _ = run(tmp_path, "uncapped", judge, f"cache.dir={tmp_path / 'other-cache'}")
    tokens = int(summary["prompt_tokens"]) + int(summary["completion_tokens"])
    usd = (int(summary["prompt_tokens"]) * 2.0 + int(summary["completion_tokens"]) * 8.0) / 1e6
    return usd, tokens


def test_the_cost_cap_stops_sending_and_a_higher_cap_continues_from_the_cache(
    tmp_path: Path, server: Callable[..., RunningServer]
) -> None:
    """max_cost_usd at half of what the whole run is billed sends part of the calls, writes every item with status
    budget; a rerun with a higher cap sends only the rest."""
    judge = server()
    whole_usd, _ = whole_run_usage(tmp_path, judge)
    before = judge.stats()["requests"]
    cap = whole_usd / 2
    summary, lines = run(tmp_path, "capped", judge, f"max_cost_usd={cap}")
    sent = judge.stats()["requests"] - before
    assert "budget" == summary["status"]
    assert 0 < sent < CALLS
    budget = summary["budget"]
    assert (cap, None, True) == (budget["max_cost_usd"], budget["max_tokens_total"], budget["reached"])
    assert CALLS == sent + budget["calls_not_sent"]
    assert budget["used_usd"] <= cap
    assert summary["cost_usd"] <= cap
    assert ITEMS == len(lines)
    unsent = [line for line in lines for n in (1, 2) if "spending cap" in (line.get(f"error{n}") or "")]
    assert budget["calls_not_sent"] == len(unsent)
    assert any("spending cap" in note for note in summary["notes"])

    finished, _ = run(tmp_path, "raised", judge, f"max_cost_usd={cap * 40}")
    assert "ok" == finished["status"]
    assert CALLS == judge.stats()["requests"] - before  # the calls paid before were not paid again
    assert (sent, CALLS - sent) == (finished["calls_cached"], finished["calls_live"])
    assert not finished["budget"]["reached"]


def test_the_token_cap_counts_cached_replies(tmp_path: Path, server: Callable[..., RunningServer]) -> None:
    """max_tokens_total counts the replies already cached: a fully cached run under a cap below their tokens sends nothing and stops at the cap."""
    judge = server()
    run(tmp_path, "full", judge, "data.limit=6")
    assert 12 == judge.stats()["requests"]
    tokens = estimate(tmp_path, judge)["prompt_tokens_est"]
    summary, lines = run(tmp_path, "capped", judge, f"max_tokens_total={tokens // 4}")
    assert 12 == judge.stats()["requests"]  # nothing new was sent: the cached half already spent the cap
    assert "budget" == summary["status"]
    assert (12, CALLS - 12) == (summary["calls_cached"], summary["budget"]["calls_not_sent"])
    assert all(line["verdict"] != "error" for line in lines[:6])
    assert all(line["verdict"] == "error" for line in lines[6:])


@pytest.mark.parametrize("override", ["max_cost_usd=0", "max_cost_usd=-1", "max_tokens_total=0"])
def test_a_cap_out_of_range_is_one_line(tmp_path: Path, override: str, server: Callable[..., RunningServer]) -> None:
    """A cap of zero or less is refused before any call, naming the setting."""
    judge = server()
    with pytest.raises(UserError, match=override.partition("=")[0]):
        run(tmp_path, "bad", judge, override)
    assert 0 == judge.stats()["requests"]


@pytest.mark.slow
def test_the_command_exits_3_at_the_cap(cli_here: InProcessCli, server: Callable[..., RunningServer]) -> None:
    """python -m judgebias.run stopped by the cap exits 3 with one line saying how to continue, summary status budget."""
    judge = server()
    data = write_items(cli_here.tmp_path / "items.jsonl", pairs(ITEMS))
    local = ("judge=local", f"judge.base_url={judge.url}", "judge.api_key_env=null", "data=jsonl", f"data.path={data}")
    first = cli_here(*local, *PRICED, "bootstrap.resamples=0", "report=false", f"cache.dir={cli_here.tmp_path / 'c'}")
    whole = int(first.summary()["prompt_tokens"]) + int(first.summary()["completion_tokens"])
    before = judge.stats()["requests"]
    result = cli_here(*local, *PRICED, f"max_tokens_total={whole // 2}", "bootstrap.resamples=0", "report=false")
    assert 3 == result.code, result
    assert "stopped at the spending cap" in result.stderr
    assert "budget" == result.summary()["status"]
    assert 0 < judge.stats()["requests"] - before < CALLS


@pytest.mark.slow
def test_batch_mode_checks_the_cap_before_submitting(
    cli_here: InProcessCli, server: Callable[..., RunningServer]
) -> None:
    """judge.mode=batch submits only the calls whose batch-priced estimate fits the cap; the rest are gaps with the cap's reason."""
    judge = server(policy="hash")
    data = write_items(cli_here.tmp_path / "items.jsonl", pairs(ITEMS))
    local = (
        "judge=local",
        f"judge.base_url={judge.url}",
        "judge.api_key_env=null",
        "judge.mode=batch",
        "judge.batch_poll_seconds=0.05",
        "data=jsonl",
        f"data.path={data}",
        "bootstrap.resamples=0",
        "report=false",
    )
    result = cli_here(*local, "max_tokens_total=6000")  # some calls' worst cases (prompt bytes + 16) fit, not all
    assert 3 == result.code, result
    answered = judge.stats()["batch"]["lines_answered"]
    assert 0 < answered < CALLS
    assert 0 == judge.stats()["requests"]
    summary = result.summary()
    assert ("budget", CALLS - answered) == (summary["status"], summary["budget"]["calls_not_sent"])
    assert answered == summary["calls_batched"]
    reasons = [line.get(f"error{n}") or "" for line in result.verdicts() for n in (1, 2)]
    assert CALLS - answered == sum("spending cap" in reason and "batch" in reason for reason in reasons)


@pytest.mark.parametrize(("model", "said"), [("gpt-4.5-preview", True), ("gpt-4o-2024-08-06", False)])
def test_a_presets_prices_used_for_another_model_are_said(
    tmp_path: Path, server: Callable[..., RunningServer], model: str, said: bool
) -> None:
    """judge=gpt4o judge.model=gpt-4.5-preview counts the cost at gpt-4o's prices: said in the summary's notes with
    the preset file's own prices; a dated snapshot of gpt-4o is gpt-4o and is not."""
    preset = yaml.safe_load((Path(judgebias.__file__).parent / "conf/judge/gpt4o.yaml").read_text(encoding="utf-8"))
    judge = server()
    data = write_items(tmp_path / "items.jsonl", pairs(2))
    config = config_of(
        "judge=gpt4o", f"judge.model={model}", f"judge.base_url={judge.url}", "judge.api_key_env=null",
        "data=jsonl", f"data.path={data}", f"cache.dir={tmp_path / 'cache'}", "bootstrap.resamples=0", "report=false",
    )  # fmt: skip
    (tmp_path / "out").mkdir()
    notes = [n for n in run_experiment(config, tmp_path / "out", echo=lambda _: None)["notes"] if "prices of" in n]
    if not said:
        assert [] == notes
        return
    assert 1 == len(notes), notes
    prices = f"{preset['price_input_per_mtok']:g} / {preset['price_output_per_mtok']:g} USD per million tokens"
    assert model in notes[0] and preset["priced_for"] in notes[0] and prices in notes[0]
