"""The people's number: the run's win rate and decisive win rate as people would give them, estimated from the
judge's verdict on every item and people's labels on some (figures.ppi, PPI++), with the judge's own figure and
the labels' own beside them, under the sampling design the labels were drawn by.

A person's score of an item is their label's (a 1, a tie ½, b 0), the mean of its votes where several people
labelled it. The judge's prediction is its verdict's score, or its soft preference (log-probabilities) where every
item has one. A design (`calibration.sample`: the review sample the labels were given on) gives each item its
probability of being labelled, and the labelled items weigh 1/π, the unlabelled 1/(1 − π) (each set then stands
for every item, as the inverse-probability weights of active statistical inference do); without one the labels
are taken as a uniform sample, and the summary says so.

Pure: rows and a design in, JSON-ready values out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgebias.core.record import ItemKind
from judgebias.core.summary import CorrectedFigure, CorrectedSection
from judgebias.core.verdict import WIN_SCORE
from judgebias.figures import ppi
from judgebias.figures.formatting import counted, pct
from judgebias.figures.ppi import Counts, Estimate, FloatArray
from judgebias.figures.rows import Rows

METHOD = "PPI++ (prediction-powered inference with power-tuned λ; Angelopoulos, Duchi & Zrnic 2023)"
MIN_LABELS = 10  # fewer labelled items than this: no correction (an interval from a handful says nothing)
PLAN_WIDTH = 0.05  # the interval width the summary's plan line says how many labels reach
SCORE = {"1": 1.0, "tie": 0.5, "2": 0.0}  # a person's score of answer a


@dataclass(frozen=True)
class Design:
    """How the labelled items were chosen: each item's probability of being labelled in the sample's frame, the items
    drawn, and where that is recorded. Items outside the frame that carry a label count as labelled for certain."""

    kind: str  # the review strategy: random | stratified | uncertain
    source: str  # the sample.json it was read from
    probabilities: Mapping[str, float] = field(default_factory=dict)  # every item of the frame
    sampled: frozenset[str] = frozenset()


@dataclass(frozen=True)
class People:
    """What people said and what the judge predicted, per unit of alike items (the same kind of row, in the same
    set, of the same weight and prediction: a million items are a few thousand units), how many items each unit
    holds, and each item's unit: all the estimates read."""

    unit: NDArray[np.int32]  # each item's unit
    counts: Counts  # items in each unit; every array below has one value a unit
    labelled: NDArray[np.bool_]  # the unit's items are in the labelled set
    # the unit's predictions stand in the judge's term: the unlabelled items, and those labelled for certain (outside
    # a design's frame: never unlabelled, so the judge's term would otherwise miss them)
    unlabelled: NDArray[np.bool_]
    score: FloatArray  # a person's score of a (0 where unlabelled)
    wins: FloatArray  # share of the item's labels for a (decisive numerator)
    decisive: FloatArray  # share of the item's labels that are decisive
    predicted: FloatArray  # the judge's score of a (verdict or soft)
    predicted_wins: FloatArray  # the judge's verdict is a
    predicted_decisive: FloatArray  # the judge's verdict is decisive
    weights: FloatArray  # 1/π for labelled items, 1/(1 − π) for unlabelled ones (1 without a design)
    left_out: int  # scored items outside the design's frame, unlabelled: not in the population
    skipped: int  # items drawn whose label is missing (taken as not drawn)
    prediction: str  # "verdict" or "soft"
    certain: int = 0  # labelled items outside the design's frame (labelled with probability 1)
    designed: bool = False  # the weights are a design's

    @property
    def labelled_count(self) -> int:
        """Items people labelled."""
        return int(self.counts[self.labelled].sum())

    @property
    def unlabelled_count(self) -> int:
        """Items the people did not label (the judge's term also holds those labelled for certain)."""
        return int(self.counts[self.unlabelled & ~self.labelled].sum())

    def item_weights(self) -> FloatArray:
        """Each item's design weight where it is labelled, 0 elsewhere (the weighted agreement's)."""
        per_unit: FloatArray = np.where(self.labelled, self.weights, 0.0)
        return per_unit[self.unit]


