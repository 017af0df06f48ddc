"""Atomic writes: a temp file beside the target, renamed over it, so a reader never sees half a file."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any


def write_text_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` atomically (a temp file renamed)."""
    # A temp name of its own per write: two processes updating one file (a shared batch ledger) never share it.
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as temp:
            temp.write(text)  # written as given: CSV rows keep their \r\n
            os.fchmod(temp.fileno(), 0o666 & ~current_umask())  # mkstemp's 0600 -> what open() would have made
        os.replace(name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise


def current_umask() -> int:
    """The process's umask, read without changing it (Linux); elsewhere set and restored at once."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_json(path: Path, value: Any) -> None:
    """Write JSON atomically, indented, non-ASCII kept as is."""
    write_text_atomic(path, json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def write_csv(path: Path, columns: list[str], rows: Iterable[Mapping[str, Any]]) -> None:
    """Write a CSV table atomically: a header of `columns`, then each row's values (other keys ignored)."""
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    write_text_atomic(path, text.getvalue())
