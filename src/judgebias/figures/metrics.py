"""The run summary: every figure a run reports, computed from the two recorded calls per item (no new calls).

Pure: reads ItemResult rows as columns (figures.rows: what a kind of row decides is computed once per kind) and
returns JSON-ready dicts (str/int/float/bool/None, lists, dicts). NaN never appears: an undefined figure is None,
and a `*_note` says why when an `_n` of 0 does not make it obvious.
Items whose verdict is "error" are left out of every figure except the error counts. Uncertainty comes from
one seeded bootstrap shared by all figures (both calls of an item always travel together), over items or, with
a clustering, over clusters of items (all pairs of one question travel together).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from judgebias.core.judged import calls_by_order, majority_label, soft_preference
from judgebias.core.record import ItemKind, ItemResult
from judgebias.core.style import FEATURES, Style
from judgebias.core.summary import (
    CallCounts,
    Corrected,
    CorrectedSection,
    Counts,
    Figures,
    HumanLabels,
    HumanVotes,
    Intervals,
    Length,
    MeasuredFigures,
    OwnFamily,
    Pooled,
    Position,
    Repetition,
    SelfPreference,
    Soft,
    StyleBias,
    WinRates,
    figure_value,
)
from judgebias.core.verdict import WIN_SCORE, is_consistent, preference, reconcile, translate
from judgebias.figures import catalogue, identifiability, stats
from judgebias.figures.calibration import calibrate
from judgebias.figures.clustering import Clustering
from judgebias.figures.corrected import (
    MIN_LABELS,
    Design,
    People,
    corrected_note,
    corrected_section,
    decisive_replicates,
    length_controlled_replicates,
    people_length_controlled,
    people_of,
    win_rate_replicates,
)
from judgebias.figures.formatting import TOO_FEW_RESAMPLES, counted
from judgebias.figures.rows import Rows
from judgebias.figures.stats import FloatArray

Label = TypeVar("Label", bound=str)  # a positional label or an item-frame verdict, whichever a majority counts
_KAPPA_LABELS = ("1", "2", "tie")
_MIN_LC_ITEMS = 10
_MIN_SC_ITEMS = 20  # decisive verdicts the style-controlled fit needs (it has up to eight coefficients)
_MIN_FEATURE_ITEMS = 5  # a feature enters a style-controlled fit when a and b differ in it this often
_BT_PRIOR = 1.0

ONE_ORDER_NOTE = (
    "only one order was recorded (call2 is missing for every item), so position consistency, "
    "first/second-position bias and flip rates cannot be measured"
)
SOFT_NOTE = "judge.logprobs=true, but the endpoint returned no log-probabilities: no soft verdicts"
NO_LENGTH_NOTE = "no answer lengths were recorded (chars and words are 0 for every item)"
NO_STYLE_NOTE = "no style features were recorded (style_a and style_b are missing for every item)"

Mask = NDArray[np.uint8]  # 0/1 per item (see _mask)
Rate = tuple[NDArray[Any], NDArray[Any]]  # float64 columns, masks, or a signed difference of two masks
Replicates = Callable[[FloatArray], FloatArray]
IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class Statistic:
    """A figure under each row of a weights matrix that reads the items only through `columns` (items first).

    Knowing what it reads lets the bootstrap compute it on one item of each unit of equal columns
    (stats.units_of) instead of on every item: `on(rows)` is the same statistic over those rows only."""

    make: Callable[..., Replicates]  # make(*columns): the figure under weights (resamples x rows)
    columns: tuple[NDArray[Any], ...]  # float64, integers (exact in float64), or a byte a value

    @functools.cached_property
    def _replicates(self) -> Replicates:
        return self.make(*self.columns)

    def __call__(self, weights: FloatArray) -> FloatArray:
        return self._replicates(weights)

    def on(self, rows: NDArray[np.int64]) -> Statistic:
        """The statistic of these rows (in this order)."""
        return Statistic(self.make, tuple(column[rows] for column in self.columns))


class _Rates(dict[str, Rate]):
    """Ratio figures by name, each 0/1 column kept in one byte an item instead of eight (the same values: a sum or
    a product with them is the same number), which is most of what a run's figures hold for a million items."""

    def __setitem__(self, name: str, rate: Rate) -> None:
        super().__setitem__(name, (_narrowed(rate[0]), _narrowed(rate[1])))

    def update(self, rates: Mapping[str, Rate]) -> None:  # type: ignore[override]
        for name, rate in rates.items():
            self[name] = rate


def _narrowed(values: FloatArray) -> FloatArray:
    """A 0/1 column as one byte an item; any other column as it is."""
    if values.dtype == np.float64 and values.size and bool(((values == 0.0) | (values == 1.0)).all()):
        return values.astype(np.uint8)  # read only through sums and products
    return values


@dataclass
class _Figures:
    """What the bootstrap needs: ratio figures (per-item numerator, denominator) and other statistics."""

    rates: _Rates
    others: dict[str, Statistic]


@dataclass(frozen=True)
class Measured:
    """A run's figures before their intervals: the point values, and each figure as a function of item weights
    (for the bootstrap: one run's intervals, or a paired comparison that weighs two runs' items alike)."""

    summary: MeasuredFigures
    rates: Mapping[str, Rate]  # a ratio figure: per-item numerator and denominator (value = sum num / sum den;
    # both may be scaled alike to fit a byte: win_rate_consistent and win_rate_pooled count half points doubled)
    others: Mapping[str, Statistic]  # any other figure: its value under each row of a weights matrix
    groups: IntArray | None  # each row's cluster number (None: items are resampled)
    derived: Mapping[str, float | None] = dataclasses.field(default_factory=dict)  # figures summary.json does
    # not state but a comparison measures (invalid_rate)
    computed: Mapping[str, list[float]] = dataclasses.field(default_factory=dict)  # intervals that come with
    # their figure (the corrected figures' prediction-powered ones), not drawn by the run's bootstrap

    def value(self, name: str) -> float | None:
        """Figure `name`'s point value (None: absent or undefined)."""
        return self.derived[name] if name in self.derived else figure_value(self.summary, name)

    def replicates(self, name: str, weights: FloatArray) -> FloatArray:
        """Figure `name` under each row of `weights` (resamples x items); NaN where it is undefined."""
        if name in self.rates:
            numerator, denominator = self.rates[name]
            return stats.ratio(weights @ numerator, weights @ denominator)
        return self.others[name](weights)

    def columns(self, skip: AbstractSet[str] = frozenset()) -> list[NDArray[Any]]:
        """Every per-item column a figure's replicates read (each array once; those of `skip` left out), and the
        clusters: items equal in all of them are alike to every figure and to the bootstrap."""
        found: dict[int, NDArray[Any]] = {id(c): c for rate in self.rates.values() for c in rate}
        found |= {id(c): c for name, statistic in self.others.items() if name not in skip for c in statistic.columns}
        if self.groups is not None:
            found[id(self.groups)] = self.groups
        return list(found.values())

    def on(self, rows: NDArray[np.int64]) -> Measured:
        """The same figures' replicates over these rows only (the point values are the whole run's)."""
        rates = {name: (numerator[rows], denominator[rows]) for name, (numerator, denominator) in self.rates.items()}
        others = {name: statistic.on(rows) for name, statistic in self.others.items()}
        groups = None if self.groups is None else self.groups[rows]
        return dataclasses.replace(self, rates=rates, others=others, groups=groups)


def bootstrap_units(
    measured: Sequence[Measured], n: int, groups: IntArray | None = None, skip: AbstractSet[str] = frozenset()
) -> stats.Units:
    """The units of the bootstrap of these runs' figures (row i of each is the same item): items equal in every
    column any figure reads (but those of `skip`, not drawn), and in their cluster (each run's, or `groups`)."""
    columns = [column for one in measured for column in one.columns(skip)]
    if groups is not None:
        columns.append(groups)
    return stats.units_of(columns, n)


