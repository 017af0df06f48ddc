"""Atomic writes (a temp file beside the target, renamed over it, so a reader never sees half a file), and reading a
text file the user named with a one-line error when it cannot be read."""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from judgebias.core.errors import RunFilesUnwritable, UserError


def read_user_text(path: Path, what: str = "file", *, expected: str | None = None) -> str:
    """The text of a file the user named (UTF-8, a byte order mark allowed), or a one-line UserError: no such
    `what`, a folder instead of an `expected` (default: `what`), or not UTF-8 (with the first bad byte)."""
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise UserError(f"{path}: no such {what}") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a folder, not a {expected or what}") from None
    except UnicodeDecodeError as error:
        raise UserError(f"{path}: not UTF-8 text (byte {error.start + 1}): save the {what} as UTF-8") from None


KEPT = "every whole verdict line decided so far is kept in verdicts.jsonl.part and every reply in the cache"
_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def unwritable(path: Path, error: OSError, kept: str = KEPT, *, doing: str = "") -> RunFilesUnwritable:
    """The one line a run ends with when a file of its folder cannot be written (`kept`: what is safe; `doing`:
    what the run was doing, when writing the file does not say it)."""
    full = error.errno in _FULL
    reason = "no space left on its disk" if full else (error.strerror or str(error))
    fix = "make room there" if full else "make it writable"
    return RunFilesUnwritable(
        f"cannot write {path.name} in {path.parent}{doing} ({reason}): {kept}; {fix} (or set hydra.run.dir=... "
        "elsewhere) and rerun the same command: nothing is paid twice"
    )


def keep_whole_lines(path: Path, at_most: int | None = None) -> None:
    """Cut `path` (a JSONL file a full disk stopped mid-write) back to its last whole line, or to `at_most` bytes
    when that is shorter (the size it had before a failed append): what is left is a whole-line prefix."""
    with contextlib.suppress(OSError), path.open("r+b") as file:
        size = file.seek(0, os.SEEK_END) if at_most is None else min(at_most, file.seek(0, os.SEEK_END))
        end = size
        while end > 0:
            start = max(0, end - 65536)
            file.seek(start)
            chunk = file.read(end - start)
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                end = start + newline + 1
                break
            end = start
        file.truncate(end)


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
    """Write JSON atomically, indented, non-ASCII kept as is; strict JSON (a NaN or infinity raises, never `NaN`)."""
    write_text_atomic(path, json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False) + "\n")


def write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """One JSON object per line, written atomically, non-ASCII kept as is; strict JSON as in write_json."""
    write_text_atomic(path, "".join(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n" for row in rows))


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # a spreadsheet runs a cell starting so as a formula


def spreadsheet_safe(value: Any) -> Any:
    """A CSV cell a spreadsheet shows as text: a string that would start a formula (`=HYPERLINK(...)`, a model
    name of a server's choosing) gets a leading apostrophe; numbers, and strings that are numbers, stay as they are."""
    if not isinstance(value, str) or not value.startswith(FORMULA_STARTS):
        return value
    try:
        float(value)
    except ValueError:
        return "'" + value
    return value


def write_csv(path: Path, columns: list[str], rows: Iterable[Mapping[str, Any]]) -> None:
    """Write a CSV table atomically: a header of `columns`, then each row's values (other keys ignored), every
    cell that a spreadsheet would run as a formula escaped."""
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    writer.writerows({name: spreadsheet_safe(row.get(name)) for name in columns} for row in rows)
    write_text_atomic(path, text.getvalue())
