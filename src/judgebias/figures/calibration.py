"""Calibration against people: how well annotators agree with each other (the human ceiling) and how well the
judge agrees with their majority and with each of them, every figure with a bootstrap interval.

Pure: reads each row's verdict, human_votes and human_voters (an ItemResult, or the kind of row it is, which holds
them) and returns a JSON-ready dict; no I/O.

Two conventions, both reported and both labelled: *with ties* a tie label is a label like any other (a judge
tie matches a human tie); *decisive* keeps only decisive human labels ("a" or "b"), so a judge tie there is a
miss, and the human ties left out are counted. Every figure is a ratio over items, and the run's one seeded
bootstrap (by item, or by cluster when the run clusters) gives every interval, so the ceiling and the judge's
figures are drawn together with every other figure of the summary.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from judgebias.core.labels import HUMAN_LABELS, majority
from judgebias.core.record import ItemKind
from judgebias.core.summary import Agreement, Calibration
from judgebias.figures import stats
from judgebias.figures.stats import FloatArray, IntArray

_K = len(HUMAN_LABELS)
_INDEX: dict[str, int] = {label: i for i, label in enumerate(HUMAN_LABELS)}
_DECISIVE = ("1", "2")


class _Draws:
    """The run's bootstrap (items, or clusters of items) shared by every figure of the calibration.

    Every figure here reads an item only through its verdict, its votes and who gave them, so items alike in those
    (and in their cluster) are drawn as one unit (stats.units_of, stats.unit_counts), and the draws are made anew
    for each figure from the same seed instead of kept: the same numbers, without resamples x items in memory."""

    def __init__(self, items: Sequence[ItemKind], resamples: int, seed: int, groups: IntArray | None) -> None:
        kind = stats.cluster_index((r.verdict, r.human_votes, r.human_voters) for r in items)
        self.units = stats.units_of([kind] if groups is None else [kind, groups], len(items))
        self.resamples, self.seed, self.groups = resamples, seed, groups

    def _replicates(self, per_item: FloatArray, statistic: Callable[[FloatArray], FloatArray]) -> list[float] | None:
        """The percentile interval of `statistic` of the unit counts @ each unit's row of `per_item`."""
        if self.resamples <= 0 or not self.units.first.size:
            return None
        rows = per_item[self.units.first]
        blocks = stats.unit_counts(self.units, self.resamples, self.seed, self.groups)
        return stats.percentile_interval(np.concatenate([statistic(counts @ rows) for counts in blocks]))

    def ratio(self, numerator: FloatArray, denominator: FloatArray) -> list[float] | None:
        """The interval of sum(numerator) / sum(denominator) over resampled items."""
        if denominator.sum() <= 0:
            return None
        return self._replicates(np.column_stack([numerator, denominator]), lambda sums: stats.ratio(*sums.T))

    def kappa(self, onehot: FloatArray) -> list[float] | None:
        """The interval of Cohen's kappa of per-item one-hot (judge or rater 1) x (rater 2) cells."""
        if onehot.sum() <= 0:
            return None
        return self._replicates(onehot, lambda cells: stats.cohen_kappa_batch(cells.reshape(-1, _K, _K)))

    def alpha(self, coincidences: FloatArray) -> list[float] | None:
        """The interval of Krippendorff's alpha of per-item coincidence cells."""
        if coincidences.sum() <= 0:
            return None
        return self._replicates(coincidences, lambda cells: krippendorff_alpha_batch(cells.reshape(-1, _K, _K)))


def krippendorff_alpha_batch(coincidences: FloatArray) -> FloatArray:
    """Krippendorff's alpha (nominal) of each (k, k) coincidence matrix in a stack; NaN where undefined."""
    # alpha = 1 - D_o / D_e with D_o = (n - sum_c o_cc) / n and D_e = (n^2 - sum_c n_c^2) / (n (n - 1)).
    n = coincidences.sum(axis=(1, 2))
    observed = n - np.trace(coincidences, axis1=1, axis2=2)
    margins = coincidences.sum(axis=2)
    expected = n * n - (margins * margins).sum(axis=1)
    return 1.0 - stats.ratio((n - 1.0) * observed, np.where(expected > 1e-12, expected, 0.0))


def _coincidence(votes: Sequence[str]) -> FloatArray:
    """One item's coincidence cells: every ordered pair of its votes, weighted 1 / (votes - 1)."""
    cells = np.zeros(_K * _K)
    m = len(votes)
    if m < 2:
        return cells
    counts = Counter(votes)
    for c, nc in counts.items():
        for k, nk in counts.items():
            cells[_INDEX[c] * _K + _INDEX[k]] += (nc * (nk - (c == k))) / (m - 1)
    return cells


def _pair_rates(votes: Sequence[str]) -> tuple[float, float]:
    """(agreeing, all) ordered pairs of distinct votes of one item, as a share: (share, 1) or (0, 0)."""
    m = len(votes)
    if m < 2:
        return 0.0, 0.0
    same = sum(c * (c - 1) for c in Counter(votes).values())
    return same / (m * (m - 1)), 1.0


def _agreements(
    draws: _Draws, match: FloatArray, has: FloatArray, decisive: FloatArray, has_d: FloatArray
) -> Agreement:
    """Agreement with ties (`match` of `has`) and on decisive labels (`decisive` of `has_d`), each with its interval."""
    total, total_d = float(has.sum()), float(has_d.sum())
    return {
        "agreement": float(match.sum()) / total if total > 0 else None,
        "agreement_ci": draws.ratio(match, has),
        "agreement_n": int(total),
        "decisive_agreement": float(decisive.sum()) / total_d if total_d > 0 else None,
        "decisive_agreement_ci": draws.ratio(decisive, has_d),
        "decisive_agreement_n": int(total_d),
    }


