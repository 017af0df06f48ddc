"""Two runs on the same items, item by item: each figure's paired difference (candidate minus base) with one
bootstrap that draws the same items (or clusters) for both runs, exact paired tests, and the items that moved.

Two unpaired intervals that overlap say little about a change measured on the same items: most items are judged
alike by both runs, and a paired draw keeps that correlation, so its interval is the one that answers "did the
change make the judge better or worse". Pure: rows in, JSON-ready values out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from judgebias.core.record import ItemKind, ItemResult
from judgebias.figures import catalogue, stats
from judgebias.figures.catalogue import Better
from judgebias.figures.metrics import IntArray, Measured, bootstrap_units
from judgebias.figures.rows import Rows
from judgebias.figures.stats import FloatArray

# The figures compared, in the catalogue's order, and which way is better for a judge (neither: a property of the
# answers compared, e.g. the win rate, not of the judge's quality); cost is the whole runs', compared too.
FIGURE_NAMES = tuple(figure.name for figure in catalogue.shown_in("compare"))
BETTER: dict[str, Better] = {figure.name: figure.better for figure in catalogue.shown_in("compare")} | {
    "cost_usd": "lower"
}

MCNEMAR = "McNemar exact"
SIGN_TEST = "sign test"
# The figures with an exact paired test: each counts the same items in both runs (every scored item, every item
# judged in both orders, every labelled item), so an item's value in one run faces its value in the other.
TESTED = tuple(figure.name for figure in catalogue.FIGURES if figure.paired_test)


@dataclass(frozen=True)
class Difference:
    """One figure in both runs on the matched items: candidate minus base, its paired interval and test."""

    base: float | None
    cand: float | None
    diff: float | None
    ci: list[float] | None  # 95% percentile interval of the paired bootstrap's differences
    p: float | None  # exact paired test (McNemar on a yes/no per item, else the sign test); None: none applies
    test: str | None
    n: int | None  # items counted by the figure in both runs
    discordant: tuple[int, int] | None = None  # items better only in base, only in cand (what the test counts)

    def as_json(self) -> dict[str, Any]:
        """compare.json's `differences.<figure>`."""
        out: dict[str, Any] = {
            "base": self.base,
            "cand": self.cand,
            "diff": self.diff,
            "ci": self.ci,
            "p": self.p,
            "test": self.test,
            "n": self.n,
        }
        if self.discordant is not None:
            out["base_only"], out["cand_only"] = self.discordant
        return out


def invalid_rate(rows: Sequence[ItemResult]) -> tuple[FloatArray, FloatArray]:
    """Unreadable replies per call answered, per item (numerator, denominator): failed calls are not counted."""
    items = Rows.of(rows)

    def positional(r: ItemKind) -> list[str]:
        return [r.call1] if r.call2 is None else [r.call1, r.call2]

    numerator = items.per_kind(lambda r: positional(r).count("invalid"))
    denominator = items.per_kind(lambda r: sum(call != "error" for call in positional(r)))
    return numerator, denominator


def with_invalid_rate(measured: Measured, rows: Sequence[ItemResult]) -> Measured:
    """The run's figures with `invalid_rate` as a ratio figure, which summary.json states only as counts."""
    rate = invalid_rate(rows)
    total = float(rate[1].sum())
    derived = {**measured.derived, "invalid_rate": float(rate[0].sum()) / total if total else None}
    return dataclasses.replace(measured, rates={**measured.rates, "invalid_rate": rate}, derived=derived)


def paired_differences(
    base: Measured,
    cand: Measured,
    *,
    resamples: int,
    seed: int,
    groups: IntArray | None = None,
    figures: Sequence[str] = FIGURE_NAMES,
) -> dict[str, Difference]:
    """Every figure both runs have, on the same rows in the same order (row i of both is the same item).

    Each bootstrap replicate weighs the items once and evaluates both runs under those weights, so a figure's
    difference in a replicate is the difference the same resampled items would show. `groups` (a cluster number
    per row) draws clusters instead of items, as the run's own intervals do.
    """
    names = [name for name in figures if any(name in m.summary or name in m.derived for m in (base, cand))]
    n = _rows(base, cand)
    collected: dict[str, list[FloatArray]] = {name: [] for name in names if _both(base, cand, name)}
    units = bootstrap_units([base, cand], n, groups)
    base_units, cand_units = base.on(units.first), cand.on(units.first)
    for counts in stats.unit_counts(units, resamples, seed, groups):
        for name in collected:
            collected[name].append(cand_units.replicates(name, counts) - base_units.replicates(name, counts))
    out: dict[str, Difference] = {}
    for name in names:
        b, c = base.value(name), cand.value(name)
        parts = collected.get(name)
        interval = stats.percentile_interval(np.concatenate(parts)) if parts else None
        test, p, counted, discordant = _exact_test(base, cand, name)
        out[name] = Difference(
            base=b,
            cand=c,
            diff=None if b is None or c is None else c - b,
            ci=interval,
            p=p,
            test=test,
            n=counted,
            discordant=discordant,
        )
    return out


