"""No false precision: zero-width intervals say why, unidentifiable controlled rates give a reason, ratings are rounded."""

from __future__ import annotations

import csv
import random
from pathlib import Path

from judgebias.core.record import ItemResult
from judgebias.core.style import Style
from judgebias.engine.outputs import write_ratings
from judgebias.figures.formatting import ci_text, round_to, supported_ratings, supported_step
from judgebias.figures.metrics import summarize
from judgebias.report.console import format_summary
from judgebias.report.run_report import ratings_rows
from tests.unit.helpers import row


def lengths(pairs: list[tuple[str, str, int, int]]) -> list[ItemResult]:
    """Rows from (call1, call2, words_a, words_b)."""
    return [row(c1, c2, id=str(i), words_a=a, words_b=b) for i, (c1, c2, a, b) in enumerate(pairs)]


def test_a_judge_that_always_ties_gets_a_labelled_zero_width_interval() -> None:
    """always_a's replies (A in both orders) make every verdict a tie: the win rate's [50.0, 50.0] says so in summary.json and the printed line."""
    rows = [row("A", "A", id=str(i)) for i in range(30)]
    s = summarize(rows, resamples=200, seed=1)
    assert [0.5, 0.5] == s["ci"]["win_rate"]
    assert "every verdict is a tie" == s["ci_degenerate"]["win_rate"]
    assert "position_consistency" in s["ci_degenerate"]  # 0% consistent in every resample: also labelled
    printed = ci_text(s["ci"]["win_rate"], why=s["ci_degenerate"]["win_rate"])
    assert " [50.0, 50.0] (zero width: every verdict is a tie)" == printed


def test_an_interval_with_spread_has_no_label() -> None:
    """A judge whose verdicts vary has no ci_degenerate entry for its win rate."""
    rows = [row(*random.Random(i).choice([("A", "B"), ("B", "A"), ("A", "A")]), id=str(i)) for i in range(40)]
    s = summarize(rows, resamples=200, seed=1)
    assert "win_rate" not in s["ci_degenerate"]


def test_a_length_rate_with_separated_verdicts_is_not_identifiable() -> None:
    """The longer answer always wins: the length-controlled rate is no number but 'not identifiable' with the separation named."""
    rng = random.Random(3)
    pairs = []
    for _ in range(40):
        a, b = rng.randint(20, 400), rng.randint(20, 400)
        pairs.append(("A", "B", a, b) if a > b else ("B", "A", a, b))
    s = summarize(lengths(pairs), resamples=100, seed=0)
    assert s["length_controlled_win_rate"] is None
    assert s["length_controlled_identifiable"] is False
    assert "separated by length" in s["length_controlled_note"]
    assert "length_controlled_win_rate" not in s["ci"] or s["ci"]["length_controlled_win_rate"] is None


def test_a_length_rate_with_a_one_sided_covariate_is_not_identifiable() -> None:
    """Answer a is always about twice as long as b: equal length is outside the data, so the rate is not identifiable (collinear with a's side)."""
    rng = random.Random(5)
    pairs = []
    for _ in range(60):
        b = rng.randint(100, 120)
        pairs.append((*rng.choice([("A", "B"), ("B", "A")]), 2 * b, b))
    s = summarize(lengths(pairs), resamples=100, seed=0)
    assert s["length_controlled_identifiable"] is False
    assert "collinear with the intercept" in s["length_controlled_note"]


def test_a_length_rate_with_few_wins_on_one_side_is_not_identifiable() -> None:
    """Three wins for b among 30 decisive verdicts are too few each way: not identifiable, and the count is named."""
    rng = random.Random(7)
    pairs = [("A", "B", rng.randint(20, 400), rng.randint(20, 400)) for _ in range(27)]
    pairs += [("B", "A", rng.randint(20, 400), rng.randint(20, 400)) for _ in range(3)]
    s = summarize(lengths(pairs), resamples=100, seed=0)
    assert s["length_controlled_identifiable"] is False
    assert s["length_controlled_note"].startswith("only 3 of the 30 decisive verdicts go to b")


def test_an_identifiable_length_rate_is_still_a_number() -> None:
    """Verdicts that depend on length only partly give a length-controlled rate, marked identifiable."""
    rng = random.Random(11)
    pairs = []
    for _ in range(80):
        a, b = rng.randint(20, 400), rng.randint(20, 400)
        a_wins = rng.random() < (0.7 if a > b else 0.4)
        pairs.append(("A", "B", a, b) if a_wins else ("B", "A", a, b))
    s = summarize(lengths(pairs), resamples=100, seed=0)
    assert s["length_controlled_identifiable"] is True
    assert 0.2 < s["length_controlled_win_rate"] < 0.8


def test_a_style_rate_that_formatting_decides_is_not_identifiable_and_printed_so() -> None:
    """A judge that always picks the more formatted answer: the style-controlled rate is not identifiable, and the printed summary says why."""
    rng = random.Random(13)
    rows = []
    for i in range(60):
        a, b = Style(list_items=rng.randint(0, 6)), Style(list_items=rng.randint(0, 6))
        if a.list_items == b.list_items:
            continue
        calls = ("A", "B") if a.list_items > b.list_items else ("B", "A")
        rows.append(row(*calls, id=str(i), style_a=a, style_b=b, words_a=100 + i % 7, words_b=100 + i % 5))
    s = summarize(rows, resamples=100, seed=0)
    assert s["style_controlled_win_rate"] is None
    assert s["style_controlled_identifiable"] is False
    summary = {"judge": "j", "rubric": "r", "data": "d", "status": "ok", "calls_total": 0, "calls_live": 0}
    summary |= {"calls_cached": 0, "n_invalid": 0, "failed_calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
    summary |= {"cost_usd": 0.0, "saved_usd": 0.0}
    printed = format_summary(s | summary)  # type: ignore[arg-type]
    assert "style-controlled win_rate not identifiable (why: below)" in printed
    assert "style-controlled not identifiable: the verdicts are (almost) separated" in printed


def test_ratings_are_rounded_to_what_their_interval_supports(tmp_path: Path) -> None:
    """A rating with an interval 190 points wide is written and shown in tens; a narrow one keeps a decimal."""
    assert 10.0 == supported_step(928.1, 1118.3)
    assert 0.1 == supported_step(999.0, 999.5)
    assert 1020.0 == round_to(1023.456, 10.0)
    wide = {"model": "m", "rating": 1023.456, "low": 928.1, "high": 1118.3, "rank": 1, "n": 9}
    narrow = {"model": "n", "rating": 999.234, "low": 999.0, "high": 999.5, "rank": 2, "n": 9}
    assert (1020.0, 930.0, 1120.0, 10.0) == tuple(
        supported_ratings(wide)[k] for k in ("rating", "low", "high", "rounded_to")
    )
    write_ratings(tmp_path / "ratings.csv", [wide, narrow])
    written = list(csv.DictReader((tmp_path / "ratings.csv").open(encoding="utf-8")))
    assert ("1020.0", "930.0", "1120.0", "10.0") == tuple(
        written[0][k] for k in ("rating", "low", "high", "rounded_to")
    )
    assert "999.2" == written[1]["rating"]
    shown = ratings_rows([wide, narrow])
    assert ["1020", "930 – 1120"] == shown[0][2:4]
    assert ["999.2", "999.0 – 999.5"] == shown[1][2:4]
