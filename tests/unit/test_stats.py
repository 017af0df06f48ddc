"""Numeric primitives: each against a small case computed by hand (the arithmetic is in the docstring)."""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np
import pytest

from judgebias.figures import stats


def item_draws(n: int, resamples: int, seed: int) -> list[np.ndarray]:
    """The blocks of item multiplicities of a bootstrap of n distinct items (each item a unit of its own)."""
    return list(stats.unit_counts(stats.units_of([np.arange(n)], n), resamples, seed))


def test_binomial_nine_of_ten() -> None:
    """9 first-slot picks out of 10 give the exact two-sided p = 2 * (1 + 10) / 1024 = 0.021484375."""
    assert 0.021484375 == stats.binomial_two_sided_p(9, 10)
    assert 0.021484375 == stats.binomial_two_sided_p(1, 10)


def test_binomial_small_cases() -> None:
    """k=2 of 10: 2 * (1 + 10 + 45) / 1024 = 0.109375; a balanced split and zero trials give p = 1."""
    assert 0.109375 == stats.binomial_two_sided_p(2, 10)
    assert 1.0 == stats.binomial_two_sided_p(5, 10)
    assert 1.0 == stats.binomial_two_sided_p(0, 0)
    assert 2 / 2**20 == stats.binomial_two_sided_p(20, 20)


def test_binomial_other_p() -> None:
    """k=3 of 5 at p=0.3: pmf 0.16807 .36015 .3087 .1323 .02835 .00243; {3,4,5} are <= P(3): 0.16308."""
    assert pytest.approx(0.16308, abs=1e-12) == stats.binomial_two_sided_p(3, 5, 0.3)


def test_binomial_large_n_log_space() -> None:
    """Above the exact-integer range the log-space sum matches an exact rational computation."""
    n, k = 2501, 1200
    exact = Fraction(2 * sum(math.comb(n, i) for i in range(k + 1)), 2**n)
    assert pytest.approx(float(exact), rel=1e-9) == stats.binomial_two_sided_p(k, n)
    assert stats.binomial_two_sided_p(20_000, 50_000) < 1e-300
    assert pytest.approx(1.0) == stats.binomial_two_sided_p(25_000, 50_000)


def test_binomial_rejects_bad_input() -> None:
    """k outside 0..n is a caller error, reported with the values."""
    with pytest.raises(ValueError, match="k=11, n=10"):
        stats.binomial_two_sided_p(11, 10)


def test_kappa_two_by_two() -> None:
    """[[20, 5], [10, 15]]: po = 35/50 = 0.7, pe = (25*30 + 25*20)/2500 = 0.5, kappa = 0.2/0.5 = 0.4."""
    assert pytest.approx(0.4) == stats.cohen_kappa(np.array([[20.0, 5.0], [10.0, 15.0]]))


def test_kappa_three_by_three() -> None:
    """[[10,2,3],[1,8,1],[2,1,2]]: po = 20/30, pe = (15*13 + 10*11 + 5*6)/900 = 335/900, kappa = 265/565."""
    table = np.array([[10.0, 2.0, 3.0], [1.0, 8.0, 1.0], [2.0, 1.0, 2.0]])
    assert pytest.approx(265 / 565) == stats.cohen_kappa(table)


def test_kappa_undefined_is_none() -> None:
    """Both raters always giving the same single category leave kappa undefined (chance agreement 1): None."""
    assert None is stats.cohen_kappa(np.array([[5.0, 0.0], [0.0, 0.0]]))
    assert None is stats.cohen_kappa(np.zeros((3, 3)))


def test_kappa_batch_matches_single() -> None:
    """The vectorised kappa over a stack of tables equals the one-table kappa of each."""
    tables = np.array([[[20.0, 5.0], [10.0, 15.0]], [[3.0, 1.0], [2.0, 4.0]]])
    expected = [stats.cohen_kappa(t) for t in tables]
    assert pytest.approx(expected) == list(stats.cohen_kappa_batch(tables))


def test_pearson_by_hand() -> None:
    """x=(1,2,3), y=(1,2,4): sxy = 3, sxx = 2, syy = 14/3, r = 3 / sqrt(28/3); constant input gives None."""
    x, y = np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 4.0])
    assert pytest.approx(3 / math.sqrt(28 / 3)) == stats.pearson(x, y)
    assert None is stats.pearson(x, np.ones(3))
    assert None is stats.pearson(np.array([1.0]), np.array([2.0]))


def test_weighted_pearson_equals_duplicated_rows() -> None:
    """Weights act as item multiplicities: weight 2 equals listing the item twice."""
    x, y = np.array([1.0, 2.0, 3.0, 5.0]), np.array([1.0, 0.0, 4.0, 2.0])
    weights = np.array([[2.0, 1.0, 0.0, 1.0]])
    expected = stats.pearson(np.array([1.0, 1.0, 2.0, 5.0]), np.array([1.0, 1.0, 0.0, 2.0]))
    assert pytest.approx(expected) == float(stats.weighted_pearson_batch(x, y, weights)[0])


