"""How figures read in text: a rate as a percent, an interval as [low, high] in percent points."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def pct(value: Any, digits: int = 1) -> str:
    """A rate in [0, 1] as a percent ("n/a" when it could not be measured)."""
    return "n/a" if value is None else f"{100 * value:.{digits}f}%"


def points(value: Any, digits: int = 1) -> str:
    """A rate in [0, 1] as percent points without the sign, for table cells ("" when it could not be measured)."""
    return "" if value is None else f"{100 * float(value):.{digits}f}"


def ci_text(interval: Sequence[float | None] | None, digits: int = 1) -> str:
    """An interval as " [low, high]" in percent points, or "" when there is none."""
    if not interval or interval[0] is None or interval[1] is None:
        return ""
    return f" [{100 * interval[0]:.{digits}f}, {100 * interval[1]:.{digits}f}]"
