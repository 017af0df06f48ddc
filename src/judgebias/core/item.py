"""The item: one question and two answers to compare, as read from a dataset line. Pure data."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from judgebias.core.frozen import slot_filler
from judgebias.core.style import Style


@dataclass(frozen=True, slots=True)
class Item:
    """One pairwise comparison. `a` is ans1 (model 1), `b` is ans2; `extra` keeps every other field.

    Slotted: a run keeps every item in memory, and a per-instance dict cost more than the item's own fields.
    """

    id: str
    question: str
    a: str
    b: str
    human: str | None = None  # "1" | "2" | "tie"
    human_votes: tuple[str, ...] = ()
    human_voters: tuple[str, ...] = ()  # who gave each of human_votes (empty when the votes are anonymous)
    model_a: str | None = None
    model_b: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    style_a: Style | None = None  # formatting of a as written (kept when normalising changed a; None: read from a)
    style_b: Style | None = None
    tokens_a: int | None = None  # a's length in tokens of data.normalize.tokenizer (None: words, not counted)
    tokens_b: int | None = None

    def with_text(
        self,
        question: str,
        a: str,
        b: str,
        style_a: Style | None,
        style_b: Style | None,
        extra: dict[str, Any] | None = None,
    ) -> Item:
        """This item with another question and answers (normalised, or dropped), their recorded formatting, and
        `extra` instead of its own when given.

        Built field by field: `dataclasses.replace` introspects the class on every call, and a run makes two
        copies of each item (a field added to the class must be added here too: tests/unit/test_item.py fails
        until it is)."""
        return Item(
            id=self.id,
            question=question,
            a=a,
            b=b,
            human=self.human,
            human_votes=self.human_votes,
            human_voters=self.human_voters,
            model_a=self.model_a,
            model_b=self.model_b,
            extra=self.extra if extra is None else extra,
            style_a=style_a,
            style_b=style_b,
            tokens_a=self.tokens_a,
            tokens_b=self.tokens_b,
        )


# Item(...) without the frozen class's per-field object.__setattr__ calls (every field by keyword): a million items
# are read in a run (core.frozen).
new_item = slot_filler(Item)


def shared_name(name: str | None) -> str | None:
    """One string object per distinct name (a model, an outcome): a run keeps every item and call in memory, each
    naming one of a few models, and every line or reply decoded brings its own copy of the name."""
    return None if name is None else sys.intern(name)
