"""One item judged: its row from its calls, by the rules of the two-call contract that every part of a run shares
(the writer, the metrics, a part judged on another core): the first sample of each order decides call1/call2, each
order's majority of samples, the soft preference from label probabilities, and an ensemble's majority of judges.

Pure: calls in, rows out. The verdict contract itself (translate, reconcile) is core.verdict.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Literal, TypeVar

from judgebias.core.item import Item
from judgebias.core.record import CallResult, ItemResult, new_item_result, slim_calls
from judgebias.core.style import style_of, styles_of
from judgebias.core.verdict import is_consistent, reconcile

Label = TypeVar("Label", bound=str)  # a positional label or an item-frame verdict, whichever a majority counts


def item_result(item: Item, all_calls: list[CallResult], *, slim: bool = False) -> ItemResult:
    """One judge's row for one item from its one or two calls (the first sample of each order; all are kept, without
    their replies when `slim`: ItemResult.without_replies of the row, built once)."""
    calls = [call for call in all_calls if call.sample == 0] or all_calls
    call1 = calls[0].label
    call2 = calls[1].label if len(calls) > 1 else None
    probs1, probs2 = calls[0].probs, calls[1].probs if len(calls) > 1 else None
    style_a, style_b = item.style_a, item.style_b
    if style_a is None and style_b is None:  # read from the answers (normalising left them as they were)
        style_a, style_b = styles_of(item.a, item.b)
    style_a = style_of(item.a) if style_a is None else style_a
    style_b = style_of(item.b) if style_b is None else style_b
    return new_item_result(
        id=item.id,
        verdict=reconcile(call1, call2),
        call1=call1,
        call2=call2,
        consistent=is_consistent(call1, call2),
        human=item.human,
        human_votes=item.human_votes,
        human_voters=item.human_voters,
        model_a=item.model_a,
        model_b=item.model_b,
        chars_a=len(item.a),
        chars_b=len(item.b),
        words_a=len(item.a.split()),
        words_b=len(item.b.split()),
        tokens_a=item.tokens_a,
        tokens_b=item.tokens_b,
        soft=soft_preference(probs1, probs2) if probs1 is not None or probs2 is not None else None,
        style_a=style_a,
        style_b=style_b,
        calls=slim_calls(tuple(all_calls)) if slim else tuple(all_calls),
    )


def soft_preference(probs1: Mapping[str, float] | None, probs2: Mapping[str, float] | None) -> float | None:
    """P(answer a preferred) from the label probabilities of call1 and call2, averaged over the orders."""
    # In call2 b is shown first, so its "B" means a. A tie counts half for each side.
    values = []
    for probs, own in ((probs1, "A"), (probs2, "B")):
        if probs is None:
            continue
        p_a, p_b, p_tie = (max(0.0, float(probs.get(label, 0.0))) for label in ("A", "B", "tie"))
        total = p_a + p_b + p_tie
        if total > 0.0:
            values.append(((p_a if own == "A" else p_b) + 0.5 * p_tie) / total)
    return _mean(values)


def ensemble_results(per_judge: Mapping[str, Sequence[ItemResult]]) -> list[ItemResult]:
    """One row per item from several judges' rows: majority verdict and positional calls, all calls kept."""
    # Majorities ignore ties (and failures): verdict = "1" or "2" by more judges, "tie" when neither leads
    # (no decisive verdict, or as many "1" as "2"); "error" only when every judge's verdict is "error".
    # call1 (and call2) = "A" or "B" by more judges' call1 (call2), "tie" when neither leads, "error" only
    # when every judge's call failed; call2 is None when no judge has a second order. consistent is
    # recomputed from these majority calls, so summarize() reports the ensemble's own residual position
    # bias. Human labels, lengths and models are copied from the first judge's row; soft = mean of the
    # judges' soft values (None when none has one).
    if not per_judge:
        raise ValueError("ensemble_results needs the rows of at least one judge, got none")
    names = list(per_judge)
    rows = [list(per_judge[name]) for name in names]
    ids = [r.id for r in rows[0]]
    for name, judge_rows in zip(names[1:], rows[1:], strict=True):
        other = [r.id for r in judge_rows]
        if other != ids:
            raise ValueError(
                f"judge {name!r} has items {_first_difference(ids, other)} that do not line up with judge "
                f"{names[0]!r}: every judge must have the same item ids in the same order"
            )
    merged = []
    for k, first in enumerate(rows[0]):
        group = [judge_rows[k] for judge_rows in rows]
        call1 = _majority([g.call1 for g in group], ("A", "B"))
        seconds = [g.call2 for g in group if g.call2 is not None]
        call2 = _majority(seconds, ("A", "B")) if seconds else None
        softs = [g.soft for g in group if g.soft is not None]
        merged.append(
            dataclasses.replace(  # the item's own fields (labels, models, lengths) from the first judge's row
                first,
                verdict=_majority([g.verdict for g in group], ("1", "2")),
                call1=call1,
                call2=call2,
                consistent=is_consistent(call1, call2),
                soft=_mean(softs),
                calls=tuple(call for g in group for call in g.calls),
            )
        )
    return merged


def calls_by_order(calls: Sequence[CallResult]) -> list[list[CallResult]] | None:
    """One judge's calls of an item grouped by order, every sample of each; None when they are not one judge's."""
    groups: list[list[CallResult]] = []
    for call in calls:
        if call.sample == 0 or not groups:
            groups.append([])
        groups[-1].append(call)
    return groups if 0 < len(groups) <= 2 else None


def majority_verdict(row: ItemResult) -> str | None:
    """The verdict of each order's majority of samples, reconciled like call1/call2; None without samples."""
    groups = calls_by_order(row.calls)
    if groups is None or all(len(group) < 2 for group in groups):
        return None
    labels = [majority_label([call.label for call in group]) for group in groups]
    return reconcile(labels[0], labels[1] if len(labels) > 1 else None)


def majority_label(labels: Sequence[str]) -> str:
    """The most frequent positional label among an order's samples ("tie" when two lead; "error" if all failed)."""
    counted = Counter(label for label in labels if label != "error").most_common(2)
    if not counted:
        return "error"
    if len(counted) > 1 and counted[0][1] == counted[1][1]:
        return "tie"
    return counted[0][0]


def _majority(labels: Sequence[Label], sides: tuple[Label, Label]) -> Label | Literal["tie", "error"]:
    """The side named by more labels ("tie" when neither leads); "error" when every label is "error"."""
    if labels and all(label == "error" for label in labels):
        return "error"
    first, second = labels.count(sides[0]), labels.count(sides[1])
    if first == second:
        return "tie"
    return sides[0] if first > second else sides[1]


def _first_difference(expected: Sequence[str], actual: Sequence[str]) -> str:
    """A short description of where two id lists first differ."""
    for position, (want, got) in enumerate(zip(expected, actual, strict=False)):
        if want != got:
            return f"(position {position}: {got!r} where {want!r} was expected)"
    return f"(count {len(actual)} where {len(expected)} were expected)"


def _mean(values: Sequence[float]) -> float | None:
    """The mean of `values`, or None when there are none."""
    return sum(values) / len(values) if values else None
