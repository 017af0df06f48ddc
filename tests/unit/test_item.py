"""Item.with_text, the copy a run makes of every item twice: every field carried, whatever fields Item has."""

from __future__ import annotations

import dataclasses
from typing import Any

from judgebias.core.item import Item
from judgebias.core.style import Style


def _filled() -> Item:
    """An item whose every field holds a value of its own (so a field left out of a copy shows)."""
    values: dict[str, Any] = {spec.name: f"value-{number}" for number, spec in enumerate(dataclasses.fields(Item))}
    return Item(**values)


def test_a_copy_with_other_text_keeps_every_other_field() -> None:
    """with_text() is dataclasses.replace of the question, answers and styles, and nothing else changed."""
    item, style = _filled(), Style(headers=2)
    copy = item.with_text("q", "a", "b", style, None)
    assert dataclasses.replace(item, question="q", a="a", b="b", style_a=style, style_b=None) == copy
    assert all(getattr(copy, spec.name) is getattr(item, spec.name) for spec in dataclasses.fields(Item)
               if spec.name not in ("question", "a", "b", "style_a", "style_b"))  # fmt: skip


def test_a_copy_takes_other_extra_fields_only_when_given() -> None:
    """`extra` replaces the item's own dataset fields when given (compare=False: checked by identity)."""
    item, other = _filled(), {"topic": "x"}
    assert item.with_text("q", "", "", None, None).extra is item.extra
    assert item.with_text("q", "", "", None, None, other).extra is other
