"""Atomic writes: a temp file beside the target, renamed over it, so a reader never sees half a file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def write_text_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` atomically (a temp file renamed)."""
    temp = path.with_name(path.name + ".tmp")
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)


def write_json(path: Path, value: Any) -> None:
    """Write JSON atomically, indented, non-ASCII kept as is."""
    write_text_atomic(path, json.dumps(value, indent=2, ensure_ascii=False) + "\n")
