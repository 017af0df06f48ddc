"""The bootstrap draws units (items alike in every column a figure reads), not items.

Oracles from outside the code: the grouping against a dictionary of value tuples built by hand, the draws
against the moments of the multinomial distribution (mean n p, variance n p (1 - p), covariance -n p q), and
the intervals against a percentile bootstrap written here with Python's `random`, resampling items one by one.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict

import numpy as np
import pytest

from judgebias.core.labels import majority
from judgebias.figures import stats
from judgebias.figures.calibration import calibrate
from judgebias.figures.metrics import bradley_terry_ratings, summarize
from tests.unit.helpers import row


def partition(labels: np.ndarray) -> set[frozenset[int]]:
    """The items grouped by label: a set of groups of item numbers."""
    groups: dict[int, set[int]] = defaultdict(set)
    for item, label in enumerate(labels.tolist()):
        groups[label].add(item)
    return {frozenset(group) for group in groups.values()}


def test_units_are_the_items_grouped_by_every_value_they_hold() -> None:
    """Items equal in a 1-D float column, an integer column and a 2-D block are one unit; any difference parts
    them. The reference groups the rows' value tuples in a dict."""
    rng = np.random.default_rng(3)
    n = 2000
    score = rng.choice([0.0, 0.5, 1.0], size=n)
    length = rng.integers(-3, 4, size=n)
    block = rng.choice([0.0, 1.0], size=(n, 3))
    units = stats.units_of([score, length, block], n)
    by_hand: dict[tuple[float, ...], set[int]] = defaultdict(set)
    for item in range(n):
        by_hand[(score[item], float(length[item]), *block[item])].add(item)
    assert partition(units.inverse) == {frozenset(group) for group in by_hand.values()}
    assert units.sizes.tolist() == [float(np.sum(units.inverse == u)) for u in range(units.first.size)]
    assert all(units.inverse[units.first[u]] == u for u in range(units.first.size))
    firsts = [min(group) for group in by_hand.values()]
    assert units.first.tolist() == sorted(firsts)  # numbered by first appearance, each unit's first item
    assert stats.units_of([score], 0).first.size == 0