def people_of(items: Rows, scored: NDArray[Any], design: Design | None, prediction: str) -> People:
    """The units of `items` the estimates read; `scored`: items with a verdict (the others are in no set)."""
    codes = items.codes()
    kinds = items.kinds
    person = np.array([_person(kind) for kind in kinds], dtype=np.float64).reshape(len(kinds), 4)
    verdict_score = np.array([WIN_SCORE.get(kind.verdict, 0.0) for kind in kinds], dtype=np.float64)
    on = scored > 0
    labelled = (person[:, 0] > 0)[codes] & on
    soft = items.soft() if items.has_soft() and prediction != "verdict" else None
    use_soft = soft is not None and bool(on.any()) and not np.isnan(soft[on]).any()
    unlabelled = on & ~labelled
    weights: FloatArray | None = None
    left_out = skipped = certain = 0
    if design is not None:
        pi = np.full(len(items), np.nan)
        drawn = np.zeros(len(items), dtype=np.bool_)
        for i in range(len(items)):
            item_id = items.id(i)
            chance = design.probabilities.get(item_id)
            if chance is not None:
                pi[i] = chance
                drawn[i] = item_id in design.sampled
        in_frame = ~np.isnan(pi)
        skipped = int((drawn & ~labelled & on).sum())
        labelled_here = labelled & (drawn | ~in_frame)  # a label outside the frame: labelled for certain
        pi = np.where(in_frame, pi, 1.0)
        left_out = int((unlabelled & ~in_frame).sum())
        certainly = labelled_here & ~in_frame
        certain = int(certainly.sum())
        unlabelled = (on & ~labelled_here & in_frame) | certainly
        labelled = labelled_here
        weights = np.where(
            labelled, 1.0 / np.maximum(pi, 1e-300), np.where(unlabelled, 1.0 / np.maximum(1.0 - pi, 1e-300), 1.0)
        )  # a certain item: π = 1, weight 1 in both terms
    wins_table = np.array([kind_.verdict == "1" for kind_ in kinds], dtype=np.float64)
    decisive_table = np.array([kind_.verdict in ("1", "2") for kind_ in kinds], dtype=np.float64)
    # Kinds of row alike in all the estimates read of them (their labels' scores, the judge's verdict) share a code:
    # a unit is not split by what the figures do not read (model names, replies), so a comparison's joint units stay
    # as few as its other figures'.
    read = np.column_stack([person, verdict_score, wins_table, decisive_table]) if kinds else np.zeros((0, 7))
    value_code = np.unique(read, axis=0, return_inverse=True)[1].reshape(-1).astype(np.int32)
    status = labelled.view(np.int8) + 2 * unlabelled.view(np.int8)
    keys = [(value_code * 4)[codes] + status]
    keys += [] if weights is None else [weights.view(np.int64)]
    keys += [soft.view(np.int64)] if soft is not None and use_soft else []
    first, unit, counts = _units(keys)
    kind = codes[first]
    lab, unl = (status[first] & 1) > 0, (status[first] & 2) > 0
    predicted = verdict_score[kind]
    if soft is not None and use_soft:
        predicted = np.where(np.isnan(soft[first]), predicted, soft[first])
    return People(
        unit=unit,
        counts=counts,
        labelled=lab,
        unlabelled=unl,
        score=np.where(lab, person[kind, 1], 0.0),
        wins=np.where(lab, person[kind, 2], 0.0),
        decisive=np.where(lab, person[kind, 3], 0.0),
        predicted=predicted,
        predicted_wins=wins_table[kind],
        predicted_decisive=decisive_table[kind],
        weights=np.ones(counts.size) if weights is None else weights[first],
        left_out=left_out,
        skipped=skipped,
        prediction="soft" if use_soft else "verdict",
        certain=certain,
        designed=weights is not None,
    )


def _units(keys: Sequence[NDArray[Any]]) -> tuple[NDArray[np.int64], NDArray[np.int32], Counts]:
    """The items alike in every key as units: each unit's first item, each item's unit, each unit's count."""
    table = keys[0] if len(keys) == 1 else np.column_stack(keys)
    _, first, inverse, counts = np.unique(
        table, axis=None if len(keys) == 1 else 0, return_index=True, return_inverse=True, return_counts=True
    )
    return first, inverse.reshape(-1).astype(np.int32), counts.astype(np.int64)


def _person(kind: ItemKind) -> tuple[float, float, float, float]:
    """(labelled, score of a, share of labels for a, share decisive) of a kind of row: its votes where it has them,
    else its one label."""
    labels = [vote for vote in kind.human_votes if vote in SCORE] or ([kind.human] if kind.human in SCORE else [])
    if not labels:
        return 0.0, 0.0, 0.0, 0.0
    count = float(len(labels))
    return (
        1.0,
        sum(SCORE[label] for label in labels) / count,
        sum(label == "1" for label in labels) / count,
        sum(label in ("1", "2") for label in labels) / count,
    )