def _by_annotator(r: ItemKind) -> dict[str, str]:
    """The item's votes by annotator name ({} when its votes are anonymous)."""
    if len(r.human_voters) != len(r.human_votes):
        return {}
    return dict(zip(r.human_voters, r.human_votes, strict=True))


def _kappa_cell(first: str, second: str) -> int:
    """The cell of a 3 x 3 (first rater, second rater) table."""
    return _INDEX[first] * _K + _INDEX[second]


def calibrate(
    items: Sequence[ItemKind], *, resamples: int = 1000, seed: int = 0, groups: IntArray | None = None
) -> Calibration | None:
    """The human ceiling, the judge against the majority and against each annotator; None without votes.

    `groups` (each row's cluster number) makes the draw the run's cluster bootstrap.
    """
    if not any(r.human_votes for r in items):
        return None
    draws = _Draws(items, resamples, seed, groups)
    scored = np.array([r.verdict != "error" for r in items], dtype=np.float64)
    annotators = sorted({name for r in items for name in r.human_voters})
    return {
        "annotators": annotators,
        "labels_n": sum(len(r.human_votes) for r in items),
        "labelled_items_n": sum(1 for r in items if r.human_votes),
        "ceiling": _ceiling(items, annotators, draws),
        "majority": _against_majority(items, scored, draws),
        "per_annotator": [_against_annotator(items, scored, name, draws) for name in annotators],
    }


def _ceiling(items: Sequence[ItemKind], annotators: Sequence[str], draws: _Draws) -> Agreement:
    """How often two people agree (with ties, decisive), and the chance-corrected figure: Cohen's kappa for two
    named annotators, Krippendorff's alpha otherwise."""
    n = len(items)
    agree, has = np.zeros(n), np.zeros(n)
    agree_d, has_d = np.zeros(n), np.zeros(n)
    ties = 0
    for i, r in enumerate(items):
        agree[i], has[i] = _pair_rates(r.human_votes)
        agree_d[i], has_d[i] = _pair_rates([v for v in r.human_votes if v in _DECISIVE])
        ties += int(has[i] > 0 and has_d[i] == 0)
    out = _agreements(draws, agree, has, agree_d, has_d)
    out["ties_left_out"] = ties
    if len(annotators) == 2:
        onehot = np.zeros((n, _K * _K))
        for i, r in enumerate(items):
            by = _by_annotator(r)
            if annotators[0] in by and annotators[1] in by:
                onehot[i, _kappa_cell(by[annotators[0]], by[annotators[1]])] = 1.0
        out["method"] = "cohen_kappa"
        out["kappa"] = stats.cohen_kappa(onehot.sum(axis=0).reshape(_K, _K))
        out["kappa_ci"] = draws.kappa(onehot) if out["kappa"] is not None else None
        out["kappa_n"] = int(onehot.sum())
    else:
        coincidences = np.stack([_coincidence(r.human_votes) for r in items])
        value = float(krippendorff_alpha_batch(coincidences.sum(axis=0).reshape(1, _K, _K))[0])
        out["method"] = "krippendorff_alpha"
        out["kappa"] = value if np.isfinite(value) else None
        out["kappa_ci"] = draws.alpha(coincidences) if out["kappa"] is not None else None
        out["kappa_n"] = int(has.sum())
    return out


def _against(items: Sequence[ItemKind], scored: FloatArray, labels: Sequence[str | None], draws: _Draws) -> Agreement:
    """The judge's verdicts against one label per item (None: no label): with ties, decisive, Cohen's kappa."""
    n = len(items)
    has = scored * np.array([label is not None for label in labels], dtype=np.float64)
    match = has * np.array([r.verdict == label for r, label in zip(items, labels, strict=True)], dtype=np.float64)
    decisive = has * np.array([label in _DECISIVE for label in labels], dtype=np.float64)
    onehot = np.zeros((n, _K * _K))
    for i, (r, label) in enumerate(zip(items, labels, strict=True)):
        if has[i] and label is not None and r.verdict in _INDEX:
            onehot[i, _kappa_cell(r.verdict, label)] = 1.0
    out = _agreements(draws, match, has, match * decisive, decisive)
    out["ties_left_out"] = int(has.sum() - decisive.sum())
    out["kappa"] = stats.cohen_kappa(onehot.sum(axis=0).reshape(_K, _K))
    out["kappa_ci"] = draws.kappa(onehot) if out["kappa"] is not None else None
    return out


def _against_majority(items: Sequence[ItemKind], scored: FloatArray, draws: _Draws) -> Agreement:
    """The judge against the strict plurality of each item's votes; split items (no plurality) left out."""
    labels = [majority(r.human_votes) for r in items]
    out = _against(items, scored, labels, draws)
    out["split_left_out"] = sum(1 for r, label in zip(items, labels, strict=True) if r.human_votes and label is None)
    return out


def _against_annotator(items: Sequence[ItemKind], scored: FloatArray, name: str, draws: _Draws) -> Agreement:
    """The judge against one annotator's labels."""
    labels = [_by_annotator(r).get(name) for r in items]
    return {"annotator": name, **_against(items, scored, labels, draws)}
