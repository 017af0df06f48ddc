"""Whether a controlled win rate (length, style) is identified by the data, and if not, why.

Pure numpy. A logistic fit of the decisive verdicts reads the win rate at "a and b alike" from its intercept.
The data cannot pin that intercept down when one side has almost no verdicts, when the verdicts are separated
(the fit has no finite maximum: the ridge alone decides the number), or when the covariates are almost collinear
with the intercept (a differs from b almost always in the same direction, so "alike" is an extrapolation).
Covariates collinear with each other (formatting features that always come together) leave the intercept
identified and are not a reason. Such a rate is reported as not identifiable, with
the reason, instead of as a number with an interval that only looks precise.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from judgebias.figures.stats import FloatArray

MIN_SIDE = 5  # decisive verdicts each side (a wins, b wins) needs before a controlled rate is fitted
COLLINEAR_R2 = 0.95  # the intercept explained this well by the covariates cannot be told apart from them
SEPARATED_LOGIT = 8.0  # a coefficient this large (log-odds per sd, or the intercept) marks a fit without maximum
INTERCEPT = "the intercept (answer a's own side)"


def before_fit(design: FloatArray, y: FloatArray, names: Sequence[str]) -> str | None:
    """Why the fit cannot identify its intercept from the data alone (None: it can); `design`'s column 0 is 1."""
    wins, losses = int(y.sum()), int(y.size - y.sum())
    if min(wins, losses) < MIN_SIDE:
        return (
            f"only {min(wins, losses)} of the {y.size} decisive verdicts go to {'a' if wins < losses else 'b'}; "
            f"a controlled rate needs at least {MIN_SIDE} each way"
        )
    covariates = design[:, 1:]
    if covariates.shape[1] == 0:
        return None
    r2 = _explained(design[:, 0], covariates, centred=False)
    if r2 >= COLLINEAR_R2:
        return (
            f"{', '.join(names)} {'is' if len(names) == 1 else 'are'} almost collinear with {INTERCEPT} "
            f"(R² {r2:.2f}): a and b differ almost always in the same direction, so the rate at 'a and b alike' is "
            "an extrapolation"
        )
    return None


def after_fit(beta: FloatArray, names: Sequence[str]) -> str | None:
    """Why a finished fit is not a finite maximum (separation), or None."""
    labels = [INTERCEPT, *names]
    worst = int(np.argmax(np.abs(beta)))
    if abs(float(beta[worst])) >= SEPARATED_LOGIT:
        return (
            f"the verdicts are (almost) separated by {labels[worst]}: the fit has no finite maximum "
            f"(coefficient {float(beta[worst]):+.0f} log-odds), so the number would come from the ridge, not the data"
        )
    return None


def _explained(column: FloatArray, others: FloatArray, *, centred: bool) -> float:
    """R² of a least-squares fit of `column` on `others` (uncentred for the intercept column, whose mean is 1)."""
    coef, *_ = np.linalg.lstsq(others, column, rcond=None)
    residual = column - others @ coef
    reference = column - column.mean() if centred else column
    total = float(reference @ reference)
    return 1.0 - float(residual @ residual) / total if total > 0 else 1.0
