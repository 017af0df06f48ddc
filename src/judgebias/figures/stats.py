"""Numeric primitives behind the run summary: item and cluster bootstrap, exact binomial test, logistic fit,
Bradley–Terry strengths, Cohen's kappa, Pearson correlation.

Pure numpy and the standard library; no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# Cells of one resample-by-item count block: bounds memory (32 MB of float64) whatever the item count.
_BLOCK_CELLS = 4_000_000
# Cells of one block of multinomial draws: its integers and their float copy are both held (16 MB here, not the
# 64 of a full block), and a multinomial costs per unit drawn, not per call, so smaller blocks cost no time.
_MULTINOMIAL_BLOCK_CELLS = 1_000_000
# Up to this n the two-sided test at p = 0.5 is summed exactly in integers; above it, in log space.
_EXACT_BINOMIAL_MAX_N = 2000


def _tallied(index: IntArray, bins: int) -> FloatArray:
    """How often each of `bins` occurs in each row of `index` (rows: resamples): a (rows, bins) block of counts.

    `index` is overwritten (each row's values moved to cells of their own), and only the block returned stays in
    memory: the draws and the integer counts are dropped first, at the default 4 million cells 32 MB instead of
    128."""
    index += (np.arange(index.shape[0], dtype=np.int64) * bins)[:, None]  # row r's draws land in cells r * bins + bin
    drawn = np.bincount(index.ravel(), minlength=index.shape[0] * bins).reshape(index.shape[0], bins)
    del index
    counts = drawn.astype(np.float64)
    del drawn
    return counts


def _blocks(resamples: int, rows: int) -> Iterator[int]:
    """The resamples of each block, `rows` a block and the rest in the last: the sizes depend on the arguments
    alone, so the same seed draws the same numbers."""
    for done in range(0, resamples, rows):
        yield min(rows, resamples - done)


def _drawn(units: int, resamples: int, seed: int, *, rows: int) -> Iterator[FloatArray]:
    """Blocks of how often each of `units` was drawn, `units` draws with replacement per resample, `rows` a block."""
    rng = np.random.default_rng(seed)
    for block in _blocks(resamples, rows):
        yield _tallied(rng.integers(0, units, size=(block, units)), units)


@dataclass(frozen=True)
class Kinds:
    """Items grouped by equal values. A statistic that sees the items only through those values and their weights
    is the same computed on one item of each kind with the kind's summed weight, which is far less work when many
    items share values (a resample's cost becomes one pass to sum the weights)."""

    order: IntArray  # the items, sorted by kind
    starts: IntArray  # where each kind begins in `order`

    @property
    def first(self) -> IntArray:
        """One item of each kind."""
        return self.order[self.starts]

    def summed(self, weights: FloatArray) -> FloatArray:
        """Each row's weights summed per kind: (rows, kinds)."""
        if not self.order.size:
            return np.zeros((weights.shape[0], 0), dtype=np.float64)
        out: FloatArray = np.add.reduceat(weights[:, self.order], self.starts, axis=1)
        return out


def kinds_of(*columns: NDArray[Any]) -> Kinds:
    """The items (rows of the given columns) grouped by their values: equal in every column, one kind."""
    if not columns or not np.asarray(columns[0]).size:
        return Kinds(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    _, inverse = np.unique(np.column_stack(columns), axis=0, return_inverse=True)
    inverse = inverse.ravel()
    order = np.argsort(inverse, kind="stable")
    return Kinds(order, np.flatnonzero(np.r_[True, np.diff(inverse[order]) != 0]))


@dataclass(frozen=True)
class Units:
    """Items grouped by equal values in every column a statistic reads: a statistic of item weights is the same
    computed on one item of each unit weighted by the unit's summed weight, so a bootstrap needs to draw only how
    many items of each unit a resample holds (`unit_counts`), not which items."""

    first: IntArray  # the first item of each unit, in increasing order (units are numbered by first appearance)
    inverse: IntArray  # each item's unit
    sizes: FloatArray  # the items of each unit


_HASH_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # odd: multiplying by it mod 2**64 is a bijection


def units_of(columns: Sequence[NDArray[Any]], n: int) -> Units:
    """The `n` items (rows of every column; a column may be 2-D, items first) grouped by their exact values.

    Rows are hashed (the bits of every value, mixed column by column) and grouped by hash; the grouping is then
    checked bit for bit, and a collision falls back to an exact sort of the rows. Two values equal but for their
    bits (0.0 and -0.0) may land in two units: a finer split is still exact. One column's bits are held at a time,
    so a million items with fifty narrow columns need a few of them in memory, not fifty in eight bytes."""
    if n <= 0:
        empty = np.zeros(0, dtype=np.int64)
        return Units(empty, empty, np.zeros(0, dtype=np.float64))
    digest = np.zeros(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for word in _words(columns, n):
            digest ^= word
            digest *= _HASH_MULTIPLIER
            digest ^= digest >> np.uint64(29)
    _, first, inverse = np.unique(digest, return_index=True, return_inverse=True)
    del digest  # a million items' columns are checked and renumbered below: one column of 8 bytes an item less
    inverse = inverse.ravel()
    if not all(np.array_equal(word, word[first][inverse]) for word in _words(columns, n)):  # a collision
        _, first, inverse = np.unique(
            np.column_stack(list(_words(columns, n))), axis=0, return_index=True, return_inverse=True
        )
        inverse = inverse.ravel()
    # Units numbered by their first item, not by hash or value: the bootstrap's draws for a seed depend on the
    # data's order alone, whatever way the grouping is computed.
    by_first = np.argsort(first, kind="stable")
    number = np.empty_like(by_first)
    number[by_first] = np.arange(by_first.size)
    first, inverse = first[by_first], number[inverse]
    sizes = np.bincount(inverse, minlength=first.size).astype(np.float64)
    return Units(first.astype(np.int64, copy=False), inverse.astype(np.int64, copy=False), sizes)


def _words(columns: Sequence[NDArray[Any]], n: int) -> Iterator[NDArray[np.uint64]]:
    """Each value column of `columns` as 64-bit words, one word per item, equal exactly when the values are: an
    integer as itself, a float by its bits."""
    for column in columns:
        values = np.asarray(column).reshape(n, -1)
        for j in range(values.shape[1]):
            one = values[:, j]
            if one.dtype.kind in "iub":
                yield one.astype(np.uint64)
            else:
                yield np.ascontiguousarray(one, dtype=np.float64).view(np.uint64)


# A unit costs a multinomial draw about 15 times what an item costs an index draw (measured, numpy 2.4).
_MULTINOMIAL_ITEMS_PER_UNIT = 16


def unit_counts(units: Units, resamples: int, seed: int, groups: IntArray | None = None) -> Iterator[FloatArray]:
    """Blocks (rows: resamples, columns: units) of how many items of each unit a seeded bootstrap resample holds.

    Resampling n items with replacement puts Multinomial(n, sizes / n) items in the units, so that is what is
    drawn (with `default_rng(seed)`) when there are far fewer units than items; else n item indices are drawn and
    counted per unit, the same distribution. With `groups` (each item's cluster; every unit must lie in one
    cluster) clusters are drawn with replacement, so that items that share a question (its difficulty, its judge
    behaviour) travel together, and a unit gets its cluster's count times its size. Blocks are sized by the units
    (or the items, or the clusters, whichever a block holds), so the same arguments always yield the same
    numbers."""
    n, count = int(units.inverse.size), int(units.first.size)
    if groups is not None and groups.size != n:
        raise ValueError(f"cluster bootstrap needs one cluster per item: {groups.size} clusters for {n} items")
    if n <= 0 or resamples <= 0:
        return
    if groups is not None:
        clusters = int(groups.max()) + 1
        of_unit = groups[units.first]
        for drawn in _drawn(
            clusters, resamples, seed, rows=max(1, min(resamples, _BLOCK_CELLS // max(clusters, count)))
        ):
            unit_drawn = drawn[:, of_unit]
            del drawn
            unit_drawn *= units.sizes
            yield unit_drawn
        return
    rng = np.random.default_rng(seed)
    if count * _MULTINOMIAL_ITEMS_PER_UNIT <= n:
        probabilities = units.sizes / n
        for block in _blocks(resamples, max(1, min(resamples, _MULTINOMIAL_BLOCK_CELLS // count))):
            yield rng.multinomial(n, probabilities, size=block).astype(np.float64)
        return
    for block in _blocks(resamples, max(1, min(resamples, _BLOCK_CELLS // n))):
        yield _tallied(units.inverse[rng.integers(0, n, size=(block, n))], count)


def cluster_index(labels: Iterable[object]) -> IntArray:
    """Each label's cluster number 0 .. k-1, numbered by first appearance (equal labels, same cluster); the labels
    may come one at a time (no list of them is built)."""
    seen: dict[object, int] = {}
    return np.fromiter((seen.setdefault(label, len(seen)) for label in labels), dtype=np.int64)


def percentile_interval(values: FloatArray, level: float = 0.95) -> list[float] | None:
    """The percentile interval [low, high] of bootstrap replicates, ignoring undefined (NaN) replicates."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return None
    tail = 100.0 * (1.0 - level) / 2.0
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return [float(low), float(high)]


def ratio(numerator: FloatArray, denominator: FloatArray) -> FloatArray:
    """Elementwise numerator / denominator with NaN where the denominator is 0 (an undefined replicate)."""
    out = np.full(np.shape(numerator), np.nan, dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


def binomial_two_sided_p(k: int, n: int, p: float = 0.5) -> float:
    """Exact two-sided binomial test: P(an outcome no more likely than k successes in n trials)."""
    if not 0 <= k <= n:
        raise ValueError(f"binomial test needs 0 <= k <= n, got k={k}, n={n}")
    if not 0.0 < p < 1.0:
        raise ValueError(f"binomial test needs 0 < p < 1, got p={p}")
    if n == 0:
        return 1.0
    if p == 0.5 and n <= _EXACT_BINOMIAL_MAX_N:
        # Symmetric case: outcomes no more likely than k are those at most min(k, n-k) from either end.
        tail = min(k, n - k)
        coefficient, below = 1, 0
        for i in range(tail + 1):
            below += coefficient
            coefficient = coefficient * (n - i) // (i + 1)
        return float(min(Fraction(2 * below, 2**n), Fraction(1)))
    log_pmf = _binomial_log_pmf(n, p)
    # A relative tolerance keeps outcomes exactly as likely as k (rounding apart) inside the sum.
    keep = log_pmf[log_pmf <= log_pmf[k] + 1e-7]
    top = float(keep.max())
    return float(min(1.0, math.exp(top) * float(np.exp(keep - top).sum())))


def _binomial_log_pmf(n: int, p: float) -> FloatArray:
    """log P(X = i), i = 0..n, for X ~ Binomial(n, p), from cumulative log binomial coefficients."""
    i = np.arange(1, n + 1, dtype=np.float64)
    log_comb = np.concatenate(([0.0], np.cumsum(np.log(n - i + 1.0) - np.log(i))))
    successes = np.arange(n + 1, dtype=np.float64)
    out: FloatArray = log_comb + successes * math.log(p) + (n - successes) * math.log1p(-p)
    return out


def cohen_kappa(table: FloatArray) -> float | None:
    """Cohen's kappa of a square confusion table (rater 1 rows, rater 2 columns); None when undefined."""
    value = float(cohen_kappa_batch(np.asarray(table, dtype=np.float64)[None, :, :])[0])
    return value if math.isfinite(value) else None


def cohen_kappa_batch(tables: FloatArray) -> FloatArray:
    """Cohen's kappa of each table in a (resamples, k, k) stack; NaN where chance agreement is 1 or empty."""
    total = tables.sum(axis=(1, 2))
    observed = ratio(np.trace(tables, axis1=1, axis2=2), total)
    chance = ratio((tables.sum(axis=2) * tables.sum(axis=1)).sum(axis=1), total**2)
    return ratio(observed - chance, np.where(chance < 1.0 - 1e-12, 1.0 - chance, 0.0))


def pearson(x: FloatArray, y: FloatArray) -> float | None:
    """Pearson correlation of two equal-length samples; None when either is constant or n < 2."""
    if x.size < 2:
        return None
    dx, dy = x - x.mean(), y - y.mean()
    sxx, syy = float(dx @ dx), float(dy @ dy)
    if sxx <= 0.0 or syy <= 0.0:
        return None
    return float(dx @ dy) / math.sqrt(sxx * syy)


def weighted_pearson_batch(x: FloatArray, y: FloatArray, weights: FloatArray) -> FloatArray:
    """Pearson correlation of (x, y) under each row of item weights; NaN where either side is constant."""
    total = weights.sum(axis=1)
    mx, my = ratio(weights @ x, total), ratio(weights @ y, total)
    sxx = ratio(weights @ (x * x), total) - mx**2
    syy = ratio(weights @ (y * y), total) - my**2
    sxy = ratio(weights @ (x * y), total) - mx * my
    scale = np.sqrt(np.clip(sxx, 0.0, None) * np.clip(syy, 0.0, None))
    return ratio(sxy, np.where(scale > 1e-12 * (1.0 + np.abs(sxy)), scale, 0.0))


def sigmoid(z: FloatArray) -> FloatArray:
    """The logistic function 1 / (1 + exp(-z)), without overflow."""
    out: FloatArray = 0.5 * (1.0 + np.tanh(0.5 * z))
    return out


def fit_logistic(
    x: FloatArray,
    y: FloatArray,
    *,
    ridge: float = 1e-4,
    max_iter: int = 100,
) -> tuple[float, float]:
    """Fit logit P(y = 1) = b0 + b1 * x by Newton's method with a small L2 ridge; returns (b0, b1)."""
    b0, b1 = fit_logistic_batch(x, y, np.ones((1, x.size)), ridge=ridge, max_iter=max_iter)
    return float(b0[0]), float(b1[0])


def fit_logistic_batch(
    x: FloatArray,
    y: FloatArray,
    weights: FloatArray,
    *,
    ridge: float = 1e-4,
    start: tuple[float, float] = (0.0, 0.0),
    max_iter: int = 100,
    tol: float = 1e-7,
) -> tuple[FloatArray, FloatArray]:
    """Fit one weighted two-parameter logistic regression per row of `weights`, all at once: (b0, b1)."""
    # The ridge (penalty ridge/2 * (b0^2 + b1^2)) keeps both coefficients finite when the data are separable,
    # e.g. when every decisive verdict went to one side; it is far too small to move a fit that is finite.
    # Newton steps are capped in length, which keeps the iteration stable from any start. Convergence is
    # quadratic near the optimum, so once a step is shorter than tol the error left is about tol^2.
    w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    rows = w.shape[0]
    b0 = np.full(rows, start[0], dtype=np.float64)
    b1 = np.full(rows, start[1], dtype=np.float64)
    basis = np.empty((x.size, 3), dtype=np.float64)  # (1, x, x^2) per item, filled in place: no copies of x
    basis[:, 0] = 1.0
    basis[:, 1] = x
    np.multiply(x, x, out=basis[:, 2])
    for _ in range(max_iter):
        # In place on (rows, items) arrays: p = sigmoid(b0 + b1 * x), then the weighted gradient and Hessian
        # sums as matrix products with the basis (1, x, x^2).
        p = np.multiply.outer(b1, x)
        p += b0[:, None]
        p *= 0.5
        np.tanh(p, out=p)
        p += 1.0
        p *= 0.5
        residual = y[None, :] - p
        residual *= w
        gradient = residual @ basis[:, :2]
        np.subtract(1.0, p, out=residual)
        p *= residual
        p *= w
        hessian = p @ basis
        g0 = gradient[:, 0] - ridge * b0
        g1 = gradient[:, 1] - ridge * b1
        h00, h01, h11 = hessian[:, 0] + ridge, hessian[:, 1], hessian[:, 2] + ridge
        det = h00 * h11 - h01 * h01
        d0 = (h11 * g0 - h01 * g1) / det
        d1 = (h00 * g1 - h01 * g0) / det
        length = np.hypot(d0, d1)
        scale = np.minimum(1.0, 5.0 / np.maximum(length, 1e-300))
        b0 += scale * d0
        b1 += scale * d1
        if float(length.max()) < tol:
            break
    return b0, b1


def fit_logistic_many(
    features: FloatArray,
    y: FloatArray,
    weights: FloatArray,
    *,
    ridge: float = 1e-4,
    start: FloatArray | None = None,
    max_iter: int = 100,
    tol: float = 1e-7,
) -> FloatArray:
    """Fit logit P(y = 1) = features @ beta for each row of item `weights` at once: (rows, columns) of beta."""
    # The many-covariate form of fit_logistic_batch (same ridge, same capped Newton steps); y may be 0.5 (a
    # tie counted half to each side). features is (items, columns) and carries its own intercept column when
    # one is wanted. The Hessian of every row is one matrix product with the per-item outer products.
    x = np.asarray(features, dtype=np.float64)
    w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    rows, columns = w.shape[0], x.shape[1]
    beta = np.zeros((rows, columns)) if start is None else np.array(np.broadcast_to(start, (rows, columns)))
    outer = (x[:, :, None] * x[:, None, :]).reshape(x.shape[0], columns * columns)
    penalty = ridge * np.eye(columns)
    for _ in range(max_iter):
        p = sigmoid(beta @ x.T)
        gradient = (w * (y[None, :] - p)) @ x - ridge * beta
        hessian = ((w * p * (1.0 - p)) @ outer).reshape(rows, columns, columns) + penalty
        step = np.linalg.solve(hessian, gradient[:, :, None])[:, :, 0]
        length = np.sqrt((step * step).sum(axis=1))
        beta += np.minimum(1.0, 5.0 / np.maximum(length, 1e-300))[:, None] * step
        if float(length.max()) < tol:
            break
    return beta


def bradley_terry(wins: FloatArray, *, prior: float = 1.0, max_iter: int = 10_000) -> FloatArray:
    """Bradley–Terry strengths (geometric mean 1) from wins[i, j] = wins of i over j, by MM iterations."""
    stack = np.asarray(wins, dtype=np.float64)[None, :, :]
    strengths: FloatArray = bradley_terry_batch(stack, prior=prior, max_iter=max_iter)[0]
    return strengths


def bradley_terry_batch(
    wins: FloatArray, *, prior: float = 1.0, max_iter: int = 10_000, tol: float = 1e-10
) -> FloatArray:
    """Bradley–Terry strengths for each (k, k) wins matrix in a (resamples, k, k) stack, by Hunter's MM."""
    # Hunter (2004): p_i <- W_i / sum_j N_ij / (p_i + p_j), W_i = total wins of i, N_ij = games of i with j.
    # The prior adds `prior` virtual games between every pair of models, split evenly (a virtual tie), so a
    # model that never loses stays finite and models never compared directly are still linked.
    k = wins.shape[-1]
    off_diagonal = 1.0 - np.eye(k)
    w = wins * off_diagonal + 0.5 * prior * off_diagonal
    games = w + np.swapaxes(w, 1, 2)
    total_wins = w.sum(axis=2)
    strength = np.ones(w.shape[:2], dtype=np.float64)
    for _ in range(max_iter):
        denominator = (games / (strength[:, :, None] + strength[:, None, :])).sum(axis=2)
        updated = ratio(total_wins, denominator)
        updated = np.where(np.isfinite(updated) & (updated > 0), updated, 1e-300)
        updated /= np.exp(np.log(updated).mean(axis=1))[:, None]
        change = float(np.abs(np.log(updated) - np.log(strength)).max())
        strength = updated
        if change < tol:
            break
    return strength


def elo_scale(strengths: FloatArray, mean: float = 1000.0) -> FloatArray:
    """Ratings 400 * log10(strength), shifted so that each row's mean rating is `mean` (an Elo-like scale)."""
    rating = 400.0 * np.log10(strengths)
    out: FloatArray = rating - rating.mean(axis=-1, keepdims=True) + mean
    return out


def mean_or_none(values: Sequence[float]) -> float | None:
    """The mean of `values`, or None when there are none."""
    return sum(values) / len(values) if values else None