def corrected_section(
    people: People,
    judge: Mapping[str, Any],
    judge_intervals: Mapping[str, list[float] | None],
    design: Design | None,
    *,
    min_labels: int = MIN_LABELS,
    level: float = ppi.LEVEL,
) -> CorrectedSection:
    """summary.json's `corrected`: each corrected figure with the judge's own and the labels' own, the design, the
    labels' worth, and the plan; a refusal (and why) when the labels cannot carry a correction."""
    n, big_n = people.labelled_count, people.unlabelled_count
    section: CorrectedSection = {
        "method": METHOD,
        "prediction": people.prediction,
        "design": _design_record(design, people),
        "labelled": n,
        "unlabelled": big_n,
        "level": level,
        "interval": "prediction-powered (normal approximation)",
        "figures": {},
    }
    if n < min_labels:
        section["refused"] = (
            f"only {counted(n, 'labelled item')} (at least {min_labels} needed: "
            "python -m judgebias.review plan RUN says how many more)"
        )
        return section
    lab, unl = people.labelled, people.unlabelled
    sets: dict[str, Any] = {  # the labelled and the judge's sets: their design weights and counts
        "w": people.weights[lab],
        "w_unlabelled": people.weights[unl],
        "counts": people.counts[lab],
        "counts_unlabelled": people.counts[unl],
        "level": level,
    }
    figures: dict[str, CorrectedFigure] = {}
    scores = (people.score[lab], people.predicted[lab], people.predicted[unl])
    mean, alone = ppi.ppi_mean(*scores, **sets), ppi.ppi_mean(*scores, lam=0.0, **sets)
    figures["win_rate"] = _figure(mean, alone, judge.get("win_rate"), judge_intervals.get("win_rate"), n, big_n)
    decisive_labels = float(people.counts[lab] @ (people.decisive[lab] > 0))
    if decisive_labels >= 2:
        parts = (
            (people.wins[lab], people.predicted_wins[lab], people.predicted_wins[unl]),
            (people.decisive[lab], people.predicted_decisive[lab], people.predicted_decisive[unl]),
        )
        try:
            ratio, alone_ratio = ppi.ppi_ratio(*parts, **sets), ppi.ppi_ratio(*parts, lam=0.0, **sets)
        except ValueError:
            pass
        else:
            figures["decisive_win_rate"] = _figure(
                ratio, alone_ratio, judge.get("decisive_win_rate"), judge_intervals.get("decisive_win_rate"), n, big_n
            )
    section["figures"] = figures
    section["plan"] = _plan(mean, people, level)
    return section


def _figure(
    estimate: Estimate,
    alone: Estimate,
    judge_value: Any,
    judge_interval: list[float] | None,
    n: int,
    big_n: int,
) -> CorrectedFigure:
    """One corrected figure's record: the estimate, the judge's own, the labels' own, λ and the labels' worth."""
    worth = n * (alone.se / estimate.se) ** 2 if estimate.se > 0 else float(n)
    record: CorrectedFigure = {
        "estimate": estimate.value,
        "ci": estimate.interval,
        "lambda": estimate.lam,
        "se": estimate.se,
        "judge_only": judge_value if isinstance(judge_value, int | float) else None,
        "judge_only_ci": judge_interval,
        "labels_only": alone.value,
        "labels_only_ci": alone.interval,
        "effective_labels": round(worth, 1),
    }
    if big_n == 0 and isinstance(judge_value, int | float):
        record["judge_error"] = float(judge_value) - estimate.value  # every item labelled: the judge against people
    return record


def _design_record(design: Design | None, people: People) -> dict[str, Any]:
    """What the summary says of how the labels were drawn."""
    if design is None:
        return {
            "kind": "uniform",
            "source": None,
            "note": "no sampling design known: the labelled items are taken as a uniform sample of the items",
        }
    out: dict[str, Any] = {"kind": design.kind, "source": design.source, "weighted": True}
    notes = []
    if people.certain:
        out["certain"] = people.certain
        notes.append(
            f"{counted(people.certain, 'labelled item')} outside the sample's frame counted for certain (π = 1)"
        )
    if people.left_out:
        out["left_out"] = people.left_out
        notes.append(f"{counted(people.left_out, 'unlabelled item')} outside the sample's frame left out")
    if notes:
        out["note"] = "; ".join(notes)
    if people.skipped:
        out["skipped"] = people.skipped
    return out


