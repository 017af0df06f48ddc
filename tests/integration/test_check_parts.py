"""A large data file's check cut into parts, each later part read in a forked process (engine.items, engine.parts).

Oracles from outside the code: where each part starts is compared with the bytes themselves (the byte before it is
a line end, and its line number is the count of line ends before it, counted here by bytes.count); the problems a
checked file gives are the lines this test made bad, by their numbers, and the message is the one a check in one
process gives. The processes are real forks; only the sizes are lowered so that a small file is cut."""

from __future__ import annotations

import itertools
import json
import os
import random
from pathlib import Path
from typing import Any

import pytest

from judgebias.core.errors import UserError
from judgebias.engine import free, parts
from judgebias.engine import items as items_module
from judgebias.engine.items import RunItems
from judgebias.io.dataset import START, cut_lines
from tests.helpers import counting, longer_by_hand
from tests.reliability.helpers import config_of, run_here, verdict_lines


def _random_lines(seed: int, count: int, long_every: int = 0) -> bytes:
    """JSON-ish lines of random lengths, blank lines and CRLF among them, the last without its line end."""
    rng = random.Random(seed)
    lines = []
    for n in range(count):
        width = 300_000 if long_every and n % long_every == long_every - 1 else rng.randint(0, 120)
        lines.append(("x" * width + ("\r" if n % 11 == 3 else "")).encode())
    return b"\n".join(lines)


@pytest.mark.parametrize(("seed", "count", "long_every"), [(1, 500, 0), (2, 40, 7), (3, 3, 0), (4, 1, 0)])
def test_parts_start_at_line_starts_numbered_as_the_bytes_say(
    tmp_path: Path, seed: int, count: int, long_every: int
) -> None:
    """Each part starts right after a line end, with the number of line ends before it plus one as its line (long
    lines across the reading's 1 MiB chunks among them); the parts follow each other and cover the file."""
    data = _random_lines(seed, count, long_every)
    path = tmp_path / "items.jsonl"
    path.write_bytes(data)
    with path.open("rb") as file:
        lines_read = sum(1 for _ in file)
    for wanted in range(1, 7):
        cuts, lines = cut_lines(path, wanted)
        assert lines == lines_read
        assert 1 <= len(cuts) <= wanted
        assert cuts[0][0] == START
        assert cuts[-1][1] == len(data)
        for (place, stop), (next_place, _) in itertools.pairwise(cuts):
            assert stop == next_place[0] > place[0]
        for (offset, line), _ in cuts[1:]:
            assert data[offset - 1 : offset] == b"\n"
            assert line == data[:offset].count(b"\n") + 1
    if count >= 100:
        assert len(cut_lines(path, 4)[0]) == 4  # short lines: every part wanted is made


def _record(n: int) -> dict[str, Any]:
    return {"id": f"c{n}", "question": f"Question {n}?", "a": "one two" * (n % 3), "b": "three", "topic": f"t{n % 9}"}


