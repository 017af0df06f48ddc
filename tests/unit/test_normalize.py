"""Answer normalisation before judging, and the formatting recorded for each answer (dataset.normalize_item)."""

from __future__ import annotations

from judgebias.core.item import Item
from judgebias.core.judged import item_result
from judgebias.core.record import CallResult
from judgebias.core.style import Style, style_of, styles_of
from judgebias.io.dataset import normalize_item

FORMATTED = "## Steps\n\n1. **Preheat** the oven.\n2. Bake for *20* minutes."
PLAIN = "Preheat the oven, then bake for 20 minutes."
ITEM = Item("q1", "How do I bake it?", FORMATTED, PLAIN)


def test_answers_stay_as_written_and_their_formatting_is_recorded() -> None:
    """Without normalisation the answers are untouched (the item itself is kept) and each answer's row carries its
    feature counts."""
    item = normalize_item(ITEM, strip=True, truncate_words=None)
    assert item is ITEM
    row = item_result(item, [CallResult("A", "A", False), CallResult("B", "B", False)])
    assert Style(headers=1, list_items=2, bold=1, italic=1) == row.style_a
    assert Style() == row.style_b
    stripped = normalize_item(Item("q1", "Q", f"  {FORMATTED}\n", PLAIN), strip=True, truncate_words=None)
    assert (FORMATTED, Style(headers=1, list_items=2, bold=1, italic=1)) == (stripped.a, stripped.style_a)


def test_strip_markdown_judges_plain_text_but_remembers_the_formatting() -> None:
    """strip_markdown renders a as plain text; style_a still counts the features a was written with."""
    item = normalize_item(ITEM, strip=False, truncate_words=None, strip_markdown=True)
    assert "Steps\n\nPreheat the oven.\nBake for 20 minutes." == item.a
    assert PLAIN == item.b
    assert Style(headers=1, list_items=2, bold=1, italic=1) == item.style_a


def test_strip_then_strip_markdown_then_truncate() -> None:
    """A whole-answer fence goes first (strip), then the markup, then words beyond truncate_words."""
    fenced = Item("q2", "Q", "```\n**Bold** claim with five words\n```", "x")
    item = normalize_item(fenced, strip=True, truncate_words=3, strip_markdown=True)
    assert "Bold claim with" == item.a
    assert Style(bold=1) == item.style_a


def test_two_answers_styled_together_are_styled_as_each_alone() -> None:
    """The pair's one search gives each answer the Style it has alone: plain pairs, a number and its full stop split
    between the two answers (no list item), and markup in either."""
    pairs = [("plain", "words"), ("ends with 1", ". starts with a stop"), ("x", "1. one"), (FORMATTED, PLAIN)]
    pairs += [(PLAIN, "## Heading"), ("a 2", ") b"), ("", "")]
    for a, b in pairs:
        assert styles_of(a, b) == (style_of(a), style_of(b))
    assert styles_of("ends with 1", ". starts with a stop") == (Style(), Style())