def summarize(
    results: Sequence[ItemResult],
    *,
    resamples: int = 1000,
    seed: int = 0,
    agreement_threshold: float = 0.75,
    judge_family: str | None = None,
    logprobs_requested: bool = False,
    clustering: Clustering | None = None,
    people: PeopleSettings | None = None,
) -> Figures:
    """Every figure of a run (counts, rates, position bias, human calibration, length, CIs), JSON-ready.

    With `clustering` (one label per row) every interval resamples clusters, not items; `people`: how the labels
    correct the figures (figures.corrected).
    """
    rows = Rows.of(results)
    measured = measure(
        rows,
        resamples=resamples,
        seed=seed,
        agreement_threshold=agreement_threshold,
        judge_family=judge_family,
        logprobs_requested=logprobs_requested,
        clustering=clustering,
        people=people,
    )
    intervals = _intervals(len(rows), resamples, seed, measured)
    drawn: Intervals = {
        "ci": {name: measured.computed.get(name, intervals.get(name)) for name in _ordered(measured, intervals)},
        "ci_degenerate": _degenerate(rows, measured, intervals, resamples),
        "bootstrap_resamples": resamples,
        "bootstrap_seed": seed,
        **_cluster_fields(clustering, measured.groups),
    }
    return {**measured.summary, **drawn, **people_notes(measured.summary.get("corrected"), intervals)}


def _ordered(measured: Measured, intervals: Mapping[str, list[float] | None]) -> list[str]:
    """The `ci` entries in the catalogue's order: the bootstrap's and those that come with their figure."""
    return [name for name in catalogue.with_intervals() if name in intervals or name in measured.computed]


def people_notes(section: CorrectedSection | None, intervals: Mapping[str, list[float] | None]) -> Corrected:
    """Each corrected figure's printed note, with the judge's own interval now drawn; why there is none, when the
    labels could not carry a correction."""
    if section is None:
        return {}
    out: Corrected = {}
    if "refused" in section:
        out["corrected_win_rate_note"] = f"not corrected: {section['refused']}"
        return out
    for name, record in section["figures"].items():
        record["judge_only_ci"] = intervals.get(name)
        drawn = intervals.get(f"corrected_{name}")
        if drawn is not None:  # a clustered run: the cluster bootstrap's interval, not the normal approximation's
            record["ci"] = drawn
        if name == "win_rate":
            out["corrected_win_rate_note"] = corrected_note(record, section, with_plan=True)
        elif name == "decisive_win_rate":
            out["corrected_decisive_win_rate_note"] = corrected_note(record, section)
    return out


def measure(
    results: Sequence[ItemResult],
    *,
    resamples: int = 1000,
    seed: int = 0,
    agreement_threshold: float = 0.75,
    judge_family: str | None = None,
    logprobs_requested: bool = False,
    clustering: Clustering | None = None,
    people: PeopleSettings | None = None,
) -> Measured:
    """Every figure's point value, and what its interval is drawn from (`resamples`, `seed`: the calibration's own
    intervals, computed here; `people`: how the labels correct the figures, and the design they were drawn by)."""
    if resamples < 0:
        raise ValueError(f"resamples must be >= 0, got {resamples}")
    items = Rows.of(results)
    n = len(items)
    scored = _mask(items, lambda r: r.verdict != "error")
    score = _values(items, lambda r: WIN_SCORE.get(r.verdict, 0.0)) * scored
    decisive = _mask(items, lambda r: r.verdict in ("1", "2"))
    orders = 1 if n and all(r.call2 is None for r in items.kinds) else 2
    figures = _Figures(rates=_Rates(), others={})
    groups = _groups(clustering, n)

    counts: Counts = {
        "n_items": n,
        "n_scored": int(scored.sum()),
        "orders": orders,
    }
    if not scored.any():
        counts["scored_note"] = "no item could be scored: none was recorded, or every item has a failed call"
    figures.rates["win_rate"] = (score, scored)
    figures.rates["decisive_win_rate"] = (_mask(items, lambda r: r.verdict == "1"), decisive)
    win_rates: WinRates = {
        "wins": int(np.sum(decisive * score)),
        "losses": int(np.sum(decisive * (1.0 - score))),
        "ties": int(np.sum(_mask(items, lambda r: r.verdict == "tie"))),
        "win_rate": _point(*figures.rates["win_rate"]),
        "decisive_win_rate": _point(*figures.rates["decisive_win_rate"]),
    }
    votes: HumanVotes = {}
    if any(r.human_votes for r in items.kinds):
        votes = _human_votes(items, scored, figures)
        calibration = calibrate(items.kind_of_each(), resamples=resamples, seed=seed, groups=groups)
        if calibration is not None:
            votes["calibration"] = calibration
    settings = people or PeopleSettings()
    length: Length | None = None
    corrected: Corrected = {}
    computed: dict[str, list[float]] = {}
    weights = None
    if settings.design is not None or any(r.human is not None or r.human_votes for r in items.kinds):
        labelled = people_of(items, scored, settings.design, settings.prediction)
        if settings.design is not None:  # agreement over the labels the design drew, each weighing 1/π
            weights = labelled.item_weights()
        length = _length(items, scored, score, decisive, figures)
        corrected, computed = _corrected(
            labelled, win_rates, length, items.log_ratio("words_a", "words_b"), settings, figures
        )
    labels: HumanLabels = {}
    if any(r.human is not None for r in items.kinds):
        ceiling = votes.get("human_human_agreement")  # the human ceiling, when two people labelled an item
        labels = _human_labels(items, scored, agreement_threshold, figures, ceiling, weights)
    repetition: Repetition = {}
    if any(call.sample > 0 for r in items.kinds for call in r.calls):
        repetition = _samples(items, figures)
    own_family: OwnFamily = {}
    if judge_family is not None and any(r.model_a or r.model_b for r in items.kinds):
        own_family["self_preference"] = _self_preference(items, scored, score, judge_family, figures)
    summary: MeasuredFigures = {
        **counts,
        **_call_counts(items),
        **win_rates,
        **_position(items, scored, score, orders, figures),
        **_pooled(items, scored, figures),
        **(length if length is not None else _length(items, scored, score, decisive, figures)),
        **_style(items, score, decisive, figures),
        **_soft(items, scored, figures, logprobs_requested),
        **labels,
        **votes,
        **corrected,
        **repetition,
        **own_family,
    }
    section = corrected.get("corrected")
    if groups is not None and section is not None and computed:  # pairs of one question are not independent:
        field_name = clustering.field if clustering is not None else "clusters"  # the cluster bootstrap draws
        section["interval"] = f"cluster bootstrap over {field_name}, at the prediction-powered λ"  # these too
        computed = {}
    return Measured(summary, figures.rates, figures.others, groups, computed=computed)


@dataclass(frozen=True)
class PeopleSettings:
    """How people's labels correct a run's figures: the design they were drawn by (None: taken as a uniform
    sample), what stands for the judge's prediction (verdict, soft, or auto: soft where every item has it), the
    fewest labels that carry a correction."""

    design: Design | None = None
    prediction: str = "auto"
    min_labels: int = MIN_LABELS


