"""judge.samples=k: each order asked k times, every ask kept, repetition stability and the majority verdict."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from judgebias.devserver.server import RunningServer
from judgebias.engine.runner import run_experiment
from tests.helpers import write_items
from tests.reliability.helpers import config_of, pairs


def run(tmp_path: Path, name: str, *overrides: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run in-process on 12 pairs into tmp_path/name; the summary and the verdicts.jsonl lines."""
    data = write_items(tmp_path / "items.jsonl", pairs(12))
    out = tmp_path / name
    config = config_of(
        f"data.path={data}",
        "data=jsonl",
        f"cache.dir={tmp_path / 'cache'}",
        "bootstrap.resamples=50",
        "report=false",
        "progress=off",
        *overrides,
    )
    summary = dict(run_experiment(config, out, echo=lambda _: None))
    lines = [json.loads(line) for line in (out / "verdicts.jsonl").read_text(encoding="utf-8").splitlines()]
    return summary, lines


def test_one_sample_keeps_two_calls_and_no_sample_fields(tmp_path: Path) -> None:
    """The default judge.samples=1 makes two calls per item and adds no sample figure or field."""
    summary, lines = run(tmp_path, "one", "judge=noisy", "judge.first_bias=0.5")
    assert 24 == summary["calls_total"]
    assert "repetition_stability_order1" not in summary
    assert all("samples" not in line and "majority" not in line for line in lines)


def test_scripted_samples_differ_per_ask(tmp_path: Path) -> None:
    """A noisy scripted judge asked 5 times per order draws each ask anew: 2*5 calls per item, all kept, stability below 1."""
    single, single_lines = run(tmp_path, "one", "judge=noisy", "judge.first_bias=0.5")
    summary, lines = run(tmp_path, "five", "judge=noisy", "judge.first_bias=0.5", "judge.samples=5")
    assert 12 * 2 * 5 == summary["calls_total"]
    assert 5 == summary["samples"]
    assert all(10 == len(line["samples"]) for line in lines)
    assert [(s["order"], s["sample"]) for s in lines[0]["samples"]][:6] == [
        (1, 0),
        (1, 1),
        (1, 2),
        (1, 3),
        (1, 4),
        (2, 0),
    ]
    assert 1.0 == summary["repetition_stability_order1"]  # shown first, a is both the human's pick and the bias's
    assert 0.5 < summary["repetition_stability_order2"] < 1.0
    assert summary["majority_win_rate"] is not None and "majority_win_rate" in summary["ci"]
    assert [line["verdict"] for line in single_lines] == [
        line["verdict"] for line in lines
    ]  # sample 0 is the single ask
    assert single["win_rate"] == summary["win_rate"]


def test_a_deterministic_judge_is_perfectly_stable(tmp_path: Path) -> None:
    """always_a gives the same reply every ask: repetition stability 1 in both orders, majority = single verdict."""
    summary, lines = run(tmp_path, "a", "judge=always_a", "judge.samples=3")
    assert (1.0, 1.0) == (summary["repetition_stability_order1"], summary["repetition_stability_order2"])
    assert all(line["majority"] == line["verdict"] for line in lines)


def test_live_samples_are_distinct_requests_and_rerun_free(
    tmp_path: Path, server: Callable[..., RunningServer]
) -> None:
    """Against the dev server each ask is its own request (own seed, own cache key); the same run again sends nothing."""
    judge = server()
    live = ("judge=local", f"judge.base_url={judge.url}", "judge.api_key_env=null", "judge.temperature=0.7")
    summary, _ = run(tmp_path, "first", *live, "judge.samples=3")
    stats = judge.stats()
    assert (72, 72) == (stats["requests"], stats["distinct_bodies"])
    assert (72, 0) == (summary["calls_live"], summary["calls_cached"])
    again, _ = run(tmp_path, "second", *live, "judge.samples=3")
    assert 72 == judge.stats()["requests"]
    assert (0, 72) == (again["calls_live"], again["calls_cached"])
    one, _ = run(tmp_path, "single", *live)
    assert 72 == judge.stats()["requests"]  # sample 0 is the single-sample call: its key did not change
    assert 24 == one["calls_cached"]
