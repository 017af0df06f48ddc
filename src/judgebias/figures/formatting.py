"""How figures read in text: a rate as a percent, an interval as [low, high] in percent points, a rating to the
digit its interval supports."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

SMALLEST_P = 1e-300  # a p below this prints as a bound: a float of 0 is no probability a test can give


def p_text(p: float | None) -> str:
    """A p-value as printed: three significant digits, a bound below the smallest a float holds reliably."""
    if p is None:
        return ""
    if p < SMALLEST_P:
        return f"p < {SMALLEST_P:.0e}"
    return f"p = {p:.3g}"


def pct(value: Any, digits: int = 1) -> str:
    """A rate in [0, 1] as a percent ("n/a" when it could not be measured)."""
    return "n/a" if value is None else f"{100 * value:.{digits}f}%"


def points(value: Any, digits: int = 1) -> str:
    """A rate in [0, 1] as percent points without the sign, for table cells ("" when it could not be measured)."""
    return "" if value is None else f"{100 * float(value):.{digits}f}"


def counted(n: Any, word: str, plural: str | None = None) -> str:
    """'1 tie', '3 ties', '0 ties': a count with its noun in the number it takes."""
    return f"{n} {word if n == 1 else plural or word + 's'}"


TOO_FEW_RESAMPLES = "drawn from only"  # opens the reason of an interval too few resamples made narrow


def ci_text(interval: Sequence[float | None] | None, digits: int = 1, why: str | None = None) -> str:
    """An interval as " [low, high]" in percent points, or "" when there is none.

    `why` (the summary's ci_degenerate reason) labels a zero-width interval, which is no sign of precision.
    """
    if not interval or interval[0] is None or interval[1] is None:
        return ""
    text = f" [{100 * interval[0]:.{digits}f}, {100 * interval[1]:.{digits}f}]"
    return f"{text} ({zero_width_mark(why)}: {why})" if why else text


def zero_width_mark(why: str) -> str:
    """What an interval of no width is called: "zero width" when the data cannot vary the figure, "no interval"
    when too few resamples drew it (one draw has no width, whatever the data)."""
    return "no interval" if why.startswith(TOO_FEW_RESAMPLES) else "zero width"


def supported_step(low: float | None, high: float | None) -> float | None:
    """The rounding step an interval supports: the power of ten of its half-width's first digit (None: no width)."""
    # An interval 190 points wide (half-width 95) supports tens: 1023.456 [928.1, 1118.3] reads 1020 [930, 1120].
    if low is None or high is None or not high - low > 0:
        return None
    return float(10.0 ** math.floor(math.log10((high - low) / 2)))


def round_to(value: float | None, step: float | None) -> float | None:
    """`value` rounded to a multiple of `step` (unchanged without a step)."""
    if value is None or step is None:
        return value
    places = max(0, -math.floor(math.log10(step)))
    return round(round(value / step) * step, places)


def step_decimals(step: float | None, default: int = 3) -> int:
    """How many decimals a number rounded to `step` shows."""
    return default if step is None else max(0, -math.floor(math.log10(step)))


def supported_ratings(row: Mapping[str, Any]) -> dict[str, Any]:
    """A ratings row with rating/low/high (and style_*) rounded to what each interval supports, the steps added."""
    out = dict(row)
    for prefix in ("", "style_", "people_"):
        if prefix == "people_" and "people_rating" not in row:
            continue
        step = supported_step(row.get(f"{prefix}low"), row.get(f"{prefix}high"))
        for name in (f"{prefix}rating", f"{prefix}low", f"{prefix}high"):
            out[name] = round_to(row.get(name), step)
        out[f"{prefix}rounded_to"] = step
    return out