def test_a_hash_collision_falls_back_to_an_exact_grouping(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a hash that sends every row to one value, the bit-for-bit check sees the collision and the rows are
    grouped exactly all the same."""
    monkeypatch.setattr(stats, "_HASH_MULTIPLIER", np.uint64(0))
    values = np.array([0.0, 1.0, 0.0, 2.0, 1.0, 0.0])
    units = stats.units_of([values], values.size)
    assert partition(units.inverse) == {frozenset({0, 2, 5}), frozenset({1, 4}), frozenset({3})}


MULTINOMIAL_CASES = [
    pytest.param(600, [0.5, 0.3, 0.15, 0.05], id="few units: multinomial counts"),
    pytest.param(40, [0.025] * 40, id="as many units as items: item indices counted per unit"),
]


@pytest.mark.parametrize(("n", "shares"), MULTINOMIAL_CASES)
def test_unit_counts_have_the_moments_of_resampling_items(n: int, shares: list[float]) -> None:
    """n items drawn with replacement put Multinomial(n, sizes / n) items in the units: over 20,000 resamples the
    counts' means, variances and covariance match n p, n p (1 - p) and -n p q within five standard errors."""
    sizes = [round(share * n) for share in shares]
    inverse = np.repeat(np.arange(len(sizes)), sizes)
    units = stats.units_of([inverse], n)
    resamples = 20_000
    drawn = np.concatenate(list(stats.unit_counts(units, resamples, seed=11)))
    assert drawn.shape == (resamples, len(sizes))
    assert (drawn.sum(axis=1) == n).all()
    p = units.sizes / n
    mean, variance = n * p, n * p * (1 - p)
    assert np.all(np.abs(drawn.mean(axis=0) - mean) <= 5 * np.sqrt(variance / resamples))
    # The variance of a sample variance is about 2 var^2 / R for counts this close to normal.
    assert np.all(np.abs(drawn.var(axis=0) - variance) <= 5 * variance * np.sqrt(2 / resamples) + 1e-9)
    covariance = np.cov(drawn[:, 0], drawn[:, 1])[0, 1]
    expected = -n * p[0] * p[1]
    assert abs(covariance - expected) <= 5 * np.sqrt(variance[0] * variance[1] / resamples)
    again = np.concatenate(list(stats.unit_counts(units, resamples, seed=11)))
    assert np.array_equal(drawn, again)  # seeded


def test_multinomial_blocks_are_small_and_are_the_draws_of_one_call() -> None:
    """Many units among many items (20,000 units, 400,000 items, as a large run's figures have): each block of
    multinomial counts holds at most a million cells (its integers and their float copy are both in memory), and
    the blocks together are exactly numpy's own multinomial draw of every resample in one call with the same seed,
    so the block size never changes an interval."""
    n, count, resamples = 400_000, 20_000, 120
    inverse = np.arange(n, dtype=np.int64) % count
    units = stats.units_of([inverse], n)
    assert units.first.size == count and units.first.size * 16 <= n  # the multinomial path
    blocks = list(stats.unit_counts(units, resamples, seed=7))
    assert len(blocks) > 1 and all(block.size <= 1_000_000 for block in blocks)
    whole = np.random.default_rng(7).multinomial(n, units.sizes / n, size=resamples)
    assert np.array_equal(np.concatenate(blocks), whole)


def test_clustered_unit_counts_move_a_cluster_as_one() -> None:
    """With clusters, every unit of a cluster drawn c times holds c times its items; a cluster's count has mean 1
    and variance 1 - 1/C (Multinomial(C, 1/C)), so a unit's count has mean size and variance size^2 (1 - 1/C)."""
    groups = np.array([0, 0, 0, 1, 1, 2, 3, 3, 3, 3], dtype=np.int64)
    outcome = np.array([1, 1, 0, 0, 0, 1, 1, 0, 1, 1], dtype=np.float64)
    units = stats.units_of([outcome, groups.astype(np.float64)], groups.size)
    clusters, resamples = 4, 20_000
    drawn = np.concatenate(list(stats.unit_counts(units, resamples, seed=5, groups=groups)))
    cluster_of_unit = groups[units.first]
    for c in range(clusters):
        in_cluster = np.flatnonzero(cluster_of_unit == c)
        ratios = drawn[:, in_cluster] / units.sizes[in_cluster]
        assert np.all(ratios == ratios[:, :1])  # the cluster's count, the same for each of its units
    assert (drawn.sum(axis=1) >= 0).all()
    mean, variance = units.sizes, units.sizes**2 * (1 - 1 / clusters)
    assert np.all(np.abs(drawn.mean(axis=0) - mean) <= 5 * np.sqrt(variance / resamples))


def percentiles(replicates: list[float]) -> tuple[float, float, float]:
    """The 2.5% and 97.5% percentiles of the replicates, and their standard deviation."""
    ordered = sorted(replicates)
    count = len(ordered)
    mean = sum(ordered) / count
    sd = (sum((x - mean) ** 2 for x in ordered) / (count - 1)) ** 0.5
    return ordered[int(0.025 * count)], ordered[int(0.975 * count) - 1], sd


def tolerance(sd: float, ours: int, theirs: int) -> float:
    """Four standard errors of the difference of two 2.5% percentiles of `ours` and `theirs` resamples of a
    statistic about normal with this sd (0.0584: the normal density at 1.96)."""
    return 4 * sd * (0.025 * 0.975 * (1 / ours + 1 / theirs)) ** 0.5 / 0.0584


def hand_win_rates(verdicts: list[str], resamples: int, seed: int) -> list[float]:
    """The win rate (a tie half a win) of each resample of the items, drawn one by one."""
    score = {"1": 1.0, "2": 0.0, "tie": 0.5}
    rng = random.Random(seed)
    return [sum(score[v] for v in rng.choices(verdicts, k=len(verdicts))) / len(verdicts) for _ in range(resamples)]


@pytest.mark.parametrize("n", [400, 1500])
def test_win_rate_interval_is_the_item_bootstraps(n: int) -> None:
    """A run whose items fall in a few units (the multinomial draw) gets the win-rate interval of a bootstrap that
    resamples its items one by one, within the Monte Carlo error of the two."""
    rng = random.Random(n)
    calls = rng.choices([("A", "B"), ("B", "A"), ("A", "A"), ("B", "B")], weights=[55, 25, 15, 5], k=n)
    rows = [row(first, second, id=str(i)) for i, (first, second) in enumerate(calls)]
    low, high = summarize(rows, resamples=1000, seed=0)["ci"]["win_rate"]
    ref_low, ref_high, sd = percentiles(hand_win_rates([r.verdict for r in rows], 8000, seed=1))
    bound = tolerance(sd, 1000, 8000)
    assert abs(low - ref_low) <= bound and abs(high - ref_high) <= bound, (low, high, ref_low, ref_high, bound)


def hand_ratings(games: list[tuple[int, int, float]], models: int) -> list[float]:
    """Bradley-Terry ratings (Hunter's MM, one virtual tie between every pair, Elo scale with mean 1000)."""
    wins = [[0.0 if i == j else 0.5 for j in range(models)] for i in range(models)]
    for a, b, outcome in games:
        wins[a][b] += outcome
        wins[b][a] += 1 - outcome
    strength = [1.0] * models
    for _ in range(10_000):
        updated = [
            sum(wins[i]) / sum((wins[i][j] + wins[j][i]) / (strength[i] + strength[j]) for j in range(models) if j != i)
            for i in range(models)
        ]
        scale = math.exp(sum(math.log(s) for s in updated) / models)
        updated = [s / scale for s in updated]
        change = max(abs(math.log(u / s)) for u, s in zip(updated, strength, strict=True))
        strength = updated
        if change < 1e-10:
            break
    ratings = [400 * math.log10(s) for s in strength]
    return [r - sum(ratings) / models + 1000 for r in ratings]


def test_ratings_intervals_are_the_game_bootstraps() -> None:
    """Three models, 300 games, nine of ten of one pairing: every model's rating interval is the one a bootstrap
    that resamples the games one by one and fits Bradley-Terry by hand gives, within their Monte Carlo error (a
    draw that weighed units alike, whatever games each holds, would give m3 an interval far too narrow)."""
    rng = random.Random(2)
    rows, games = [], []
    for i in range(300):
        a, b = (0, 1) if i % 10 else (1, 2)
        first, second = rng.choices([("A", "B"), ("B", "A"), ("A", "A")], weights=[60, 30, 10])[0]
        rows.append(row(first, second, id=str(i), model_a=f"m{a + 1}", model_b=f"m{b + 1}"))
        games.append((a, b, {"1": 1.0, "2": 0.0, "tie": 0.5}[rows[-1].verdict]))
    ours = {r["model"]: r for r in bradley_terry_ratings(rows, resamples=1000, seed=0)}
    draw = random.Random(7)
    replicates = [hand_ratings(draw.choices(games, k=len(games)), 3) for _ in range(2000)]
    for model in range(3):
        low, high, sd = percentiles([ratings[model] for ratings in replicates])
        found = ours[f"m{model + 1}"]
        bound = tolerance(sd, 1000, 2000)
        assert abs(found["low"] - low) <= bound and abs(found["high"] - high) <= bound, (model, found, low, high)


def test_calibration_intervals_are_the_item_bootstraps() -> None:
    """The judge's agreement with the majority of three votes: the calibration's interval is the one a bootstrap
    that resamples items one by one gives, within their Monte Carlo error (its draws are per unit now)."""
    rng = random.Random(9)
    rows = []
    for i in range(1200):
        votes = tuple(rng.choices(["1", "2", "tie"], weights=[5, 4, 1], k=3))
        first, second = rng.choices([("A", "B"), ("B", "A"), ("A", "A")], weights=[50, 35, 15])[0]
        rows.append(row(first, second, id=str(i), human_votes=votes, human_voters=("ann", "bob", "cy")))
    interval = calibrate(rows, resamples=1000, seed=0)
    assert interval is not None
    low, high = interval["majority"]["agreement_ci"]
    pairs = [(r.verdict, majority(r.human_votes)) for r in rows]
    draw = random.Random(4)
    shares = []
    for _ in range(6000):
        drawn = [pair for pair in draw.choices(pairs, k=len(pairs)) if pair[1] is not None]
        shares.append(sum(verdict == label for verdict, label in drawn) / len(drawn))
    ref_low, ref_high, sd = percentiles(shares)
    bound = tolerance(sd, 1000, 6000)
    assert abs(low - ref_low) <= bound and abs(high - ref_high) <= bound, (low, high, ref_low, ref_high, bound)
