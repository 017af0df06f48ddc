"""The paired comparison's statistics against references of the test's own: the exact bootstrap distribution
enumerated over every resample of a tiny run, McNemar's test worked by hand, the moved items read off the lines."""

from __future__ import annotations

import itertools
import json
from fractions import Fraction

import numpy as np
import pytest

from judgebias.core.record import ItemResult
from judgebias.core.verdict_lines import LineProblem, result_of_line
from judgebias.figures.formatting import p_text
from judgebias.figures.metrics import measure
from judgebias.figures.paired import MOVE_KINDS, mcnemar_p, moved_kinds, paired_differences, worse_beyond
from judgebias.figures.rows import Rows
from tests.unit.helpers import row

BASE_CALLS = [("A", "B"), ("A", "B"), ("A", "A"), ("B", "A"), ("A", "B"), ("tie", "tie")]
CAND_CALLS = [("A", "B"), ("A", "A"), ("A", "A"), ("B", "B"), ("A", "B"), ("A", "tie")]


def rows(calls: list[tuple[str, str]]) -> list[ItemResult]:
    """Items p0.. judged with these (call1, call2), the verdict and consistency as a run decides them."""
    return [row(first, second, id=f"p{i}", human="1") for i, (first, second) in enumerate(calls)]


def consistent_by_hand(calls: list[tuple[str, str]]) -> list[int]:
    """1 where the two orders agree after translation, written out without the package's rules."""
    agree = {("A", "B"), ("B", "A"), ("tie", "tie")}
    return [1 if pair in agree else 0 for pair in calls]


def test_the_paired_interval_matches_the_exact_bootstrap_enumerated_over_every_resample() -> None:
    """Six items: all 6^6 equally likely resamples enumerated by hand give the exact distribution of the paired
    difference in consistency; the bootstrap's percentile interval (20,000 draws) lands on the same values."""
    base, cand = consistent_by_hand(BASE_CALLS), consistent_by_hand(CAND_CALLS)
    n = len(base)
    exact = sorted(
        (sum(cand[i] for i in draw) - sum(base[i] for i in draw)) / n for draw in itertools.product(range(n), repeat=n)
    )
    reference = np.percentile(np.array(exact), [2.5, 97.5])

    differences = paired_differences(
        measure(rows(BASE_CALLS), resamples=0), measure(rows(CAND_CALLS), resamples=0), resamples=20_000, seed=3
    )

    consistency = differences["position_consistency"]
    assert consistency.diff == pytest.approx((sum(cand) - sum(base)) / n)
    assert consistency.ci == pytest.approx(list(reference), abs=1e-9)


def test_the_paired_interval_is_the_draw_of_the_same_items_for_both_runs() -> None:
    """Two identical runs: every replicate's difference is 0, so the interval is [0, 0] however few items."""
    same = measure(rows(BASE_CALLS), resamples=0)
    differences = paired_differences(same, same, resamples=500, seed=0)
    assert [0.0, 0.0] == differences["position_consistency"].ci
    assert [0.0, 0.0] == differences["win_rate"].ci


def test_mcnemar_exact_as_worked_by_hand() -> None:
    """1 item better only in base, 9 only in the candidate: p = 2 x P(X <= 1), X ~ Binomial(10, 1/2)
    = 2 x (1 + 10) / 1024 = 22/1024; equal counts give 1; no discordant item gives 1."""
    assert mcnemar_p(1, 9) == float(Fraction(22, 1024))
    assert mcnemar_p(9, 1) == float(Fraction(22, 1024))
    assert mcnemar_p(5, 5) == 1.0
    assert mcnemar_p(0, 0) == 1.0
    assert mcnemar_p(0, 6) == float(Fraction(2, 64))


def test_the_consistency_test_counts_the_discordant_items() -> None:
    """Read off the calls by hand: items 1, 3 and 5 became inconsistent and none became consistent, so McNemar
    counts (3, 0): p = 2 / 8."""
    base, cand = consistent_by_hand(BASE_CALLS), consistent_by_hand(CAND_CALLS)
    base_only = sum(1 for b, c in zip(base, cand, strict=True) if b and not c)
    cand_only = sum(1 for b, c in zip(base, cand, strict=True) if c and not b)

    differences = paired_differences(
        measure(rows(BASE_CALLS), resamples=0), measure(rows(CAND_CALLS), resamples=0), resamples=0, seed=0
    )

    consistency = differences["position_consistency"]
    assert (3, 0) == (base_only, cand_only) == consistency.discordant
    assert consistency.p == 0.25 and consistency.test == "McNemar exact"
    assert consistency.ci is None  # no resamples: no interval, never a made-up one


