"""Calibration against people: the human ceiling, the judge against the majority and each annotator, the warning."""

from __future__ import annotations

from typing import Any

import pytest

from judgebias.core.labels import human_label, majority
from judgebias.core.record import ItemResult
from judgebias.figures.metrics import summarize


def judged(verdict: str, votes: tuple[str, ...], voters: tuple[str, ...] = ("ann", "bob"), **fields: Any) -> ItemResult:
    """A row with a verdict and the people's votes (calls made up to match the verdict)."""
    call = {"1": ("A", "B"), "2": ("B", "A"), "tie": ("tie", "tie")}[verdict]
    return ItemResult(
        id=f"i{id(votes)}",
        verdict=verdict,
        call1=call[0],
        call2=call[1],
        consistent=True,
        human_votes=votes,
        human_voters=voters[: len(votes)],
        **fields,
    )


# ann and bob on 6 items: agree on 1, 2, tie, 1 (4 of 6); disagree 1/2 and 2/tie.
ROWS = [
    judged("1", ("1", "1")),
    judged("2", ("2", "2")),
    judged("1", ("tie", "tie")),
    judged("1", ("1", "1")),
    judged("1", ("1", "2")),
    judged("2", ("2", "tie")),
]


def test_the_ceiling_of_two_annotators_is_their_agreement_and_cohen_kappa() -> None:
    """Two named people: 4 of 6 agree; decisive on the 4 items both labelled a/b: 3 of 4; kappa from the 3x3 table."""
    c = summarize(ROWS, resamples=200)["calibration"]["ceiling"]
    # ann x bob rows 1/2/tie: [[2,1,0],[0,1,1],[0,0,1]]: po = 4/6, pe = (3*2 + 2*2 + 1*2) / 36 = 1/3, kappa = 0.5
    assert (4 / 6, 6, 3 / 4, 4, 2) == (
        c["agreement"],
        c["agreement_n"],
        c["decisive_agreement"],
        c["decisive_agreement_n"],
        c["ties_left_out"],
    )
    assert ("cohen_kappa", pytest.approx(0.5)) == (c["method"], c["kappa"])
    assert c["agreement_ci"] is not None and c["kappa_ci"] is not None


def test_the_judge_is_measured_against_the_majority_and_each_annotator() -> None:
    """Majority (split items left out): 4 items, the judge matches 3; decisive: 3 items, all matched; ann: 5 of 6, and all 5 of its decisive labels."""
    s = summarize(ROWS, resamples=200)["calibration"]
    m = s["majority"]
    assert (3 / 4, 4, 1.0, 3, 1, 2) == (
        m["agreement"],
        m["agreement_n"],
        m["decisive_agreement"],
        m["decisive_agreement_n"],
        m["ties_left_out"],
        m["split_left_out"],
    )
    (ann,) = [a for a in s["per_annotator"] if a["annotator"] == "ann"]
    assert (5 / 6, 5, 1.0) == (ann["agreement"], ann["decisive_agreement_n"], ann["decisive_agreement"])


def test_more_than_two_annotators_use_krippendorffs_alpha() -> None:
    """Three annotators: alpha from the coincidence matrix; perfect agreement gives 1, the textbook split below 1."""
    rows = [judged("1", ("1", "1", "1"), ("p", "q", "r")), judged("2", ("2", "2", "2"), ("p", "q", "r"))]
    c = summarize(rows, resamples=0)["calibration"]["ceiling"]
    assert ("krippendorff_alpha", 1.0) == (c["method"], c["kappa"])
    # Units (1,1,2) and (2,2,2): o_11 = 1, o_12 = o_21 = 1, o_22 = 3, n = 6; alpha = 1 - 5 * 2 / (36 - 4 - 16) = 0.375
    split = [judged("1", ("1", "1", "2"), ("p", "q", "r")), judged("2", ("2", "2", "2"), ("p", "q", "r"))]
    assert pytest.approx(0.375) == summarize(split, resamples=0)["calibration"]["ceiling"]["kappa"]


def test_a_judge_at_the_human_ceiling_is_not_told_to_rewrite_its_rubric() -> None:
    """Below the threshold but at or above how often people agree: a note naming both, no warning."""
    rows = [judged("1", ("1", "1"), human="1"), judged("1", ("1", "2"), human="1"), judged("1", ("2", "1"), human="2")]
    s = summarize(rows, resamples=0)
    assert (pytest.approx(2 / 3), pytest.approx(1 / 3), False) == (
        s["human_agreement"],
        s["agreement_ceiling"],
        s["agreement_warning"],
    )
    assert "threshold of 75% but at or above the human ceiling of 33.3%" in s["agreement_message"]


def test_a_judge_below_the_threshold_and_the_ceiling_is_warned_with_both() -> None:
    """Below both the threshold and the ceiling: the warning says both and counts the ties left out."""
    rows = [judged("2", ("1", "1"), human="1"), judged("1", ("1", "1"), human="1"), judged("1", ("tie",), human="tie")]
    s = summarize(rows, resamples=0)
    assert s["agreement_warning"] is True
    assert (
        "(on 2 decisive labels; 1 tie left out), below the threshold of 75% and below the human ceiling"
        in (s["agreement_message"])
    )


def test_the_label_vocabulary_reads_a_b_and_1_2_alike() -> None:
    """a/A/1 mean answer a, b/B/2 answer b; anything else is not a label; a majority needs a strict plurality."""
    assert ["1", "1", "1", "2", "2", "2", "tie", None, None] == [
        human_label(v) for v in ("a", " A ", 1, "b", "B", "2", "TIE", "c", True)
    ]
    assert ("1", None, "tie") == (majority(["1", "1", "2"]), majority(["1", "2"]), majority(["tie"]))
