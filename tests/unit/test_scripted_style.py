"""The style figures recover the truth for scripted judges with a known style preference (judge=formatted) or none."""

from __future__ import annotations

import random
from typing import Any

import pytest

from judgebias.backends.scripted import ScriptedJudge
from judgebias.config.schema import JudgeConfig
from judgebias.core.item import Item
from judgebias.core.record import ItemResult
from judgebias.figures.metrics import summarize
from tests.unit.helpers import RUBRIC, both_orders

FORMATTED = "## Answer\n\n- point one\n- point two\n\n**Done.**"
PLAIN = "Answer: point one, and also point two. Done now."  # as many words as FORMATTED
FILLER = " More words that neither judge reads."


def judged(judge: ScriptedJudge, run: int, n: int, p: float) -> list[ItemResult]:
    """n items judged in both orders: a better w.p. p; a alone formatted w.p. 0.55, b alone 0.15, neither 0.3.

    Lengths vary independently of formatting and of the label (0-2 filler sentences on each side).
    """
    rng = random.Random(run)
    rows = []
    for index in range(n):
        draw = rng.random()
        a, b = (FORMATTED, PLAIN) if draw < 0.55 else (PLAIN, FORMATTED) if draw < 0.7 else (PLAIN, PLAIN)
        a, b = a + FILLER * rng.randint(0, 2), b + FILLER * rng.randint(0, 2)
        item = Item(f"run{run}-{index}", "Q", a, b, human="1" if rng.random() < p else "2")
        rows.append(both_orders(judge, item))
    return rows


def summaries(judge: ScriptedJudge, p: float, runs: int = 50) -> list[dict[str, Any]]:
    """The summaries of `runs` seeded runs of 300 items each (400 bootstrap resamples)."""
    return [summarize(judged(judge, run, 300, p), resamples=400, seed=run) for run in range(runs)]


def covering(runs: list[dict[str, Any]], name: str, value: float) -> int:
    """In how many runs the 95% interval of figure `name` contains `value`."""
    return sum(s["ci"][name][0] <= value <= s["ci"][name][1] for s in runs)


@pytest.mark.statistical
def test_style_control_removes_the_formatted_judges_advantage() -> None:
    """judge=formatted (style_bias s = 0.6) on equally good answers, 50 runs: styled_wins covers 0.5 + s/2 = 0.8
    and the style-controlled win rate covers the true 0.5 in >= 45, while the raw decisive win rate of a,
    0.5 + s/2 * (0.55 - 0.15) = 0.62 (a is formatted more often), is covered >= 45 times and excludes 0.5 >= 45.
    """
    s = 0.6
    judge = ScriptedJudge(JudgeConfig(backend="scripted", name="formatted", strategy="formatted", style_bias=s), RUBRIC)
    runs = summaries(judge, 0.5)
    covered = {
        "styled_wins": covering(runs, "styled_wins", 0.5 + s / 2),
        "style_controlled_win_rate": covering(runs, "style_controlled_win_rate", 0.5),
        "decisive_win_rate": covering(runs, "decisive_win_rate", 0.5 + s / 2 * 0.4),
    }
    assert all(count >= 45 for count in covered.values()), covered
    assert 50 - covering(runs, "decisive_win_rate", 0.5) >= 45


@pytest.mark.statistical
def test_a_judge_that_ignores_formatting_keeps_its_win_rate_under_style_control() -> None:
    """judge=noisy (first_bias 0) follows the label, a better w.p. 0.7: the style-controlled win rate covers 0.7.

    styled_wins is not 0.5 here, because a is both better and more often formatted: it covers
    (0.55 * 0.7 + 0.15 * 0.3) / 0.7 = 0.614, the confound the style-controlled figure takes apart.
    """
    judge = ScriptedJudge(JudgeConfig(backend="scripted", name="noisy", strategy="noisy", first_bias=0.0), RUBRIC)
    runs = summaries(judge, 0.7)
    covered = {
        "style_controlled_win_rate": covering(runs, "style_controlled_win_rate", 0.7),
        "styled_wins": covering(runs, "styled_wins", (0.55 * 0.7 + 0.15 * 0.3) / 0.7),
    }
    assert all(count >= 45 for count in covered.values()), covered


def test_formatted_judge_sees_only_what_is_shown() -> None:
    """With both answers stripped to plain text the formatted judge has no formatting to prefer: it follows the label."""
    judge = ScriptedJudge(JudgeConfig(backend="scripted", name="f", strategy="formatted", style_bias=1.0), RUBRIC)
    formatted = Item("x", "Q", PLAIN, FORMATTED, human="1")
    plain = Item("x", "Q", PLAIN, PLAIN, human="1")
    verdicts = [both_orders(judge, item) for item in (formatted, plain)]
    assert ["2", "1"] == [row.verdict for row in verdicts]
