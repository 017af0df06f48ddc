"""The audit on real published judgment files (tests/data/audit/real/, provenance in its README), with the other
tools' own code as the oracle where it installs from PyPI (alpaca_eval, fschat in .venv-oracles), and the tool's
rule read from its cited source where it does not (Arena-Hard-Auto), recomputed here with plain loops."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from judgebias.audit.auditing import audit
from judgebias.audit.formats import alpacaeval
from tests.helpers import REPO

REAL = REPO / "tests" / "data" / "audit" / "real"
ALPACA_FILES = sorted((REAL / "alpacaeval").rglob("annotations.json"))
ORACLES = REPO / ".venv-oracles" / "bin" / "python"
FASTCHAT_BENCH = REAL / "fastchat" / "mt_bench"
FASTCHAT_MATH = REAL / "fastchat" / "mt_bench_math"
ARENAHARD_BENCH = REAL / "arenahard" / "arena-hard-v0.1"
ARENAHARD_GPT35 = REAL / "arenahard" / "arena-hard-v0.1-gpt-3.5-judge"

pytestmark = pytest.mark.slow


def oracle(code: str, *args: str) -> Any:
    """Run `code` with the other tools installed (.venv-oracles) and return the JSON it prints last."""
    if not ORACLES.exists():
        pytest.skip("the other tools' code is not installed: tools/install-oracles.sh makes .venv-oracles")
    done = subprocess.run([str(ORACLES), "-c", code, *args], capture_output=True, text=True, timeout=240, check=False)
    assert 0 == done.returncode, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def quiet(_: str) -> None:
    """Echo nothing (each replay's summary is in its folder)."""


ALPACA_ORDER = """
import json, sys
import pandas as pd
from alpaca_eval.annotators import PairwiseAnnotator
records = json.load(open(sys.argv[1]))
annotator = PairwiseAnnotator(annotators_config=records[0]["annotator"])
single = next(iter(annotator.annotators.values()))
switch = next(p for p in single.processors if type(p).__name__ == "RandomSwitchTwoColumnsProcessor")
frame = switch.preprocess(pd.DataFrame(records))
print(json.dumps([bool(v) for v in frame["is_switched_outputs"]]))
"""

ALPACA_WINRATE = """
import json, sys
from alpaca_eval.metrics import get_winrate
print(json.dumps({key: float(value) for key, value in get_winrate(json.load(open(sys.argv[1]))).items()}))
"""


@pytest.mark.oracle
@pytest.mark.parametrize("path", ALPACA_FILES, ids=lambda path: "/".join(path.parts[-3:-1]))
def test_the_alpacaeval_order_rule_is_the_tools_own_and_the_records_agree(path: Path) -> None:
    """The seeded order rule gives, record for record, the switch AlpacaEval's own annotator computes (its default
    seed, its processor), and every record whose completion proves the order agrees with it."""
    records = json.loads(path.read_text(encoding="utf-8"))
    theirs = oracle(ALPACA_ORDER, str(path))

    ours = [alpacaeval.switched_by_rule(record["instruction"]) for record in records]
    proved = [
        alpacaeval.switched_by_record(
            record.get("raw_completion"), record["preference"], record.get("referenced_models")
        )
        for record in records
    ]

    assert theirs == ours
    decided = [(p, t) for p, t in zip(proved, theirs, strict=True) if p is not None]
    assert len(decided) >= 0.95 * len(evidential(records))
    assert all(p == t for p, t in decided)


@pytest.mark.oracle
def test_a_chain_of_thought_records_referenced_models_proves_the_order_without_its_completion(tmp_path: Path) -> None:
    """A real chain-of-thought file with every raw_completion dropped: its `referenced_models` maps (m: the output
    shown first) still prove the order of each decided record, and each is the switch AlpacaEval's own annotator
    computes for it."""
    (path,) = [p for p in ALPACA_FILES if p.parts[-3:-1] == ("alpaca-7b", "alpaca_eval_cot_gpt4_turbo_fn")]
    records = [
        {key: value for key, value in record.items() if key != "raw_completion"}
        for record in json.loads(path.read_text(encoding="utf-8"))
    ]
    stripped = tmp_path / "annotations.json"
    stripped.write_text(json.dumps(records), encoding="utf-8")
    theirs = oracle(ALPACA_ORDER, str(stripped))

    report = audit("alpacaeval", [stripped], tmp_path / "out", echo=quiet, run=False)

    decided = [i for i, record in enumerate(records) if record["preference"] in (1, 2) and record["referenced_models"]]
    assert len(decided) >= 95
    rows = json.loads("[" + ",".join((tmp_path / "out" / "judgments.jsonl").read_text().splitlines()) + "]")
    assert [rows[i]["switched"] for i in decided] == [theirs[i] for i in decided]
    assert all(rows[i]["order_source"] == "record" for i in decided)
    (entry,) = report["judges"].values()
    assert entry["order"]["order_from_record"] == len(decided) and entry["order"]["order_trusted"]


def evidential(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records whose completion can prove the order: one that was kept (annotators of the v1 layout, such as
    alpaca_eval_gpt4, keep none), on two outputs that differ (the reference model against itself proves nothing)."""
    return [r for r in records if r.get("raw_completion") is not None and r["output_1"] != r["output_2"]]


@pytest.mark.oracle
@pytest.mark.parametrize("path", ALPACA_FILES, ids=lambda path: "/".join(path.parts[-3:-1]))
def test_alpacaevals_win_rate_is_its_own_get_winrate(path: Path, tmp_path: Path) -> None:
    """The tool's figures audit.json lists for the file are alpaca_eval.metrics.get_winrate's, to the digit."""
    theirs = oracle(ALPACA_WINRATE, str(path))

    report = audit("alpacaeval", [path], tmp_path / "out", resamples=50, echo=quiet)

    (model,) = report["tool_figures"][json.loads(path.read_text())[0]["annotator"]]["leaderboard"]["models"].values()
    for key in ("n_wins", "n_wins_base", "n_draws", "n_total"):
        assert theirs[key] == model[key], key
    assert theirs["win_rate"] == pytest.approx(model["win_rate"], abs=1e-9)
    assert theirs["standard_error"] == pytest.approx(model["standard_error"], abs=1e-9)
    assert "length_controlled_winrate" not in model and model["length_controlled_winrate_minimal"] is not None


@pytest.mark.parametrize("path", ALPACA_FILES, ids=lambda path: "/".join(path.parts[-3:-1]))
def test_a_one_order_audit_reports_first_shown_wins_from_the_records_order(path: Path, tmp_path: Path) -> None:
    """The position figure of a one-order file is first-shown wins, counted here by hand from what each record's
    completion proves (m = shown first); the order comes from the records, and the win_rate is said to be it."""
    records = json.loads(path.read_text(encoding="utf-8"))
    first_won = []
    for record in records:
        switched = alpacaeval.switched_by_record(record.get("raw_completion"), record["preference"])
        if record["preference"] in (None, 1.5, 0) or switched is None:
            continue
        first_won.append((record["preference"] > 1.5) == switched)

    report = audit("alpacaeval", [path], tmp_path / "out", resamples=200, echo=quiet)
    (entry,) = report["judges"].values()

    assert entry["order"]["order_from_record"] >= 0.95 * len(evidential(records)) and entry["order"]["order_trusted"]
    if not evidential(records):  # nothing proves the order: the seeded rule decides every record
        assert entry["order"]["order_from_rule"] == len(records)
        return
    assert len(first_won) == entry["position"]["first_shown_n"]
    assert sum(first_won) / len(first_won) == pytest.approx(entry["position"]["first_shown_wins"])
    assert "answer shown first" in entry["win_rate_is"]
    assert entry["judgebias"]["position_consistency"] is None
    page = (Path(entry["run"]) / "report.html").read_text(encoding="utf-8")
    assert "each judged once, in the one order recorded" in page and "both orders agree" not in page


def test_a_rule_the_records_contradict_withholds_the_positional_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With another seed, the rule contradicts the records' evidence on about half of them: the audit says so and
    withholds the position figure instead of reporting one with the wrong sign; the records still decide."""
    (path,) = [p for p in ALPACA_FILES if p.parts[-3:-1] == ("Mixtral-8x7B-Instruct-v0.1", "alpaca_eval_gpt4_turbo_fn")]
    monkeypatch.setattr(alpacaeval, "SWITCH_SEED", 123)

    report = audit("alpacaeval", [path], tmp_path / "out", resamples=50, echo=quiet)
    (entry,) = report["judges"].values()

    assert not entry["order"]["order_trusted"] and entry["order"]["order_agrees"] < 0.7 * entry["order"]["records"]
    assert entry["position"]["first_shown_wins"] is None and "withheld" in entry["position"]["note"]
    assert "positional figures withheld" in (tmp_path / "out" / "audit.md").read_text(encoding="utf-8")


FASTCHAT_SHOW = """
import subprocess, sys, json
out = subprocess.run([sys.executable, "-m", "fastchat.llm_judge.show_result", *sys.argv[1:]],
                     capture_output=True, text=True, check=True).stdout
print(json.dumps(out))
"""


def show_result_rows(printed: str) -> dict[str, list[str]]:
    """The rows of a pandas table as show_result prints it: first word -> the numbers after it."""
    rows = {}
    for line in printed.splitlines():
        words = line.split()
        if len(words) > 1 and re.fullmatch(r"-?\d+(\.\d+)?", words[-1]):
            rows.setdefault(words[0], []).append(words[1:])
    return rows


@pytest.mark.oracle
@pytest.mark.parametrize("bench", [FASTCHAT_BENCH, FASTCHAT_MATH], ids=lambda bench: bench.name)
def test_fastchat_pairwise_figures_are_its_own_show_result(bench: Path, tmp_path: Path) -> None:
    """FastChat's show_result.py --mode pairwise-all on the real pair files (the general prompt, and the
    reference-guided math prompt with its failed calls) prints the win/loss/tie table the audit lists as the
    tool's own."""
    judgments = bench / "model_judgment" / "gpt-4_pair.jsonl"
    printed = oracle(FASTCHAT_SHOW, "--mode", "pairwise-all", "--input-file", str(judgments))

    report = audit("fastchat", [bench], tmp_path / "out", resamples=50, echo=quiet)

    table = report["tool_figures"]["gpt-4"]["show_result"]["models"]
    theirs = show_result_rows(printed)
    assert set(theirs) == set(table)
    for model, row in table.items():
        win, loss, tie, _, _, adjusted = theirs[model][-1]
        assert (int(win), int(loss), int(tie)) == (row["win"], row["loss"], row["tie"])
        assert float(adjusted) == pytest.approx(row["win_rate_adjusted"], abs=1e-6)


@pytest.mark.oracle
def test_fastchat_single_grades_are_its_own_show_result(tmp_path: Path) -> None:
    """show_result.py --mode single on the real single file: turn 1, turn 2 and the average per model."""
    grades = FASTCHAT_BENCH / "model_judgment" / "gpt-4_single.jsonl"
    printed = oracle(FASTCHAT_SHOW, "--mode", "single", "--input-file", str(grades))

    report = audit("fastchat", [grades], tmp_path / "out", resamples=50, echo=quiet)

    (table,) = report["single"]["judges"].values()
    theirs = show_result_rows(printed)
    for model, row in table["models"].items():
        turn1, turn2, average = (float(values[-1]) for values in theirs[model])
        assert (turn1, turn2, average) == pytest.approx((row["turn1"], row["turn2"], row["average"]), abs=1e-5)
    assert "position bias does not apply" in report["single"]["note"]


def test_fastchat_real_pairs_order_is_proved_by_the_recorded_prompts(tmp_path: Path) -> None:
    """Each game's recorded prompt shows the answers in the order gen_judgment.py's rule says (game 1: model_1
    first), checked here by where each answer stands in the prompt, and the audit reports per-pair figures."""
    lines = [json.loads(line) for line in (FASTCHAT_BENCH / "model_judgment" / "gpt-4_pair.jsonl").open()]
    answers = {
        path.stem: {json.loads(line)["question_id"]: json.loads(line)["choices"][0]["turns"] for line in path.open()}
        for path in (FASTCHAT_BENCH / "model_answer").glob("*.jsonl")
    }
    proved = 0
    for line in lines:
        one = answers[line["model_1"]][line["question_id"]][0]
        two = answers[line["model_2"]][line["question_id"]][0]
        apart = one not in two and two not in one  # else the prompt cannot tell which stands where
        if apart and one in line["g1_user_prompt"] and two in line["g1_user_prompt"]:
            proved += line["g1_user_prompt"].index(one) < line["g1_user_prompt"].index(two)

    report = audit("fastchat", [FASTCHAT_BENCH], tmp_path / "out", resamples=50, echo=quiet)
    (entry,) = report["judges"].values()

    assert proved == entry["order"]["order_agrees"] and entry["order"]["order_trusted"]
    assert entry["judgebias"]["position_consistency"] is not None


def arena_battles_by_hand(folder: Path) -> dict[str, float]:
    """Arena-Hard-Auto v0.1's show_result.py (lmarena/arena-hard-auto at 0489bf3, get_battles_from_row with
    multiplier 3, then compute_mle_elo and get_win_rate_column against the baseline): game 1 shows the baseline as
    A, game 2 the model; a strong verdict is three battles; an unscored game none; a tie half a win. With only
    baseline battles the fitted win rate against the baseline is the battles' mean (ties half)."""
    won: dict[str, list[float]] = {}
    for path in sorted(folder.glob("*.jsonl")):
        for text in path.read_text(encoding="utf-8").splitlines():
            line = json.loads(text)
            for game_index, game in enumerate(line["games"]):
                label = game["score"] or ""  # a game the judge gave no label: weight 0
                model_is_a = game_index == 1
                weight = 3 if ">>" in label else 1 if label in ("A>B", "B>A", "A=B") else 0
                if label == "A=B":
                    value = 0.5
                else:
                    a_won = label in ("A>B", "A>>B")
                    value = 1.0 if a_won == model_is_a else 0.0
                won.setdefault(line["model"], []).extend([value] * weight)
    return {model: sum(values) / len(values) for model, values in won.items()}


def test_an_arena_hard_v01_bench_is_read_per_model_with_the_tools_score(tmp_path: Path) -> None:
    """A public v0.1 bench (question_id, no baseline field) is read, its baseline found from the recorded prompts
    (this fork's truth_model, not the default), and each model's tool score is show_result's, recomputed by hand."""
    expected = arena_battles_by_hand(ARENAHARD_BENCH / "model_judgment" / "gpt-4-1106-preview")

    report = audit("arenahard", [ARENAHARD_BENCH], tmp_path / "out", resamples=100, echo=quiet)

    show = report["tool_figures"]["gpt-4-1106-preview"]["show_result"]
    assert ("truth_model", ["v0.1"]) == (show["baseline"], show["versions"])
    assert expected == pytest.approx({model: row["score"] for model, row in show["models"].items()})
    (entry,) = report["judges"].values()
    assert {"dolphin-miner", "mistral-7b"} == set(entry["models"])
    for model, figures in entry["models"].items():
        assert figures["tool"]["score"] == pytest.approx(expected[model])
        assert figures["position_consistency"] is not None and "position_consistency" in figures["ci"]
    assert entry["order"]["order_agrees"] == entry["order"]["records"] == 20


def test_a_bench_whose_answers_belong_to_other_questions_is_flagged(tmp_path: Path) -> None:
    """The real fork's bench with one model's answers moved one question on (what a fork that mixed its answer files
    holds): every one of that model's records showed the judge another text than the files give, and the audit says
    so per model and per file, marks the win rate and keeps those records out of the length and style figures. The
    real bench as published has no such record."""
    from judgebias.audit.formats.common import Options

    as_published = audit("arenahard", [ARENAHARD_BENCH], tmp_path / "published", echo=quiet)
    assert all("answers_not_shown" not in entry for entry in as_published["judges"].values())
    fastchat = audit("fastchat", [FASTCHAT_BENCH], tmp_path / "fastchat", echo=quiet, run=False)
    assert all("answers_not_shown" not in entry for entry in fastchat["judges"].values())

    mixed = tmp_path / "mixed"
    shutil.copytree(ARENAHARD_BENCH, mixed)
    answers = mixed / "model_answer" / "mistral-7b.jsonl"
    rows = [json.loads(line) for line in answers.read_text(encoding="utf-8").splitlines()]
    moved = [row["question_id"] for row in rows[1:] + rows[:1]]
    answers.write_text(
        "".join(json.dumps(row | {"question_id": q}) + "\n" for row, q in zip(rows, moved, strict=True)), "utf-8"
    )

    report = audit("arenahard", [mixed], tmp_path / "audit", echo=quiet, options=Options(baseline="truth_model"))
    (entry,) = report["judges"].values()
    flagged = entry["answers_not_shown"]
    assert (flagged["records"], flagged["of"], flagged["by_model"]) == (10, 20, {"mistral-7b": 10})
    assert list(flagged["by_file"]) == [str(mixed / "model_judgment" / "gpt-4-1106-preview" / "mistral-7b.jsonl")]
    mistral = entry["models"]["mistral-7b"]
    assert all(mistral[key] is None for key in ("longer_wins", "styled_wins"))
    assert "judged on other answers than the files give in 10 of 10 records" in mistral["marks"]["win_rate"]
    assert entry["models"]["dolphin-miner"].get("marks") is None  # its answers are the ones the judge saw
    text = (tmp_path / "audit" / "audit.md").read_text(encoding="utf-8")
    assert text.splitlines()[3].startswith(
        "- note: gpt-4-1106-preview: 10 of 20 records showed the judge answers other"
    )


@pytest.mark.oracle
def test_a_rerun_appended_to_a_pair_file_is_read_as_fastchat_reads_it(tmp_path: Path) -> None:
    """The real pair file with a re-run of its first three lines appended (one repeat giving another verdict, as a
    re-run may): FastChat's own show_result counts every line, and the tool's table here is the same; judgebias's
    figures count each pair once, and the repeats are named with their repetition stability (2 of 3 the same)."""
    bench = tmp_path / "mt_bench"
    shutil.copytree(FASTCHAT_BENCH, bench)
    pair_file = bench / "model_judgment" / "gpt-4_pair.jsonl"
    lines = pair_file.read_text(encoding="utf-8").splitlines()
    again = [json.loads(line) for line in lines[:3]]
    flipped = {"model_1": "model_2", "model_2": "model_1", "tie": "tie", "error": "error"}
    again[2] |= {"g1_winner": flipped[again[2]["g1_winner"]], "g2_winner": flipped[again[2]["g2_winner"]]}
    if again[2]["g1_winner"] == json.loads(lines[2])["g1_winner"]:  # a tie both ways: make it a decided one
        again[2] |= {"g1_winner": "model_1", "g2_winner": "model_1"}
    pair_file.write_text("\n".join([*lines, *map(json.dumps, again)]) + "\n", encoding="utf-8")
    printed = oracle(FASTCHAT_SHOW, "--mode", "pairwise-all", "--input-file", str(pair_file))

    report = audit("fastchat", [bench], tmp_path / "out", resamples=50, echo=quiet)

    table = report["tool_figures"]["gpt-4"]["show_result"]["models"]
    theirs = show_result_rows(printed)
    for model, row in table.items():
        win, loss, tie, _, _, _ = theirs[model][-1]
        assert (int(win), int(loss), int(tie)) == (row["win"], row["loss"], row["tie"])
    (entry,) = report["judges"].values()
    repeats = entry["repeats"]
    assert (repeats["lines"], repeats["same_verdicts"]) == (3, 2)
    assert repeats["sources"] == [f"{pair_file}:{n}" for n in (len(lines) + 1, len(lines) + 2, len(lines) + 3)]
    assert entry["judgebias"]["n_items"] == len(lines)  # each pair once
    text = (tmp_path / "out" / "audit.md").read_text(encoding="utf-8")
    assert "- re-runs appended: 3 lines judge a pair judged before" in text
    assert "(repetition stability 66.7%)" in text


def test_a_rerun_appended_to_an_arena_hard_bench_is_read_as_show_result_reads_it(tmp_path: Path) -> None:
    """The real v0.1 bench with two of a model's lines judged again and appended (the second repeat with every game's
    verdict turned round, as a re-run may give): show_result.py reads every line, so the tool's score is the one
    recomputed by hand from the files as they now are; judgebias counts each pair once, names the repeats and how
    many gave the first's verdicts."""
    bench = tmp_path / "arena-hard-v0.1"
    shutil.copytree(ARENAHARD_BENCH, bench)
    judgments = bench / "model_judgment" / "gpt-4-1106-preview" / "mistral-7b.jsonl"
    lines = judgments.read_text(encoding="utf-8").splitlines()
    again = [json.loads(line) for line in lines[:2]]
    turned = {"A>>B": "B>>A", "A>B": "B>A", "A=B": "A=B", "B>A": "A>B", "B>>A": "A>>B"}
    for game in again[1]["games"]:
        game["score"] = turned[game["score"]]
    assert again[1]["games"][0]["score"] != json.loads(lines[1])["games"][0]["score"]  # a verdict really turned
    judgments.write_text("\n".join([*lines, *map(json.dumps, again)]) + "\n", encoding="utf-8")
    expected = arena_battles_by_hand(judgments.parent)

    report = audit("arenahard", [bench], tmp_path / "out", resamples=50, echo=quiet)

    show = report["tool_figures"]["gpt-4-1106-preview"]["show_result"]
    assert expected == pytest.approx({model: row["score"] for model, row in show["models"].items()})
    (entry,) = report["judges"].values()
    assert entry["repeats"]["sources"] == [f"{judgments}:{n}" for n in (len(lines) + 1, len(lines) + 2)]
    assert (entry["repeats"]["lines"], entry["repeats"]["same_verdicts"]) == (2, 1)
    assert entry["judgebias"]["n_items"] == 20  # each pair once
    assert "(repetition stability 50.0%)" in (tmp_path / "out" / "audit.md").read_text(encoding="utf-8")


@pytest.mark.oracle
def test_a_rerun_appended_to_an_annotations_file_is_read_as_get_winrate_reads_it(tmp_path: Path) -> None:
    """A real AlpacaEval 1 file with three annotations given again at its end, one with the other preference:
    AlpacaEval's own get_winrate counts every entry, and the tool's figures here are its, to the digit; judgebias
    counts each instruction once and names the repeats (2 of 3 the same)."""
    (original,) = [p for p in ALPACA_FILES if p.parts[-3:-1] == ("alpaca-7b", "alpaca_eval_gpt4")]
    records = json.loads(original.read_text(encoding="utf-8"))
    again = [dict(record) for record in records[:3]]
    decided = next(record for record in again if record["preference"] in (1, 2))
    decided["preference"] = 3 - decided["preference"]
    path = tmp_path / "alpaca-7b" / "alpaca_eval_gpt4" / "annotations.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(records + again, indent=2), encoding="utf-8")
    theirs = oracle(ALPACA_WINRATE, str(path))

    report = audit("alpacaeval", [path], tmp_path / "out", resamples=50, echo=quiet)

    (model,) = report["tool_figures"]["alpaca_eval_gpt4"]["leaderboard"]["models"].values()
    for key in ("n_wins", "n_wins_base", "n_draws", "n_total"):
        assert theirs[key] == model[key], key
    assert theirs["win_rate"] == pytest.approx(model["win_rate"], abs=1e-9)
    (entry,) = report["judges"].values()
    assert (entry["repeats"]["lines"], entry["repeats"]["same_verdicts"]) == (3, 2)
    starts = [number for number, text in enumerate(path.read_text().splitlines(), start=1) if text == "  {"]
    assert entry["repeats"]["sources"] == [f"{path}:{n}" for n in starts[-3:]]  # the line each entry starts on
    assert entry["judgebias"]["n_items"] == len(records)


def test_a_null_model_that_gives_one_answer_to_every_question_is_named(tmp_path: Path) -> None:
    """AlpacaEval's published NullModel file: one garbage string given as the answer to every instruction, which
    the judge still prefers to GPT-4 Turbo's. Counted here from the records themselves; the audit names the model,
    the count and the answer at the top of audit.md, and no other real file is flagged."""
    (path,) = [p for p in ALPACA_FILES if p.parts[-3] == "NullModel"]
    records = json.loads(path.read_text(encoding="utf-8"))
    texts = {record["output_2"] for record in records}
    assert len(texts) == 1 and len({record["instruction"] for record in records}) == len(records)

    report = audit("alpacaeval", [path], tmp_path / "null", resamples=20, echo=quiet)

    (model,) = {record["generator_2"] for record in records}
    assert report["constant_answers"] == {
        model: {"questions": len(records), "of": len(records), "answer_start": texts.pop()[:60]}
    }
    (model_figures,) = report["tool_figures"]["weighted_alpaca_eval_gpt4_turbo"]["leaderboard"]["models"].values()
    assert model_figures["win_rate"] > 50  # the judge prefers it
    first_note = (tmp_path / "null" / "audit.md").read_text(encoding="utf-8").splitlines()[3]
    assert first_note.startswith(f"- note: {model} gave one and the same answer to {len(records)} of its")
    others = [("alpacaeval", [p]) for p in ALPACA_FILES if p != path]
    others += [("fastchat", [FASTCHAT_BENCH]), ("arenahard", [ARENAHARD_BENCH])]
    for number, (tool, paths) in enumerate(others):
        assert "constant_answers" not in audit(tool, paths, tmp_path / str(number), echo=quiet, run=False)


def test_a_file_whose_folders_name_another_model_or_annotator_says_so(tmp_path: Path) -> None:
    """Two published files whose records name another model or annotator than their folders: falcon-7b-instruct's
    AlpacaEval 1 file holds falcon-40b-instruct's annotations (generator_2 says so on every record), and
    Mistral-7B-ReMax's file under alpaca_eval_gpt4_turbo_fn was made by alpaca_eval_gpt4 (annotator). The audit
    says so; the folders of a file whose records agree with them raise nothing."""
    (falcon,) = [p for p in ALPACA_FILES if p.parts[-3] == "falcon-7b-instruct"]
    (remax,) = [p for p in ALPACA_FILES if p.parts[-3] == "Mistral-7B-ReMax-v0.1"]
    assert {r["generator_2"] for r in json.loads(falcon.read_text(encoding="utf-8"))} == {"falcon-40b-instruct"}
    assert {r["annotator"] for r in json.loads(remax.read_text(encoding="utf-8"))} == {"alpaca_eval_gpt4"}

    notes = audit("alpacaeval", [falcon.parent.parent, remax], tmp_path / "out", echo=quiet, run=False)["notes"]

    assert f"{falcon}: its folder names model falcon-7b-instruct, its records' generator_2 falcon-40b-instruct" in (
        " ".join(notes)
    )
    assert f"{remax}: its folder names annotator alpaca_eval_gpt4_turbo_fn, its records alpaca_eval_gpt4" in (
        " ".join(notes)
    )
    (mixtral,) = [p for p in ALPACA_FILES if p.parts[-3] == "Mixtral-8x7B-Instruct-v0.1"]
    assert not [
        n for n in audit("alpacaeval", [mixtral], tmp_path / "m", echo=quiet, run=False)["notes"] if "folder" in n
    ]


@pytest.mark.parametrize(
    ("tool", "bench"),
    [
        ("fastchat", FASTCHAT_BENCH),
        ("fastchat", FASTCHAT_MATH),
        ("arenahard", ARENAHARD_BENCH),
        ("arenahard", ARENAHARD_GPT35),
    ],
    ids=lambda value: value if isinstance(value, str) else value.name,
)
def test_every_real_reply_is_read_as_the_tool_recorded_reading_it(tool: str, bench: Path, tmp_path: Path) -> None:
    """Each judge reply in the real files, read by judgebias's parser, gives the verdict the tool itself recorded
    for it when it parsed it (FastChat's g1/g2_winner, Arena-Hard's games[].score): among them GPT-3.5's final
    verdict written as an item of the scale ("5. Assistant B is significantly better: [[B>>A]]"), recorded B>>A."""
    report = audit(tool, [bench], tmp_path / "out", echo=quiet, run=False)

    readings = report["readings"]
    pattern = "*_pair.jsonl" if tool == "fastchat" else "*/*.jsonl"
    lines = [json.loads(line) for path in (bench / "model_judgment").glob(pattern) for line in path.open()]
    games = [game for line in lines for game in line.get("games") or [line["g1_judgment"], line["g2_judgment"]]]
    replies = sum(1 for game in games if game and game != "$ERROR$")  # a failed call recorded no reply
    assert readings["compared"] == replies and readings["agree"] == replies, readings["disagreements"][:3]
    if bench == ARENAHARD_GPT35:
        scale_items = [
            game["score"]
            for line in (bench / "model_judgment").rglob("*.jsonl")
            for record in map(json.loads, line.read_text(encoding="utf-8").splitlines())
            for game in record["games"]
            if game
            and re.search(r"\n\d\. Assistant [AB] is significantly better: \[\[[AB]>>[AB]\]\]$", game["judgment"])
        ]
        assert scale_items == ["B>>A"]


def test_a_real_bench_that_showed_the_judge_answers_to_other_questions_is_flagged(tmp_path: Path) -> None:
    """A real published bench (GPT-3.5 judging Athene-V2 against gpt-4-0314) whose every judgment showed the judge
    Athene's answer to another question: the records prove it (the answer the files give for the question is in
    neither game's prompt; the answer the audit names is, and is Athene's answer to another question). The audit
    flags all of them, names the question each shown answer belongs to, and withholds the length and style
    figures; the tool's score is show_result.py's, recomputed by hand."""
    answers = {
        json.loads(line)["question_id"]: json.loads(line)["choices"][0]["turns"][0]["content"]
        for line in (ARENAHARD_GPT35 / "model_answer" / "Nexusflow__Athene-V2-Chat.jsonl").open(encoding="utf-8")
    }
    records = [json.loads(line) for line in next((ARENAHARD_GPT35 / "model_judgment").rglob("*.jsonl")).open()]
    expected = arena_battles_by_hand(ARENAHARD_GPT35 / "model_judgment" / "gpt-3.5-turbo-0125")

    report = audit("arenahard", [ARENAHARD_GPT35], tmp_path / "out", resamples=50, echo=quiet)

    (entry,) = report["judges"].values()
    flagged = entry["answers_not_shown"]
    assert (flagged["records"], flagged["of"], flagged["answers_of_other_questions"]) == (31, 31, 31)
    for record, named in zip(records, flagged["shown_instead"], strict=True):
        owner = named.rsplit(" ", 1)[-1]
        prompts = [game["user_prompt"] for game in record["games"] if game]
        assert owner != record["question_id"] and any(answers[owner].strip() in prompt for prompt in prompts)
        assert not any(answers[record["question_id"]].strip() in prompt for prompt in prompts)
    assert all(entry["judgebias"][key] is None for key in ("longer_wins", "styled_wins"))
    baseline = {
        json.loads(line)["question_id"]: json.loads(line)["choices"][0]["turns"][0]["content"].strip()
        for line in (ARENAHARD_GPT35 / "model_answer" / "gpt-4-0314.jsonl").open(encoding="utf-8")
    }
    for record in records:  # the baseline's answer stands before B's section in game 1, after it in game 2
        text, marker = baseline[record["question_id"]], "<|The Start of Assistant B's Answer|>"
        first, second = (game["user_prompt"] for game in record["games"])
        assert first.index(text) < first.index(marker) and second.index(marker) < second.index(text)
    assert (entry["order"]["order_from_record"], entry["order"]["order_agrees"]) == (31, 31)  # the order still proved
    show = report["tool_figures"]["gpt-3.5-turbo-0125"]["show_result"]
    assert expected == pytest.approx({model: row["score"] for model, row in show["models"].items()})
    assert "showed the model's answer to another question of the files" in (tmp_path / "out" / "audit.md").read_text()
