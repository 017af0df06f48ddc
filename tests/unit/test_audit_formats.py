"""Other tools' judge runs as judgebias items and recorded replies, the tools' own figures, and the two readings."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from judgebias.audit import files
from judgebias.audit.formats import alpacaeval as alpaca
from judgebias.audit.formats import arenahard as arena
from judgebias.audit.formats import common
from judgebias.audit.formats import fastchat as chat
from judgebias.core.errors import UserError
from judgebias.core.parsing import parse_reply
from tests.helpers import REPO

EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "audit"
FASTCHAT = EXAMPLES / "fastchat" / "mt_bench"
ARENAHARD = EXAMPLES / "arenahard" / "arena-hard-v2.0"
ALPACAEVAL = EXAMPLES / "alpacaeval"


def fastchat(judgments: list[common.Record] | None = None) -> common.Converted:
    """The shipped FastChat example converted (optionally with other judgment lines)."""
    found, _ = chat._inputs([FASTCHAT])
    votes = chat.fastchat_human_votes(files.read_records(EXAMPLES / "fastchat" / "human_judgments.json"))
    return chat.convert_fastchat(
        judgments if judgments is not None else found["judgments"],
        chat.fastchat_questions(found["questions"]),
        chat.fastchat_answers(found["answers"]),
        chat.fastchat_answers(found["references"]),
        votes,
    )


def arenahard() -> common.Converted:
    """The shipped Arena-Hard-Auto example converted."""
    return arena.convert([ARENAHARD], common.Options())


def alpacaeval() -> common.Converted:
    """The shipped AlpacaEval example converted."""
    return alpaca.convert([ALPACAEVAL], common.Options())


def row_at(converted: common.Converted, line: int) -> dict[str, Any]:
    """The judgments line converted from source line `line`."""
    (row,) = [row for row in converted.judgments if row["source"].endswith(f":{line}")]
    return row


def fastchat_lines() -> list[dict[str, Any]]:
    """The example's judgment lines as dicts, for tests that change one field."""
    text = (FASTCHAT / "model_judgment" / "gpt-4_pair.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def test_fastchat_games_become_call1_and_call2_in_judgebias_order():
    """Game 1 (model_1 shown as A) is call1 and game 2 is call2, positional: g2_winner model_2 is call2 "A"."""
    converted = fastchat()
    biased = row_at(converted, 2)  # both games say [[A]]: the first-shown answer wins each time
    assert ("A", "A") == (biased["call1"], biased["call2"])
    assert biased["id"] == "fastchat-q81-t1-alpaca-13b-vs-gpt-3.5-turbo"
    item = {item["id"]: item for item in converted.items}[biased["id"]]
    assert ("alpaca-13b", "gpt-3.5-turbo") == (item["model_a"], item["model_b"])
    assert ["gpt-4/pair-v2", "gpt-4/pair-math-v1", "gpt-4/pair-v2-multi-turn", "gpt-4/pair-math-v1-multi-turn"] == (
        converted.judges()
    )


def test_fastchat_error_values_tie_and_unknown_fields_are_kept():
    """$ERROR$ becomes a failed call, an unparsed judgment an unread one, [[C]] a tie; tstamp and prompts are kept."""
    converted = fastchat()
    failed, unread, tie = row_at(converted, 6), row_at(converted, 8), row_at(converted, 3)
    assert "error1" in failed and failed["call1"] is None and failed["raw1"] == "$ERROR$"
    assert "error1" not in unread and unread["call1"] is None and unread["raw1"].endswith("the user wanted.")
    assert ("tie", "tie") == (tie["call1"], tie["call2"])
    assert tie["tool"]["tstamp"] == 1687100083.0 and "g1_user_prompt" in tie["tool"]


def test_reference_guided_prompts_carry_the_reference_and_turn_two_its_first_turn():
    """pair-math-v1 lines are marked reference-guided and their item shows the judge's reference answer; a turn-2
    item carries the first turn as context, as judgebias shows it to a judge."""
    converted = fastchat()
    items = {item["id"]: item for item in converted.items}
    math = row_at(converted, 5)
    assert math["reference_guided"] and not row_at(converted, 1)["reference_guided"]
    assert "17 * 23 = 391" == items[math["id"]]["reference_turn1"]
    second = items["fastchat-q81-t2-vicuna-13b-v1.3-vs-gpt-3.5-turbo"]
    assert second["question"].startswith("Rewrite it") and second["question_turn1"].startswith("Write a two")
    assert second["a_turn1"].startswith("Lisbon in the rain")


def test_human_votes_are_attached_in_the_item_frame_whichever_way_round_they_were_cast():
    """mt_bench_human_judgments votes naming the pair either way round count for the same model."""
    items = {item["id"]: item for item in fastchat().items}
    assert ["1", "1"] == items["fastchat-q81-t1-vicuna-13b-v1.3-vs-gpt-3.5-turbo"]["human_votes"]
    mixed = items["fastchat-q82-t1-alpaca-13b-vs-gpt-3.5-turbo"]
    assert (["2", "tie"], "tie") == (mixed["human_votes"], mixed["human"])


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("g1_winner", "A", "gpt-4_pair.jsonl:1: field 'g1_winner': must be one of model_1, model_2, tie, error"),
        ("judge", "gpt-4", "gpt-4_pair.jsonl:1: field 'judge': must be [judge model, prompt name]"),
        ("model_1", "no-such-model", "gpt-4_pair.jsonl:1: field 'model_1': no turn-1 answer of 'no-such-model'"),
        ("g2_judgment", None, "gpt-4_pair.jsonl:1: field 'g2_judgment': missing"),
    ],
)
def test_a_bad_fastchat_line_is_named_by_file_line_and_field(field, value, message):
    """A wrong value stops the import with one message naming the file, the line and the field."""
    lines = fastchat_lines()
    lines[0][field] = value
    source = str(FASTCHAT / "model_judgment" / "gpt-4_pair.jsonl")
    with pytest.raises(UserError) as error:
        fastchat([(source, number, line) for number, line in enumerate(lines, start=1)])
    assert message in str(error.value)


