"""The run's items read twice from the data file (engine.items.RunItems): checked whole first, then streamed.

The expected items come from the file itself, read here with the json module and cut by hand."""

from __future__ import annotations

import itertools
import json
import os
import threading
from pathlib import Path

import pytest

from judgebias.core.errors import UserError
from judgebias.engine import items as items_module
from judgebias.engine.items import RunItems
from tests.helpers import write_items
from tests.reliability.helpers import config_of

RECORDS = [{"id": f"i{n}", "question": f"Q{n}?", "a": f"  answer {n} of a \n", "b": f"\tb{n} "} for n in range(8)]


def _hand_read(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_items_streamed_are_the_file_s_lines_in_order_cut_and_normalised(tmp_path: Path) -> None:
    """data.limit=5 with strip: the first five lines of the file, answers stripped; a second reading gives the same."""
    path = write_items(tmp_path / "items.jsonl", RECORDS)
    items = RunItems(config_of(f"data.path={path}", "data.limit=5", "data.normalize.strip=true"))
    expected = _hand_read(path)[:5]
    assert 5 == len(items)
    streamed = list(items)
    assert [(r["id"], r["question"], r["a"].strip(), r["b"].strip()) for r in expected] == [
        (item.id, item.question, item.a, item.b) for item in streamed
    ]
    assert streamed == list(items)


def test_released_items_keep_their_count_and_refuse_a_third_reading(tmp_path: Path) -> None:
    """After judging the items are released (the summary reads rows only): their number stays, and reading them
    again is an error, not an empty run."""
    path = write_items(tmp_path / "items.jsonl", RECORDS)
    items = RunItems(config_of(f"data.path={path}", "data.limit=6"))
    assert 6 == len(list(items))
    items.release()
    assert 6 == len(items)
    with pytest.raises(RuntimeError, match="released"):
        iter(items)


@pytest.mark.parametrize("kept", ["all", "filtered"])
def test_parts_read_from_their_marked_lines_are_the_items_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept: str
) -> None:
    """200 items (a BOM, blank lines, a line past data.limit=190), marks every 8 items, cut into 3 parts, with and
    without a judge's filter: the parts, each read from its own line, are the file's items in order (read here
    with the json module, filtered and cut by hand), and the same as one reading of all."""
    monkeypatch.setattr(items_module, "_MARK_EVERY", 8)
    records = [{"id": f"r{n}", "question": f"Q{n}?", "a": f"a {n}", "b": f"b{n}"} for n in range(200)]
    lines = [json.dumps(record) for record in records]
    lines[50:50] = ["", "  "]
    path = tmp_path / "items.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + ("\n".join(lines) + "\n").encode("utf-8"))
    items = RunItems(config_of(f"data.path={path}", "data.limit=190"))
    expected = [record["id"] for record in records[:190]]
    if kept == "filtered":
        items.retain(lambda item: int(item.id[1:]) % 3 != 0)
        expected = [item_id for item_id in expected if int(item_id[1:]) % 3 != 0]
    items.cluster_values()  # judging starts
    parts = items.parts(3)
    assert len(parts) == 3 and parts[0].start == 0 and parts[-1].stop == len(expected)
    assert all(one.stop == two.start for one, two in itertools.pairwise(parts))
    read = [[item.id for item in items.part(part)] for part in parts]
    assert [item_id for ids in read for item_id in ids] == expected == [item.id for item in items]
    assert all(ids for ids in read)


def test_a_file_of_fewer_items_than_a_mark_is_one_part(tmp_path: Path) -> None:
    path = write_items(tmp_path / "items.jsonl", RECORDS)
    items = RunItems(config_of(f"data.path={path}"))
    items.cluster_values()  # judging starts
    assert [(part.start, part.stop) for part in items.parts(4)] == [(0, len(RECORDS))]


def test_a_filter_asks_of_every_id_and_holds_in_the_streamed_items(tmp_path: Path) -> None:
    """A judge's filter is asked of every id of the file and leaves its items out of the reading."""
    path = write_items(tmp_path / "items.jsonl", RECORDS)
    items = RunItems(config_of(f"data.path={path}"))
    asked: list[str] = []
    assert 2 == items.retain(lambda stub: asked.append(stub.id) or stub.id not in {"i2", "i6"})
    assert [r["id"] for r in _hand_read(path)] == asked
    assert 6 == len(items)
    items.cluster_values()  # judging starts
    assert [r["id"] for r in _hand_read(path) if r["id"] not in {"i2", "i6"}] == [item.id for item in items]


def test_every_line_is_checked_before_the_first_item_even_past_the_limit(tmp_path: Path) -> None:
    """A broken line 7 is named although data.limit=2 judges only the first two."""
    path = write_items(tmp_path / "items.jsonl", RECORDS)
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[6] = '{"id": "i6", "question": "Q?", "a": 3, "b": "x"}'
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(UserError, match=rf"{path}:7: field 'a': must be a string"):
        RunItems(config_of(f"data.path={path}", "data.limit=2"))


@pytest.mark.parametrize("edit", ["append", "same size"])
def test_a_file_changed_after_its_check_stops_the_reading_in_one_line(tmp_path: Path, edit: str) -> None:
    """A line added, or an id rewritten in place (the same size), between the check and the judging: one line that
    names the file and says to rerun, never items the check did not see."""
    path = write_items(tmp_path / "items.jsonl", RECORDS)
    items = RunItems(config_of(f"data.path={path}"))
    text = path.read_text(encoding="utf-8")
    if edit == "append":
        path.write_text(text + json.dumps({"id": "new", "question": "Q?", "a": "x", "b": "y"}) + "\n", encoding="utf-8")
    else:
        path.write_text(text.replace('"i3"', '"j3"'), encoding="utf-8")
        stamp = os.stat(path)
        os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000))  # a coarse clock: still a change
    with pytest.raises(UserError) as raised:
        list(items)
    message = str(raised.value)
    assert str(path) in message and "changed after it was checked" in message and "\n" not in message


def test_a_pipe_is_read_once_and_its_items_held(tmp_path: Path) -> None:
    """A FIFO cannot be read twice: its items are kept from the one reading, and judged from it."""
    fifo = tmp_path / "items.fifo"
    os.mkfifo(fifo)
    lines = "".join(json.dumps(record) + "\n" for record in RECORDS)

    def feed() -> None:
        with fifo.open("w", encoding="utf-8") as pipe:
            pipe.write(lines)

    writer = threading.Thread(target=feed)
    writer.start()
    items = RunItems(config_of(f"data.path={fifo}", "data.limit=3"))
    writer.join(timeout=10)
    assert ["i0", "i1", "i2"] == [item.id for item in items] == [item.id for item in items]


def test_clusters_come_from_the_file_without_holding_its_ids(tmp_path: Path) -> None:
    """bootstrap.cluster=auto on a file where question_id repeats and some items lack it: as many clusters as the file
    has distinct values plus items without one, and each clustered item's value by id, counted from the file here."""
    records = [
        {"id": f"i{n}", "question": "Q?", "a": "x", "b": "y"} | ({"question_id": n % 4} if n % 5 else {})
        for n in range(40)
    ]
    path = write_items(tmp_path / "items.jsonl", records)
    items = RunItems(config_of(f"data.path={path}", "bootstrap.cluster=auto"))
    values = items.cluster_values()
    clustering = items.clustering()
    assert clustering is not None
    with_value = [r for r in records if "question_id" in r]
    assert len({r["question_id"] for r in with_value}) + len(records) - len(with_value) == clustering.count
    assert {r["id"]: r["question_id"] for r in with_value} == values