def _plan(estimate: Estimate, people: People, level: float) -> dict[str, Any]:
    """How many labels a uniform sample would need for the corrected win rate's interval to be PLAN_WIDTH wide."""
    lab, unl = people.labelled, people.unlabelled
    residual_var = _variance(people.score[lab] - estimate.lam * people.predicted[lab], people.counts[lab])
    big_n = int(people.counts[unl].sum())
    imputed_var = _variance(estimate.lam * people.predicted[unl], people.counts[unl]) if big_n else 0.0
    needed = ppi.labels_for_width(PLAN_WIDTH, residual_var, imputed_var, big_n, level)
    items = int(people.counts[lab | unl].sum())
    return {
        "width": PLAN_WIDTH,
        "width_now": estimate.high - estimate.low,
        "labels_needed": needed if needed is not None and needed <= items else None,  # None: not on these items
        "items": items,
        "residual_var": residual_var,
        "imputed_var": imputed_var,
    }


def _variance(values: FloatArray, counts: Counts) -> float:
    """The variance (ddof 0) of the items' values, each row standing for `counts` items."""
    total = float(counts.sum())
    mean = float(counts @ values) / total
    return float(counts @ (values - mean) ** 2) / total


def corrected_note(record: CorrectedFigure, section: CorrectedSection, *, with_plan: bool = False) -> str:
    """The line a corrected figure is printed with: what it rests on, and the two references beside it (`with_plan`:
    and how many labels a uniform sample needs for a PLAN_WIDTH interval, when today's is wider)."""
    judge = record.get("judge_only")
    judge_ci = record.get("judge_only_ci")
    n, big_n = section["labelled"], section["unlabelled"]
    if big_n == 0:
        off = None if judge is None else 100 * (judge - record["estimate"])
        said = (
            ""
            if off is None
            else f"; the judge says {pct(judge)}, {abs(off):.1f} points {'above' if off > 0 else 'below'}"
        )
        return f"every item labelled: what people said, on {counted(n, 'item')}{said}"
    judge_text = "n/a" if judge is None else pct(judge) + _ci(judge_ci)
    text = (
        f"PPI++ on {counted(n, 'label')} worth {record['effective_labels']:.0f} labels alone, λ {record['lambda']:.2f}; "
        f"judge-only {judge_text}, labels-only {pct(record['labels_only'])}{_ci(record['labels_only_ci'])}"
    )
    plan = section.get("plan")
    if with_plan and plan and plan["width_now"] > plan["width"]:
        wide = f"an interval {100 * plan['width']:.0f} points wide"
        text += (
            f"; {wide} needs about {plan['labels_needed']} labels in all (python -m judgebias.review plan)"
            if plan["labels_needed"] is not None
            else f"; not even all {plan['items']} items labelled would give {wide}"
        )
    return text


def _ci(interval: Sequence[float] | None) -> str:
    if not interval:
        return ""
    return f" [{100 * interval[0]:.1f}, {100 * interval[1]:.1f}]"


def win_rate_replicates(units: NDArray[Any], *, people: People, lam: float) -> Callable[[FloatArray], FloatArray]:
    """The corrected win rate at its λ under each row of an item-weights matrix over items of these `units` (a paired
    bootstrap of two runs draws the same items for both): λ·m_u(Ŷ) + m_l(Y − λŶ), each mean weighted by the design
    and the draw."""
    labelled_w, unlabelled_w = (people.labelled * people.weights)[units], (people.unlabelled * people.weights)[units]
    score, predicted = people.score[units], people.predicted[units]
    residual, imputed = labelled_w * (score - lam * predicted), unlabelled_w * (lam * predicted)

    def replicates(draws: FloatArray) -> FloatArray:
        value = _ratio(draws @ residual, draws @ labelled_w)
        return value + _ratio(draws @ imputed, draws @ unlabelled_w) if unlabelled_w.any() else value

    return replicates


