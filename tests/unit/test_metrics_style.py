"""Style bias figures of the summary and the style-controlled ratings, on item sets with a known answer."""

from __future__ import annotations

import math
from typing import Any

import pytest

from judgebias.core.record import ItemResult
from judgebias.core.style import Style
from judgebias.figures.metrics import NO_STYLE_NOTE, bradley_terry_ratings, summarize
from tests.unit.helpers import row

PLAIN = Style()
LISTED = Style(list_items=4)
BOLD = Style(bold=2)


def groups(
    *cells: tuple[Style, Style, int, int], words: tuple[int, int] = (100, 100), **fields: Any
) -> list[ItemResult]:
    """Rows from (style_a, style_b, a_wins, b_wins) cells; every verdict is decisive and consistent."""
    out: list[ItemResult] = []
    for style_a, style_b, a_wins, b_wins in cells:
        for calls in [("A", "B")] * a_wins + [("B", "A")] * b_wins:
            out.append(
                row(
                    *calls,
                    id=str(len(out)),
                    style_a=style_a,
                    style_b=style_b,
                    words_a=words[0],
                    words_b=words[1],
                    **fields,
                )
            )
    return out


# A judge that ignores content (a and b are equally good) but picks the formatted answer 8 times in 10; a is
# the formatted one in 30 items, b in 10, neither in 10.
STYLE_DRIVEN = groups((LISTED, PLAIN, 24, 6), (PLAIN, LISTED, 2, 8), (PLAIN, PLAIN, 5, 5))


def test_styled_wins_is_the_share_won_by_the_more_formatted_answer() -> None:
    """Among the 40 decisive items whose formatting differs, the formatted answer won 24 + 8 = 32: 0.8."""
    s = summarize(STYLE_DRIVEN)
    assert (0.8, 40) == (s["styled_wins"], s["styled_wins_n"])


def test_styled_wins_leaves_out_ties_equal_formatting_and_unrecorded_styles() -> None:
    """Left out: a tie, answers with as many features each, and an item without recorded styles."""
    data = [
        row("A", "B", "0", style_a=LISTED, style_b=BOLD),  # 4 features against 2: a is more formatted, wins
        row("tie", "tie", "1", style_a=LISTED, style_b=PLAIN),  # not decisive
        row("A", "B", "2", style_a=BOLD, style_b=BOLD),  # formatted alike
        row("B", "A", "3"),  # no styles recorded
        row("B", "A", "4", style_a=PLAIN, style_b=BOLD),  # b more formatted and wins
    ]
    s = summarize(data)
    assert (1.0, 2) == (s["styled_wins"], s["styled_wins_n"])
    assert "style_note" not in s


def test_no_recorded_styles_gives_none_and_a_note() -> None:
    """Rows without style_a/style_b (older verdicts) give styled_wins None, n 0 and the note saying why."""
    s = summarize([row("A", "B", str(i)) for i in range(30)])
    assert (None, 0, NO_STYLE_NOTE) == (s["styled_wins"], s["styled_wins_n"], s["style_note"])
    assert None is s["style_controlled_win_rate"]


def test_style_controlled_win_rate_removes_the_style_advantage() -> None:
    """Raw decisive win rate of a 31/50 = 0.62 (a is formatted more often); at equal formatting a wins 0.5."""
    s = summarize(STYLE_DRIVEN, resamples=400)
    assert 0.62 == s["decisive_win_rate"]
    assert pytest.approx(0.5, abs=1e-3) == s["style_controlled_win_rate"]
    assert 50 == s["style_controlled_n"]
    low, high = s["ci"]["style_controlled_win_rate"]
    assert low < 0.5 < high


def test_style_coefficients_name_the_rewarded_feature() -> None:
    """Only list items differ: the one coefficient is logit(0.8) = ln 4 per unit of z = log(5)/sd(x)."""
    s = summarize(STYLE_DRIVEN)
    x = [math.log(5)] * 30 + [-math.log(5)] * 10 + [0.0] * 10
    sd = math.sqrt(sum(v * v for v in x) / 50 - (sum(x) / 50) ** 2)
    assert ["list_items"] == list(s["style_coefficients"])
    assert pytest.approx(math.log(4) * sd / math.log(5), abs=1e-3) == s["style_coefficients"]["list_items"]