@pytest.mark.parametrize(
    ("interval", "worse", "tolerance", "fails"),
    [
        ([-0.10, -0.03], "drop", 0.02, True),  # a drop, wholly beyond 2 points
        ([-0.10, -0.01], "drop", 0.02, False),  # could be within the tolerance
        ([0.03, 0.10], "rise", 0.02, True),  # a rise of a bias
        ([-0.05, 0.05], "rise", 0.0, False),
        ([0.03, 0.10], "drop", 0.0, False),  # a rise of a figure that must not drop
    ],
)
def test_the_gate_fails_only_an_interval_wholly_beyond_the_tolerance(
    interval: list[float], worse: str, tolerance: float, fails: bool
) -> None:
    from judgebias.figures.paired import Difference

    difference = Difference(0.5, 0.5, 0.0, interval, None, None, 10)
    assert fails == worse_beyond(difference, worse, tolerance)  # type: ignore[arg-type]
    assert not worse_beyond(Difference(0.5, 0.5, 0.0, None, None, None, 10), worse, tolerance)  # type: ignore[arg-type]


def test_moved_items_are_named_by_kind() -> None:
    """Rows as verdicts.jsonl has them: each change is named, unchanged items are left out."""
    base = [
        ItemResult(id="x", verdict="1", call1="A", call2="B", consistent=True, human="1"),
        ItemResult(id="y", verdict="tie", call1="A", call2="A", consistent=False, human="2"),
        ItemResult(id="z", verdict="2", call1="B", call2="A", consistent=True, human="2"),
    ]
    cand = [
        ItemResult(id="x", verdict="2", call1="B", call2="A", consistent=True, human="1"),
        ItemResult(id="y", verdict="2", call1="B", call2="A", consistent=True, human="2"),
        ItemResult(id="z", verdict="2", call1="B", call2="A", consistent=True, human="2"),
    ]

    kinds = moved_kinds(Rows(base), Rows(cand))
    moved = {row.id: [kind for j, kind in enumerate(MOVE_KINDS) if kinds[i, j]] for i, row in enumerate(base)}

    assert {
        "x": ["verdict_flipped", "now_disagrees"],
        "y": ["became_consistent", "verdict_changed", "now_agrees"],
        "z": [],
    } == moved


def test_a_p_value_too_small_for_a_float_prints_as_a_bound() -> None:
    assert "p < 1e-300" == p_text(0.0)
    assert "p = 0.0215" == p_text(22 / 1024)
    assert "" == p_text(None)


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ({"verdict": "1", "call1": "A"}, "id"),
        ({"id": "p0", "verdict": "A", "call1": "A"}, "verdict"),
        ({"id": "p0", "verdict": "1", "call1": "first"}, "call1"),
        ({"id": "p0", "verdict": "1", "call1": "A", "chars_a": -3}, "chars_a"),
        ({"id": "p0", "verdict": "1", "call1": "A", "style_a": {"bold": 1}}, "style_a"),
        ({"id": "p0", "verdict": "1", "call1": "A", "consistent": "yes"}, "consistent"),
    ],
)
def test_a_verdict_line_that_judgebias_did_not_write_names_its_field(line: dict, field: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(LineProblem) as problem:
        result_of_line(json.dumps(line))
    assert field == problem.value.field


@pytest.mark.statistical
def test_on_correlated_runs_the_paired_interval_is_narrower_than_the_unpaired_ones() -> None:
    """A simulation: 40 runs of 200 items where the candidate judges 90% of items as the base did. The paired
    interval of the consistency difference is narrower than the one two independent bootstraps give (the
    interval of cand - base from separately drawn items) in every run, and still covers the true difference
    (0 here: both judges are consistent on 80% of items) about 95% of the time."""
    rng = np.random.default_rng(11)
    n, narrower, covered, trials = 200, 0, 0, 40
    for trial in range(trials):
        base_consistent = rng.random(n) < 0.8
        redraw = rng.random(n) < 0.1
        cand_consistent = np.where(redraw, rng.random(n) < 0.8, base_consistent)
        to_calls = lambda flags: [("A", "B") if flag else ("A", "A") for flag in flags]  # noqa: E731
        base = measure(rows(to_calls(base_consistent)), resamples=0)
        cand = measure(rows(to_calls(cand_consistent)), resamples=0)

        paired = paired_differences(base, cand, resamples=1000, seed=trial)["position_consistency"].ci
        assert paired is not None
        draws_b = rng.integers(0, n, size=(1000, n))
        draws_c = rng.integers(0, n, size=(1000, n))
        unpaired = np.percentile(
            cand_consistent[draws_c].mean(axis=1) - base_consistent[draws_b].mean(axis=1), [2.5, 97.5]
        )
        narrower += (paired[1] - paired[0]) < (unpaired[1] - unpaired[0])
        covered += paired[0] <= 0.0 <= paired[1]
    assert narrower == trials
    assert covered >= trials * 0.85