def _corrected(
    people: People,
    win_rates: WinRates,
    length: Length,
    words_ratio: FloatArray,
    settings: PeopleSettings,
    figures: _Figures,
) -> tuple[Corrected, dict[str, list[float]]]:
    """The corrected figures (their values, the `corrected` section, their prediction-powered intervals) and, for a
    paired comparison, each as a function of item weights."""
    judge: Mapping[str, Any] = win_rates
    section = corrected_section(people, judge, {}, settings.design, min_labels=settings.min_labels)
    out: Corrected = {"corrected": section}
    computed: dict[str, list[float]] = {}
    columns = (people.unit,)  # an item's unit says all the corrected figures read of it
    for name, record in section["figures"].items():
        figure = f"corrected_{name}"
        computed[figure] = record["ci"]
        lam = record["lambda"]
        if name == "win_rate":
            out["corrected_win_rate"] = record["estimate"]
            figures.others[figure] = Statistic(functools.partial(win_rate_replicates, people=people, lam=lam), columns)
        else:
            out["corrected_decisive_win_rate"] = record["estimate"]
            figures.others[figure] = Statistic(functools.partial(decisive_replicates, people=people, lam=lam), columns)
    if "refused" in section:
        out["corrected_win_rate"] = None
        return out, computed
    controlled = people_length_controlled(people, words_ratio)
    if controlled is not None:
        record = controlled.record
        record["judge_only"] = length.get("length_controlled_win_rate")
        section["figures"]["length_controlled_win_rate"] = record
        out["corrected_length_controlled_win_rate"] = record["estimate"]
        computed["corrected_length_controlled_win_rate"] = record["ci"]
        figures.others["corrected_length_controlled_win_rate"] = Statistic(
            functools.partial(length_controlled_replicates, controlled=controlled), (controlled.unit,)
        )
    return out, computed


def _win_tables(first: IntArray, second: IntArray, outcome: FloatArray, k: int) -> Replicates:
    """The k x k win table of the games under each row of a weights matrix (resamples x games): cell (i, j) sums
    the weighted wins of model i over model j, a tie half a win each.

    Games of one pairing and one outcome add the same amounts to the same two cells: each row's weights are summed
    per such kind (stats.Kinds) and spread into the table by one small matrix product, not scattered game by game."""
    forward, backward = first * k + second, second * k + first
    kinds = stats.kinds_of(forward, outcome)
    one = kinds.first
    spread = np.zeros((one.size, k * k), dtype=np.float64)
    np.add.at(spread, (np.arange(one.size), forward[one]), outcome[one])
    np.add.at(spread, (np.arange(one.size), backward[one]), 1.0 - outcome[one])

    def wins(weights: FloatArray) -> FloatArray:
        table: FloatArray = (kinds.summed(weights) @ spread).reshape(weights.shape[0], k, k)
        return table

    return wins


def bradley_terry_ratings(
    results: Sequence[ItemResult], *, resamples: int = 1000, seed: int = 0, clustering: Clustering | None = None
) -> list[dict[str, Any]]:
    """Elo-like Bradley–Terry ratings of the models, plain and style-controlled, with intervals; [] if < 3 models."""
    # Strengths come from the debiased verdicts (a tie is half a win each, failed items skipped) by Hunter's
    # MM algorithm with one virtual tie between every pair of models (see stats.bradley_terry_batch).
    # rating = 400 * log10(strength), shifted so that the mean rating is 1000: 400 points apart = 10:1 odds.
    # Columns filled straight from the rows: a list of (model, model, score) tuples cost 100 bytes a game.
    items = Rows.of(results)

    def is_game(r: ItemKind) -> bool:
        return r.verdict != "error" and bool(r.model_a and r.model_b) and r.model_a != r.model_b

    played = np.flatnonzero(_mask(items, is_game))
    rows = None if played.size == len(items) else played
    groups = _groups(clustering, len(items))
    game_groups = None if groups is None else stats.cluster_index(groups[played])
    models = sorted({str(name) for r in items.kinds if is_game(r) for name in (r.model_a, r.model_b)})
    if len(models) < 3:
        return []
    k = len(models)
    index = {m: i for i, m in enumerate(models)}
    first = _picked_values(items, rows, lambda r: index.get(str(r.model_a), 0), np.int64)
    second = _picked_values(items, rows, lambda r: index.get(str(r.model_b), 0), np.int64)
    outcome = _picked_values(items, rows, lambda r: WIN_SCORE.get(r.verdict, 0.0), np.float64)
    features, z = _style_covariates(items, rows)
    controlled = any(name in FEATURES for name in features)  # else there is no formatting to control
    # Games alike in their models, outcome, covariates and cluster are alike to both fits and to the bootstrap:
    # each is fitted once, weighed by how many of them a resample draws.
    columns: list[FloatArray | IntArray] = [first, second, outcome]
    if controlled:
        columns.append(z)
    if game_groups is not None:
        columns.append(game_groups)
    units = stats.units_of(columns, played.size)
    one, sizes = units.first, units.sizes[None, :]
    wins = _win_tables(first[one], second[one], outcome[one], k)
    ratings = stats.elo_scale(stats.bradley_terry_batch(wins(sizes), prior=_BT_PRIOR))[0]
    styled = _StyleControlledRatings(features, z[one], first[one], second[one], outcome[one], k)
    style_ratings = styled.ratings(sizes)[0] if controlled else None
    blocks, style_blocks = [], []
    for counts in stats.unit_counts(units, resamples, seed, game_groups):
        blocks.append(stats.elo_scale(stats.bradley_terry_batch(wins(counts), prior=_BT_PRIOR)))
        if style_ratings is not None:
            style_blocks.append(styled.ratings(counts, start=styled.fitted))
    replicates = np.concatenate(blocks) if blocks else np.empty((0, k))
    style_replicates = np.concatenate(style_blocks) if style_blocks else np.empty((0, k))
    played = np.bincount(np.concatenate([first, second]), minlength=k)
    style_rank = {}
    if style_ratings is not None:
        by_style = sorted(range(k), key=lambda i: (-float(style_ratings[i]), models[i]))
        style_rank = {i: rank for rank, i in enumerate(by_style, start=1)}
    order = sorted(range(k), key=lambda i: (-float(ratings[i]), models[i]))
    out = []
    for rank, i in enumerate(order, start=1):
        interval = stats.percentile_interval(replicates[:, i])
        style_interval = stats.percentile_interval(style_replicates[:, i]) if style_ratings is not None else None
        out.append(
            {
                "model": models[i],
                "rating": float(ratings[i]),
                "low": interval[0] if interval else None,
                "high": interval[1] if interval else None,
                "rank": rank,
                "n": int(played[i]),
                "style_rating": float(style_ratings[i]) if style_ratings is not None else None,
                "style_low": style_interval[0] if style_interval else None,
                "style_high": style_interval[1] if style_interval else None,
                "style_rank": style_rank.get(i),
            }
        )
    return out


class _StyleControlledRatings:
    """Bradley–Terry with the style covariates of the style-controlled win rate (Arena-Hard-Auto's style control)."""

    # logit P(model i beats model j) = r_i - r_j + sum_f b_f * z_f (z: the game's covariates, as in
    # _style_covariates), fitted by logistic regression on the game outcomes (a tie = 0.5). The plain fit's
    # virtual tie between every pair of models is kept as one pseudo-game per pair with outcome 0.5 and no
    # covariates, so with no covariate this is the plain model. The first model's r is fixed at 0; ratings
    # are 400 * r / ln 10, shifted to a mean of 1000, like the plain ones.

    def __init__(
        self, features: list[str], z: FloatArray, first: IntArray, second: IntArray, outcome: FloatArray, k: int
    ) -> None:
        self.features = features
        self.k = k
        games = first.size
        pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
        sides = np.zeros((games + len(pairs), k))
        sides[np.arange(games), first] += 1.0
        sides[np.arange(games), second] -= 1.0
        for p, (i, j) in enumerate(pairs, start=games):
            sides[p, i], sides[p, j] = 1.0, -1.0
        covariates = np.vstack([z, np.zeros((len(pairs), z.shape[1]))])
        self.design = np.column_stack([sides[:, 1:], covariates])
        self.y = np.concatenate([outcome, np.full(len(pairs), 0.5)])
        self.prior = np.full(len(pairs), _BT_PRIOR)
        self.fitted: FloatArray | None = None
        self.kinds = stats.kinds_of(self.design, self.y)  # games alike in sides, covariates and outcome: one row

    def ratings(self, counts: FloatArray, start: FloatArray | None = None) -> FloatArray:
        """Style-controlled ratings for each row of game multiplicities (resamples x games)."""
        weights = np.hstack([counts, np.broadcast_to(self.prior, (counts.shape[0], self.prior.size))])
        one = self.kinds.first
        beta = stats.fit_logistic_many(self.design[one], self.y[one], self.kinds.summed(weights), start=start)
        if self.fitted is None:
            self.fitted = beta[0]
        strengths = np.column_stack([np.zeros(counts.shape[0]), beta[:, : self.k - 1]])
        return stats.elo_scale(np.exp(strengths))