def test_style_controlled_equals_raw_for_a_judge_that_ignores_formatting() -> None:
    """a wins 70% whether it is the formatted answer or not: coefficient 0, SC = the raw 0.7."""
    s = summarize(groups((LISTED, PLAIN, 14, 6), (PLAIN, LISTED, 14, 6)))
    assert 0.7 == s["decisive_win_rate"]
    assert pytest.approx(0.7, abs=1e-4) == s["style_controlled_win_rate"]
    assert pytest.approx(0.0, abs=1e-6) == s["style_coefficients"]["list_items"]
    assert 0.5 == s["styled_wins"]


def test_length_and_formatting_are_told_apart() -> None:
    """Formatting decides, length does not (both vary independently): length coefficient 0, SC 0.5."""
    data = [
        *groups((LISTED, PLAIN, 8, 2), (PLAIN, LISTED, 2, 8), words=(300, 100)),
        *groups((LISTED, PLAIN, 8, 2), (PLAIN, LISTED, 2, 8), words=(100, 300)),
    ]
    s = summarize(data)
    assert ["length", "list_items"] == list(s["style_coefficients"])
    assert pytest.approx(0.0, abs=1e-4) == s["style_coefficients"]["length"]
    assert s["style_coefficients"]["list_items"] > 1.0
    assert pytest.approx(0.5, abs=1e-4) == s["style_controlled_win_rate"]


def test_style_controlled_needs_items_and_formatting_differences() -> None:
    """Under 20 decisive verdicts, or formatting alike everywhere, give None and a note instead of a fit."""
    few = summarize(groups((LISTED, PLAIN, 8, 2)))
    assert None is few["style_controlled_win_rate"]
    assert "at least 20" in few["style_controlled_note"]
    alike = summarize(groups((LISTED, LISTED, 14, 6), (PLAIN, PLAIN, 14, 6)))
    assert (None, {}) == (alike["style_controlled_win_rate"], alike["style_coefficients"])
    assert "do not differ" in alike["style_controlled_note"]


def _style_tournament() -> list[ItemResult]:
    """Three equally good models; the judge picks the formatted answer 8 times in 10; A formats most, C least."""
    out: list[ItemResult] = []
    for better, worse in (("A", "B"), ("A", "C"), ("B", "C")):
        models = {"model_a": f"{better}-model", "model_b": f"{worse}-model"}
        for item in groups((LISTED, PLAIN, 16, 4), (PLAIN, LISTED, 2, 8), (PLAIN, PLAIN, 5, 5), **models):
            out.append(row(item.call1, item.call2, str(len(out)), **{**_fields(item), **models}))
    return out


def _fields(item: ItemResult) -> dict[str, Any]:
    """The style and length fields of a row."""
    return {"style_a": item.style_a, "style_b": item.style_b, "words_a": item.words_a, "words_b": item.words_b}


def test_style_controlled_ratings_level_models_whose_wins_come_from_formatting() -> None:
    """Plain ratings rank A > B > C by formatting alone; style-controlled ratings put all three at 1000."""
    ratings = bradley_terry_ratings(_style_tournament(), resamples=200, seed=1)
    assert ["A-model", "B-model", "C-model"] == [r["model"] for r in ratings]
    assert ratings[0]["rating"] - ratings[2]["rating"] > 50
    assert pytest.approx([1000.0] * 3, abs=0.5) == [r["style_rating"] for r in ratings]
    assert all(r["style_low"] < 1000.0 < r["style_high"] for r in ratings)
    assert [1, 2, 3] == sorted(r["style_rank"] for r in ratings)


def test_style_ratings_are_empty_without_formatting_differences() -> None:
    """Models whose answers are formatted alike get plain ratings and no style-controlled columns."""
    data = [r for r in _style_tournament() if r.style_a == r.style_b]
    ratings = bradley_terry_ratings(data, resamples=50)
    assert 3 == len(ratings)
    assert {None} == {r[key] for r in ratings for key in ("style_rating", "style_low", "style_high", "style_rank")}