def test_a_second_recording_of_the_same_judge_and_item_is_a_repeat_named_with_its_first():
    """A FastChat pair line given again (a re-run appended) is kept, as show_result keeps it, named as a repeat of
    the first line and left out of judgebias's figures (each pair once)."""
    lines = fastchat_lines()
    records = [("f.jsonl", number, line) for number, line in enumerate([*lines, lines[0]], start=1)]
    converted = fastchat(records)
    (repeat,) = [row for row in converted.judgments if "repeat_of" in row]
    assert (repeat["source"], repeat["repeat_of"]) == ("f.jsonl:9", "f.jsonl:1")
    assert repeat["left_out"].startswith("a repeat of f.jsonl:1")
    assert len(converted.items) == len(lines)


def test_fastchat_own_extraction_tests_a_before_b_wherever_they_stand():
    """FastChat's rule reads a judgment quoting "[[A]]" and concluding "[[B]]" as A; judgebias's parser reads B."""
    text = 'Output "[[A]]" if A is better, "[[B]]" if B is better. B is right. [[B]]'
    assert "A" == chat.fastchat_tool_reading(text)
    assert "B" == parse_reply(text, style="brackets", tie_label="C")
    assert "error" == chat.fastchat_tool_reading("no verdict")


def test_fastchat_show_result_is_computed_as_the_tool_computes_it():
    """Error lines dropped, a tie or a disagreement between games a tie, the baseline's row left out."""
    figures = chat.fastchat_show_result(fastchat().judgments)
    assert ("pairwise-baseline", "gpt-3.5-turbo", 2) == (
        figures["mode"],
        figures["baseline"],
        figures["lines_with_error"],
    )
    vicuna, alpaca = figures["models"]["vicuna-13b-v1.3"], figures["models"]["alpaca-13b"]
    assert (2, 1, 1, 0.5, 0.625) == (
        vicuna["win"],
        vicuna["loss"],
        vicuna["tie"],
        vicuna["win_rate"],
        vicuna["win_rate_adjusted"],
    )
    assert (0, 0, 2, 0.0, 0.5) == (
        alpaca["win"],
        alpaca["loss"],
        alpaca["tie"],
        alpaca["win_rate"],
        alpaca["win_rate_adjusted"],
    )