# --- the sections of the summary -------------------------------------------------------------------------


def _call_counts(items: Rows) -> CallCounts:
    """Error, invalid, call, cache and token counts (every item, scored or not), counted once per kind of row and
    multiplied by its rows (no list of the run's calls: for a million items it cost more than the rows)."""
    total = errors = unread = cached = offline = live = invalid = no_verdict = prompt = completion = prompt_cached = 0
    n_errors = errors_call1 = errors_call2 = 0
    with_calls = False
    outcomes: Counter[str] = Counter()
    for r, times in items.counted():
        first_failed, second_failed = r.call1 == "error", r.call2 == "error"
        n_errors += times * (r.verdict == "error" or first_failed or second_failed)
        errors_call1 += times * first_failed
        errors_call2 += times * second_failed
        if not r.calls:  # a row without its calls: its positional labels are all that is known
            for label in _positional(r):
                total += times
                errors += times * (label == "error")
                unread += times * (label == "invalid")
            continue
        with_calls = True
        for c in r.calls:
            total += times
            label, outcome = c.label, c.outcome
            if label == "error":
                errors += times
            else:
                if c.cached:
                    cached += times
                elif c.offline:
                    offline += times
                else:
                    live += times  # a request an endpoint answered in this run
                no_verdict += times * (outcome is not None)
            if label == "invalid":
                unread += times
                invalid += times * (outcome is None)  # a verdict-shaped reply the parser could not read
            if outcome is not None:  # a reply with no verdict at all
                outcomes[outcome] += times
            prompt += times * c.prompt_tokens
            prompt_cached += times * c.prompt_tokens_cached
            completion += times * c.completion_tokens
    answered = total - errors
    return {
        "n_errors": n_errors,
        "errors_call1": errors_call1,
        "errors_call2": errors_call2,
        "n_invalid": invalid if with_calls else unread,
        "n_no_verdict": no_verdict,
        "outcomes": dict(sorted(outcomes.items())),
        "no_verdict_share": round(unread / answered, 6) if answered else None,
        "calls_total": total,
        "calls_cached": cached,
        "calls_live": live if with_calls else total - cached,
        "calls_offline": offline,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "prompt_tokens_cached": prompt_cached,
    }


def _position(items: Rows, scored: Mask, score: FloatArray, orders: int, figures: _Figures) -> Position:
    """Position consistency, flip rates, first/second-position bias, the sign test, the preference score."""
    two = scored * _mask(items, lambda r: r.call2 is not None)
    consistent = two * _mask(items, lambda r: r.consistent is True)
    first = two * _mask(items, lambda r: r.call1 == "A" and r.call2 == "A")
    second = two * _mask(items, lambda r: r.call1 == "B" and r.call2 == "B")
    # Preference fairness as computed in the code released with Shi et al. 2024 ("Judging the Judges",
    # arXiv:2406.07791, Slimshilin/Position-Bias-Analyzer): over pairs with both replies readable,
    # primacy-preferred pairs are (A, A), (A, tie), (tie, A) in (call1, call2), recency-preferred pairs
    # (B, B), (B, tie), (tie, B). The raw score n_r * n_r/(n_p+n_r) - n_p * n_p/(n_p+n_r) = n_r - n_p is
    # rescaled from its possible range [-N, N] to [-1, 1], i.e. (n_r - n_p) / N: negative leans to the first
    # slot, 0 is fair. (The paper averages it over judge x model x task units; here it is one unit: the run.)
    readable = two * _mask(items, lambda r: r.call1 in ("A", "B", "tie") and r.call2 in ("A", "B", "tie"))
    primacy = readable * _mask(items, lambda r: (r.call1, r.call2) in _PRIMACY)
    recency = readable * _mask(items, lambda r: (r.call1, r.call2) in _RECENCY)

    flipped = two - consistent
    rates = {
        "position_consistency": (consistent, two),
        "flip_rate": (flipped, two),
        # The verdict changes with the order used alone exactly when the two calls disagree; for an
        # ensemble_results row call1/call2 are the judges' majorities, so this is the ensemble's residual.
        "residual_flip_rate": (flipped, two),
        "biased_first": (first, two),
        "biased_second": (second, two),
        "preference_score": (recency.astype(np.int8) - primacy.astype(np.int8), readable),  # -1, 0 or 1
    }
    # Twice the points over twice the items, a byte an item each: the same ratio as (score * consistent,
    # consistent) under any weights, where the points alone took 8 bytes an item.
    doubled = (2.0 * score).astype(np.uint8) * consistent
    rates["win_rate_consistent"] = (doubled, 2 * consistent)
    figures.rates.update(rates)
    k, m = int(first.sum()), int(first.sum() + second.sum())
    one = orders == 1  # then the counts and the sign test are null: there is no second order to compare with
    out: Position = {
        "position_consistency": _point(*rates["position_consistency"]),
        "flip_rate": _point(*rates["flip_rate"]),
        "residual_flip_rate": _point(*rates["residual_flip_rate"]),
        "biased_first": _point(*rates["biased_first"]),
        "biased_second": _point(*rates["biased_second"]),
        "preference_score": _point(*rates["preference_score"]),
        "win_rate_consistent": _point(*rates["win_rate_consistent"]),
        "position_consistency_n": None if one else int(two.sum()),
        "win_rate_consistent_n": None if one else int(consistent.sum()),
        "preference_score_n": None if one else int(readable.sum()),
        "first_position_n": None if one else m,
        "first_position_k": None if one else k,
        "first_position_p": None if one else stats.binomial_two_sided_p(k, m),
    }
    if one:
        out["position_consistency_note"] = ONE_ORDER_NOTE
    elif one_order := int(scored.sum() - two.sum()):
        out["position_consistency_note"] = (
            f"{one_order} of {int(scored.sum())} scored items have one order only; the position figures "
            f"use the {int(two.sum())} items judged in both orders"
        )
    return out


_PRIMACY = frozenset({("A", "A"), ("A", "tie"), ("tie", "A")})
_RECENCY = frozenset({("B", "B"), ("B", "tie"), ("tie", "B")})


def _pooled(items: Rows, scored: Mask, figures: _Figures) -> Pooled:
    """Both orders as separate judgments: each call's item-frame preference, win 1 / tie 0.5 / loss 0."""
    # Kept in a byte an item as twice each item's points over twice its judgments (exactly the same ratio, and
    # the same figure under any weights): two float columns cost 16 bytes an item. An item's two labels have a
    # few combinations, each scored once.
    known: dict[tuple[str, str | None], int] = {}

    def code(r: ItemKind) -> int:
        labels = (r.call1, r.call2)
        if (found := known.get(labels)) is None:
            found = known[labels] = _pooled_code(*labels)
        return found

    codes = _picked_values(items, None, code, np.uint8)
    points = (codes >> 2) * scored
    judgments = (codes & 3) * scored
    figures.rates["win_rate_pooled"] = (points, judgments * 2)
    return {
        "win_rate_pooled": _point(*figures.rates["win_rate_pooled"]),
        "win_rate_pooled_n": int(judgments.sum()),
    }


def _pooled_code(call1: str, call2: str | None) -> int:
    """One item's pooled points doubled (0-4) times 4, plus the calls that count (0-2)."""
    doubled = counted = 0
    for reply in (call1, translate(call2)):
        outcome = preference(reply)
        if outcome is not None and outcome != "error":
            doubled += int(2 * WIN_SCORE[outcome])
            counted += 1
    return doubled * 4 + counted


