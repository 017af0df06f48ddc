"""verdicts.jsonl.part: what an interrupted run keeps of the items it decided, and nothing when it decided none."""

from __future__ import annotations

import json
from pathlib import Path

from judgebias.core.item import Item
from judgebias.core.record import CallResult, ItemResult
from judgebias.engine.outputs import VerdictWriter
from judgebias.io.run_dir import RunDir

ITEM = Item("i1", "Q?", "one", "two")
ROW = ItemResult(
    id="i1",
    verdict="1",
    call1="A",
    call2="B",
    consistent=True,
    calls=(CallResult("A", "A", False), CallResult("B", "B", False)),
)


def test_a_run_stopped_before_any_verdict_leaves_no_partial_file(tmp_path: Path) -> None:
    """When a run stops before deciding any item, no empty verdicts.jsonl.part is left in its folder."""
    writer = VerdictWriter(RunDir(tmp_path), ensemble=False)

    writer.abandon()

    assert [] == sorted(path.name for path in tmp_path.iterdir())


def test_a_run_stopped_after_some_verdicts_keeps_them_in_the_partial_file(tmp_path: Path) -> None:
    """When a run stops after deciding items, verdicts.jsonl.part keeps their lines (and no verdicts.jsonl)."""
    writer = VerdictWriter(RunDir(tmp_path), ensemble=False)
    writer.write(ITEM, {"j": ROW}, ROW)

    writer.abandon()

    assert ["verdicts.jsonl.part"] == sorted(path.name for path in tmp_path.iterdir())
    lines = (tmp_path / "verdicts.jsonl.part").read_text(encoding="utf-8").splitlines()
    assert ["i1"] == [json.loads(text)["id"] for text in lines]
