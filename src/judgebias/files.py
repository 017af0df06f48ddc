"""Atomic writes: a temp file beside the target, renamed over it, so a reader never sees half a file."""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any


def write_text_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` atomically (a temp file renamed)."""
    temp = path.with_name(path.name + ".tmp")
    temp.write_text(text, encoding="utf-8", newline="")  # written as given: CSV rows keep their \r\n
    os.replace(temp, path)


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
