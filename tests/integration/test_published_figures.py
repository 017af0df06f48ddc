"""The published-figure comparisons of docs/numbers.md, recomputed from the raw recorded judgments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_module

from judgebias.cli.schemas import register_schemas
from judgebias.engine.runner import run_experiment
from judgebias.run import to_config

pytestmark = pytest.mark.slow  # replays 800 + 200 recorded pairs


def replay(tmp_path: Path, data: str, rubric: str, judge: str) -> Any:
    """A replayed run's summary (clustered by question_id, the default)."""
    register_schemas()
    overrides = [f"data={data}", f"rubric={rubric}", "judge=replay", f"judge.name={judge}"]
    overrides += [f"cache.dir={tmp_path / 'cache'}", "bootstrap.resamples=200", "report=false", "progress=off"]
    with initialize_config_module("judgebias.conf", version_base="1.3"):
        config = to_config(compose("config", overrides=overrides))
    out = tmp_path / judge.replace("/", "_")
    out.mkdir()
    return run_experiment(config, out, echo=lambda _: None)


def lines(path: Path) -> list[dict[str, Any]]:
    """A JSONL file's rows."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_judging_the_judges_pc_and_pf_of_gpt4_are_theirs_on_our_pairs(tmp_path: Path, data_root: Path) -> None:
    """gpt-4-0613 on jtj_mtbench: PC and PF as Shi et al. define them, from the recorded calls, are 0.828 and +0.015, and judgebias reports the same."""
    rows = [r for r in lines(data_root / "jtj-mtbench" / "judgments.jsonl") if r["judge"] == "gpt-4-0613"]
    read = [(r["call1"], r["call2"]) for r in rows if r["call1"] and r["call2"]]
    swap = {"A": "B", "B": "A", "tie": "tie"}
    consistent = sum(c1 == swap[c2] for c1, c2 in read) / len(read)
    primacy = sum(pair in {("A", "A"), ("A", "tie"), ("tie", "A")} for pair in read)
    recency = sum(pair in {("B", "B"), ("B", "tie"), ("tie", "B")} for pair in read)
    fairness = (recency - primacy) / len(read)
    assert (0.828, 0.015) == (round(consistent, 3), round(fairness, 3))
    s = replay(tmp_path, "jtj_mtbench", "brackets", "gpt-4-0613")
    assert pytest.approx(consistent, abs=1e-12) == s["position_consistency"]
    assert pytest.approx(fairness, abs=1e-12) == s["preference_score"]


def test_zheng_s1_and_s2_of_gpt4_on_mtbench_human(tmp_path: Path, data_root: Path) -> None:
    """GPT-4/Vanilla_NoRules on mtbench_human: S1 (ties kept) and S2 (tie votes and tie verdicts left out), per item then averaged, are 0.717 and 0.871."""
    items = {r["id"]: r for r in lines(data_root / "mtbench-human" / "items.jsonl")}
    verdict = {"AB": "1", "BA": "2"}
    s1, s2 = [], []
    for r in lines(data_root / "mtbench-human" / "judgments.jsonl"):
        if r["judge"] != "GPT-4/Vanilla_NoRules" or not (r["call1"] and r["call2"]):
            continue
        v = verdict.get(r["call1"] + r["call2"], "tie")  # an inconsistent pair is a tie, as in Zheng et al.
        votes = items[r["id"]]["human_votes"]
        if votes:
            s1.append(votes.count(v) / len(votes))
        decisive = [vote for vote in votes if vote != "tie"]
        if v != "tie" and decisive:
            s2.append(decisive.count(v) / len(decisive))
    assert (0.717, 0.871) == (round(sum(s1) / len(s1), 3), round(sum(s2) / len(s2), 3))
    s = replay(tmp_path, "mtbench_human", "llmbar", "GPT-4/Vanilla_NoRules")
    assert pytest.approx(sum(s1) / len(s1), abs=1e-12) == s["human_vote_agreement"]
    assert pytest.approx(sum(s2) / len(s2), abs=1e-12) == s["human_vote_agreement_no_ties"]
