"""Prompt rendering: the rubric's templates filled with one item in one order, answers fenced.

Pure logic. The fence carries a nonce derived from the item, so an answer cannot close its own block early
(it would have to contain a hash of itself), and the same item always renders to the same messages (stable
cache keys).
"""

from __future__ import annotations

import functools
import hashlib
import re
from typing import NamedTuple

from judgebias.core.item import Item

TAG_ALPHABET = "CDFGHJKLMNPQRSTVWXZ"
PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
PLACEHOLDERS = ("question", "context", "first", "second", "label_first", "label_second", "tie_label")


class Shown(NamedTuple):
    """What the judge is shown in one call: answers in display order and their labels (a named tuple, as Request)."""

    order: int  # 1 = a shown first, 2 = b shown first
    first: str
    second: str
    label_first: str
    label_second: str

    def labels(self, tie_label: str) -> tuple[str, str, str]:
        """The words offered to the judge for the first shown answer, the second, and a tie."""
        return self.label_first, self.label_second, tie_label

    def positions(self, tie_label: str) -> dict[str, str]:
        """Each offered word -> the positional reply it stands for: "A" (first shown), "B" (second shown), "tie"."""
        return {self.label_first: "A", self.label_second: "B", tie_label: "tie"}

    def label_of(self, position: str, tie_label: str) -> str:
        """The offered word for a positional choice ("A", "B" or "tie"): the inverse of `positions`."""
        if position == "A":
            return self.label_first
        if position == "B":
            return self.label_second
        if position == "tie":
            return tie_label
        raise KeyError(position)


def labels_for(style: str, item_id: str, order: int) -> tuple[str, str]:
    """The two labels shown: fixed letters or numbers, or neutral tags drawn per call (seeded by item and order)."""
    if style == "letters":
        return "A", "B"
    if style == "numbers":
        return "1", "2"
    if style == "tags":
        digest = hashlib.sha256(f"tags|{item_id}|{order}".encode()).digest()
        first = TAG_ALPHABET[digest[0] % len(TAG_ALPHABET)] + str(digest[1] % 10)
        second = TAG_ALPHABET[digest[2] % len(TAG_ALPHABET)] + str(digest[3] % 10)
        if second == first:
            second = TAG_ALPHABET[(digest[2] + 1) % len(TAG_ALPHABET)] + str(digest[3] % 10)
        return first, second
    raise ValueError(f"unknown label style {style!r}: use letters, numbers or tags")


def shown(item: Item, order: int, label_style: str) -> Shown:
    """The answers of `item` in display order `order` (1: a first; 2: b first) with their labels."""
    label_first, label_second = labels_for(label_style, item.id, order)
    first, second = (item.a, item.b) if order == 1 else (item.b, item.a)
    return Shown(order, first, second, label_first, label_second)


FENCE_OPEN = "[The Start of Answer "  # how every fenced answer begins: where the part both orders share ends


def fence(label: str, text: str, nonce: str) -> str:
    """Wrap an answer so the judge can tell data from instructions; the nonce makes the end marker unguessable."""
    return f"{FENCE_OPEN}{label} · {nonce}]\n{text}\n[The End of Answer {label} · {nonce}]"


def fence_nonce(item_id: str, order: int, *texts: str) -> str:
    """A nonce that appears in none of the texts (deterministic, so prompts and cache keys are stable)."""
    salt = 0
    while True:
        nonce = hashlib.sha256(f"{item_id}|{order}|{salt}|{'|'.join(texts)}".encode()).hexdigest()[:8]
        if not any(nonce in text for text in texts):
            return nonce
        salt += 1


def conversation(item: Item, which: str, text: str) -> str:
    """The whole conversation of a second-turn item for one answer; just the answer for a first-turn item."""
    turn1_question = item.extra.get("question_turn1")
    turn1_answer = item.extra.get(f"{which}_turn1")
    if not isinstance(turn1_question, str) or not isinstance(turn1_answer, str):
        return text
    return f"### User:\n{turn1_question}\n\n### Assistant:\n{turn1_answer}\n\n### User:\n{item.question}\n\n### Assistant:\n{text}"


def context_block(item: Item) -> str:
    """Text shown before the question: the item's `context` (a retrieved document, a conversation so far), the
    multi-turn instruction and reference answers when the item has them. Both orders of an item, and every item of
    one context, share it as the start of their prompt (core.prefix)."""
    parts = []
    context = item.extra.get("context")
    if isinstance(context, str) and context.strip():
        parts.append(f"[Context]\n{context}\n")
    if isinstance(item.extra.get("question_turn1"), str):
        parts.append(
            "[Note]\nEach answer below is a whole two-turn conversation. Judge the assistants' answers to the "
            "second user question; the first turn is context.\n"
        )
    for key, title in (("reference_turn1", "first"), ("reference_turn2", "second")):
        reference = item.extra.get(key)
        if isinstance(reference, str) and reference.strip():
            parts.append(f"[Reference answer to the {title} question]\n{reference}\n")
    return "\n".join(parts) + ("\n" if parts else "")


def render_messages(item: Item, view: Shown, system: str, user: str, tie_label: str) -> list[dict[str, str]]:
    """The chat messages for one call: the rubric's system and user templates filled, both answers fenced."""
    which_first, which_second = ("a", "b") if view.order == 1 else ("b", "a")
    if item.extra:
        first_text = conversation(item, which_first, view.first)
        second_text = conversation(item, which_second, view.second)
    else:  # a one-turn item without references: the answers as they are, and no context
        first_text, second_text = view.first, view.second
    # Identical answers render the same prompt in both orders, so the run sends that prompt once, not twice.
    salt_order = 1 if first_text == second_text else view.order
    nonce = fence_nonce(item.id, salt_order, first_text, second_text, item.question)
    values = {
        "question": item.question,
        "context": context_block(item) if item.extra else "",
        "first": fence(view.label_first, first_text, nonce),
        "second": fence(view.label_second, second_text, nonce),
        "label_first": view.label_first,
        "label_second": view.label_second,
        "tie_label": tie_label,
    }
    return [
        {"role": "system", "content": _fill(system, values)},
        {"role": "user", "content": _fill(user, values)},
    ]


def fold_system(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """The messages with the system text opening the first user message, for chat templates that drop the system
    role (Gemma's): the judge then still reads its instructions."""
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system" and m["content"])
    rest = [dict(m) for m in messages if m["role"] != "system"]
    if system and rest:
        rest[0]["content"] = f"{system}\n\n{rest[0]['content']}"
    return rest if rest or not system else [{"role": "user", "content": system}]


def _fill(template: str, values: dict[str, str]) -> str:
    """Substitute {name} placeholders in one pass, so braces inside answers (code) are never read as placeholders."""
    pieces = _pieces(template)
    filled = list(pieces)
    for index in range(1, len(pieces), 2):
        filled[index] = values.get(pieces[index], "{" + pieces[index] + "}")
    return "".join(filled)


@functools.lru_cache(maxsize=64)
def _pieces(template: str) -> tuple[str, ...]:
    """The template split once: text, placeholder name, text, ..., text (names at the odd indices)."""
    return tuple(PLACEHOLDER.split(template))


def unknown_placeholders(template: str) -> list[str]:
    """Placeholders in a rubric template that rendering would leave unfilled (a typo in the rubric)."""
    return [name for name in PLACEHOLDER.findall(template) if name not in PLACEHOLDERS]