def _length(
    items: Rows,
    scored: Mask,
    score: FloatArray,
    decisive: Mask,
    figures: _Figures,
) -> Length:
    """Length bias: P(longer answer wins), length-verdict correlation, the length-controlled win rate."""
    chars = items.difference("chars_a", "chars_b")
    differs = decisive * (chars != 0)
    longer_won = differs * ((chars > 0) == (score > 0.5))
    figures.rates["longer_wins"] = (longer_won, differs)
    out: Length = {"longer_wins": _point(longer_won, differs), "longer_wins_n": int(differs.sum())}
    keep = scored > 0
    out["length_verdict_corr"] = stats.pearson(chars[keep].astype(np.float64), score[keep])
    if out["length_verdict_corr"] is not None:
        figures.others["length_verdict_corr"] = Statistic(_weighted_correlation, (chars, score, scored))
    if not items.any_column("chars_a", "chars_b", "words_a", "words_b"):
        out["length_note"] = NO_LENGTH_NOTE
    out.update(_length_controlled(items, decisive, figures))
    return out


def _length_controlled(
    items: Rows,
    decisive: Mask,
    figures: _Figures,
) -> Length:
    """The win rate predicted at zero length difference by a logistic fit of decisive verdicts on length."""
    # Idea of AlpacaEval 2's length-controlled win rate: regress the decisive verdict (1 if a wins, 0 if b
    # wins) on x = log(words_a + 1) - log(words_b + 1) and read the fit at x = 0 (equal lengths):
    # LC = sigmoid(intercept). The log ratio makes 100 vs 200 words the same gap as 1,000 vs 2,000. x is
    # divided by its standard deviation over the fitted items but NOT centred, because x = 0 must stay
    # "equal length"; the scale only changes the slope, not the intercept. Ties are left out, so LC is on
    # the scale of decisive_win_rate (wins / (wins + losses)), not of win_rate.
    keep = np.flatnonzero(decisive)
    out: Length = {"length_controlled_win_rate": None, "length_controlled_n": int(keep.size)}
    x = items.log_ratio("words_a", "words_b")[keep]
    y = _picked_values(items, keep, lambda r: r.verdict == "1", np.uint8)  # a byte a verdict, read against floats
    if keep.size < _MIN_LC_ITEMS:
        needed = f"the length-controlled win rate needs at least {_MIN_LC_ITEMS}"
        out["length_controlled_note"] = f"only {counted(keep.size, 'decisive verdict')}; {needed}"
        out["length_controlled_identifiable"] = False
        return out
    spread = float(x.std())
    if spread <= 0.0:
        out["length_controlled_note"] = (
            "the word counts of a and b do not differ in any decisive item (or were not recorded), "
            "so the verdicts cannot be separated from length"
        )
        out["length_controlled_identifiable"] = False
        return out
    z = np.divide(x, spread, out=x)  # in place: the same values, one column of the decisive items less
    reason = identifiability.before_fit(np.column_stack([np.ones(z.size), z]), y, ["length"])
    b0, b1 = stats.fit_logistic(z, y) if reason is None else (0.0, 0.0)
    reason = reason or identifiability.after_fit(np.array([b0, b1]), ["length"])
    out["length_controlled_identifiable"] = reason is None
    if reason is not None:
        out["length_controlled_note"] = reason
        return out
    out["length_controlled_win_rate"] = float(stats.sigmoid(np.array([b0]))[0])
    figures.others["length_controlled_win_rate"] = _controlled(
        z, y, keep, decisive, lambda x, y, w: stats.fit_logistic_batch(x, y, w, start=(b0, b1))[0], _MIN_LC_ITEMS
    )
    return out


def _style(items: Rows, score: FloatArray, decisive: Mask, figures: _Figures) -> StyleBias:
    """Style bias: P(more formatted answer wins), the style-controlled win rate, the judge's style coefficients."""
    # "More formatted" = more markdown features in all (Style.total); items whose answers carry as many
    # features each, or whose styles were not recorded, are left out of styled_wins.
    has = _mask(items, lambda r: r.style_a is not None and r.style_b is not None)
    totals = _values(items, lambda r: _total(r.style_a) - _total(r.style_b))
    differs = decisive * has * (totals != 0)
    styled_won = differs * ((totals > 0) == (score > 0.5))
    figures.rates["styled_wins"] = (styled_won, differs)
    out: StyleBias = {"styled_wins": _point(styled_won, differs), "styled_wins_n": int(differs.sum())}
    if not has.any():
        out["style_note"] = NO_STYLE_NOTE
    out.update(_style_controlled(items, decisive * has, figures))
    return out


def _style_controlled(items: Rows, decisive: Mask, figures: _Figures) -> StyleBias:
    """The win rate at equal length and formatting from one logistic fit of the decisive verdicts."""
    # The length-controlled model with the style features added (after Arena-Hard-Auto's style control):
    # logit P(a wins) = b0 + b_length * z_length + sum_f b_f * z_f, where each z is a log ratio
    # log(count_a + 1) - log(count_b + 1) (words for length; headers, list items, ... for the features)
    # divided by its standard deviation over the fitted items, not centred, so that z = 0 stays "a and b
    # alike" and SC = sigmoid(b0). A feature enters only when a and b differ in it in at least
    # _MIN_FEATURE_ITEMS fitted items (a feature seen once would get an arbitrary coefficient). The
    # coefficients are log-odds per standard deviation: > 0 means the judge favours more of that feature.
    keep = np.flatnonzero(decisive)
    out: StyleBias = {
        "style_controlled_win_rate": None,
        "style_controlled_n": int(keep.size),
        "style_coefficients": {},
    }
    if keep.size < _MIN_SC_ITEMS:
        needed = f"the style-controlled win rate needs at least {_MIN_SC_ITEMS}"
        out["style_controlled_note"] = f"only {counted(keep.size, 'decisive verdict')} with recorded styles; {needed}"
        out["style_controlled_identifiable"] = False
        return out
    names, z = _style_covariates(items, keep)
    if not any(name in FEATURES for name in names):
        out["style_controlled_note"] = (
            f"a and b do not differ in any one formatting feature in {_MIN_FEATURE_ITEMS} or more decisive "
            "items, so the verdicts cannot be separated from formatting"
        )
        out["style_controlled_identifiable"] = False
        return out
    design = np.column_stack([np.ones(keep.size), z])
    y = _picked_values(items, keep, lambda r: r.verdict == "1", np.uint8)  # a byte a verdict, read against floats
    reason = identifiability.before_fit(design, y, names)
    beta = stats.fit_logistic_many(design, y, np.ones((1, keep.size)))[0]
    reason = reason or identifiability.after_fit(beta, names)
    out["style_controlled_identifiable"] = reason is None
    if reason is not None:
        out["style_controlled_note"] = reason
        return out
    out["style_controlled_win_rate"] = float(stats.sigmoid(beta[:1])[0])
    out["style_coefficients"] = {name: float(b) for name, b in zip(names, beta[1:], strict=True)}
    figures.others["style_controlled_win_rate"] = _controlled(
        design, y, keep, decisive, lambda x, y, w: stats.fit_logistic_many(x, y, w, start=beta)[:, 0], _MIN_SC_ITEMS
    )
    return out


Intercepts = Callable[[FloatArray, FloatArray, FloatArray], FloatArray]  # (design, y, weights) -> one per row


def _controlled(
    design: FloatArray, y: FloatArray, keep: NDArray[np.int64], fitted: Mask, intercepts: Intercepts, minimum: int
) -> Statistic:
    """A controlled win rate as a statistic of item weights: sigmoid of the intercept `intercepts` fits on the
    rows `keep` (whose design and verdict are `design` and `y`); `fitted` marks those rows among all."""
    # The verdicts are 0 or 1: a byte an item (the fit reads them as floats, the same numbers).
    columns = (_spread_out(design, keep, fitted.size), _spread_out(y, keep, fitted.size, np.uint8), fitted)
    return Statistic(functools.partial(_controlled_replicates, intercepts=intercepts, minimum=minimum), columns)


