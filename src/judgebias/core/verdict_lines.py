"""verdicts.jsonl read back: one line as the ItemResult it was written from, for figures computed after the run
(a paired comparison of two runs). Pure: the caller reads the file and names the line of a problem."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from judgebias.core.record import ItemResult
from judgebias.core.style import FEATURES, Style
from judgebias.core.verdict import POSITIONAL_LABELS, Outcome, Positional

OUTCOMES = ("1", "2", "tie", "error")
HUMAN_LABELS = ("1", "2", "tie")


class LineProblem(ValueError):
    """A verdict line that is not what judgebias writes: the field and why."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"field {field!r}: {reason}")
        self.field = field


def result_of_line(line: Mapping[str, Any]) -> ItemResult:
    """The item's row as the run decided it (its calls' texts stay in the line: `raw1`, `raw2`)."""
    call2 = line.get("call2")
    return ItemResult(
        id=_text(line, "id"),
        verdict=cast(Outcome, _choice(line, "verdict", OUTCOMES)),
        call1=cast(Positional, _choice(line, "call1", POSITIONAL_LABELS)),
        call2=None if call2 is None else cast(Positional, _choice(line, "call2", POSITIONAL_LABELS)),
        consistent=_optional_bool(line, "consistent"),
        human=None if line.get("human") is None else _choice(line, "human", HUMAN_LABELS),
        human_votes=tuple(_strings(line, "human_votes")),
        human_voters=tuple(_strings(line, "human_voters")),
        model_a=_optional_text(line, "model_a"),
        model_b=_optional_text(line, "model_b"),
        chars_a=_count(line, "chars_a"),
        chars_b=_count(line, "chars_b"),
        words_a=_count(line, "words_a"),
        words_b=_count(line, "words_b"),
        tokens_a=_count(line, "tokens_a") if "tokens_a" in line else None,
        tokens_b=_count(line, "tokens_b") if "tokens_b" in line else None,
        soft=_optional_number(line, "soft"),
        style_a=_style(line, "style_a"),
        style_b=_style(line, "style_b"),
    )


def _text(line: Mapping[str, Any], name: str) -> str:
    value = line.get(name)
    if not isinstance(value, str) or not value:
        raise LineProblem(name, f"needs a non-empty string, got {value!r}")
    return value


def _optional_text(line: Mapping[str, Any], name: str) -> str | None:
    value = line.get(name)
    if value is not None and not isinstance(value, str):
        raise LineProblem(name, f"needs a string or null, got {value!r}")
    return value


def _choice(line: Mapping[str, Any], name: str, allowed: tuple[str, ...]) -> str:
    value = line.get(name)
    if value not in allowed:
        raise LineProblem(name, f"needs one of {', '.join(allowed)}, got {value!r}")
    return cast(str, value)


def _optional_bool(line: Mapping[str, Any], name: str) -> bool | None:
    value = line.get(name)
    if value is not None and not isinstance(value, bool):
        raise LineProblem(name, f"needs true, false or null, got {value!r}")
    return value


def _count(line: Mapping[str, Any], name: str) -> int:
    value = line.get(name, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise LineProblem(name, f"needs a count (0 or more), got {value!r}")
    return value


def _optional_number(line: Mapping[str, Any], name: str) -> float | None:
    value = line.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise LineProblem(name, f"needs a number or null, got {value!r}")
    return float(value)


def _strings(line: Mapping[str, Any], name: str) -> list[str]:
    value = line.get(name) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise LineProblem(name, f"needs a list of strings, got {value!r}")
    return value


def _style(line: Mapping[str, Any], name: str) -> Style | None:
    value = line.get(name)
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != set(FEATURES):
        raise LineProblem(name, f"needs an object with {', '.join(FEATURES)}, got {value!r}")
    counts = {feature: _count(value, feature) for feature in FEATURES}
    return Style(**counts)
