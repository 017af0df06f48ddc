"""The verdict contract: two calls per item, the second translated back, a preference kept only on agreement."""

from __future__ import annotations

import pytest

from judgebias import debiased_verdict, position_consistency, win_rate
from judgebias.core.verdict import is_consistent, item_pick, item_winner, reconcile, translate


def always_a(question: str, first: str, second: str) -> str:
    """A judge that always picks the answer shown first."""
    return "A"


def longer(question: str, first: str, second: str) -> str:
    """A judge that prefers the longer answer and says "A" on equal length."""
    return "B" if len(second) > len(first) else "A"


class Counting:
    """Wraps a judge and counts its calls."""

    def __init__(self, judge: object) -> None:
        self.judge = judge
        self.calls: list[tuple[str, str, str]] = []

    def __call__(self, question: str, first: str, second: str) -> str:
        self.calls.append((question, first, second))
        return self.judge(question, first, second)  # type: ignore[operator]


THREE = [("q", "long answer", "short"), ("q", "s", "longer one"), ("q", "same", "same")]


@pytest.mark.parametrize("pair", [("x", "y"), ("long answer", "short"), ("s", "longer one"), ("", "")])
def test_always_a_is_a_tie_for_any_pair(pair: tuple[str, str]) -> None:
    """A judge that always says "A" never gets a preference through: its verdict is a tie."""
    assert "tie" == debiased_verdict(always_a, "q", *pair)


def test_always_a_has_no_consistency_and_even_win_rate() -> None:
    """Over any items the always-"A" judge has consistency 0 and win rate 0.5."""
    assert 0.0 == position_consistency(always_a, THREE)
    assert 0.5 == win_rate(always_a, THREE)


def test_longer_judge_examples() -> None:
    """The longer-answer judge gives "1" for a longer ans1, "2" for a longer ans2 and a tie on identical answers."""
    assert ["1", "2", "tie"] == [debiased_verdict(longer, *item) for item in THREE]


def test_longer_judge_win_rate_and_consistency() -> None:
    """On the three example items the longer-answer judge has win rate 0.5 and consistency 2/3."""
    assert 0.5 == win_rate(longer, THREE)
    assert pytest.approx(2 / 3) == position_consistency(longer, THREE)


def test_exactly_two_calls_per_item_in_both_orders() -> None:
    """Each figure calls the judge exactly twice per item: (ans1, ans2) then (ans2, ans1)."""
    judge = Counting(longer)
    debiased_verdict(judge, "q", "one", "two")
    assert [("q", "one", "two"), ("q", "two", "one")] == judge.calls
    for figure in (win_rate, position_consistency):
        judge = Counting(longer)
        figure(judge, THREE)
        assert 2 * len(THREE) == len(judge.calls)


def test_translate_swaps_positions_and_keeps_ties() -> None:
    """Translating the swapped call maps "A" to "B" and back; tie, invalid and None are unchanged."""
    assert ["B", "A", "tie", "invalid", None] == [translate(c) for c in ("A", "B", "tie", "invalid", None)]


@pytest.mark.parametrize(
    ("call1", "call2", "expected"),
    [
        ("A", "B", "1"),  # ans1 preferred in both orders
        ("B", "A", "2"),  # ans2 preferred in both orders
        ("A", "A", "tie"),  # follows the first slot: disagreement
        ("B", "B", "tie"),  # follows the second slot
        ("tie", "tie", "tie"),
        ("A", "tie", "tie"),
        ("invalid", "B", "tie"),
        ("A", "error", "error"),
        ("A", None, "1"),  # one order only: the single-order preference
    ],
)
def test_reconcile_table(call1: str, call2: str | None, expected: str) -> None:
    """A preference survives only when both orders agree; a failed call makes the item an error, not a tie."""
    assert expected == reconcile(call1, call2)


@pytest.mark.parametrize(
    ("call1", "call2", "expected"),
    [("A", "B", True), ("tie", "tie", True), ("A", "A", False), ("invalid", "invalid", False), ("A", None, None)],
)
def test_consistency_table(call1: str, call2: str | None, expected: bool | None) -> None:
    """Two calls are consistent when they prefer the same answer after translation, or both say tie."""
    assert expected == is_consistent(call1, call2)


def test_judge_reply_outside_the_contract_is_refused() -> None:
    """A Python judge must return A, B or tie; anything else is an error, not a guess."""
    with pytest.raises(ValueError, match="'A', 'B' or 'tie'"):
        debiased_verdict(lambda q, a, b: "first", "q", "x", "y")


@pytest.mark.parametrize(
    ("call", "order", "expected"),
    [("A", 1, "a"), ("B", 1, "b"), ("A", 2, "b"), ("B", 2, "a"), ("tie", 2, "tie"), ("invalid", 1, "invalid"),
     ("error", 2, "error"), (None, 2, None)],
)  # fmt: skip
def test_a_call_reads_in_the_items_frame(call: str | None, order: int, expected: str | None) -> None:
    """pick1/pick2 name the answer a call preferred as a or b, whichever order it was shown in."""
    assert expected == item_pick(call, order)


def test_the_verdict_reads_in_the_items_frame() -> None:
    """winner names the verdict as a or b (tie and error stay as they are)."""
    assert ["a", "b", "tie", "error"] == [item_winner(v) for v in ("1", "2", "tie", "error")]