def test_side_by_side_reading_lists_the_judgment_the_two_readers_disagree_on():
    """Of the 15 readable FastChat judgments only line 4's first game reads differently: FastChat A, judgebias B."""
    readings = common.compare_readings(fastchat().judgments, style="brackets", tie_label="C")
    assert (15, 14, 1) == (readings["compared"], readings["agree"], readings["both_unread"])
    (disagreement,) = readings["disagreements"]
    assert ("A", "B", 1) == (disagreement["tool"], disagreement["judgebias"], disagreement["order"])
    assert disagreement["source"].endswith("gpt-4_pair.jsonl:4")


def test_arenahard_games_are_ordered_model_first_then_baseline_first():
    """games[1] (the model shown first) is call1 and games[0] call2; a null game is a failed call."""
    converted = arenahard()
    strong = next(row for row in converted.judgments if row["source"].endswith("my-model.jsonl:1"))
    assert ("A", "B", "A>>B", "B>>A") == (strong["call1"], strong["call2"], strong["score1"], strong["score2"])
    failed = next(row for row in converted.judgments if row["id"].startswith("arenahard-a1b2c3d4e5f60001-other"))
    assert "error2" in failed and failed["raw2"] is None
    item = {item["id"]: item for item in converted.items}[strong["id"]]
    assert ("my-model", "o3-mini-2025-01-31", "coding") == (item["model_a"], item["model_b"], item["subcategory"])


def test_arenahard_score_counts_strong_verdicts_three_times():
    """show_result.py's score: 0.75 for my-model (0.583 were a strong verdict counted once); null lines dropped."""
    figures = arena.show_result(arenahard().judgments, resamples=50)
    mine = figures["models"]["my-model"]
    assert (0.75, 10) == (mine["score"], mine["battles"])
    assert pytest.approx(3.5 / 6) == mine["score_weight_1"]
    assert (2, 2, 0.25) == (figures["lines_dropped_null"], figures["strong_verdicts"], figures["strong_share"])
    assert "o3-mini-2025-01-31" == figures["baseline"]


def test_arenahard_last_verdict_wins_for_the_tool_but_two_directions_are_invalid_for_judgebias():
    """A judgment that states [[A>B]] then [[B>A]] is B>A for Arena-Hard and "invalid" for judgebias."""
    readings = common.compare_readings(arenahard().judgments, style="arenahard", tie_label="A=B", tool_labels=True)
    (disagreement,) = readings["disagreements"]
    assert ("B", "invalid", "B>A") == (disagreement["tool"], disagreement["judgebias"], disagreement["tool_label"])
    assert "B>A" == arena.arenahard_tool_reading("[[A>B]] ... [[B>A]]")


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("My final verdict is: [[B>>A]]", "B"),
        ("Tie: [[A=B]]", "tie"),
        ("slightly better [A<B]", "B"),
        (
            "1. Assistant A is significantly better: [[A>>B]]\n2. Assistant A is slightly better: [[A>B]]\nVerdict: [[B>A]]",
            "B",
        ),
        ("[[A>B]] and later [[B>A]]", "invalid"),
        ("[[A>A]]", "invalid"),
        # The verdict written as an item of the scale (a real GPT-4 reply's ending, as the audit trial met it).
        (
            "... is more helpful.\n\nTherefore, my final verdict is:\n\n5. Assistant B is significantly better: [[B>>A]]",
            "B",
        ),
        ("My verdict:\n- 1. Assistant A is significantly better: [[A>>B]]", "A"),  # a bulleted item
        (
            "The choices:\n1. Assistant A is significantly better: [[A>>B]]\n2. Assistant A is slightly better: "
            "[[A>B]]\n3. Tie, relatively the same: [[A=B]]\n\nMy final verdict is:\n\n4. Assistant B is slightly "
            "better: [[B>A]]",
            "B",
        ),
        (
            "1. Assistant A is significantly better: [[A>>B]]\n2. Assistant A is slightly better: [[A>B]]\n"
            "3. Tie, relatively the same: [[A=B]]\n4. Assistant B is slightly better: [[B>A]]\n"
            "5. Assistant B is significantly better: [[B>>A]]",
            "invalid",
        ),
        ("no label", "invalid"),
    ],
)
def test_arenahard_reply_style_reads_the_direction_of_five_point_verdicts(text, verdict):
    """The arenahard style reads [[A>>B]] ... [[B>>A]] for their side, ignores a quoted scale, refuses two sides;
    where it reads a side, Arena-Hard's own extraction (its last token) reads the same."""
    assert verdict == parse_reply(text, style="arenahard", tie_label="A=B")
    if verdict != "invalid":
        assert verdict == {"B>>A": "B", "B>A": "B", "A>>B": "A", "A>B": "A", "A=B": "tie", "A<B": "B"}.get(
            str(arena.arenahard_tool_reading(text))
        )


