"""A free judge's items judged in parts, each later part in a forked process (engine.parts).

Oracles from outside the code: each line's verdict is the `longer` rule applied here by hand to the file's own
answers (as benchmarks/hand_loop.py applies it), and the files are those of the same run in one process, byte for
byte. The part processes are real forks; only the sizes are lowered so that a few hundred items make parts."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from judgebias.engine import free, parts
from judgebias.engine import items as items_module
from tests.helpers import counting, longer_by_hand, write_items
from tests.reliability.helpers import run_here, verdict_lines

RECORDS = [
    {
        "id": f"p{n}",
        "question": f"Which answer is better, {n}?",
        "a": "word " * (n % 7) + "end",
        "b": "word " * (n % 5) + "end",
        "human": ["1", "2", "tie", None][n % 4],
        "model_a": ["alpha", "beta"][n % 2],
        "model_b": "gamma",
    }
    for n in range(420)
]


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Parts of at least 50 items on 3 cores, marks every 16 items; the part processes started, counted."""
    monkeypatch.setattr(parts, "PART_MIN_ITEMS", 50)
    monkeypatch.setattr(parts, "_cores", lambda: 3)
    monkeypatch.setattr(items_module, "_MARK_EVERY", 16)
    return counting(monkeypatch, free, "PartProcess")


def _overrides(path: Path, tmp_path: Path, *more: str) -> tuple[str, ...]:
    return ("data=jsonl", f"data.path={path}", "report=false", f"cache.dir={tmp_path / 'cache'}", *more)


def _same_summary(one: Path, other: Path) -> None:
    first, second = (json.loads((run / "summary.json").read_text(encoding="utf-8")) for run in (one, other))
    for summary in (first, second):
        summary.pop("judging_seconds")
    assert first == second


def test_parts_give_the_rule_s_verdicts_and_the_files_of_one_process(tmp_path: Path, started: list[Any]) -> None:
    """420 items (blank lines among them, data.limit 400) in three parts: every line holds the verdict the rule
    gives by hand, verdicts.jsonl and ratings.csv are byte for byte one process's, and no part's file is left."""
    lines = [json.dumps(record) for record in RECORDS]
    lines[100:100] = ["", "   "]
    path = tmp_path / "items.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    settings = _overrides(path, tmp_path, "judge=longer", "data.limit=400")
    one_process = tmp_path / "one"
    with pytest.MonkeyPatch.context() as alone:
        alone.setattr(parts, "_cores", lambda: 1)
        run_here(one_process, *settings)
    assert not started
    in_parts = tmp_path / "parts"
    summary = run_here(in_parts, *settings)
    assert len(started) == 2  # the first part judged here, two forked
    assert [(line["id"], line["verdict"], line["call1"], line["call2"]) for line in verdict_lines(in_parts)] == [
        (record["id"], *longer_by_hand(record)) for record in RECORDS[:400]
    ]
    for name in ("verdicts.jsonl", "ratings.csv"):
        assert (in_parts / name).read_bytes() == (one_process / name).read_bytes()
    _same_summary(one_process, in_parts)
    assert summary["n_items"] == 400
    assert not [name for name in os.listdir(in_parts) if ".part" in name]


def test_an_ensemble_in_parts_writes_one_process_s_lines(tmp_path: Path, started: list[Any]) -> None:
    """Two scripted judges (the ensemble's combined rows joined with each judge's): the same files as in one
    process."""
    path = write_items(tmp_path / "items.jsonl", RECORDS)
    settings = _overrides(
        path, tmp_path, "judge=longer", "+judge@ensemble.long=longer", "+judge@ensemble.first=always_a"
    )
    one_process = tmp_path / "one"
    with pytest.MonkeyPatch.context() as alone:
        alone.setattr(parts, "_cores", lambda: 1)
        run_here(one_process, *settings)
    in_parts = tmp_path / "parts"
    run_here(in_parts, *settings)
    assert len(started) == 2
    assert (in_parts / "verdicts.jsonl").read_bytes() == (one_process / "verdicts.jsonl").read_bytes()
    _same_summary(one_process, in_parts)


def test_when_no_process_can_be_made_the_run_judges_every_part_itself(
    tmp_path: Path, started: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second part's fork fails (the system's limit on processes: EAGAIN): the part already started is stopped
    and the run judges all its items in one process, every line the rule's, no part's file left."""
    path = write_items(tmp_path / "items.jsonl", RECORDS)
    made = counting(monkeypatch, free, "PartProcess", real=parts.PartProcess, fail_after=1)
    run_dir = tmp_path / "run"
    run_here(run_dir, *_overrides(path, tmp_path, "judge=longer"))
    assert len(made) == 1
    assert [(line["id"], line["verdict"], line["call1"], line["call2"]) for line in verdict_lines(run_dir)] == [
        (record["id"], *longer_by_hand(record)) for record in RECORDS
    ]
    assert not [name for name in os.listdir(run_dir) if ".part" in name]
