"""Item.with_text, the copy a run makes of every item twice: every field carried, whatever fields Item has."""

from __future__ import annotations

import dataclasses

from judgebias.core.item import Item
from judgebias.core.style import Style
from tests.helpers import filled


def test_a_copy_with_other_text_keeps_every_other_field() -> None:
    """with_text() is dataclasses.replace of the question, answers and styles, and nothing else changed."""
    item, style = filled(Item), Style(headers=2)
    copy = item.with_text("q", "a", "b", style, None)
    assert dataclasses.replace(item, question="q", a="a", b="b", style_a=style, style_b=None) == copy
    assert all(getattr(copy, spec.name) is getattr(item, spec.name) for spec in dataclasses.fields(Item)
               if spec.name not in ("question", "a", "b", "style_a", "style_b"))  # fmt: skip


def test_a_copy_takes_other_extra_fields_only_when_given() -> None:
    """`extra` replaces the item's own dataset fields when given (compare=False: checked by identity)."""
    item, other = filled(Item), {"topic": "x"}
    assert item.with_text("q", "", "", None, None).extra is item.extra
    assert item.with_text("q", "", "", None, None, other).extra is other
