"""A large data file's check cut into parts, each later part read in a forked process (engine.items, engine.parts).

Oracles from outside the code: where each part starts is compared with the bytes themselves (the byte before it is
a line end, and its line number is the count of line ends before it, counted here by bytes.count); the problems a
checked file gives are the lines this test made bad, by their numbers, and the message is the one a check in one
process gives. The processes are real forks; only the sizes are lowered so that a small file is cut."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import pytest

from judgebias.core.errors import UserError
from judgebias.engine import items as items_module
from judgebias.engine import parts
from judgebias.engine.items import RunItems
from judgebias.io.dataset import START, cut_lines
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
    for wanted in range(1, 7):
        cuts = cut_lines(path, wanted)
        assert 1 <= len(cuts) <= wanted
        assert cuts[0][0] == START
        assert cuts[-1][1] == len(data)
        for (place, stop), (next_place, _) in itertools.pairwise(cuts):
            assert stop == next_place[0] > place[0]
        for (offset, line), _ in cuts[1:]:
            assert data[offset - 1 : offset] == b"\n"
            assert line == data[:offset].count(b"\n") + 1
    if count >= 100:
        assert len(cut_lines(path, 4)) == 4  # short lines: every part wanted is made


def _record(n: int) -> dict[str, Any]:
    return {"id": f"c{n}", "question": f"Question {n}?", "a": "one two" * (n % 3), "b": "three", "topic": f"t{n % 9}"}


@pytest.fixture
def forked(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Checks cut into parts of at least 4 KiB on 3 cores; the forked processes counted."""
    monkeypatch.setattr(items_module, "CHECK_PART_MIN_BYTES", 4096)
    monkeypatch.setattr(parts, "_cores", lambda: 3)
    found: list[Any] = []
    real = items_module.Forked

    def counted(*args: Any, **kwargs: Any) -> Any:
        found.append(real(*args, **kwargs))
        return found[-1]

    monkeypatch.setattr(items_module, "Forked", counted)
    return found


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
    path = tmp_path / "items.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(UserError) as raised:
        RunItems(config_of("data=jsonl", f"data.path={path}"))
    assert len(forked) == 2
    problems = str(raised.value).splitlines()[1:]
    assert [int(problem.strip().split(":")[1]) for problem in problems] == sorted(bad)
    assert "duplicate id 'c2' (first on line 3)" in problems[-1]
    assert str(raised.value) == _one_process_error(path)


def test_twenty_problems_in_the_first_part_stop_the_message_as_one_process_does(
    tmp_path: Path, forked: list[Any]
) -> None:
    """More than twenty bad lines, the first twenty in the first part and more in the others: the message names the
    first twenty by line, as one reading that stops there does."""
    lines = [json.dumps(_record(n)) if n % 4 else "[1]" for n in range(600)]
    path = tmp_path / "items.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(UserError) as raised:
        RunItems(config_of("data=jsonl", f"data.path={path}"))
    assert len(forked) == 2
    problems = str(raised.value).splitlines()[1:]
    assert [int(problem.strip().split(":")[1]) for problem in problems] == list(range(1, 80, 4))
    assert str(raised.value) == _one_process_error(path)


def test_a_run_checked_in_parts_judges_the_file_as_one_process(tmp_path: Path, forked: list[Any]) -> None:
    """A valid file with a byte order mark and blank lines, clustered by a dataset field: checked in three parts,
    then judged; verdicts.jsonl (each line's cluster among it) is one process's, byte for byte."""
    lines = [json.dumps(_record(n)) for n in range(600)]
    lines[300:300] = ["", "  "]
    path = tmp_path / "items.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + ("\n".join(lines) + "\n").encode())
    settings = ("data=jsonl", f"data.path={path}", "judge=longer", "bootstrap.cluster=topic", "report=false")
    in_parts = tmp_path / "parts"
    run_here(in_parts, *settings, f"cache.dir={tmp_path / 'cache'}")
    assert len(forked) == 2
    one_process = tmp_path / "one"
    with pytest.MonkeyPatch.context() as alone:
        alone.setattr(parts, "_cores", lambda: 1)
        run_here(one_process, *settings, f"cache.dir={tmp_path / 'cache'}")
    assert len(forked) == 2
    assert (in_parts / "verdicts.jsonl").read_bytes() == (one_process / "verdicts.jsonl").read_bytes()
    assert [line["cluster"] for line in verdict_lines(in_parts)] == [f"t{n % 9}" for n in range(600)]


def test_when_no_process_can_be_made_the_file_is_checked_in_one(
    tmp_path: Path, forked: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second part's fork fails (EAGAIN): the first is stopped and the whole file is checked here; a bad line
    in the last part is still named."""
    lines = [json.dumps(_record(n)) for n in range(600)]
    lines[590] = "{"
    path = tmp_path / "items.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    real = parts.Forked

    def second_fails(*args: Any, **kwargs: Any) -> Any:
        if forked:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        forked.append(real(*args, **kwargs))
        return forked[-1]

    monkeypatch.setattr(items_module, "Forked", second_fails)
    with pytest.raises(UserError, match=r"items\.jsonl:591: "):
        RunItems(config_of("data=jsonl", f"data.path={path}"))
    assert len(forked) == 1
