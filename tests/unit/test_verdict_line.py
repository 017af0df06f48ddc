"""The verdicts.jsonl line: its fields, which appear only when they apply, and how the file is written."""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path
from typing import Any

import msgspec

from judgebias.core.item import Item
from judgebias.core.judged import ensemble_results, item_result
from judgebias.core.record import CallResult
from judgebias.core.verdict_lines import MEMBER_ORDER, WrittenLine
from judgebias.engine.outputs import VerdictWriter, verdict_line
from judgebias.io.run_dir import RunDir

ITEM = Item(
    id="q1", question="q", a="one two", b="three", human="1", human_votes=("1", "2"), model_a="m1", model_b="m2"
)
PLAIN = Item(id="q2", question="q", a="x", b="yy")


def test_a_line_holds_the_verdict_the_calls_and_the_item_fields_in_order() -> None:
    """A two-order line: verdict and winner, both calls with their item-frame picks, reply and cache flag, human
    labels, models and lengths."""
    row = item_result(ITEM, [CallResult("A", "A", True), CallResult("B", "B", False)])

    assert {
        "id": "q1",
        "verdict": "1",
        "winner": "a",
        "call1": "A",
        "call2": "B",
        "consistent": True,
        "pick1": "a",
        "pick2": "a",
        "raw1": "A",
        "cached1": True,
        "raw2": "B",
        "cached2": False,
        "human": "1",
        "human_votes": ["1", "2"],
        "model_a": "m1",
        "model_b": "m2",
        "chars_a": 7,
        "chars_b": 5,
        "words_a": 2,
        "words_b": 1,
        "style_a": {"headers": 0, "list_items": 0, "bold": 0, "italic": 0, "code_blocks": 0, "tables": 0},
        "style_b": {"headers": 0, "list_items": 0, "bold": 0, "italic": 0, "code_blocks": 0, "tables": 0},
    } == verdict_line(row)
    order = ["id", "verdict", "winner", "call1", "call2", "consistent", "pick1", "pick2", "raw1"]
    assert order == list(verdict_line(row))[:9]


def test_a_row_kept_without_its_replies_writes_them_from_its_calls() -> None:
    """The row a run keeps has no reply texts; its line takes raw1/raw2 from the calls it is written with."""
    calls = [CallResult("A", "A, because it is shorter", True), CallResult("B", "B", False)]
    kept = item_result(ITEM, calls, slim=True)

    assert (None, None) == tuple(call.raw for call in kept.calls)
    line = verdict_line(kept, calls=calls)
    assert ("A, because it is shorter", True, "B", False) == (
        line["raw1"],
        line["cached1"],
        line["raw2"],
        line["cached2"],
    )
    assert (None, None) == (verdict_line(kept)["raw1"], verdict_line(kept)["raw2"])


def test_the_line_counts_the_formatting_of_each_answer() -> None:
    """style_a/style_b hold each answer's markdown feature counts, beside its length."""
    formatted = Item(id="q3", question="q", a="## Plan\n\n- **one**\n- two", b="One, then two.")
    line = verdict_line(item_result(formatted, [CallResult("A", "A", False), CallResult("B", "B", False)]))

    assert {"headers": 1, "list_items": 2, "bold": 1, "italic": 0, "code_blocks": 0, "tables": 0} == line["style_a"]
    assert 0 == sum(line["style_b"].values())


def test_optional_fields_appear_only_when_they_apply() -> None:
    """No human labels or models without data for them; errors, probabilities and tags where present."""
    calls = [
        CallResult("A", "A", False, probs={"A": 0.75, "B": 0.25}, tag_first="X", tag_second="Y"),
        CallResult("error", None, False, error="HTTP 500 (after 7 attempts)"),
    ]
    line = verdict_line(item_result(PLAIN, calls))

    assert ("error", "HTTP 500 (after 7 attempts)", {"A": 0.75, "B": 0.25}, ["X", "Y"]) == (
        line["verdict"],
        line.get("error2"),
        line.get("probs1"),
        line.get("labels1"),
    )
    assert set() == {"human", "human_votes", "model_a", "model_b", "error1", "labels2"} & set(line)


def test_a_one_order_recording_has_an_empty_second_call() -> None:
    """Where only the first order exists, call2, raw2 and cached2 are null and consistency is not measured."""
    line = verdict_line(item_result(PLAIN, [CallResult("B", "B", False)]))

    assert (None, None, None, None, "2") == (
        line["call2"],
        line["raw2"],
        line["cached2"],
        line["consistent"],
        line["verdict"],
    )