def test_alpacaeval_item_shows_the_answer_shown_first_as_a():
    """A switched instruction (AlpacaEval's seeded coin) has output_2 as a, and its preference read positionally."""
    converted = alpacaeval()
    switched = [row for row in converted.judgments if row["switched"]]
    assert switched, "the example needs at least one switched instruction"
    items = {item["id"]: item for item in converted.items}
    for row in converted.judgments:
        item = items[row["id"]]
        assert item["a"] == row["tool"]["output_2" if row["switched"] else "output_1"]
        assert row["call2"] is None and row["raw2"] is None
        if row["preference"] not in (None, 1.5):
            prefers_first = (row["preference"] > 1.5) == row["switched"]
            assert ("A" if prefers_first else "B") == row["call1"]


def test_alpacaeval_win_rate_draws_and_missing_preference_the_tool_way():
    """win_rate = mean(preference - 1) in %, 0 and 1.5 are draws, a null preference is left out and a failed call."""
    converted = alpacaeval()
    figures = alpaca.leaderboard(converted.judgments)["models"]["my-model"]
    prefs = [1.0, 1.92, 1.05, 1.85, 1.5, 1.5, 2.0]
    assert pytest.approx(sum(p - 1 for p in prefs) / 7 * 100) == figures["win_rate"]
    assert (7, 1, 2, 3, 2) == (
        figures["n_total"],
        figures["n_missing"],
        figures["n_draws"],
        figures["n_wins"],
        figures["n_wins_base"],
    )
    assert figures["length_controlled_winrate_minimal"] < figures["win_rate"]  # the longer answer was preferred here
    assert any("error1" in row for row in converted.judgments)


def test_a_json_array_error_names_the_line_of_the_element(tmp_path):
    """annotations.json is a JSON array: a bad field names the line its element starts on."""
    entries = json.loads((ALPACAEVAL / "results/my-model/weighted_alpaca_eval_gpt4_turbo/annotations.json").read_text())
    entries[1]["preference"] = "B"
    path = tmp_path / "annotations.json"
    path.write_text(json.dumps(entries, indent=2))
    line = json.dumps(entries, indent=2).splitlines().index("  {", 2) + 1
    with pytest.raises(UserError, match=rf"annotations.json:{line}: field 'preference': must be a number"):
        alpaca.convert_alpacaeval(files.read_records(path))


def test_export_to_fastchat_writes_a_bench_fastchat_reads_back():
    """A run's verdicts exported as FastChat files convert back into the same items and the same raw replies."""
    converted = fastchat()
    verdicts = [
        {
            "id": row["id"],
            "call1": "error" if "error1" in row else "A",
            "call2": "A",
            "raw1": row["raw1"],
            "raw2": row["raw2"],
        }
        for row in converted.judgments
        if row["judge"] == "gpt-4/pair-v2"
    ]
    files = chat.export_fastchat(converted.items, verdicts, ("judge-x", "pair-v2"))
    records = {path: [(path, n, line) for n, line in enumerate(rows, start=1)] for path, rows in files.items()}
    back = chat.convert_fastchat(
        records["model_judgment/judge-x_pair.jsonl"],
        chat.fastchat_questions(records["question.jsonl"]),
        chat.fastchat_answers([r for path, rows in records.items() if path.startswith("model_answer/") for r in rows]),
    )
    original = {row["id"]: row for row in converted.judgments}
    assert [original[v["id"]]["raw1"] for v in verdicts] == [row["raw1"] for row in back.judgments]
    assert {item["id"] for item in back.items} == {v["id"] for v in verdicts}


