"""Real judges offline: recorded raw replies replayed through the normal two-call path and the rubric's parser."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

FEW_RESAMPLES = "bootstrap.resamples=100"  # no test here checks an interval: the bootstrap is most of a replay's time

MTBENCH_JUDGES = [
    f"{j}/{p}" for j in ("GPT-4", "ChatGPT", "LLaMA2", "PaLM2") for p in ("Vanilla_NoRules", "Metrics_Reference")
]


def recorded(data_root: Path, folder: str, judge: str) -> dict[str, dict]:
    """The recorded judgments of one judge configuration, by item id."""
    rows = (json.loads(line) for line in (data_root / folder / "judgments.jsonl").open(encoding="utf-8"))
    return {row["id"]: row for row in rows if row["judge"] == judge}


def test_replayed_gpt4_matches_the_recording_and_the_paper(cli_here, data_root):
    """Replaying GPT-4 on MT-Bench human pairs gives the recorded calls and LLMBar's 174/200 positional agreement."""
    result = cli_here(
        "judge=replay",
        "judge.name=GPT-4/Vanilla_NoRules",
        "data=mtbench_human",
        "rubric=llmbar",
        "report=false",
        FEW_RESAMPLES,
    )
    assert 0 == result.code, result
    summary = result.summary()
    assert 0.87 == summary["position_consistency"]
    assert 200 == summary["human_agreement_n"]
    rows = recorded(data_root, "mtbench-human", "GPT-4/Vanilla_NoRules")
    assert [(rows[v["id"]]["call1"], rows[v["id"]]["call2"]) for v in result.verdicts()] == [
        (v["call1"], v["call2"]) for v in result.verdicts()
    ]


def test_sweep_over_every_recorded_judge(cli_here, data_root):
    """One multirun replays all eight recorded configurations, one job each, and tabulates them."""
    result = cli_here("-m", "judge=replay", "judge.name=" + ",".join(MTBENCH_JUDGES), "data=mtbench_human", "rubric=llmbar",
                 "report=false", FEW_RESAMPLES)  # fmt: skip
    assert 0 == result.code, result
    judges = sorted(json.loads(p.read_text())["judge"] for p in result.run_dir.glob("*/summary.json"))
    assert sorted(MTBENCH_JUDGES) == judges


def test_one_order_data_says_consistency_cannot_be_measured(cli_here, data_root):
    """PandaLM's judges were recorded in one order: no second call is invented and consistency is reported as absent."""
    result = cli_here(
        "judge=replay", "judge.name=gpt-3.5-turbo", "data=pandalm", "rubric=pandalm", "report=false", FEW_RESAMPLES
    )
    assert 0 == result.code, result
    summary = result.summary()
    assert summary["position_consistency"] is None
    assert "one order" in summary["position_consistency_note"]
    assert 999 == summary["calls_total"]
    assert summary["human_agreement"] is not None
    assert "one order" in result.stdout
    assert all(v["call2"] is None for v in result.verdicts())


def test_second_turn_replay_with_bracket_verdicts(cli_here, data_root):
    """Judging-the-Judges replies ([[A]]/[[B]]/[[C]]) replay through the brackets rubric as recorded."""
    result = cli_here(
        "judge=replay", "judge.name=gpt-4-0613", "data=jtj_mtbench", "rubric=brackets", "report=false", FEW_RESAMPLES
    )
    assert 0 == result.code, result
    rows = recorded(data_root, "jtj-mtbench", "gpt-4-0613")
    same = sum(
        (rows[v["id"]]["call1"] or "invalid", rows[v["id"]]["call2"] or "invalid") == (v["call1"], v["call2"])
        for v in result.verdicts()
    )
    assert 800 == same
    assert "human_agreement" not in result.summary()


def test_unknown_recorded_judge_lists_the_choices(cli_here, data_root):
    """A judge name that was never recorded is refused with the names that were."""
    result = cli_here("judge=replay", "judge.name=GPT-5/Whatever", "data=mtbench_human", "rubric=llmbar")
    assert 2 == result.code
    assert "GPT-4/Vanilla_NoRules" in result.stderr and "Traceback" not in result.stderr


def test_replay_needs_a_name(cli_here):
    """judge=replay without judge.name says which key to pass."""
    result = cli_here("judge=replay", "data=mtbench_human", "rubric=llmbar")
    assert 2 == result.code
    assert "judge.name is required" in result.stderr


def test_missing_data_root_says_where_it_looked(cli_here):
    """Without JUDGEBIAS_DATA_ROOT the shared datasets are not guessed: the error names the folder and the fix."""
    cli_here.env.pop("JUDGEBIAS_DATA_ROOT", None)
    result = cli_here("judge=replay", "judge.name=GPT-4/Vanilla_NoRules", "data=mtbench_human", "rubric=llmbar")
    assert 2 == result.code
    assert "JUDGEBIAS_DATA_ROOT" in result.stderr and "mtbench-human/items.jsonl" in result.stderr


def test_wrong_data_root_is_named(cli_here, tmp_path):
    """A data root that is not a folder is named in the error."""
    result = cli_here("data=mtbench_human", f"data.root={tmp_path / 'nowhere'}")
    assert 2 == result.code
    assert "nowhere" in result.stderr and "data.root" in result.stderr and "mtbench-human/items.jsonl" in result.stderr


def test_ensemble_of_recorded_judges(cli_here, data_root):
    """An ensemble of four recorded judges reports its own figures and each judge's beside them."""
    result = cli_here("ensemble=mtbench_vanilla", "data=mtbench_human", "rubric=llmbar", "report=false", FEW_RESAMPLES)
    assert 0 == result.code, result
    summary = result.summary()
    assert {"gpt4", "chatgpt", "llama2", "palm2"} == set(summary["judges"])
    assert 0.87 == summary["judges"]["gpt4"]["position_consistency"]
    assert 1600 == summary["calls_total"]
    line = result.verdicts()[0]
    assert {"gpt4", "chatgpt", "llama2", "palm2"} == set(line["judges"])
    assert {"call1", "call2", "raw1", "raw2", "verdict"} <= set(line["judges"]["gpt4"])
