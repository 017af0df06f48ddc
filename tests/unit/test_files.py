"""Atomic writes: a reader never sees half a file, and writers of one file never trip over each other."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

from judgebias.io.files import write_json


def test_concurrent_writers_of_one_file_never_fail_or_tear_it(tmp_path: Path) -> None:
    """Many writers replacing one file at once (a shared batch ledger) all succeed and leave whole JSON."""
    target = tmp_path / "ledger.json"
    errors: list[BaseException] = []

    def write(writer: int) -> None:
        try:
            for round_ in range(40):
                write_json(target, {"writer": writer, "round": round_, "pad": "x" * 4096})
        except BaseException as error:  # collected: an exception in a thread would not fail the test by itself
            errors.append(error)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert [] == errors
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