def decisive_replicates(units: NDArray[Any], *, people: People, lam: float) -> Callable[[FloatArray], FloatArray]:
    """The corrected decisive win rate at its λ under each row of an item-weights matrix over items of these
    `units`."""
    labelled_w, unlabelled_w = (people.labelled * people.weights)[units], (people.unlabelled * people.weights)[units]
    wins, decisive = people.wins[units], people.decisive[units]
    predicted_wins, predicted_decisive = people.predicted_wins[units], people.predicted_decisive[units]
    top_l, bottom_l = labelled_w * (wins - lam * predicted_wins), labelled_w * (decisive - lam * predicted_decisive)
    top_u, bottom_u = unlabelled_w * (lam * predicted_wins), unlabelled_w * (lam * predicted_decisive)

    def replicates(draws: FloatArray) -> FloatArray:
        mass_l = draws @ labelled_w
        top, bottom = _ratio(draws @ top_l, mass_l), _ratio(draws @ bottom_l, mass_l)
        if unlabelled_w.any():
            mass_u = draws @ unlabelled_w
            top, bottom = top + _ratio(draws @ top_u, mass_u), bottom + _ratio(draws @ bottom_u, mass_u)
        return _ratio(top, bottom)

    return replicates


def _ratio(numerator: FloatArray, denominator: FloatArray) -> FloatArray:
    out = np.full(np.shape(numerator), np.nan)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


ELO = 400.0 / math.log(10.0)  # a logistic coefficient in rating points (400 points: 10-to-1 odds)


def people_ratings(people: People, rows: Rows, level: float = ppi.LEVEL) -> dict[str, dict[str, float]]:
    """Bradley–Terry ratings as people would give them (prediction-powered logistic regression, as prediction-powered
    ranking does): logit P(a beats b) = r_a − r_b, the people's outcome (a tie half a win) corrected by the judge's,
    the first model's r fixed at 0, shown on the Elo-like scale of the plain ratings (mean 1000) with intervals from
    the fit's covariance. {} when there are fewer than 3 models, too few labelled games, or the fit does not converge."""
    models = sorted(
        {str(name) for kind in rows.kinds if kind.model_a and kind.model_b for name in (kind.model_a, kind.model_b)}
    )
    index = {name: k for k, name in enumerate(models)}
    k = len(models)
    pair = np.array(  # a kind's game as one number: first × k + second (k² for no game of two known models)
        [index.get(str(kind.model_a), k) * (k + 1) + index.get(str(kind.model_b), k) for kind in rows.kinds],
        dtype=np.int64,
    )
    firsts, _, counts = _units([people.unit.astype(np.int64) * (k + 1) ** 2 + pair[rows.codes()]])
    first, second = pair[rows.codes()[firsts]] // (k + 1), pair[rows.codes()[firsts]] % (k + 1)
    unit = people.unit[firsts]  # the people's unit of each game unit
    game = (first < k) & (second < k) & (first != second)
    lab, unl = people.labelled[unit] & game, people.unlabelled[unit] & game
    if k < 3 or int(counts[lab].sum()) < MIN_LABELS:
        return {}

    def design_of(chosen: NDArray[np.bool_]) -> FloatArray:
        x = np.zeros((int(chosen.sum()), len(models)))
        rows_here = np.arange(x.shape[0])
        np.add.at(x, (rows_here, first[chosen]), 1.0)
        np.add.at(x, (rows_here, second[chosen]), -1.0)
        return x[:, 1:]  # the first model's strength is 0

    score, predicted, weights = people.score[unit], people.predicted[unit], people.weights[unit]
    fit = ppi.ppi_logistic(
        design_of(lab), score[lab], predicted[lab], design_of(unl), predicted[unl],
        w=weights[lab], w_unlabelled=weights[unl], counts=counts[lab], counts_unlabelled=counts[unl],
    )  # fmt: skip
    if not fit.converged:
        return {}
    out = {}
    for m, name in enumerate(models):
        contrast = -np.ones(k) / k  # r_m minus the mean of every r (r_0 = 0): the scale's 1000 is the mean
        contrast[m] += 1.0
        value, low, high = fit.interval(contrast[1:], level)
        out[name] = {
            "people_rating": 1000.0 + ELO * value,
            "people_low": 1000.0 + ELO * low,
            "people_high": 1000.0 + ELO * high,
        }
    return out


@dataclass(frozen=True)
class Controlled:
    """The corrected length-controlled win rate, and each unit's pull on its intercept (for the bootstrap of a
    clustered run: the fit linearised at its estimate, a resample's intercept the estimate's plus the resample's
    weighted mean pull). Its units are the people's split by the answers' length ratio."""

    record: CorrectedFigure
    intercept: float
    unit: NDArray[np.int32]  # each item's unit
    labelled: FloatArray  # per unit: 1 where labelled
    unlabelled: FloatArray  # per unit: 1 where in the judge's term
    pull_labelled: FloatArray  # 0 on unlabelled units
    pull_unlabelled: FloatArray  # 0 on units outside the judge's term