def test_logistic_no_effect() -> None:
    """7 of 10 ones at x=-1 and at x=+1: slope 0 and intercept logit(0.7) = ln(7/3), so sigmoid(b0) = 0.7."""
    x = np.repeat([-1.0, 1.0], 10)
    y = np.tile([1.0] * 7 + [0.0] * 3, 2)
    b0, b1 = stats.fit_logistic(x, y)
    assert pytest.approx(math.log(7 / 3), abs=1e-4) == b0
    assert pytest.approx(0.0, abs=1e-9) == b1


def test_logistic_two_groups() -> None:
    """Rate 0.2 at x=-1 and 0.8 at x=+1: b0 = 0 and b1 = logit(0.8) = ln 4 (the MLE fits both group rates)."""
    x = np.repeat([-1.0, 1.0], 10)
    y = np.concatenate([[1.0] * 2 + [0.0] * 8, [1.0] * 8 + [0.0] * 2])
    b0, b1 = stats.fit_logistic(x, y)
    assert pytest.approx(0.0, abs=1e-9) == b0
    assert pytest.approx(math.log(4), abs=1e-3) == b1


def test_logistic_separable_stays_finite() -> None:
    """Separable data (y = 1 exactly when x > 0, or all ones) still give finite coefficients (the ridge)."""
    x = np.array([-2.0, -1.0, 1.0, 2.0])
    b0, b1 = stats.fit_logistic(x, (x > 0).astype(float))
    assert math.isfinite(b0) and math.isfinite(b1) and b1 > 3
    b0, _ = stats.fit_logistic(x, np.ones(4))
    assert math.isfinite(b0) and float(stats.sigmoid(np.array([b0]))[0]) > 0.999


def test_logistic_weights_equal_duplicated_rows() -> None:
    """Bootstrap counts as weights give the same fit as the duplicated sample."""
    x = np.array([-1.5, -0.5, 0.0, 0.5, 1.0, 2.0])
    y = np.array([0.0, 1.0, 0.0, 1.0, 1.0, 0.0])
    counts = np.array([[2.0, 0.0, 1.0, 3.0, 1.0, 1.0]])
    b0, b1 = stats.fit_logistic_batch(x, y, counts)
    d0, d1 = stats.fit_logistic(np.repeat(x, [2, 0, 1, 3, 1, 1]), np.repeat(y, [2, 0, 1, 3, 1, 1]))
    assert pytest.approx((d0, d1), abs=1e-9) == (float(b0[0]), float(b1[0]))


def test_logistic_thousand_fits_are_fast() -> None:
    """1,000 bootstrap fits on 200 items take well under a second (one batched Newton iteration)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=200)
    y = (rng.random(200) < stats.sigmoid(0.3 + 0.8 * x)).astype(float)
    start = time.perf_counter()
    (counts,) = item_draws(200, 1000, seed=0)
    b0, _ = stats.fit_logistic_batch(x, y, counts)
    assert time.perf_counter() - start < 1.0
    assert 1000 == int(np.isfinite(b0).sum())


def test_logistic_many_matches_the_two_parameter_fit() -> None:
    """With columns (1, x) the many-covariate fit gives the two-parameter fit's coefficients, row by row."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=60)
    y = (rng.random(60) < stats.sigmoid(0.4 - 0.7 * x)).astype(float)
    (counts,) = item_draws(60, 5, seed=2)
    b0, b1 = stats.fit_logistic_batch(x, y, counts)
    beta = stats.fit_logistic_many(np.stack([np.ones(60), x], axis=1), y, counts)
    assert pytest.approx(np.stack([b0, b1], axis=1).ravel().tolist(), abs=1e-6) == beta.ravel().tolist()


def test_logistic_many_recovers_known_coefficients() -> None:
    """On 20,000 simulated draws from logit P = 0.5 + 1.0 x1 - 0.8 x2 + 0 x3 the fit is within 0.06 of each."""
    rng = np.random.default_rng(3)
    x = np.column_stack([np.ones(20_000), rng.normal(size=(20_000, 3))])
    truth = np.array([0.5, 1.0, -0.8, 0.0])
    y = (rng.random(20_000) < stats.sigmoid(x @ truth)).astype(float)
    beta = stats.fit_logistic_many(x, y, np.ones((1, 20_000)))[0]
    assert pytest.approx(truth.tolist(), abs=0.06) == beta.tolist()


def test_logistic_many_reads_ties_as_half() -> None:
    """Outcomes of 0.5 (ties) on every item give coefficients of 0: no side is favoured."""
    x = np.column_stack([np.ones(8), np.linspace(-1.0, 1.0, 8)])
    beta = stats.fit_logistic_many(x, np.full(8, 0.5), np.ones((1, 8)))[0]
    assert pytest.approx([0.0, 0.0], abs=1e-9) == beta.tolist()


def test_bradley_terry_two_models_by_hand() -> None:
    """Without a prior, i beating j 2 of 3 gives p_i / p_j = 2: ratings 1000 ± 200*log10(2)."""
    strengths = stats.bradley_terry(np.array([[0.0, 2.0], [1.0, 0.0]]), prior=0.0)
    assert pytest.approx(2.0) == float(strengths[0] / strengths[1])
    half_gap = 200 * math.log10(2)
    assert pytest.approx([1000 + half_gap, 1000 - half_gap]) == list(stats.elo_scale(strengths))


