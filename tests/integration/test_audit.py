"""`judgebias.audit`: other tools' judge runs replayed end to end, beside the figures the tools themselves report."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_module

from judgebias.audit.auditing import audit
from judgebias.audit.formats.common import Options
from judgebias.audit.formats.fastchat import export_fastchat
from judgebias.cli.schemas import register_schemas
from judgebias.engine.runner import run_experiment
from judgebias.io.files import write_jsonl
from judgebias.run import to_config

EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "audit"
SAME_FIGURES = ("n_items", "win_rate", "position_consistency", "biased_first", "biased_second", "longer_wins")


def quiet(_: str) -> None:
    """Swallow a run's printed summary."""


def test_fastchat_audit_replays_every_judge_and_prompt_beside_show_result(tmp_path):
    """Each FastChat judge-and-prompt is replayed; the file's show_result table sits beside judgebias's."""
    report = audit(
        "fastchat",
        [EXAMPLES / "fastchat" / "mt_bench"],
        tmp_path,
        options=Options(human=EXAMPLES / "fastchat" / "human_judgments.json"),
        resamples=100,
        echo=quiet,
    )
    assert ["gpt-4/pair-v2", "gpt-4/pair-math-v1", "gpt-4/pair-v2-multi-turn", "gpt-4/pair-math-v1-multi-turn"] == (
        list(report["judges"])
    )
    pair = report["judges"]["gpt-4/pair-v2"]["judgebias"]
    assert (4, 0.75, 0.25) == (pair["n_items"], pair["position_consistency"], pair["biased_first"])
    assert pair["human_agreement"] == 1.0
    assert report["judges"]["gpt-4/pair-math-v1"]["reference_guided"]
    summary = json.loads(Path(report["judges"]["gpt-4/pair-math-v1"]["run"], "summary.json").read_text())
    assert (1, 0) == (summary["errors_call1"], summary["n_invalid"])  # $ERROR$ replays as a failed call
    figures = report["tool_figures"]["gpt-4"]
    tool, ours = figures["show_result"]["models"], figures["judgebias_table"]["models"]
    assert (0.5, 0.625) == (tool["vicuna-13b-v1.3"]["win_rate"], tool["vicuna-13b-v1.3"]["win_rate_adjusted"])
    assert (0.0, 0.5) == (tool["alpaca-13b"]["win_rate"], tool["alpaca-13b"]["win_rate_adjusted"])
    # judgebias reads line 4's first game as B (FastChat: A), so alpaca loses that item instead of tying it.
    assert (0, 1, 2) == (ours["alpaca-13b"]["win"], ours["alpaca-13b"]["loss"], ours["alpaca-13b"]["tie"])
    assert (tmp_path / "audit.json").exists() and "## Readings" in (tmp_path / "audit.md").read_text()


def test_arenahard_audit_keeps_failed_games_failed_and_reports_the_score(tmp_path):
    """A null Arena-Hard game is a failed call in the replay (not one order), and the tool's score is reported."""
    report = audit("arenahard", [EXAMPLES / "arenahard" / "arena-hard-v2.0"], tmp_path, resamples=100, echo=quiet)
    ours = report["judges"]["gpt-4.1"]["judgebias"]
    assert (6, 0.4) == (ours["n_items"], ours["position_consistency"])
    assert "position_consistency" not in ours.get("notes", {})
    assert 0.75 == report["tool_figures"]["gpt-4.1"]["show_result"]["models"]["my-model"]["score"]
    assert 1 == len(report["readings"]["disagreements"])


def test_alpacaeval_audit_has_no_consistency_but_length_and_the_tool_win_rate(tmp_path):
    """AlpacaEval's one randomised order: no consistency, a longer-wins figure, and the tool's own win rate."""
    report = audit("alpacaeval", [EXAMPLES / "alpacaeval"], tmp_path, resamples=100, echo=quiet)
    ours = report["judges"]["weighted_alpaca_eval_gpt4_turbo"]["judgebias"]
    assert ours["position_consistency"] is None and "one order" in ours["notes"]["position_consistency"]
    assert ours["longer_wins"] is not None
    board = report["tool_figures"]["weighted_alpaca_eval_gpt4_turbo"]["leaderboard"]["models"]["my-model"]
    assert pytest.approx(54.571, abs=1e-3) == board["win_rate"]


def composed(*overrides: str) -> Any:
    """The typed config `python -m judgebias.run OVERRIDES` would run."""
    register_schemas()
    with initialize_config_module("judgebias.conf", version_base="1.3"):
        return to_config(compose("config", overrides=list(overrides)))