def test_a_model_judged_against_itself_is_flagged_and_left_out_of_the_pooled_figures(tmp_path: Path) -> None:
    """An Arena-Hard v0.1 bench with the baseline's own judgment file (baseline against baseline): its lines are
    flagged, listed, and left out of the tool's score and of the replay, as show_result.py leaves them out."""
    real = REPO / "tests" / "data" / "audit" / "real" / "arenahard" / "arena-hard-v0.1"
    bench = tmp_path / "arena-hard-v0.1"
    shutil.copytree(real, bench)
    judge_dir = bench / "model_judgment" / "gpt-4-1106-preview"
    lines = [json.loads(line) for line in (judge_dir / "mistral-7b.jsonl").read_text().splitlines()]
    (judge_dir / "truth_model.jsonl").write_text(
        "".join(json.dumps(line | {"model": "truth_model"}) + "\n" for line in lines[:3]), encoding="utf-8"
    )

    converted = arena.convert([bench], common.Options(baseline="truth_model"))

    flagged = [row for row in converted.judgments if "left_out" in row]
    assert 3 == len(flagged) and all("against itself" in row["left_out"] for row in flagged)
    show = arena.show_result(converted.judgments)
    assert {"dolphin-miner", "mistral-7b"} == set(show["models"]) and 3 == show["lines_left_out"]


# FastChat's pair-v2 template (fastchat/llm_judge/data/judge_prompts.jsonl) and Arena-Hard's, as their files hold them.
PAIR_V2 = (
    "[User Question]\n{question}\n\n[The Start of Assistant A's Answer]\n{a}\n[The End of Assistant A's Answer]\n\n"
    "[The Start of Assistant B's Answer]\n{b}\n[The End of Assistant B's Answer]"
)
ARENA = "<|User Prompt|>\n{question}\n\n<|The Start of Assistant A's Answer|>\n{a}\n<|The End of Assistant A's Answer|>\n\n<|The Start of Assistant B's Answer|>\n{b}\n<|The End of Assistant B's Answer|>"


@pytest.mark.parametrize("template", [PAIR_V2, ARENA])
def test_an_answer_that_repeats_the_question_is_found_in_its_own_section(template: str) -> None:
    """A weak model's answer that parrots the question: looked for anywhere, it is "found" in the question, before
    the other answer in both games, and the record seems to contradict the order rule; in its section it does not."""
    from judgebias.audit.formats.common import order_evidence, shown_first

    question = "Repeat this sentence: the cat sat on the mat."
    parrot, other = "the cat sat on the mat.", "Sure. Here it is, word for word, as you asked."
    game1 = template.format(question=question, a=parrot, b=other)  # the parrot shown first
    game2 = template.format(question=question, a=other, b=parrot)  # then second
    assert shown_first(game1, parrot, other) is True
    assert shown_first(game2, other, parrot) is True
    assert shown_first(game2, parrot, other) is False
    assert order_evidence([(game1, parrot, other), (game2, other, parrot)]) == {
        "order_source": "record",
        "order_checked": True,
        "order_agrees": True,
    }


def test_answers_that_cannot_be_told_apart_are_undecidable_not_evidence() -> None:
    from judgebias.audit.formats.common import order_evidence, order_summary

    same = PAIR_V2.format(question="q", a="Yes.", b="Yes.")
    inside = PAIR_V2.format(question="q", a="Yes.", b="Yes. Because it is.")
    evidence = order_evidence([(same, "Yes.", "Yes."), (inside, "Yes.", "Yes. Because it is.")])
    assert evidence == {"order_source": "rule", "order_checked": False, "order_undecidable": True}
    contradicting = order_evidence([(PAIR_V2.format(question="q", a="two", b="one"), "one", "two")])
    rows = [evidence | {"id": "x"}, contradicting | {"id": "y", "source": "judgment.jsonl:7"}]
    summary = order_summary(rows)
    assert (summary["order_undecidable"], summary["order_contradicting"]) == (1, ["judgment.jsonl:7"])
    assert summary["order_trusted"] is True  # one contradiction among a handful allowed