@pytest.fixture
def forked(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Checks cut into parts of at least 4 KiB on 3 cores; the forked processes counted."""
    monkeypatch.setattr(items_module, "CHECK_PART_MIN_BYTES", 4096)
    monkeypatch.setattr(parts, "_cores", lambda: 3)
    return counting(monkeypatch, items_module, "Forked")


def _written_lines(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "items.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _refused(path: Path) -> str:
    """The message the check of this file stops with."""
    with pytest.raises(UserError) as raised:
        RunItems(config_of("data=jsonl", f"data.path={path}"))
    return str(raised.value)


def _lines_named(message: str) -> list[int]:
    """The line numbers a message of several problems names, in its order."""
    return [int(problem.strip().split(":")[1]) for problem in message.splitlines()[1:]]


def _one_process_error(path: Path, *overrides: str) -> str:
    with pytest.MonkeyPatch.context() as alone, pytest.raises(UserError) as raised:
        alone.setattr(parts, "_cores", lambda: 1)
        RunItems(config_of("data=jsonl", f"data.path={path}", *overrides))
    return str(raised.value)


def test_a_file_checked_in_parts_names_every_bad_line_of_every_part(tmp_path: Path, forked: list[Any]) -> None:
    """Bad lines in the first, middle and last parts and an id repeated across parts: one error naming exactly
    those lines in order (the repeat with the line of the first), the same message as one process gives."""
    lines = [json.dumps(_record(n)) for n in range(600)]
    bad = {5: "{not json", 250: json.dumps({"id": "x", "question": "q?", "b": "b"}), 599: json.dumps(_record(2))}
    bad[420] = json.dumps({**_record(420), "human": "maybe"})
    for number, line in bad.items():
        lines[number - 1] = line
    message = _refused(_written_lines(tmp_path, lines))
    assert len(forked) == 2
    assert _lines_named(message) == sorted(bad)
    assert "duplicate id 'c2' (first on line 3)" in message.splitlines()[-1]
    assert message == _one_process_error(tmp_path / "items.jsonl")


def test_twenty_problems_in_the_first_part_stop_the_message_as_one_process_does(
    tmp_path: Path, forked: list[Any]
) -> None:
    """More than twenty bad lines, the first twenty in the first part and more in the others: the message names the
    first twenty by line, as one reading that stops there does."""
    lines = [json.dumps(_record(n)) if n % 4 else "[1]" for n in range(600)]
    message = _refused(_written_lines(tmp_path, lines))
    assert len(forked) == 2
    assert _lines_named(message) == list(range(1, 80, 4))
    assert message == _one_process_error(tmp_path / "items.jsonl")


def _bom_file(tmp_path: Path, lines: list[str]) -> Path:
    """The lines as a file with a byte order mark and two blank lines in its middle."""
    lines = [*lines[:300], "", "  ", *lines[300:]]
    path = tmp_path / "items.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + ("\n".join(lines) + "\n").encode())
    return path


def test_a_file_checked_in_parts_gives_one_process_s_items(tmp_path: Path, forked: list[Any]) -> None:
    """A valid file with a byte order mark and blank lines, clustered by a dataset field: checked in three parts,
    it gives the items (and clusters) a check in one process gives, in the file's order."""
    path = _bom_file(tmp_path, [json.dumps(_record(n)) for n in range(600)])
    settings = ("data=jsonl", f"data.path={path}", "bootstrap.cluster=topic")
    in_parts = RunItems(config_of(*settings))
    assert len(forked) == 2
    with pytest.MonkeyPatch.context() as alone:
        alone.setattr(parts, "_cores", lambda: 1)
        one_process = RunItems(config_of(*settings))
    assert len(forked) == 2
    assert len(in_parts) == len(one_process) == 600
    assert in_parts.cluster_values() == one_process.cluster_values()
    assert in_parts.clustering() == one_process.clustering()
    assert [item.id for item in in_parts] == [f"c{n}" for n in range(600)]
    assert list(in_parts) == list(one_process)


def test_when_no_process_can_be_made_the_file_is_checked_in_one(
    tmp_path: Path, forked: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second part's fork fails (EAGAIN): the first is stopped and the whole file is checked here; a bad line
    in the last part is still named."""
    lines = [json.dumps(_record(n)) for n in range(600)]
    lines[590] = "{"
    made = counting(monkeypatch, items_module, "Forked", real=parts.Forked, fail_after=1)
    with pytest.raises(UserError, match=r"items\.jsonl:591: "):
        RunItems(config_of("data=jsonl", f"data.path={_written_lines(tmp_path, lines)}"))
    assert len(made) == 1


# A free (scripted) judge's items are checked as they are judged: each part of the file read once, in its process.


@pytest.fixture
def judged_parts(forked: list[Any], monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Parts of the file cut as for the check; the processes judging them counted."""
    return counting(monkeypatch, free, "PartProcess")


def _one_process_run(run_dir: Path, *settings: str) -> None:
    with pytest.MonkeyPatch.context() as alone:
        alone.setattr(parts, "_cores", lambda: 1)
        run_here(run_dir, *settings)


@pytest.mark.parametrize(
    ("cluster", "question_id", "carried", "clustered"),
    [
        ("topic", None, True, True),
        ("auto", lambda n: f"q{n % 50}", True, True),
        ("auto", lambda n: f"q{n}", True, False),
        ("none", None, False, False),
    ],
)
def test_a_free_judge_checks_the_file_as_it_judges_and_writes_one_process_s_files(
    tmp_path: Path,
    forked: list[Any],
    judged_parts: list[Any],
    cluster: str,
    question_id: Any,
    carried: bool,
    clustered: bool,
) -> None:
    """Three parts, each read once by the process judging it (no check before): every line holds the rule's verdict
    by hand, verdicts.jsonl, ratings.csv and summary.json are one process's, and each line names its item's value of
    the cluster field whenever it has one, as written (auto with ids that never repeat: the run does not cluster, and
    no line written is rewritten to say so)."""
    records = [
        {
            **_record(n),
            **({"question_id": question_id(n)} if question_id else {}),
            "model_a": f"m{n % 3}",
            "model_b": "mz",
        }
        for n in range(600)
    ]
    path = _bom_file(tmp_path, [json.dumps(record) for record in records])
    settings = ("data=jsonl", f"data.path={path}", "judge=longer", f"bootstrap.cluster={cluster}", "report=false")
    in_parts = tmp_path / "parts"
    summary = run_here(in_parts, *settings, f"cache.dir={tmp_path / 'cache'}")
    assert (len(forked), len(judged_parts)) == (0, 2)
    one_process = tmp_path / "one"
    _one_process_run(one_process, *settings, f"cache.dir={tmp_path / 'cache'}")
    lines = verdict_lines(in_parts)
    assert [(line["id"], line["verdict"]) for line in lines] == [(r["id"], longer_by_hand(r)[0]) for r in records]
    assert all(("cluster" in line) is carried for line in lines)
    assert (summary["bootstrap_cluster"] is not None) is clustered
    for name in ("verdicts.jsonl", "ratings.csv"):
        assert (in_parts / name).read_bytes() == (one_process / name).read_bytes()
    theirs = json.loads((one_process / "summary.json").read_text(encoding="utf-8"))
    assert {**summary, "judging_seconds": 0} == {**theirs, "judging_seconds": 0}
    assert summary["n_items"] == 600
    assert not [name for name in os.listdir(in_parts) if ".part" in name or ".bare" in name]


def test_a_free_judge_s_bad_lines_stop_the_run_after_judging_with_one_process_s_message(
    tmp_path: Path, judged_parts: list[Any]
) -> None:
    """Bad lines and a repeated id in different parts, found as they are judged: the run ends with the message the
    check before judging gives (naming exactly the lines made bad, by their numbers), and leaves no verdict file."""
    lines = [json.dumps(_record(n)) for n in range(600)]
    bad = {7: "{", 333: json.dumps({"id": "x", "question": "", "a": "", "b": ""}), 598: json.dumps(_record(10))}
    for number, line in bad.items():
        lines[number - 1] = line
    path = _written_lines(tmp_path, lines)
    settings = ("data=jsonl", f"data.path={path}", "judge=longer", "report=false", f"cache.dir={tmp_path / 'c'}")
    run_dir = tmp_path / "run"
    with pytest.raises(UserError) as raised:
        run_here(run_dir, *settings)
    assert len(judged_parts) == 2
    assert _lines_named(str(raised.value)) == sorted(bad)
    assert str(raised.value) == _one_process_error(path, "judge=longer")
    assert not [name for name in os.listdir(run_dir) if name.startswith("verdicts")]


def test_a_free_judge_s_cluster_field_that_no_item_has_stops_the_run_as_before(
    tmp_path: Path, judged_parts: list[Any]
) -> None:
    """bootstrap.cluster names a field no line has: the run ends with the check's own message, no verdict file."""
    path = _bom_file(tmp_path, [json.dumps(_record(n)) for n in range(600)])
    settings = ("data=jsonl", f"data.path={path}", "judge=longer", "bootstrap.cluster=chapter", "report=false")
    run_dir = tmp_path / "run"
    with pytest.raises(UserError, match="no item has a field 'chapter'") as raised:
        run_here(run_dir, *settings, f"cache.dir={tmp_path / 'c'}")
    assert len(judged_parts) == 2
    with pytest.MonkeyPatch.context() as alone, pytest.raises(UserError) as before:
        alone.setattr(parts, "_cores", lambda: 1)
        run_here(tmp_path / "one", *settings, f"cache.dir={tmp_path / 'c'}")
    assert str(raised.value) == str(before.value)
    assert not [name for name in os.listdir(run_dir) if name.startswith("verdicts")]


def test_when_no_process_can_judge_a_part_the_free_judge_checks_and_judges_the_whole_file_here(
    tmp_path: Path, judged_parts: list[Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every fork fails (EAGAIN): the whole file is checked as it is judged in this process, every line the rule's;
    the progress line ends at the items' count, not the file's lines (two of them blank)."""

    def fails(*args: Any, **kwargs: Any) -> Any:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(free, "PartProcess", fails)
    records = [_record(n) for n in range(600)]
    path = _bom_file(tmp_path, [json.dumps(record) for record in records])
    run_dir = tmp_path / "run"
    run_here(run_dir, "data=jsonl", f"data.path={path}", "judge=longer", "progress=on", f"cache.dir={tmp_path / 'c'}")
    assert [(line["id"], line["verdict"]) for line in verdict_lines(run_dir)] == [
        (r["id"], longer_by_hand(r)[0]) for r in records
    ]
    drawn = capsys.readouterr().err
    assert "600/600 items" in drawn.split("\r")[-1]


def test_a_data_file_changed_while_a_free_judge_reads_it_stops_the_run(
    tmp_path: Path, judged_parts: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file is rewritten while its parts are judged (their places were cut in the old one): the run ends saying
    so, with no verdict file, instead of figures of lines read from two different files."""
    path = _bom_file(tmp_path, [json.dumps(_record(n)) for n in range(600)])
    real = items_module.ItemsCheckedAsJudged.part  # the items of a scripted judge's large file

    def edited_while_read(self: Any, part: Any = None) -> Any:
        path.write_text(path.read_text(encoding="utf-8-sig") + json.dumps(_record(600)) + "\n", encoding="utf-8")
        return real(self, part)

    monkeypatch.setattr(items_module.ItemsCheckedAsJudged, "part", edited_while_read)
    run_dir = tmp_path / "run"
    with pytest.raises(UserError, match="the data file changed after it was checked"):
        run_here(run_dir, "data=jsonl", f"data.path={path}", "judge=longer", f"cache.dir={tmp_path / 'c'}")
    assert not [name for name in os.listdir(run_dir) if name.startswith("verdicts")]