def _controlled_replicates(
    design: FloatArray, y: FloatArray, fitted: Mask, *, intercepts: Intercepts, minimum: int
) -> Replicates:
    """The controlled win rate under weights; `fitted` marks the rows the fit reads (decisive verdicts)."""
    kinds = stats.kinds_of(design, y, fitted)  # rows of equal covariates and verdict enter the fit alike
    one = kinds.first

    verdicts = y[one].astype(np.float64)

    def replicates(weights: FloatArray) -> FloatArray:
        fits = intercepts(design[one], verdicts, kinds.summed(weights) * fitted[one])
        # A resample with too few decisive draws has no fit either: undefined, left out of the percentiles.
        enough: FloatArray = np.where(weights @ fitted >= minimum, stats.sigmoid(fits), np.nan)
        return enough

    return replicates


def _spread_out(
    values: FloatArray, rows: NDArray[np.int64], n: int, dtype: type[np.generic] = np.float64
) -> NDArray[Any]:
    """Values given for some rows, as a column of all `n` rows (0 elsewhere)."""
    out = np.zeros((n, *values.shape[1:]), dtype=dtype)
    out[rows] = values
    return out


def _weighted_correlation(x: NDArray[Any], y: FloatArray, counted: Mask) -> Replicates:
    """Pearson's correlation of x (integers or floats) and y over the counted rows, under weights."""
    as_floats = x.astype(np.float64)
    return lambda weights: stats.weighted_pearson_batch(as_floats, y, weights * counted)


def _style_covariates(items: Rows, rows: IntArray | None = None) -> tuple[list[str], FloatArray]:
    """The covariates of a style-controlled fit over `rows` of `items` (None: all): their names ("length", then
    features) and scaled columns."""
    # Shared by the style-controlled win rate and the style-controlled ratings: log ratios of a over b,
    # divided by their standard deviation; length enters when it varies, a feature when a and b differ in
    # it in at least _MIN_FEATURE_ITEMS rows.
    names: list[str] = []
    scaled: list[FloatArray] = []

    def enter(name: str, x: FloatArray) -> None:
        differs = int(np.count_nonzero(x))
        spread = float(x.std()) if x.size else 0.0
        if spread > 0.0 and (name == "length" or differs >= _MIN_FEATURE_ITEMS):
            names.append(name)
            scaled.append(x / spread)

    lengths = items.log_ratio("words_a", "words_b")
    enter("length", lengths if rows is None else lengths[rows])
    # A run holds a few distinct pairs of styles (shared objects, mostly plain text): each row's pair is numbered,
    # and a feature's column is read from a table of the pairs' log ratios, one column at a time (a column of each
    # feature at once, and their intermediates, held 8 bytes an item each).
    pairs: dict[tuple[Style | None, Style | None], int] = {}
    pair = _picked_values(items, rows, lambda r: pairs.setdefault((r.style_a, r.style_b), len(pairs)), np.int64)
    table = np.zeros((len(pairs), len(FEATURES)))
    for (style_a, style_b), row in pairs.items():
        if style_a is not None and style_b is not None:
            table[row] = _log_counts(style_a) - _log_counts(style_b)
    for j, name in enumerate(FEATURES):
        enter(name, table[pair, j])
    z = np.column_stack(scaled) if scaled else np.empty((pair.size, 0))
    return names, z


def _log_counts(style: Style) -> FloatArray:
    """log(count + 1) of each formatting feature of an answer, in FEATURES order."""
    return np.array([math.log(getattr(style, name) + 1) for name in FEATURES])


def _picked_values(
    items: Rows,
    rows: IntArray | None,
    value: Callable[[ItemKind], float],
    dtype: type[np.generic] = np.float64,
) -> NDArray[Any]:
    """value(kind) for the items at `rows` (None: every item), computed once per kind of row."""
    values = items.per_kind(value, dtype)
    return values if rows is None else values[rows]


def _soft(items: Rows, scored: Mask, figures: _Figures, requested: bool) -> Soft:
    """Mean soft preference (P(a preferred) from log-probabilities) over the items that have one."""
    soft = items.soft()
    present = ~np.isnan(soft)
    has = scored * present.astype(np.uint8)
    values = np.where(present, soft, 0.0) * has
    figures.rates["soft_win_rate"] = (values, has)
    out: Soft = {"soft_win_rate": _point(values, has), "soft_n": int(has.sum())}
    if out["soft_win_rate"] is None and requested:  # no note when nobody asked for log-probabilities
        out["soft_note"] = SOFT_NOTE
    return out


def _human_labels(
    items: Rows,
    scored: Mask,
    threshold: float,
    figures: _Figures,
    ceiling: float | None,
    weights: FloatArray | None = None,
) -> HumanLabels:
    """Agreement with the human label (all and decisive verdicts), Cohen's kappa and the rubric warning. With
    `weights` (a sampling design's 1/π on the items it labelled, 0 elsewhere) each figure weighs its items by them,
    so that labels drawn unevenly (the judge's uncertain items first) still speak for every item."""
    labelled: NDArray[Any] = scored * _mask(items, lambda r: r.human in ("1", "2"))
    match: NDArray[Any] = labelled * _mask(items, lambda r: r.verdict == r.human)
    both_decisive: NDArray[Any] = labelled * _mask(items, lambda r: r.verdict in ("1", "2"))
    counted_n, decisive_n = int(labelled.sum()), int(both_decisive.sum())
    if weights is not None:
        labelled, match, both_decisive = (column * weights for column in (labelled, match, both_decisive))
        counted_n, decisive_n = int((labelled > 0).sum()), int((both_decisive > 0).sum())
    agreeing_decisive = match * both_decisive if weights is None else match * (both_decisive > 0)
    figures.rates["human_agreement"] = (match, labelled)
    figures.rates["human_agreement_decisive"] = (agreeing_decisive, both_decisive)
    out: HumanLabels = {
        "human_agreement": _point(match, labelled),
        "human_agreement_n": counted_n,
        "human_agreement_decisive": _point(agreeing_decisive, both_decisive),
        "human_agreement_decisive_n": decisive_n,
    }

    # Kappa table: rows = judge verdict, columns = human label, categories 1 / 2 / tie; each item's cell of the
    # table in a byte (_NO_CELL: counted in none), made one-hot only on the rows the bootstrap reads.
    def cell(r: ItemKind) -> int:
        if r.human in _KAPPA_LABELS and r.verdict in _KAPPA_LABELS:
            return 3 * _KAPPA_LABELS.index(r.verdict) + _KAPPA_LABELS.index(r.human)
        return _NO_CELL

    cells = _picked_values(items, None, cell, np.uint8)
    cells[scored == 0] = _NO_CELL
    if weights is not None:
        cells[weights <= 0] = _NO_CELL  # a label the design did not draw: not counted
    counts = np.bincount(cells, weights=weights, minlength=_NO_CELL + 1)[:_NO_CELL].astype(np.float64)
    out["cohen_kappa"] = stats.cohen_kappa(counts.reshape(3, 3))
    out["cohen_kappa_n"] = int(np.bincount(cells, minlength=_NO_CELL + 1)[:_NO_CELL].sum())
    if out["cohen_kappa"] is not None:
        figures.others["cohen_kappa"] = (
            Statistic(_kappa, (cells,)) if weights is None else Statistic(_weighted_kappa, (cells, weights))
        )
    out |= _agreement_verdict(out["human_agreement"], out["human_agreement_n"], items, threshold, ceiling)
    return out


def _weighted_kappa(cells: NDArray[np.uint8], weights: FloatArray) -> Replicates:
    """Cohen's kappa of the (judge, human) cells, each item weighing its design weight, under resampling weights."""
    onehot = np.zeros((cells.size, _NO_CELL + 1))
    onehot[np.arange(cells.size), cells] = weights
    counted = np.ascontiguousarray(onehot[:, :_NO_CELL])
    return lambda draws: stats.cohen_kappa_batch((draws @ counted).reshape(-1, 3, 3))


