"""Prediction-powered inference: what people would say, estimated from the judge's verdict on every item and people's
labels on some, with an interval that holds however biased the judge is (Angelopoulos et al., Science 2023; PPI++
with power tuning, Angelopoulos, Duchi & Zrnic 2023).

The judge's prediction Ŷ is known on all N + n items, the people's value Y on the n labelled ones. The estimate is
λ·mean_u(Ŷ) + mean_l(Y − λŶ): the judge's figure corrected by its error where people looked. λ (in [0, 1]) is tuned
to make the interval as narrow as the data allow: 0 gives the labels alone (the classical estimate), 1 plain PPI.
Every formula follows the method's authors' package (ppi-python 0.2.3: `ppi_mean_ci`, `_calc_lam_glm`,
`ppi_logistic_ci`) so that the same arrays give the same numbers; the tests hold them to it. Weights (a sampling
design's inverse inclusion probabilities) enter as that package takes them, each set normalised to its size.
Counts (how many alike items each row stands for: a million items are a few thousand kinds of item) make every
mean, spread and covariance the one of the items written out row by row, without writing them out.

Pure: arrays in, numbers out.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
LEVEL = 0.95


@dataclass(frozen=True)
class Estimate:
    """One prediction-powered estimate: its value, its interval at `level`, its standard error, and the λ used."""

    value: float
    low: float
    high: float
    se: float
    lam: float

    @property
    def interval(self) -> list[float]:
        """[low, high]."""
        return [self.low, self.high]


def z_value(level: float = LEVEL) -> float:
    """The two-sided normal quantile of a `level` interval (1.96 for 95%)."""
    return NormalDist().inv_cdf(1.0 - (1.0 - level) / 2.0)


Counts = NDArray[np.int64]


def frequencies(counts: Counts | None, rows: int) -> FloatArray:
    """How many items each of `rows` rows stands for, as floats (one each without counts)."""
    return np.ones(rows) if counts is None else counts.astype(np.float64)


def normalised(weights: FloatArray | None, counts: FloatArray) -> FloatArray:
    """Weights scaled so the items' weights sum to their number (all ones without weights), as ppi-python's
    construct_weight_vector does; `counts`: the items each row stands for."""
    if weights is None:
        return np.ones(counts.size)
    return weights / float(counts @ weights) * float(counts.sum())


def _mean(values: FloatArray, counts: FloatArray) -> float:
    return float(counts @ values) / float(counts.sum())


def _std(values: FloatArray, counts: FloatArray) -> float:
    """The spread of the items' values (ddof 0, as numpy's std)."""
    centred = values - _mean(values, counts)
    return math.sqrt(float(counts @ (centred * centred)) / float(counts.sum()))


def _cov(values: FloatArray, counts: Counts | None) -> FloatArray:
    """The covariance of the items' rows of values (ddof 1, as numpy's cov), each row counted its times."""
    return np.atleast_2d(np.cov(values.T, fweights=counts))


def power_tuned_lambda(
    grads: FloatArray,
    grads_hat: FloatArray,
    grads_hat_unlabelled: FloatArray,
    inv_hessian: FloatArray,
    counts: Counts | None = None,
    counts_unlabelled: Counts | None = None,
) -> float:
    """PPI++'s λ minimising the estimate's variance (trace over coordinates), clipped to [0, 1]: ppi-python's
    `_calc_lam_glm(..., clip=True)`. Predictions that do not vary carry no information: λ = 0 then."""
    grads, grads_hat, grads_hat_unlabelled = (np.atleast_2d(g.T).T for g in (grads, grads_hat, grads_hat_unlabelled))
    c, c_u = frequencies(counts, grads.shape[0]), frequencies(counts_unlabelled, grads_hat_unlabelled.shape[0])
    n, big_n = float(c.sum()), float(c_u.sum())
    centred, centred_hat = grads - (c @ grads) / n, grads_hat - (c @ grads_hat) / n
    cov_grads = (centred.T @ (c[:, None] * centred_hat) + centred_hat.T @ (c[:, None] * centred)) / n
    pooled = np.concatenate([grads_hat, grads_hat_unlabelled], axis=0)
    both = None if counts is None and counts_unlabelled is None else np.concatenate([c, c_u]).astype(np.int64)
    var_grads_hat = _cov(pooled, both)
    denominator = 2.0 * (1.0 + n / big_n) * float(np.trace(inv_hessian @ var_grads_hat @ inv_hessian))
    if not denominator > 0.0:
        return 0.0
    lam = float(np.trace(inv_hessian @ cov_grads @ inv_hessian)) / denominator
    return min(1.0, max(0.0, lam)) if math.isfinite(lam) else 0.0


def ppi_mean(
    y: FloatArray,
    y_hat: FloatArray,
    y_hat_unlabelled: FloatArray,
    *,
    lam: float | None = None,
    w: FloatArray | None = None,
    w_unlabelled: FloatArray | None = None,
    level: float = LEVEL,
    counts: Counts | None = None,
    counts_unlabelled: Counts | None = None,
) -> Estimate:
    """The prediction-powered mean of Y with its interval (ppi-python's `ppi_mean_ci`, `lam=None`: power-tuned);
    `counts`: the items each row stands for.

    With no unlabelled item (everything labelled) it is the labels' own mean: what people said."""
    c, c_u = frequencies(counts, y.size), frequencies(counts_unlabelled, y_hat_unlabelled.size)
    n, big_n = int(c.sum()), int(c_u.sum())
    if n < 2:
        raise ValueError(f"a prediction-powered mean needs at least 2 labelled items, got {n}")
    w, w_unlabelled = normalised(w, c), normalised(w_unlabelled, c_u)
    if big_n == 0:
        lam = 0.0
    elif lam is None:
        first = _mean(w_unlabelled * y_hat_unlabelled, c_u) + _mean(w * (y - y_hat), c)
        lam = power_tuned_lambda(
            w * (y - first), w * (y_hat - first), w_unlabelled * (y_hat_unlabelled - first), np.eye(1),
            counts, counts_unlabelled,
        )  # fmt: skip
    imputed = w_unlabelled * (lam * y_hat_unlabelled)
    rectified = w * (y - lam * y_hat)
    value = (_mean(imputed, c_u) if big_n else 0.0) + _mean(rectified, c)
    imputed_se = _std(imputed, c_u) / math.sqrt(big_n) if big_n else 0.0
    se = math.sqrt(imputed_se**2 + (_std(rectified, c) / math.sqrt(n)) ** 2)
    half = z_value(level) * se
    return Estimate(value, value - half, value + half, se, float(lam))


def ppi_ratio(
    numerator: tuple[FloatArray, FloatArray, FloatArray],
    denominator: tuple[FloatArray, FloatArray, FloatArray],
    *,
    lam: float | None = None,
    w: FloatArray | None = None,
    w_unlabelled: FloatArray | None = None,
    level: float = LEVEL,
    counts: Counts | None = None,
    counts_unlabelled: Counts | None = None,
) -> Estimate:
    """The prediction-powered ratio E[A] / E[B] (the decisive win rate: a's wins over decisive labels), each given as
    (labelled values, their predictions, the unlabelled predictions).

    A Z-estimator in PPI++'s frame: θ solves the rectified mean of A − θB = 0, so θ = (λ·m_u(Â) + m_l(A − λÂ)) /
    (λ·m_u(B̂) + m_l(B − λB̂)); λ is tuned on the gradients A − θB at the plain-PPI θ (as ppi-python tunes a GLM's),
    the interval is the mean of A − θ̂B's interval divided by the estimate of E[B] (the Hessian)."""
    (a, a_hat, a_hat_u), (b, b_hat, b_hat_u) = numerator, denominator
    c, c_u = frequencies(counts, a.size), frequencies(counts_unlabelled, a_hat_u.size)
    n, big_n = int(c.sum()), int(c_u.sum())
    if n < 2:
        raise ValueError(f"a prediction-powered ratio needs at least 2 labelled items, got {n}")
    w, w_unlabelled = normalised(w, c), normalised(w_unlabelled, c_u)

    def solved(lam_now: float) -> tuple[float, float]:
        top = (lam_now * _mean(w_unlabelled * a_hat_u, c_u) if big_n else 0.0) + _mean(w * (a - lam_now * a_hat), c)
        bottom = (lam_now * _mean(w_unlabelled * b_hat_u, c_u) if big_n else 0.0) + _mean(w * (b - lam_now * b_hat), c)
        return top, bottom

    if big_n == 0:
        lam = 0.0
    elif lam is None:
        top, bottom = solved(1.0)
        theta = top / bottom if bottom > 0 else 0.5
        lam = power_tuned_lambda(
            w * (a - theta * b),
            w * (a_hat - theta * b_hat),
            w_unlabelled * (a_hat_u - theta * b_hat_u),
            np.eye(1) / max(bottom, 1e-12),
            counts,
            counts_unlabelled,
        )
    top, bottom = solved(lam)
    if not bottom > 0:
        raise ValueError("no decisive label or prediction: the decisive share is not defined")
    theta = top / bottom
    gradient = ppi_mean(
        a - theta * b,
        a_hat - theta * b_hat,
        a_hat_u - theta * b_hat_u,
        lam=lam,
        w=w,
        w_unlabelled=w_unlabelled if big_n else None,
        level=level,
        counts=counts,
        counts_unlabelled=counts_unlabelled,
    )
    se = gradient.se / bottom
    half = z_value(level) * se
    return Estimate(theta, theta - half, theta + half, se, float(lam))


def labels_for_width(
    width: float, residual_var: float, imputed_var: float, unlabelled: int, level: float = LEVEL
) -> int | None:
    """How many labels (drawn uniformly) make the prediction-powered interval `width` wide, from the variances seen:
    residual_var = Var(Y − λŶ) per label, imputed_var = Var(λŶ) per item over `unlabelled` items. None when no number
    of labels can: the judge's own term alone is wider."""
    half = width / (2.0 * z_value(level))
    room = half**2 - (imputed_var / unlabelled if unlabelled else 0.0)
    if room <= 0.0:
        return None
    return max(2, math.ceil(residual_var / room))


@dataclass(frozen=True)
class Logistic:
    """A prediction-powered logistic fit: its coefficients, their covariance (for intervals of any contrast), λ."""

    coefficients: FloatArray
    covariance: FloatArray  # of the coefficients: Σ / n
    lam: float
    converged: bool

    def interval(self, contrast: FloatArray, level: float = LEVEL) -> tuple[float, float, float]:
        """The estimate of contrast·θ and its interval."""
        value = float(contrast @ self.coefficients)
        half = z_value(level) * math.sqrt(max(0.0, float(contrast @ self.covariance @ contrast)))
        return value, value - half, value + half


def _sigmoid(x: FloatArray) -> FloatArray:
    out: FloatArray = np.exp(-np.logaddexp(0.0, -x))
    return out


def ppi_logistic(
    x: FloatArray,
    y: FloatArray,
    y_hat: FloatArray,
    x_unlabelled: FloatArray,
    y_hat_unlabelled: FloatArray,
    *,
    lam: float | None = None,
    w: FloatArray | None = None,
    w_unlabelled: FloatArray | None = None,
    counts: Counts | None = None,
    counts_unlabelled: Counts | None = None,
) -> Logistic:
    """Prediction-powered logistic regression without intercept of its own (ppi-python's `ppi_logistic_ci`):
    the rectified loss λ·L_u(Ŷ) − λ·L_l(Ŷ) + L_l(Y) minimised by Newton's method (convex for λ in [0, 1]), λ tuned on
    the gradients at the plain-PPI fit, the covariance H⁻¹ (n/N·Var_u(λĝ) + Var_l(g − λĝ)) H⁻¹ / n. Outcomes may be
    fractions (a tie is half a win); `counts`: the items each row stands for."""
    data = _Fit(
        x, y, y_hat, x_unlabelled, y_hat_unlabelled,
        frequencies(counts, y.size), frequencies(counts_unlabelled, y_hat_unlabelled.size), counts, counts_unlabelled,
    )  # fmt: skip
    data = dataclasses.replace(data, w=normalised(w, data.c), w_u=normalised(w_unlabelled, data.c_u))
    try:
        return _ppi_logistic(data, lam)
    except np.linalg.LinAlgError:  # a coefficient the data cannot move (a model with no game): no fit
        d = x.shape[1]
        return Logistic(np.full(d, np.nan), np.full((d, d), np.nan), 0.0 if lam is None else lam, False)


@dataclass(frozen=True)
class _Fit:
    """A logistic fit's data: the labelled rows (x, y, ŷ), the unlabelled (x_u, ŷ_u), the items each row stands for
    (as floats, and as given), and the normalised weights."""

    x: FloatArray
    y: FloatArray
    y_hat: FloatArray
    x_u: FloatArray
    y_hat_u: FloatArray
    c: FloatArray
    c_u: FloatArray
    counts: Counts | None
    counts_u: Counts | None
    w: FloatArray = field(default_factory=lambda: np.ones(0))
    w_u: FloatArray = field(default_factory=lambda: np.ones(0))

    @property
    def n(self) -> float:
        return float(self.c.sum())

    @property
    def big_n(self) -> float:
        return float(self.c_u.sum())


def _ppi_logistic(data: _Fit, lam: float | None) -> Logistic:
    if lam is None:  # as ppi_logistic_ci tunes it: at the plain-PPI fit, then again at the fit that λ gives
        lam = 0.0
        if data.big_n:
            for start in (1.0, None):
                theta, _ = _rectified_fit(data, 1.0 if start is not None else lam)
                grads, grads_hat, grads_hat_u, inv_hessian = _logistic_stats(theta, data, use_unlabelled=True)
                lam = power_tuned_lambda(grads, grads_hat, grads_hat_u, inv_hessian, data.counts, data.counts_u)
        return _ppi_logistic(data, lam)
    theta, converged = _rectified_fit(data, lam)
    grads, grads_hat, grads_hat_u, inv_hessian = _logistic_stats(theta, data, use_unlabelled=lam != 0)
    d, n, big_n = data.x.shape[1], data.n, data.big_n
    var_unlabelled = _cov(lam * grads_hat_u, data.counts_u).reshape(d, d) if big_n > 1 else np.zeros((d, d))
    var = _cov(grads - lam * grads_hat, data.counts).reshape(d, d)
    sigma = inv_hessian @ ((n / big_n if big_n else 0.0) * var_unlabelled + var) @ inv_hessian
    return Logistic(theta, sigma / n, float(lam), converged)


def _weighted_gram(x: FloatArray, weights: FloatArray) -> FloatArray:
    """Σ_i weights_i · x_i x_iᵀ, without an array of every row's outer product (a million games of six models)."""
    gram: FloatArray = (x * weights[:, None]).T @ x
    return gram


def _rectified_fit(data: _Fit, lam: float) -> tuple[FloatArray, bool]:
    """Newton's method on the rectified logistic loss, from 0; converged when a step moves no coefficient by 1e-12."""
    x, x_u, n, big_n = data.x, data.x_u, data.n, data.big_n
    weight, weight_u = data.c * data.w, data.c_u * data.w_u
    theta = np.zeros(x.shape[1])
    for _ in range(100):
        mu, mu_u = _sigmoid(x @ theta), _sigmoid(x_u @ theta)
        gradient = x.T @ (weight * ((mu - data.y) - lam * (mu - data.y_hat))) / n
        curvature = _weighted_gram(x, weight * mu * (1.0 - mu) * (1.0 - lam) / n)
        if big_n:
            gradient = gradient + lam * x_u.T @ (weight_u * (mu_u - data.y_hat_u)) / big_n
            curvature = curvature + _weighted_gram(x_u, weight_u * mu_u * (1.0 - mu_u) * lam / big_n)
        try:
            step = np.linalg.solve(curvature, gradient)
        except np.linalg.LinAlgError:
            return theta, False
        theta = theta - step
        if not np.all(np.isfinite(theta)):
            return theta, False
        if float(np.max(np.abs(step))) < 1e-12:
            return theta, True
    return theta, False


def _logistic_stats(
    theta: FloatArray, data: _Fit, *, use_unlabelled: bool
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """ppi-python's `_logistic_get_stats`: the gradients on the labelled (true and predicted outcomes) and the
    unlabelled rows, and the inverse Hessian over all of their items (over the labelled only without the unlabelled)."""
    x, x_u, w, w_u, n, big_n = data.x, data.x_u, data.w, data.w_u, data.n, data.big_n
    mu, mu_u = _sigmoid(x @ theta), _sigmoid(x_u @ theta)
    if use_unlabelled:
        hessian = _weighted_gram(x_u, data.c_u * w_u * mu_u * (1.0 - mu_u) / (big_n + n))
        hessian = hessian + _weighted_gram(x, data.c * w * mu * (1.0 - mu) / (big_n + n))
    else:
        hessian = _weighted_gram(x, data.c * w * mu * (1.0 - mu) / n)
    grads_hat_u = (w_u * (mu_u - data.y_hat_u))[:, None] * x_u if use_unlabelled else np.zeros_like(x_u)
    grads = (w * (mu - data.y))[:, None] * x
    grads_hat = (w * (mu - data.y_hat))[:, None] * x
    inv_hessian: FloatArray = np.linalg.inv(hessian).astype(np.float64)
    return grads, grads_hat, grads_hat_u, inv_hessian
