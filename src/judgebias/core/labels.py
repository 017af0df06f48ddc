"""The one vocabulary of human labels: what people may write, and the item-frame label it means.

A human label says which answer of an item is better: `a` (the first answer of the line, `a`), `b`, or `tie`.
`1` and `2` are accepted as the same `a` and `b` (the dataset files and the verdicts say "1"/"2"), case and
surrounding spaces ignored. Inside judgebias a label is always "1" | "2" | "tie" (the verdict's frame).
"""

from __future__ import annotations

from typing import Literal

HumanLabel = Literal["1", "2", "tie"]

HUMAN_LABELS: tuple[HumanLabel, ...] = ("1", "2", "tie")
_SPELLINGS: dict[str, HumanLabel] = {"1": "1", "a": "1", "2": "2", "b": "2", "tie": "tie"}
SPELLED = "a, b or tie (1 and 2 are the same as a and b)"  # what an error message lists


def human_label(value: object) -> HumanLabel | None:
    """The item-frame label a person's answer means ("a"/"1" -> "1", "b"/"2" -> "2", "tie"), None if unknown."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        return None
    return _SPELLINGS.get(value.strip().lower())


def majority(votes: tuple[str, ...] | list[str]) -> HumanLabel | None:
    """The label with strictly the most votes (a tie vote counts as a label), None when no label leads."""
    counts = sorted(((votes.count(label), label) for label in HUMAN_LABELS), reverse=True)
    if not votes or counts[0][0] == counts[1][0]:
        return None
    return counts[0][1]
