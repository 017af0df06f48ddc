"""The verdict contract: two calls per item, the second translated back, a preference kept only when both agree.

Pure logic, no I/O. Positional replies are "A" (the answer shown first), "B" (shown second), "tie",
"invalid" (the reply could not be read) or "error" (the call failed after its retries).
Verdicts are in the item's own frame: "1" (ans1 wins), "2" (ans2 wins), "tie", or "error".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

Positional = Literal["A", "B", "tie", "invalid", "error"]  # a call's reply in the view it answered
Outcome = Literal["1", "2", "tie", "error"]  # an item's verdict in its own frame
# What a run's summary.json says of it (docs/outputs.md): every status a writer of summary.json may set.
Status = Literal["ok", "errors", "unreadable", "mixed_judge", "failed", "pending", "dry-run", "missing", "budget"]
Judge = Callable[[str, str, str], str]

POSITIONAL_LABELS: tuple[str, ...] = ("A", "B", "tie", "invalid", "error")
WIN_SCORE: dict[str, float] = {"1": 1.0, "tie": 0.5, "2": 0.0}  # the win rate's weights: win, tie, loss of ans1


_SWAPPED = {"A": "B", "B": "A"}
_SIDE = {"A": "a", "B": "b"}


def translate(call2: str | None) -> str | None:
    """Map a reply given with the answers swapped back to the original frame ("A" <-> "B")."""
    # In call2 ans2 is shown first, so "A" there means ans2 was preferred: in the original frame that is "B".
    return _SWAPPED.get(call2, call2) if call2 is not None else None


def preference(call1_frame: str | None) -> Outcome | None:
    """The item-frame preference of one positional reply already in the ans1-first frame."""
    if call1_frame == "A":
        return "1"
    if call1_frame == "B":
        return "2"
    if call1_frame == "error":
        return "error"
    if call1_frame is None:
        return None
    return "tie"  # "tie" and "invalid" prefer neither answer


ITEM_FRAME = {"1": "a", "2": "b"}


def item_pick(call: str | None, order: int) -> str | None:
    """A positional reply read in the item's frame: "a" or "b" for the answer it prefers, else the reply itself.

    In order 1 answer a is shown first ("A" means a); in order 2 it is shown second ("A" means b).
    """
    if call is None:
        return None
    frame = call if order == 1 else translate(call)
    return _SIDE.get(frame or "", frame)


def item_winner(verdict: str) -> str:
    """The verdict ("1", "2", "tie", "error") read in the item's frame ("a", "b", "tie", "error")."""
    return ITEM_FRAME.get(verdict, verdict)


def reconcile(call1: str, call2: str | None) -> Outcome:
    """The debiased verdict from the two positional replies (call2 untranslated).

    A preference survives only when both orders agree; a tie, an invalid reply or a disagreement is a tie.
    A failed call makes the item "error" (never a silent tie). With one order only (call2 None) the
    single-order preference is returned: the caller must report that consistency was not measured.
    """
    if call1 == "error" or call2 == "error":
        return "error"
    first = preference(call1)
    assert first is not None
    if call2 is None:
        return first
    second = preference(translate(call2))
    return first if first == second and first in ("1", "2") else "tie"


def is_consistent(call1: str, call2: str | None) -> bool | None:
    """Whether both orders agree after translation (same answer preferred, or both tie); None if not measurable."""
    if call2 is None or "error" in (call1, call2):
        return None
    if "invalid" in (call1, call2):
        return False
    return call1 == translate(call2)


def debiased_verdict(judge: Judge, question: str, ans1: str, ans2: str) -> str:
    """Ask `judge` in both orders and keep a preference only when both agree ("1", "2" or "tie")."""
    return reconcile(*_two_calls(judge, question, ans1, ans2))


def win_rate(judge: Judge, items: Sequence[tuple[str, str, str]]) -> float:
    """Score of model 1 over `items` ((question, ans1, ans2)): win 1, tie 0.5, loss 0, averaged."""
    if not items:
        raise ValueError("win_rate needs at least one item")
    return sum(WIN_SCORE[reconcile(*_two_calls(judge, *item))] for item in items) / len(items)


def position_consistency(judge: Judge, items: Sequence[tuple[str, str, str]]) -> float:
    """Fraction of `items` whose two calls agree after translation (same answer preferred, or both tie)."""
    if not items:
        raise ValueError("position_consistency needs at least one item")
    return sum(bool(is_consistent(*_two_calls(judge, *item))) for item in items) / len(items)


def _two_calls(judge: Judge, question: str, ans1: str, ans2: str) -> tuple[str, str]:
    """Exactly two calls: (ans1, ans2) then (ans2, ans1), each checked to be a positional label."""
    calls = (judge(question, ans1, ans2), judge(question, ans2, ans1))
    for call in calls:
        if call not in ("A", "B", "tie"):
            raise ValueError(f"a judge must return 'A', 'B' or 'tie', got {call!r}")
    return calls