def mcnemar_p(base_only: int, cand_only: int) -> float:
    """Exact McNemar test: under no change, an item that differs is as likely to favour either run (binomial 1/2)."""
    return stats.binomial_two_sided_p(cand_only, base_only + cand_only)


Worse = Literal["drop", "rise"]  # which way a figure moving is a regression


def worse_beyond(difference: Difference, worse: Worse, tolerance: float) -> bool:
    """Whether the paired interval lies wholly beyond `tolerance` on the `worse` side (the regression gate's rule:
    a change the data cannot tell from one within the tolerance does not count). No interval: False."""
    if difference.ci is None:
        return False
    low, high = difference.ci
    return high < -tolerance if worse == "drop" else low > tolerance


def worse_side(name: str) -> Worse | None:
    """Which way figure `name` moving is worse for a judge (None: neither, e.g. the win rate)."""
    better = BETTER.get(name, "neither")
    return None if better == "neither" else "drop" if better == "higher" else "rise"


def _exact_test(
    base: Measured, cand: Measured, name: str
) -> tuple[str | None, float | None, int | None, tuple[int, int] | None]:
    """McNemar for a ratio of yes/no per item (consistent, first-position, agrees), the sign test for a ratio of
    graded per-item values (win 1 / tie 0.5 / loss 0, recency - primacy): over the items both runs count, the items
    where the candidate's value is above the base's against those where it is below."""
    if name not in TESTED or name not in base.rates or name not in cand.rates:
        return None, None, None, None
    (nb, db), (nc, dc) = base.rates[name], cand.rates[name]
    both = (db > 0) & (dc > 0)
    if not (np.all(db[both] == 1) and np.all(dc[both] == 1)):
        return None, None, int(both.sum()), None  # per-item weights other than 1: no per-item value to test
    vb, vc = nb[both], nc[both]
    above, below = int(np.sum(vc > vb)), int(np.sum(vc < vb))
    binary = bool(np.all(np.isin(vb, (0.0, 1.0))) and np.all(np.isin(vc, (0.0, 1.0))))
    return MCNEMAR if binary else SIGN_TEST, mcnemar_p(below, above), int(both.sum()), (below, above)


def _both(base: Measured, cand: Measured, name: str) -> bool:
    """Both runs have the figure, and it can be resampled."""
    return all(m.value(name) is not None and (name in m.rates or name in m.others) for m in (base, cand))


def _rows(base: Measured, cand: Measured) -> int:
    """The number of rows both runs were measured on (the same, or the comparison is not paired)."""
    sizes = {len(rate[0]) for m in (base, cand) for rate in m.rates.values()}
    if len(sizes) > 1:
        raise ValueError(f"a paired comparison needs the same rows in both runs, got {sorted(sizes)}")
    return sizes.pop() if sizes else 0


MOVE_KINDS = (
    "became_consistent",
    "became_inconsistent",
    "verdict_flipped",
    "verdict_changed",
    "now_agrees",
    "now_disagrees",
)
SIDE_FIELDS = ("verdict", "winner", "call1", "call2", "raw1", "raw2", "consistent")  # what a reviewer reads of a side


def moved_kinds(base: Rows, cand: Rows) -> NDArray[np.bool_]:
    """How each item moved between the runs (row i of both is the same item): one column per MOVE_KINDS entry.

    became_consistent / became_inconsistent: the two orders' agreement changed; verdict_flipped (a <-> b) or
    verdict_changed (to or from a tie or an error); now_agrees / now_disagrees: with the item's decisive human label
    (the candidate's, else the base's), neither verdict an error. Computed once per kind of row."""
    if len(base) != len(cand):
        raise ValueError(f"moved kinds need the same items in both runs, got {len(base)} and {len(cand)}")
    consistent = [rows.per_kind(lambda r: _TRUTH[r.consistent], np.int8) for rows in (base, cand)]
    before, after = (rows.per_kind(lambda r: _OUTCOME[r.verdict], np.int8) for rows in (base, cand))
    human_base, human_cand = (rows.per_kind(lambda r: _HUMAN.get(r.human, 0), np.int8) for rows in (base, cand))
    has_cand = cand.per_kind(lambda r: r.human is not None, np.bool_)
    human = np.where(has_cand, human_cand, human_base)
    one, two, error = _OUTCOME["1"], _OUTCOME["2"], _OUTCOME["error"]
    flipped = ((before == one) & (after == two)) | ((before == two) & (after == one))
    decisive = (human > 0) & (before != error) & (after != error)
    columns = [
        (consistent[0] == 0) & (consistent[1] == 1),
        (consistent[0] == 1) & (consistent[1] == 0),
        flipped,
        (before != after) & ~flipped,
        decisive & (before != human) & (after == human),
        decisive & (before == human) & (after != human),
    ]
    return np.column_stack(columns) if len(base) else np.zeros((0, len(MOVE_KINDS)), dtype=np.bool_)


_TRUTH = {False: 0, True: 1, None: 2}  # consistent: false, true, not measurable
_OUTCOME = {"1": 1, "2": 2, "tie": 3, "error": 4}  # a verdict as a number: "1" and "2" are a human label's numbers
_HUMAN: dict[str | None, int] = {"1": 1, "2": 2}  # a decisive human label (0: none, or a tie)
