"""The rows the metrics keep: every field of a call and of a row survives dropping the reply texts."""

from __future__ import annotations

import dataclasses
from typing import Any

from judgebias.core.record import CallResult, ItemResult


def filled(cls: type[Any], **given: Any) -> Any:
    """An instance whose every field holds a value of its own (so a field left out of a copy shows)."""
    values: dict[str, Any] = {}
    for number, spec in enumerate(dataclasses.fields(cls)):
        values[spec.name] = given.get(spec.name, f"value-{number}")
    return cls(**values)


def test_a_call_without_its_reply_keeps_every_other_field() -> None:
    """without_reply() is the call with raw=None and nothing else changed, whatever fields CallResult has."""
    call = filled(CallResult)
    assert dataclasses.replace(call, raw=None) == call.without_reply()


def test_a_row_without_replies_keeps_every_other_field() -> None:
    """without_replies() is the row with each call's raw=None and nothing else changed."""
    row = filled(ItemResult, calls=(filled(CallResult), filled(CallResult, raw="other")))
    expected = dataclasses.replace(row, calls=tuple(dataclasses.replace(c, raw=None) for c in row.calls))
    actual = row.without_replies()
    assert (expected, expected.calls) == (actual, actual.calls)  # `calls` is left out of ItemResult's equality
