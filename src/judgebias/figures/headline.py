"""The headline: the run's win rate said with the names of the two models, from the side the user reports.

Pure logic. The items say which model answered `a` and `b` (model_a/model_b; data.names overrides them); a side
is reported as its own win rate: b's is 1 - a's, its interval a's mirrored (a tie counts half to each side, so
the two always sum to one). Reporting the other side is a reading of the same verdicts: no call is sent again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from judgebias.core.summary import Headline
from judgebias.figures.catalogue import CORRECTED_WIN_RATE, WIN_RATE
from judgebias.figures.formatting import ci_text, pct
from judgebias.figures.rows import Rows

# The figures a headline reports from its side: figure -> (the headline's key for its value, for its interval).
SIDED = {WIN_RATE.name: (WIN_RATE.name, "ci"), CORRECTED_WIN_RATE.name: (CORRECTED_WIN_RATE.name, "corrected_ci")}


def names_of(rows: Rows, given_a: str | None, given_b: str | None) -> tuple[str, str]:
    """What the headline calls each side: data.names when given, else the model every item names for it, else
    the side's letter (items that name several models for a side say nothing about the side as a whole)."""
    models_a = {kind.model_a for kind in rows.kinds}
    models_b = {kind.model_b for kind in rows.kinds}
    name_a = given_a or _only(models_a) or "a"
    name_b = given_b or _only(models_b) or "b"
    if name_a == name_b:  # one model on both sides (two prompts of one model): the sides' letters tell them apart
        name_a, name_b = f"{name_a} (a)", f"{name_b} (b)"
    return name_a, name_b


def _only(values: set[str | None]) -> str | None:
    (value,) = values if len(values) == 1 else (None,)
    return value


def headline(figures: Mapping[str, Any], names: tuple[str, str], side: str) -> Headline:
    """The side's win rate and interval with both names, and the sentence that says it; the people's number beside
    it when labels corrected the figure."""
    name, other = names if side == "a" else names[::-1]
    rate = _as_side(figures.get(WIN_RATE.name), side)
    interval = _interval_as_side((figures.get("ci") or {}).get(WIN_RATE.name), side)
    said = Headline(side=side, name=name, other=other, win_rate=rate, ci=interval)
    text = f"{name} vs {other}: {name} wins {pct(rate)}{ci_text(interval)}"
    corrected = _as_side(figures.get("corrected_win_rate"), side)
    if corrected is not None:
        corrected_ci = _interval_as_side((figures.get("ci") or {}).get("corrected_win_rate"), side)
        said["corrected_win_rate"] = corrected
        said["corrected_ci"] = corrected_ci
        text += f"; people say {pct(corrected)}{ci_text(corrected_ci)}"
    said["text"] = text
    return said


def _as_side(rate: Any, side: str) -> float | None:
    if rate is None:
        return None
    return float(rate) if side == "a" else round(1.0 - float(rate), 12)


def _interval_as_side(interval: Sequence[float | None] | None, side: str) -> list[float] | None:
    if not interval or interval[0] is None or interval[1] is None:
        return None
    low, high = float(interval[0]), float(interval[1])
    return [low, high] if side == "a" else [round(1.0 - high, 12), round(1.0 - low, 12)]


def seen_from_side(summary: Mapping[str, Any]) -> dict[str, Any]:
    """A summary whose win rates (the judge's and the people's, with their intervals) are the headline side's: a's
    as written, b's with side=b; for the tables that show one number a run."""
    said = summary.get("headline") or {}
    seen = dict(summary)
    if said.get("side") != "b":
        return seen
    intervals = dict(seen.get("ci") or {})
    for name, (value_key, ci_key) in SIDED.items():
        if name in seen and value_key in said:
            seen[name] = said[value_key]
            intervals[name] = said.get(ci_key)
    seen["ci"] = intervals
    return seen


def models_text(summary: Mapping[str, Any]) -> str:
    """ "bot-v2 vs bot-v1" when the run's headline names its models ("" when it only knows a and b)."""
    said = summary.get("headline") or {}
    name, other = said.get("name"), said.get("other")
    return f"{name} vs {other}" if name and other and {name, other} != {"a", "b"} else ""
