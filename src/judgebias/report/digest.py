"""What the run report needs from verdicts.jsonl, read in one streaming pass.

The pictures count every line (verdicts by length difference, by formatting difference, against the human
label); only the first rows are kept whole for the table, so a 50,000-item run renders in bounded memory.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

MAX_TABLE_ROWS = 2000
LENGTH_EDGES = (30, 100, 300, 1000)  # |chars a - chars b| bin edges, mirrored for a shorter / a longer
STYLE_EDGES = (0, 2, 5)  # |formatting a - formatting b| bin edges, in markdown elements (headers, items, ...)


def _bins(edges: tuple[int, ...]) -> list[Counter[str]]:
    return [Counter() for _ in range(2 * len(edges) + 1)]


@dataclass
class VerdictDigest:
    """Counts over every row of verdicts.jsonl, and the first rows in full."""

    total: int = 0
    rows: list[dict[str, Any]] = field(default_factory=list)
    length_bins: list[Counter[str]] = field(default_factory=lambda: _bins(LENGTH_EDGES))
    style_bins: list[Counter[str]] = field(default_factory=lambda: _bins(STYLE_EDGES))
    confusion: Counter[tuple[str, str]] = field(default_factory=Counter)
    has_lengths: bool = False
    has_styles: bool = False  # the lines carry style_a/style_b (formatting counts of each answer)
    unreadable: int = 0
    found: bool = True


def read_verdicts(path: Path, limit: int = MAX_TABLE_ROWS) -> VerdictDigest:
    """Stream verdicts.jsonl once: pictures from all rows, the first `limit` rows kept for the table."""
    digest = VerdictDigest()
    if not path.exists():
        digest.found = False
        return digest
    with path.open(encoding="utf-8") as file:
        for line in file:
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                digest.unreadable += 1
                continue
            if not isinstance(row, dict):
                digest.unreadable += 1
                continue
            add_row(digest, cast(dict[str, Any], row), keep=len(digest.rows) < limit)
    return digest


def add_row(digest: VerdictDigest, row: dict[str, Any], *, keep: bool) -> None:
    """Count one verdicts.jsonl line into the digest (and keep it for the table when `keep`)."""
    digest.total += 1
    verdict = str(row.get("verdict"))
    chars_a, chars_b = _int(row.get("chars_a")), _int(row.get("chars_b"))
    digest.has_lengths |= bool(chars_a or chars_b)
    digest.length_bins[difference_bin(chars_a - chars_b, LENGTH_EDGES)][verdict] += 1
    style_a, style_b = styles(row)
    if style_a is not None and style_b is not None:
        digest.has_styles = True
        digest.style_bins[difference_bin(style_a - style_b, STYLE_EDGES)][verdict] += 1
    human = row.get("human")
    if human is not None:
        digest.confusion[(str(human), verdict)] += 1
    if keep:
        digest.rows.append(row)


def styles(row: dict[str, Any]) -> tuple[int | None, int | None]:
    """How formatted answers a and b are: their markdown elements (`style_a`/`style_b`; None: not recorded)."""
    return formatting(row.get("style_a")), formatting(row.get("style_b"))


def formatting(style: Any) -> int | None:
    """How formatted an answer is: its markdown elements counted together (None: not recorded)."""
    if not isinstance(style, Mapping):
        return None
    return sum(_int(count) for count in style.values())


def difference_bin(difference: int, edges: tuple[int, ...]) -> int:
    """Bin of a - b: the middle bin is 'about equal', lower bins a smaller, higher bins a larger."""
    step = sum(abs(difference) > edge for edge in edges)
    return len(edges) + (step if difference > 0 else -step)


def length_label(index: int) -> str:
    """'a shorter by 100–300 chars', 'within ±30 chars', 'a longer by >1000 chars'."""
    middle = f"within ±{LENGTH_EDGES[0]} chars"
    return _bin_label(index, LENGTH_EDGES, ("a shorter", "a longer"), "chars", middle, whole=False)


def style_label(index: int) -> str:
    """'equally formatted', 'a less formatted by 1–2 elements', 'a more formatted by >5 elements'."""
    sides = ("a less formatted", "a more formatted")
    return _bin_label(index, STYLE_EDGES, sides, "elements", "equally formatted", whole=True)


def _bin_label(
    index: int, edges: tuple[int, ...], sides: tuple[str, str], unit: str, middle: str, *, whole: bool
) -> str:
    """The label of a difference bin; `whole` counts name their first value (3–5 rather than 2–5)."""
    step = index - len(edges)
    if step == 0:
        return middle
    side = sides[1] if step > 0 else sides[0]
    size = abs(step)
    if size == len(edges):
        return f"{side} by >{edges[-1]} {unit}"
    low = edges[size - 1] + 1 if whole else edges[size - 1]
    return f"{side} by {low}–{edges[size]} {unit}"


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