def test_bradley_terry_obvious_order() -> None:
    """A beats B 3-1, B beats C 3-1, A beats C 4-0: strengths A > B > C, and an unbeaten A stays finite."""
    wins = np.array([[0.0, 3.0, 4.0], [1.0, 0.0, 3.0], [0.0, 1.0, 0.0]])
    strengths = stats.bradley_terry(wins)
    assert strengths[0] > strengths[1] > strengths[2]
    unbeaten = stats.bradley_terry(np.array([[0.0, 5.0, 5.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]))
    assert bool(np.all(np.isfinite(unbeaten)))


def test_bradley_terry_cycle_is_level() -> None:
    """A > B, B > C, C > A once each: every strength is 1 and every rating 1000."""
    wins = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    assert pytest.approx([1000.0] * 3) == list(stats.elo_scale(stats.bradley_terry(wins)))


def test_bootstrap_counts_shape_and_determinism() -> None:
    """Each resample draws n items (row sums n); the same seed repeats the draws, another seed does not."""
    blocks = item_draws(7, 50, seed=3)
    counts = np.concatenate(blocks)
    assert (50, 7) == counts.shape
    assert [7.0] * 50 == list(counts.sum(axis=1))
    assert np.array_equal(counts, np.concatenate(item_draws(7, 50, seed=3)))
    assert not np.array_equal(counts, np.concatenate(item_draws(7, 50, seed=4)))


def test_bootstrap_counts_in_blocks_for_many_items() -> None:
    """With many items the resamples come in several blocks that still add up to the requested number."""
    blocks = item_draws(200_000, 45, seed=0)
    assert len(blocks) > 1
    assert 45 == sum(b.shape[0] for b in blocks)
    assert [200_000.0] * 45 == [float(s) for b in blocks for s in b.sum(axis=1)]


def test_percentile_interval() -> None:
    """0..100 has 2.5th and 97.5th percentiles 2.5 and 97.5; NaN replicates are ignored; all NaN: None."""
    values = np.arange(101, dtype=float)
    assert pytest.approx([2.5, 97.5]) == stats.percentile_interval(values)
    with_nan = np.concatenate([values, [np.nan] * 5])
    assert stats.percentile_interval(values) == stats.percentile_interval(with_nan)
    assert None is stats.percentile_interval(np.array([np.nan, np.nan]))


def test_ratio_is_nan_where_undefined() -> None:
    """A zero denominator gives NaN (an undefined replicate), never a division warning or infinity."""
    out = stats.ratio(np.array([1.0, 2.0]), np.array([2.0, 0.0]))
    assert 0.5 == out[0] and math.isnan(out[1])


def test_sigmoid_does_not_overflow() -> None:
    """Large arguments saturate at 0 and 1 without overflow."""
    assert [0.0, 0.5, 1.0] == list(stats.sigmoid(np.array([-1000.0, 0.0, 1000.0])))


def test_a_fit_on_kinds_of_item_with_summed_weights_is_the_fit_on_the_items() -> None:
    """Items of equal covariate and outcome grouped, their resample weights summed: the same intercepts, to
    rounding, as fitting every item under each resample's weights (the bootstrap's replicates use the former)."""
    rng = np.random.default_rng(3)
    x = rng.integers(-4, 5, 600) / 2.0  # few distinct values, as word-count ratios of short answers have
    y = (rng.random(600) < 1 / (1 + np.exp(-0.4 - 0.8 * x))).astype(np.float64)
    weights = rng.poisson(1.0, (40, 600)).astype(np.float64)
    kinds = stats.kinds_of(x, y)

    per_item, _ = stats.fit_logistic_batch(x, y, weights)
    per_kind, _ = stats.fit_logistic_batch(x[kinds.first], y[kinds.first], kinds.summed(weights))

    assert kinds.first.size <= 18 and np.allclose(per_item, per_kind, rtol=0, atol=1e-9)
    design = np.column_stack([np.ones(600), x])
    many = stats.fit_logistic_many(design, y, weights)
    assert np.allclose(
        many, stats.fit_logistic_many(design[kinds.first], y[kinds.first], kinds.summed(weights)), atol=1e-9
    )


def test_summed_weights_per_kind_equal_a_plain_loop() -> None:
    """Kinds.summed: for each resample, the weight of each kind is the sum over its items, counted by hand."""
    rng = np.random.default_rng(4)
    a, b = rng.integers(0, 3, 50), rng.choice([0.0, 0.5, 1.0], 50)
    weights = rng.poisson(1.0, (5, 50)).astype(np.float64)
    kinds = stats.kinds_of(a, b)
    summed = kinds.summed(weights)
    for row in range(5):
        for column, item in enumerate(kinds.first):
            by_hand = sum(weights[row, i] for i in range(50) if (a[i], b[i]) == (a[item], b[item]))
            assert by_hand == summed[row, column]
    assert sorted(set(zip(a.tolist(), b.tolist(), strict=True))) == sorted((a[i], b[i]) for i in kinds.first.tolist())
