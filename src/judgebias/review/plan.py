"""How many labels the people's win rate needs: from the labels so far (the judge's error where people looked) and
the run's items, the size of a sample (uniform, or weighted by the judge's uncertainty) whose prediction-powered
interval reaches a width.

The variance of the corrected win rate with a sample in which item i is labelled with probability π_i is, as the run
computes it (the inverse-probability-weighted mean of the errors over the M items), Σ e_i²/π_i / M² (e_i: the judge's
error on item i, Y − λŶ, centred on its mean), plus the judge's own term λ²·Var(Ŷ) over the items left unlabelled. The errors are estimated from the labels so far,
separately on the
items whose two orders agreed and on those where they did not (the judge is surer of the first); with no label yet
the worst case (a score's variance is at most ¼) stands in, and the plan says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from judgebias.core.errors import UserError
from judgebias.core.sampling import Judged, uncertain_probabilities
from judgebias.figures.catalogue import WIN_RATE
from judgebias.figures.ppi import z_value

WORST_CASE = 0.25  # the largest variance of a score between 0 and 1


@dataclass(frozen=True)
class Errors:
    """The judge's mean squared error against people, on consistent and on inconsistent items, and λ."""

    consistent: float
    inconsistent: float
    lam: float
    imputed_var: float  # Var(λŶ) over the items
    labels: int  # how many labels they rest on (0: the worst case)

    def of(self, item: Judged) -> float:
        """The mean squared error expected of this item."""
        return self.inconsistent if item.consistent is False else self.consistent


def errors_of(judged: Sequence[Judged], scores: dict[str, float], verdicts: dict[str, float], lam: float) -> Errors:
    """The errors from the labelled items (`scores`: a person's score by id; `verdicts`: the judge's by id)."""
    groups: dict[bool, list[float]] = {True: [], False: []}
    for item in judged:
        if item.id in scores:
            groups[item.consistent is not False].append(scores[item.id] - lam * verdicts[item.id])
    everything = groups[True] + groups[False]
    centre = sum(everything) / len(everything) if everything else 0.0  # the weighted mean's errors are centred
    spread = {key: [(e - centre) ** 2 for e in values] for key, values in groups.items()}
    overall = sum(spread[True] + spread[False]) / len(everything) if everything else WORST_CASE
    mean = {key: sum(values) / len(values) if values else overall for key, values in spread.items()}
    predicted = [lam * verdicts[item.id] for item in judged]
    average = sum(predicted) / len(predicted) if predicted else 0.0
    imputed = sum((p - average) ** 2 for p in predicted) / len(predicted) if predicted else 0.0
    return Errors(mean[True], mean[False], lam, imputed, len(everything))


def variance(judged: Sequence[Judged], probabilities: dict[str, float], errors: Errors) -> float:
    """The corrected win rate's variance, as the run will compute it, under a design that labels item i with
    probability π_i: the labelled term Σ e_i²/π_i / M² (the weighted mean of the errors, each weighing 1/π), and the
    judge's own term over the items left unlabelled."""
    m = len(judged)
    sampled = sum(errors.of(item) / probabilities[item.id] for item in judged)
    unlabelled = m - sum(probabilities.values())
    return sampled / m**2 + (errors.imputed_var / unlabelled if unlabelled >= 1 else 0.0)


def labels_needed(judged: Sequence[Judged], errors: Errors, width: float, *, weighted: bool) -> int | None:
    """The fewest labels (expected, for a weighted sample) whose interval is at most `width` wide; None when even
    every item labelled is not enough (the judge's own term is wider)."""
    target = (width / (2.0 * z_value())) ** 2
    m = len(judged)

    def design(size: float) -> dict[str, float]:
        if weighted:
            return uncertain_probabilities(judged, size)
        return {item.id: min(1.0, size / m) for item in judged}

    if variance(judged, design(m), errors) > target:
        return None
    low, high = 1.0, float(m)
    for _ in range(60):
        middle = (low + high) / 2.0
        low, high = (low, middle) if variance(judged, design(middle), errors) <= target else (middle, high)
    return math.ceil(high)


def plan_text(run: str, judged: Sequence[Judged], errors: Errors, width: float, corrected: dict[str, Any]) -> str:
    """What `review plan` prints: the labels so far, and what each kind of sample needs for `width`."""
    m = len(judged)
    lines = []
    figure = (corrected.get("figures") or {}).get(WIN_RATE.name)
    if figure:
        low, high = figure["ci"]
        lines.append(
            f"{run}: {errors.labels} labels so far; the people's win rate is {100 * figure['estimate']:.1f}% "
            f"[{100 * low:.1f}, {100 * high:.1f}], {100 * (high - low):.1f} points wide"
        )
    else:
        lines.append(
            f"{run}: no labels usable yet ({corrected.get('refused') or 'none in the data'}): the plan assumes the "
            "worst case (a person's score varies as much as a score can), so it is an upper bound"
        )
    for weighted, how in ((False, "a uniform sample (review sample --strategy random)"),
                          (True, "one weighted by the judge's uncertainty (--strategy uncertain)")):  # fmt: skip
        needed = labels_needed(judged, errors, width, weighted=weighted)
        if needed is None:
            lines.append(f"{how}: no number of labels reaches {100 * width:.1f} points on these {m} items")
        else:
            more = max(0, needed - errors.labels)
            lines.append(
                f"for an interval {100 * width:.1f} points wide, {how} needs about {needed} labels ({more} more)"
            )
    if errors.labels:
        lines.append(
            f"(from the judge's errors on the {errors.labels} labels so far: mean squared error "
            f"{errors.consistent:.3f} where its two orders agreed, {errors.inconsistent:.3f} where they did not)"
        )
    return "\n".join(lines)


def check_width(width: float | None, n: Any) -> float:
    """--n auto needs --width."""
    if n == "auto" and width is None:
        raise UserError("--n auto draws as many labels as a --width needs: give --width (e.g. 0.05)")
    return width or 0.05
