"""The intervals cover the truth for the shipped scripted judge with a known position bias (judge=noisy)."""

from __future__ import annotations

import random

from judgebias.backends.scripted import ScriptedJudge
from judgebias.config.schema import JudgeConfig
from judgebias.core.item import Item
from judgebias.core.record import ItemResult
from judgebias.figures.metrics import summarize
from tests.unit.helpers import RUBRIC, both_orders


def judged(run: int, n: int, p: float, q: float) -> list[ItemResult]:
    """n items (a better with probability p) judged in both orders by the scripted noisy judge (first_bias q)."""
    judge = ScriptedJudge(JudgeConfig(backend="scripted", name="noisy", strategy="noisy", first_bias=q), RUBRIC)
    rng = random.Random(run)
    rows = []
    for index in range(n):
        item = Item(f"run{run}-{index}", "Q", "a", "b", human="1" if rng.random() < p else "2")
        rows.append(both_orders(judge, item))
    return rows


def test_intervals_cover_the_noisy_judges_known_bias() -> None:
    """Over 300 seeded runs of judge=noisy the 95% intervals of biased_first and win_rate cover the truth in at
    least 91% of them (95% less three standard deviations of a count of 300 runs: a percentile bootstrap of 200
    items covers a little under its level, and intervals half as wide would cover about 68%).

    Truth: a better (prob p): call1 = A always, call2 = A with prob q (the bias), else B; b better: call1 = A
    with prob q, else B, call2 = A always. So biased_first = q and win_rate = p(1 - q/2) + (1 - p)q/2.
    """
    p, q, n, runs = 0.6, 0.25, 200, 300
    truth = {"biased_first": q, "win_rate": p * (1 - q / 2) + (1 - p) * q / 2}
    covered = dict.fromkeys(truth, 0)
    for run in range(runs):
        ci = summarize(judged(run, n, p, q), resamples=400, seed=run)["ci"]
        for name, value in truth.items():
            low, high = ci[name]
            covered[name] += low <= value <= high
    assert all(count >= 0.91 * runs for count in covered.values()), covered