def people_length_controlled(people: People, words_ratio: FloatArray, level: float = ppi.LEVEL) -> Controlled | None:
    """The length-controlled win rate as people would give it: logit P(a wins) = b0 + b1·z (z: the answers' log word
    ratio over its spread), fitted by prediction-powered logistic regression on every scored item (a tie half a
    win, as in the win rate); sigmoid(b0) is the win rate at equal lengths. None with too few labels, no spread of
    lengths, or no convergence."""
    if people.labelled_count < MIN_LABELS:
        return None
    ratios, ratio_of = np.unique(words_ratio, return_inverse=True)  # a table of the few ratios that occur
    first, unit, counts = _units([people.unit.astype(np.int64) * ratios.size + ratio_of.reshape(-1)])
    of, ratio = people.unit[first], words_ratio[first]
    lab, unl = people.labelled[of], people.unlabelled[of]
    population = lab | unl
    spread = math.sqrt(_variance(ratio[population], counts[population]))
    if not spread > 0.0:
        return None
    x = np.column_stack([np.ones(ratio.size), ratio / spread])
    score, predicted, weights = people.score[of], people.predicted[of], people.weights[of]
    c_l, c_u = counts[lab], counts[unl]
    w_l, w_u = (
        ppi.normalised(weights[lab], c_l.astype(np.float64)),
        ppi.normalised(weights[unl], c_u.astype(np.float64)),
    )
    fit = ppi.ppi_logistic(
        x[lab], score[lab], predicted[lab], x[unl], predicted[unl], w=w_l, w_unlabelled=w_u,
        counts=c_l, counts_unlabelled=c_u,
    )  # fmt: skip
    if not fit.converged:
        return None
    value, low, high = fit.interval(np.array([1.0, 0.0]), level)
    record: CorrectedFigure = {"estimate": _sigmoid(value), "ci": [_sigmoid(low), _sigmoid(high)], "lambda": fit.lam}
    lam, theta = fit.lam, fit.coefficients
    mu = 1.0 / (1.0 + np.exp(-(x @ theta)))
    n, big_n = float(c_l.sum()), float(c_u.sum())
    hessian = (1.0 - lam) / n * (x[lab] * (c_l * w_l * mu[lab] * (1 - mu[lab]))[:, None]).T @ x[lab]
    if big_n:
        hessian = hessian + lam / big_n * (x[unl] * (c_u * w_u * mu[unl] * (1 - mu[unl]))[:, None]).T @ x[unl]
    first_row = -np.linalg.inv(hessian)[0]
    pull_l, pull_u = np.zeros(ratio.size), np.zeros(ratio.size)
    residual = (mu[lab] - score[lab]) - lam * (mu[lab] - predicted[lab])
    pull_l[lab] = (x[lab] * (w_l * residual)[:, None]) @ first_row
    if big_n:
        pull_u[unl] = (x[unl] * (lam * w_u * (mu[unl] - predicted[unl]))[:, None]) @ first_row
    return Controlled(record, float(value), unit, lab.astype(np.float64), unl.astype(np.float64), pull_l, pull_u)


def length_controlled_replicates(units: NDArray[Any], *, controlled: Controlled) -> Callable[[FloatArray], FloatArray]:
    """The corrected length-controlled win rate under each row of an item-weights matrix over items of these
    `units`, the fit linearised at its estimate (one Newton step from it): sigmoid(b0 + the resample's mean pull on
    b0)."""
    labelled, unlabelled = controlled.labelled[units], controlled.unlabelled[units]
    pull_l, pull_u = controlled.pull_labelled[units], controlled.pull_unlabelled[units]
    intercept = controlled.intercept

    def replicates(draws: FloatArray) -> FloatArray:
        shift = _ratio(draws @ pull_l, draws @ labelled)
        if unlabelled.any():
            shift = shift + _ratio(draws @ pull_u, draws @ unlabelled)
        out: FloatArray = 1.0 / (1.0 + np.exp(-(intercept + shift)))
        return out

    return replicates


def _sigmoid(value: float) -> float:
    return 1.0 / (1.0 + math.exp(-value))