_NO_CELL = 9  # an item in no cell of the kappa table (unscored, or a verdict or label outside 1 / 2 / tie)


def _kappa(cells: NDArray[np.uint8]) -> Replicates:
    """Cohen's kappa of the (judge, human) cells under weights: each row one-hot in a byte a cell (read through
    products with float weights: the same numbers as in float64)."""
    onehot = np.zeros((cells.size, _NO_CELL + 1), dtype=np.uint8)
    onehot[np.arange(cells.size), cells] = 1
    counted = np.ascontiguousarray(onehot[:, :_NO_CELL])
    return lambda weights: stats.cohen_kappa_batch((weights @ counted).reshape(-1, 3, 3))


def _agreement_verdict(
    agreement: float | None, n: int, items: Rows, threshold: float, ceiling: float | None
) -> HumanLabels:
    """The threshold warning, measured against the human ceiling when one is known."""
    # A judge that agrees with people at least as often as people agree with each other cannot be improved by a
    # new rubric as far as these labels can tell: it is not warned, and the message says why not.
    ties = sum(times for r, times in items.counted() if r.verdict != "error" and r.human == "tie")
    basis = f"on {n} decisive labels; {ties} {'tie' if ties == 1 else 'ties'} left out"
    out: HumanLabels = {
        "human_agreement_ties_left_out": ties,
        "agreement_threshold": threshold,
        "agreement_ceiling": ceiling,
    }
    below = agreement is not None and agreement < threshold
    at_ceiling = below and ceiling is not None and agreement is not None and agreement >= ceiling
    out["agreement_warning"] = below and not at_ceiling
    if not below or agreement is None:
        out["agreement_message"] = None
    elif at_ceiling:
        out["agreement_message"] = (
            f"human agreement is {agreement:.1%} ({basis}), below the threshold of {100 * threshold:g}% but at or "
            f"above the human ceiling of {ceiling:.1%} (how often two people agree on these items): the labels "
            "cannot show a better judge; more or clearer labels, not a new rubric, would move this figure"
        )
    else:
        against = "" if ceiling is None else f" and below the human ceiling of {ceiling:.1%}"
        out["agreement_message"] = (
            f"human agreement is {agreement:.1%} ({basis}), below the threshold of {100 * threshold:g}%{against}: "
            "the rubric is not good enough yet; rewrite it and measure again"
        )
    return out


def _human_votes(items: Rows, scored: Mask, figures: _Figures) -> HumanVotes:
    """Agreement with a randomly chosen human vote (with and without ties) and between two humans."""
    # As defined in Zheng et al. 2023 (MT-Bench): the probability that a random human vote on a random item
    # equals the verdict, i.e. per item the fraction of matching votes, averaged over items. (FastChat's
    # compute_agreement.py pools all votes instead, which weights items by their number of votes.) Without
    # ties: tie votes are dropped, and items whose verdict is a tie or that have no non-tie vote are left out.
    # Human-human: per item with >= 2 votes, the share of ordered pairs of distinct annotators that agree.
    # Every value is the kind's (its verdict and votes): computed once per kind, spread over its rows.
    table = np.zeros((len(items.kinds), 6))
    for k, r in enumerate(items.kinds):
        votes = list(r.human_votes)
        if not votes:
            continue
        table[k, 0:2] = votes.count(r.verdict) / len(votes), 1.0
        decisive_votes = [v for v in votes if v != "tie"]
        if r.verdict in ("1", "2") and decisive_votes:
            table[k, 2:4] = decisive_votes.count(r.verdict) / len(decisive_votes), 1.0
        m = len(votes)
        if m >= 2:
            same = sum(c * (c - 1) for c in Counter(votes).values())
            table[k, 4:6] = same / (m * (m - 1)), 1.0
    codes, counted_rows = items.codes(), scored > 0  # an unscored item (a failed verdict) counts nowhere
    agree, has, agree_nt, has_nt, pairs, has_pairs = (np.where(counted_rows, table[codes, j], 0.0) for j in range(6))
    rates = {
        "human_vote_agreement": (agree, has),
        "human_vote_agreement_no_ties": (agree_nt, has_nt),
        "human_human_agreement": (pairs, has_pairs),
    }
    figures.rates.update(rates)
    return {
        "human_vote_agreement": _point(agree, has),
        "human_vote_agreement_n": int(has.sum()),
        "human_vote_agreement_no_ties": _point(agree_nt, has_nt),
        "human_vote_agreement_no_ties_n": int(has_nt.sum()),
        "human_human_agreement": _point(pairs, has_pairs),
        "human_human_agreement_n": int(has_pairs.sum()),
    }


def _self_preference(items: Rows, scored: Mask, score: FloatArray, family: str, figures: _Figures) -> SelfPreference:
    """Score of the judge's own-family answer over items where exactly one answer comes from that family."""
    needle = family.lower()
    own_a = _mask(items, lambda r: needle in (r.model_a or "").lower())
    own_b = _mask(items, lambda r: needle in (r.model_b or "").lower())
    mixed = scored * (own_a != own_b)
    own_score = mixed * np.where(own_a > 0, score, 1.0 - score)
    figures.rates["self_preference"] = (own_score, mixed)
    return {"family": family, "n": int(mixed.sum()), "own_win_rate": _point(own_score, mixed)}


def _samples(items: Rows, figures: _Figures) -> Repetition:
    """Repetition stability per order and the figures of the samples' majority (judge.samples > 1)."""
    # Repetition stability as Shi et al. 2024 ("Judging the Judges") define it: per item and order, the share
    # of the samples that gave the most frequent reply, averaged over items; 1 = the same reply every time.
    # Failed samples are left out; an order needs two answered samples. The majority verdict reconciles each
    # order's most frequent reply (two leading replies: tie), like the single-sample verdict; the mean soft
    # verdict averages soft_preference over the sample pairs (sample i of order 1 with sample i of order 2).
    # Every value is the kind's (its calls): computed once per kind, spread over its rows.
    n = len(items.kinds)
    stable = [np.zeros(n), np.zeros(n)]
    has = [np.zeros(n), np.zeros(n)]
    majority_score, majority_scored = np.zeros(n), np.zeros(n)
    two, agree = np.zeros(n), np.zeros(n)
    soft, soft_has = np.zeros(n), np.zeros(n)
    most = 0
    gateway_cached = 0  # samples a gateway served from its response cache: repeats of a reply, not new asks
    for (i, r), times in zip(enumerate(items.kinds), items.counts().tolist(), strict=True):
        groups = calls_by_order(r.calls)
        if groups is None:
            continue
        most = max([most, *(len(group) for group in groups)])
        gateway_cached += times * sum(
            1 for group in groups for call in group if (call.origin or {}).get("gateway_cache")
        )
        for o, group in enumerate(groups):
            answered = [call.label for call in group if call.label != "error"]
            if len(answered) >= 2:
                stable[o][i], has[o][i] = Counter(answered).most_common(1)[0][1] / len(answered), 1.0
        labels = [majority_label([call.label for call in group]) for group in groups]
        verdict = reconcile(labels[0], labels[1] if len(labels) > 1 else None)
        if verdict != "error":
            majority_score[i], majority_scored[i] = WIN_SCORE[verdict], 1.0
            if len(labels) > 1:
                two[i], agree[i] = 1.0, float(is_consistent(labels[0], labels[1]) is True)
        pairs = zip(groups[0], groups[1], strict=False) if len(groups) > 1 else ((c, None) for c in groups[0])
        values = [v for c1, c2 in pairs if (v := soft_preference(c1.probs, c2.probs if c2 else None)) is not None]
        if values:
            soft[i], soft_has[i] = sum(values) / len(values), 1.0
    codes = items.codes()
    stable, has = [column[codes] for column in stable], [column[codes] for column in has]
    majority_score, majority_scored, two, agree, soft, soft_has = (
        column[codes] for column in (majority_score, majority_scored, two, agree, soft, soft_has)
    )
    rates = {
        "repetition_stability_order1": (stable[0], has[0]),
        "repetition_stability_order2": (stable[1], has[1]),
        "majority_win_rate": (majority_score, majority_scored),
        "majority_position_consistency": (agree, two),
        "soft_win_rate_mean": (soft, soft_has),
    }
    figures.rates.update(rates)
    out: Repetition = {
        "samples": most,
        "repetition_stability_order1": _point(*rates["repetition_stability_order1"]),
        "repetition_stability_order2": _point(*rates["repetition_stability_order2"]),
        "majority_win_rate": _point(*rates["majority_win_rate"]),
        "majority_position_consistency": _point(*rates["majority_position_consistency"]),
        "soft_win_rate_mean": _point(*rates["soft_win_rate_mean"]),
    }
    out["repetition_stability_n"] = int(np.maximum(has[0], has[1]).sum())
    out["majority_n"] = int(majority_scored.sum())
    if gateway_cached:
        out["repetition_stability_order1"] = out["repetition_stability_order2"] = None
        for name in ("repetition_stability_order1", "repetition_stability_order2"):
            figures.rates.pop(name, None)
        out["repetition_stability_note"] = (
            f"not identifiable: {gateway_cached} samples were served from a gateway's response cache, so they "
            "repeat one reply instead of asking the judge again; turn the gateway's cache off for these calls "
            "(LiteLLM: +judge.extra_body.cache={no-cache:true}) and rerun with cache.mode=refresh"
        )
    return out


