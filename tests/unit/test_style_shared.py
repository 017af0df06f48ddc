"""Style counts written per answer: the verdicts.jsonl object carries every feature, shared objects stay apart."""

from __future__ import annotations

import dataclasses

from judgebias.core.style import FEATURES, Style, style_of


def test_the_written_object_carries_every_feature_in_order() -> None:
    """as_dict() holds each field of Style under its name, in FEATURES order, whatever fields Style has."""
    style = Style(*range(1, len(dataclasses.fields(Style)) + 1))
    assert (dataclasses.asdict(style), list(FEATURES)) == (style.as_dict(), list(style.as_dict()))
    assert sum(range(1, len(FEATURES) + 1)) == style.total


def test_answers_with_the_same_counts_share_one_object_and_others_do_not() -> None:
    """Two plain answers get one shared Style; a formatted answer gets its own counts, unchanged by the sharing."""
    plain, other_plain, bold = style_of("just text"), style_of("other text"), style_of("a **strong** word")
    assert plain is other_plain
    assert (Style(), Style(bold=1)) == (plain, bold)