def test_the_file_is_partial_until_the_run_completes(tmp_path: Path) -> None:
    """Lines stream to verdicts.jsonl.part, which becomes verdicts.jsonl only when the run commits."""
    row = item_result(PLAIN, [CallResult("A", "A", False), CallResult("B", "B", False)])
    writer = VerdictWriter(RunDir(tmp_path), ensemble=False)
    writer.write(PLAIN, {"j": row}, row)
    partial = sorted(path.name for path in tmp_path.iterdir())
    writer.commit()

    assert (["verdicts.jsonl.part"], ["verdicts.jsonl"]) == (partial, sorted(p.name for p in tmp_path.iterdir()))
    assert [verdict_line(row)] == [json.loads(line) for line in (tmp_path / "verdicts.jsonl").open()]


def test_an_ensemble_line_holds_the_majority_and_every_judges_calls(tmp_path: Path) -> None:
    """An ensemble line has the merged verdict at top level and each judge's calls and verdict under judges."""
    rows = {
        "x": item_result(PLAIN, [CallResult("A", "A", False), CallResult("B", "B", False)]),
        "y": item_result(PLAIN, [CallResult("A", "A", False), CallResult("A", "A", False)]),
        "z": item_result(PLAIN, [CallResult("A", "A", False), CallResult("B", "B", False)]),
    }
    (merged,) = ensemble_results({name: [row] for name, row in rows.items()})
    writer = VerdictWriter(RunDir(tmp_path), ensemble=True)
    writer.write(PLAIN, rows, merged)
    writer.commit()

    (text,) = (tmp_path / "verdicts.jsonl").read_bytes().splitlines()
    msgspec.json.decode(text, type=WrittenLine)  # every member declared, every judge's entry too
    line = json.loads(text)
    assert ("1", ["x", "y", "z"], "tie", "raw1") == (
        line["verdict"],
        list(line["judges"]),
        line["judges"]["y"]["verdict"],
        next(key for key in line["judges"]["x"] if key.startswith("raw")),
    )
    assert "raw1" not in line


def _written(tmp_path: Path, item: Item, row: Any, calls: list[CallResult], cluster: object = None) -> str:
    """The line the writer writes for one judge's row (clustered when `cluster` is given)."""
    run = RunDir(tmp_path / "run")
    writer = VerdictWriter(run, ensemble=False, clusters={} if cluster is None else {item.id: cluster})
    writer.write(item, {"j": row}, row, {"j": calls})
    writer.commit()
    (line,) = run.verdicts.read_text(encoding="utf-8").splitlines()
    return line


def test_a_line_is_the_text_json_dumps_writes_of_it_and_holds_only_declared_members(tmp_path: Path) -> None:
    """Lines encoded by msgspec are exactly json.dumps of their own content (stdlib's separators, escapes and number
    forms: the file is byte for byte what earlier releases wrote), whatever the line holds: text to escape and
    beyond ASCII, votes, token counts, soft preferences, failed calls, several samples, clusters of each kind. And
    every line holds only the members its declaration names, of their declared types, in their declared order."""
    odd = Item(
        id='q"1\\\n',
        question="q",
        a="## Überschrift\n- **un**\t\u2028",
        b="",
        human="tie",
        human_votes=("1", "tie"),
        human_voters=("ann", "bo"),
        model_a="m\u00e9",
        model_b=None,
        tokens_a=3,
        tokens_b=0,
    )
    calls_of = [
        [CallResult("A", "A", False, offline=True), CallResult("B", "B", False, offline=True)],
        [CallResult("A", 'A \u00e9 "', True, probs={"A": 0.7, "B": 0.2, "tie": 0.1}), CallResult("B", "B", False)],
        [CallResult("error", None, False, error="HTTP 500 \u00e9", failure="server"), CallResult("A", "x", False)],
        [
            CallResult("invalid", "no", False, tag_first="X", tag_second="Y", outcome="refusal", reason="r", model="m"),
            CallResult("B", "B", True, tag_first="Y", tag_second="X", answered_by="d", origin={"fallbacks": 1}),
        ],
        [CallResult("A", "A", False, sample=s) for s in range(3)]
        + [CallResult("B", "B", False, sample=s) for s in range(3)],
    ]
    unvoted = Item(id="p\u00e9\t", question="q", a="\u2028one", b='"two"', human="1", model_a=None, model_b="m\\")
    tokens = dataclasses.replace(unvoted, id="t", tokens_a=4, tokens_b=12, human=None)
    for number, calls in enumerate(calls_of):
        for item, cluster in itertools.product((odd, unvoted, tokens), (None, "topic \u00e9", 7, 2.5, True, "[1]")):
            row = item_result(item, calls, slim=True)
            line = _written(tmp_path / f"{number}-{item.id!r}-{cluster}", item, row, calls, cluster)
            content = json.loads(line)
            assert line == json.dumps(content, ensure_ascii=False, allow_nan=False)
            expected = {**verdict_line(row, calls=calls), **({} if cluster is None else {"cluster": cluster})}
            assert list(content.items()) == list(expected.items())  # the same members, in the same order
            assert content["id"] == item.id
            msgspec.json.decode(line, type=WrittenLine)  # raises on a member undeclared, or of another type
            assert list(content) == sorted(content, key=MEMBER_ORDER.__getitem__)