def _intervals(
    n: int,
    resamples: int,
    seed: int,
    figures: Measured,
) -> dict[str, list[float] | None]:
    """95% percentile intervals of every figure from one item (or cluster) bootstrap (None where the figure is None)."""
    # One draw per resample serves every figure, so the intervals are mutually coherent; a replicate where a
    # figure is undefined (e.g. no two-order item drawn) is left out of its percentiles. What is drawn is how many
    # items of each unit (items alike in every column a figure reads, stats.units_of) a resample holds, so the
    # cost follows the units, not the items. Ratio figures are vectorised as counts @ numerator / counts @
    # denominator.
    summary = figures.summary
    # The corrected figures come with their own (prediction-powered) interval, but for a clustered run: then the
    # cluster bootstrap draws theirs too, where they have a function of item weights (figures.others).
    drawn = {*catalogue.bootstrapped(), *(() if figures.groups is None else figures.others)}
    names = [name for name in catalogue.with_intervals() if name in summary and name in drawn]
    wanted = [name for name in names if figure_value(summary, name) is not None]
    rate_names = [name for name in wanted if name in figures.rates]
    other_names = [name for name in wanted if name not in figures.rates]
    collected: dict[str, list[FloatArray]] = {name: [] for name in wanted}
    units = bootstrap_units([figures], n, skip=frozenset(figures.computed))
    reduced = figures.on(units.first)
    if rate_names:
        numerators = np.stack([reduced.rates[name][0] for name in rate_names], axis=1)
        denominators = np.stack([reduced.rates[name][1] for name in rate_names], axis=1)
    for counts in stats.unit_counts(units, resamples, seed, figures.groups):
        if rate_names:
            values = stats.ratio(counts @ numerators, counts @ denominators)
            for j, name in enumerate(rate_names):
                collected[name].append(values[:, j])
        for name in other_names:
            collected[name].append(reduced.others[name](counts))
    out: dict[str, list[float] | None] = {}
    for name in names:
        parts = collected.get(name)
        out[name] = stats.percentile_interval(np.concatenate(parts)) if parts else None
    return out


def _degenerate(
    items: Rows, figures: Measured, intervals: Mapping[str, list[float] | None], resamples: int
) -> dict[str, str]:
    """Why each zero-width interval has zero width: every item counted gives the figure the same value, or too few
    resamples drew it (one draw has no width whatever the data: never called the data's lack of spread)."""
    # A judge that always says tie has win rate 50% in every resample: [50.0, 50.0] is the data's lack of
    # spread, not a precise measurement, and is labelled so wherever the interval is shown.
    out: dict[str, str] = {}
    for name, interval in intervals.items():
        if interval is None or interval[1] - interval[0] > 1e-12:
            continue
        if name in figures.rates and not _all_alike(*figures.rates[name]):
            out[name] = f"{TOO_FEW_RESAMPLES} {counted(resamples, 'resample')}, too few to show the spread of the data"
            continue
        if name not in figures.rates and resamples < MIN_SPREAD_RESAMPLES:
            out[name] = f"{TOO_FEW_RESAMPLES} {counted(resamples, 'resample')}, too few to show any spread"
            continue
        if name == "win_rate":
            scored = figures.rates[name][1]  # the win rate's denominator: 1 for each item with a verdict
            verdicts = {items.kinds[kind].verdict for kind in np.unique(items.codes()[scored > 0]).tolist()}
            if len(verdicts) == 1:
                (only,) = verdicts
                which = {"tie": "a tie", "1": "a win for a", "2": "a win for b"}.get(only, only)
                out[name] = f"every verdict is {which}"
                continue
        counted_items = int(figures.rates[name][1].astype(bool).sum()) if name in figures.rates else None
        out[name] = (
            f"all {counted_items} items counted have the same outcome" if counted_items is not None else "no spread"
        )
    return out


MIN_SPREAD_RESAMPLES = 100  # below this a statistic's zero-width interval may be the draws', not the data's


def _all_alike(numerator: NDArray[Any], denominator: NDArray[Any]) -> bool:
    """Whether every item a ratio counts gives it the same value (numerator / denominator), so that no resample can
    move it: then a zero-width interval is the data's."""
    counted = denominator > 0
    if not counted.any():
        return True
    values = numerator[counted].astype(np.float64) / denominator[counted].astype(np.float64)
    return bool(np.all(values == values[0]))


def _groups(clustering: Clustering | None, n: int) -> IntArray | None:
    """Each row's cluster number for the bootstrap, or None (resample items) when there is no clustering."""
    if clustering is None:
        return None
    if len(clustering.labels) != n:
        raise ValueError(f"clustering by {clustering.field!r} has {len(clustering.labels)} labels for {n} rows")
    return stats.cluster_index(clustering.labels)


def _cluster_fields(clustering: Clustering | None, groups: IntArray | None) -> Intervals:
    """What the intervals resampled: `bootstrap_cluster` (the field, None = items) and the number of clusters."""
    if clustering is None or groups is None:
        return {"bootstrap_cluster": None, "bootstrap_clusters": None}
    return {"bootstrap_cluster": clustering.field, "bootstrap_clusters": int(groups.max()) + 1 if groups.size else 0}


# --- helpers ---------------------------------------------------------------------------------------------


def _total(style: Style | None) -> int:
    """All markdown features of an answer (0 when not recorded)."""
    return 0 if style is None else style.total


def _mask(items: Rows, test: Callable[[ItemKind], bool]) -> Mask:
    """test(kind) per item as 0/1, a byte an item: the masks are multiplied together and with float columns, and
    summed; never subtracted below 0 (a difference of two is taken in a signed type where it can be negative)."""
    return items.per_kind(test, np.bool_).view(np.uint8)


def _values(items: Rows, value: Callable[[ItemKind], float]) -> FloatArray:
    """value(kind) per item as floats, computed once per kind of row."""
    return _picked_values(items, None, value)


def _point(numerator: NDArray[Any], denominator: NDArray[Any]) -> float | None:
    """sum(numerator) / sum(denominator) as a float, None when the denominator is 0."""
    total = float(denominator.sum(dtype=np.float64))
    return float(numerator.sum(dtype=np.float64)) / total if total > 0 else None


def _positional(r: ItemKind) -> list[str]:
    """The item's positional replies (call2 only when that order exists)."""
    return [r.call1] if r.call2 is None else [r.call1, r.call2]
