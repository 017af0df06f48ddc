"""Atomic writes: a reader never sees half a file, and writers of one file never trip over each other."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from judgebias.io.files import write_json
from tests.helpers import in_threads


def test_concurrent_writers_of_one_file_never_fail_or_tear_it(tmp_path: Path) -> None:
    """Many writers replacing one file at once (a shared batch ledger) all succeed and leave whole JSON."""
    target = tmp_path / "ledger.json"

    def write(writer: int) -> None:
        for round_ in range(40):
            write_json(target, {"writer": writer, "round": round_, "pad": "x" * 4096})

    assert [] == in_threads(write, 8)
    assert 39 == json.loads(target.read_text(encoding="utf-8"))["round"]
    assert [target] == list(tmp_path.iterdir())  # no temp file left behind


def test_atomic_writes_follow_the_umask_like_any_other_file(tmp_path: Path) -> None:
    """A file written atomically gets the mode a plain open() would give it under the umask, not mkstemp's 0600."""
    previous = os.umask(0o027)
    try:
        write_json(tmp_path / "summary.json", {"n": 1})
        (tmp_path / "plain.jsonl").write_text("{}\n", encoding="utf-8")
    finally:
        os.umask(previous)

    modes = {stat.S_IMODE((tmp_path / name).stat().st_mode) for name in ("summary.json", "plain.jsonl")}
    assert {0o640} == modes