def test_a_run_exported_in_fastchat_format_and_audited_gives_the_same_figures(tmp_path, data_root):
    """A judgebias replay of real MT-Bench judgments, written as a FastChat bench and audited, has the same figures."""
    config = composed(
        "judge=replay",
        "judge.name=gpt-4-0613",
        "data=jtj_mtbench",
        "data.limit=60",
        "rubric=brackets",
        f"cache.dir={tmp_path / 'cache'}",
        "bootstrap.resamples=200",
        "report=false",
        "progress=off",
    )
    original = run_experiment(config, tmp_path / "run", echo=quiet)
    verdicts = [json.loads(line) for line in (tmp_path / "run" / "verdicts.jsonl").read_text().splitlines()]
    items = [json.loads(line) for line in (data_root / "jtj-mtbench" / "items.jsonl").read_text().splitlines()][:60]
    bench = tmp_path / "bench"
    for path, rows in export_fastchat(items, verdicts, ("gpt-4-0613", "pair-v2-multi-turn")).items():
        (bench / path).parent.mkdir(parents=True, exist_ok=True)
        write_jsonl(bench / path, rows)
    report = audit("fastchat", [bench], tmp_path / "audit", resamples=200, echo=quiet)
    again = report["judges"]["gpt-4-0613/pair-v2-multi-turn"]["judgebias"]
    assert {key: original[key] for key in SAME_FIGURES} == {key: again[key] for key in SAME_FIGURES}
    assert original["ci"]["position_consistency"] == again["ci"]["position_consistency"]
    assert original["ci"]["win_rate"] == again["ci"]["win_rate"]


@pytest.mark.slow
def test_the_command_audits_a_fastchat_bench_and_refuses_a_bad_line_in_one_line(tmp_path):
    """`python -m judgebias.audit fastchat PATH --out DIR` prints the comparison; a bad line exits 2 naming it."""
    done = subprocess.run(
        [sys.executable, "-m", "judgebias.audit", "fastchat", str(EXAMPLES / "fastchat" / "mt_bench"),
         "--out", str(tmp_path / "out"), "--resamples", "50"],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert 0 == done.returncode, done.stderr
    assert "gpt-4_pair.jsonl:4 order 1: tool A, judgebias B" in done.stdout
    bad = tmp_path / "bad" / "model_judgment"
    bad.mkdir(parents=True)
    for name in ("question.jsonl", "model_answer"):
        (tmp_path / "bad" / name).symlink_to(EXAMPLES / "fastchat" / "mt_bench" / name)
    lines = (EXAMPLES / "fastchat" / "mt_bench" / "model_judgment" / "gpt-4_pair.jsonl").read_text().splitlines()
    lines[3] = lines[3].replace('"g1_winner": "model_1"', '"g1_winner": "A"')
    (bad / "gpt-4_pair.jsonl").write_text("\n".join(lines) + "\n")
    refused = subprocess.run(
        [sys.executable, "-m", "judgebias.audit", "fastchat", str(tmp_path / "bad"), "--out", str(tmp_path / "o2")],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert 2 == refused.returncode
    assert 1 == len(refused.stderr.strip().splitlines())
    assert refused.stderr.startswith("judgebias: error: ") and "gpt-4_pair.jsonl:4: field 'g1_winner'" in refused.stderr


def test_a_position_effect_too_strong_for_a_float_is_printed_as_a_bound_not_as_p_equals_zero(tmp_path):
    """1200 AlpacaEval records whose first-shown answer always won: the exact sign test p is 2 * 0.5**1200, below
    the smallest float; the printed audit says `p < 1e-300`, never `p = 0`. Which output was shown first is
    AlpacaEval's own seeded coin, written out here from its RandomSwitchTwoColumnsProcessor."""
    records = []
    for i in range(1200):
        instruction = f"Question number {i}?"
        shown_second_first = random.Random("is_switched_outputs" + instruction + "0").choices([False, True])[0]
        records.append({
            "instruction": instruction, "output_1": f"baseline {i}", "generator_1": "gpt4_1106_preview",
            "dataset": "helpful_base", "output_2": f"model {i}", "generator_2": "my-model",
            "annotator": "weighted_alpaca_eval_gpt4_turbo", "preference": 2.0 if shown_second_first else 1.0,
        })  # fmt: skip
    folder = tmp_path / "results" / "my-model" / "weighted_alpaca_eval_gpt4_turbo"
    folder.mkdir(parents=True)
    (folder / "annotations.json").write_text(json.dumps(records), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "judgebias.audit", "alpacaeval", str(tmp_path / "results"),
         "--out", str(tmp_path / "out"), "--resamples", "20"],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert 0 == done.returncode, done.stderr
    assert 0.5**1200 * 2 == 0.0
    assert "first-shown wins: 100.0%" in done.stdout and "sign test p < 1e-300" in done.stdout, done.stdout
    assert "p = 0" not in done.stdout