def test_audit_md_summarises_lists_and_labels_the_per_prompt_tables_as_its_own_split() -> None:
    """Left-out lines are one line (count, reasons, the first few, where the rest are); when one judge model has
    several prompts, the per-prompt tables are judgebias's split of the tool's rule, not the tool's own output."""
    from judgebias.audit.report import format_audit

    table = {"models": {"m1": {"win": 1, "loss": 0, "tie": 0, "win_rate": 1.0, "win_rate_adjusted": 1.0}}}
    order = {"order_checked": 0, "order_from_record": 0, "order_from_rule": 7, "records": 7, "order_trusted": True}
    left = [{"id": f"item-{n}", "why": "the judge's own answers"} for n in range(7)]
    entry = {"judge_model": "gpt-4", "order": order, "lines_left_out": left, "tool_table": table}
    report = {
        "tool": "fastchat", "items": 7, "judgment_lines": 14, "notes": [], "tool_figures": {},
        "readings": {"note": "no pairwise judgments"},
        "judges": {"gpt-4/pair-v2": dict(entry), "gpt-4/pair-math-v1": dict(entry)},
    }  # fmt: skip
    text = format_audit(report)
    (left_line,) = {line for line in text.splitlines() if line.startswith("- left out of the pooled figures")}
    assert left_line == (
        "- left out of the pooled figures: 7 lines (7: the judge's own answers): item-0, item-1, item-2, item-3, "
        "item-4 and 2 more (judges.<judge>.lines_left_out in audit.json)"
    )
    assert "- the tool's own show_result:" not in text
    assert text.count("judgebias's split, as show_result does not split by prompt") == 2
    report["judges"] = {"gpt-4/pair-v2": dict(entry)}
    assert "- the tool's own show_result:" in format_audit(report)


def test_an_annotation_given_again_is_a_repeat_but_on_other_outputs_is_refused(tmp_path: Path):
    """The same instruction, models and outputs annotated again is a re-run (get_winrate counts it; judgebias once);
    the same instruction and models on a re-generated output is not the same item, and is refused in one line."""
    path = next(ALPACAEVAL.rglob("annotations.json"))
    entries = json.loads(path.read_text(encoding="utf-8"))
    again = tmp_path / "again.json"
    again.write_text(json.dumps([*entries, entries[0]], indent=2), encoding="utf-8")
    starts = [n for n, text in enumerate(again.read_text().splitlines(), start=1) if text == "  {"]

    converted = alpaca.convert([again], common.Options())

    (repeat,) = [row for row in converted.judgments if "repeat_of" in row]
    assert (repeat["source"], repeat["repeat_of"]) == (f"{again}:{starts[-1]}", f"{again}:{starts[0]}")
    assert len(converted.items) == len(entries)
    other = tmp_path / "other.json"
    other.write_text(json.dumps([*entries, entries[0] | {"output_2": "re-generated"}], indent=2), encoding="utf-8")
    with pytest.raises(UserError, match=rf"{other}:{starts[-1]}: field 'output_1': annotator .* on other outputs"):
        alpaca.convert([other], common.Options())


def test_a_list_of_records_in_audit_md_names_each_file_once_and_counts_the_rest():
    """Seven records of two files: the first five shown, a file named once for its run of lines, the rest counted."""
    from judgebias.audit.report import first_few

    places = ["a/x.jsonl:1", "a/x.jsonl:2: its note", "b/y.jsonl:7", "a/x.jsonl:9", "a/x.jsonl:10", "c:3", "c:4"]

    assert first_few(places) == (
        "a/x.jsonl line 1, line 2: its note, b/y.jsonl line 7, a/x.jsonl line 9, line 10 and 2 more (audit.json)"
    )
    assert first_few(["an-item-id"]) == "an-item-id"
