"""A part of a run judged in a forked process (engine.parts.PartProcess): its result, its error, its death, its
stop. Real forks; what the part does is written here."""

from __future__ import annotations

import collections
import os
import time
from pathlib import Path
from typing import Any

import pytest

from judgebias.core.errors import UserError
from judgebias.engine.parts import PartJudged, PartProcess, _cores
from judgebias.figures.rows import Rows


def test_a_part_s_result_comes_back_with_its_lines_file(tmp_path: Path) -> None:
    """The part writes its file and counts its items in the shared count; its result arrives whole."""

    def judge(lines: Path, done: Any) -> PartJudged:
        lines.write_text("one\ntwo\n", encoding="utf-8")
        done.value = 2
        return PartJudged({"j": Rows()}, None, collections.Counter({"failed": 1}), 2, 4, 1)

    part = PartProcess(judge, tmp_path / "verdicts.jsonl.part.1")
    judged = part.result()
    assert (judged.lines, judged.calls, judged.cached, judged.failures["failed"]) == (2, 4, 1, 1)
    assert part.done == 2
    assert (tmp_path / "verdicts.jsonl.part.1").read_text(encoding="utf-8") == "one\ntwo\n"
    part.stop()
    assert not [path.name for path in tmp_path.iterdir()]  # its lines and its rows' file


def _raises_a_user_error(lines: Path, done: Any) -> PartJudged:
    raise UserError("items.jsonl: the data file changed after it was checked")


def _dies(lines: Path, done: Any) -> PartJudged:
    os._exit(3)


@pytest.mark.parametrize(
    ("judge", "raised", "words"),
    [
        (_raises_a_user_error, UserError, "the data file changed after it was checked"),
        (_dies, RuntimeError, "exit code 3"),
    ],
    ids=["error", "death"],
)
def test_a_part_s_error_is_raised_here_in_its_own_words_and_its_death_names_its_exit(
    tmp_path: Path, judge: Any, raised: type[BaseException], words: str
) -> None:
    """A user's mistake met in the part (the file changed) is raised here as the same UserError; a part that dies
    is an error naming its exit code, not a hang."""
    part = PartProcess(judge, tmp_path / "p")
    with pytest.raises(raised, match=words):
        part.result()
    part.stop()


def test_stopping_a_running_part_ends_it_and_removes_its_lines(tmp_path: Path) -> None:
    """The run stopped (Ctrl-C here): the part still judging is killed, its half-written file removed."""

    def judge(lines: Path, done: Any) -> PartJudged:
        lines.write_text("half\n", encoding="utf-8")
        time.sleep(60)
        raise AssertionError("not stopped")

    part = PartProcess(judge, tmp_path / "p")
    deadline = time.monotonic() + 10
    while not (tmp_path / "p").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.monotonic()
    part.stop()
    assert time.monotonic() - started < 5
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize(
    ("cpu_max", "expected"),
    [("max 100000", None), ("150000 100000", 2), ("50000 100000", 1), ("garbled", None)],
    ids=["no quota", "1.5 cores", "half a core", "unreadable"],
)
def test_a_container_s_cpu_quota_bounds_the_parts(tmp_path: Path, cpu_max: str, expected: int | None) -> None:
    """cgroup v2 cpu.max (quota and period in microseconds) as a container sets it: a quota of 1.5 cores makes 2
    parts at most, half a core 1; no quota (or a file that cannot be read) leaves the cores the process is pinned
    to."""
    quota = tmp_path / "cpu.max"
    quota.write_text(cpu_max + "\n", encoding="ascii")
    pinned = len(os.sched_getaffinity(0))
    assert _cores(quota) == (pinned if expected is None else min(pinned, expected))
