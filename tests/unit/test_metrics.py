"""The run summary: each figure against a small hand-computed item set, the bootstrap and its coverage."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import pytest

from judgebias.core.judged import ensemble_results, soft_preference
from judgebias.core.record import CallResult, ItemResult
from judgebias.figures import catalogue
from judgebias.figures.metrics import ONE_ORDER_NOTE, SOFT_NOTE, bradley_terry_ratings, summarize
from tests.unit.helpers import row


def rows(*pairs: tuple[str, str | None], **fields: Any) -> list[ItemResult]:
    """Rows with ids 0, 1, ... from (call1, call2) pairs, all sharing `fields`."""
    return [row(c1, c2, id=str(i), **fields) for i, (c1, c2) in enumerate(pairs)]


FIVE = rows(("A", "B"), ("A", "B"), ("A", "A"), ("tie", "tie"), ("B", "B"))
"""Verdicts 1, 1, tie, tie, tie; consistent, consistent, first-biased, consistent (ties), second-biased."""


def test_five_items_counts_and_win_rate() -> None:
    """Win rate = mean of win 1 / tie 0.5 / loss 0: (1 + 1 + .5 + .5 + .5) / 5 = 0.7, with 2 wins, 3 ties."""
    s = summarize(FIVE)
    assert (5, 5, 2) == (s["n_items"], s["n_scored"], s["orders"])
    assert (2, 0, 3) == (s["wins"], s["losses"], s["ties"])
    assert 0.7 == s["win_rate"]
    assert 1.0 == s["decisive_win_rate"]


def test_five_items_position_figures() -> None:
    """3 of 5 items agree across orders (0.6, flip 0.4); one (A, A), one (B, B): 0.2 each, sign test p = 1."""
    s = summarize(FIVE)
    assert 0.6 == s["position_consistency"]
    assert 5 == s["position_consistency_n"]
    assert pytest.approx(0.4) == s["flip_rate"]
    assert s["flip_rate"] == s["residual_flip_rate"]
    assert (0.2, 0.2) == (s["biased_first"], s["biased_second"])
    assert (2, 1, 1.0) == (s["first_position_n"], s["first_position_k"], s["first_position_p"])
    assert 0.0 == s["preference_score"]


def test_five_items_three_reconciliations() -> None:
    """Consistent only: (1 + 1 + .5) / 3; pooled over 10 calls: 1+1, 1+1, 1+0, .5+.5, 0+1 = 7 / 10 = 0.7."""
    s = summarize(FIVE)
    assert pytest.approx(2.5 / 3) == s["win_rate_consistent"]
    assert 3 == s["win_rate_consistent_n"]
    assert 0.7 == s["win_rate_pooled"]
    assert 10 == s["win_rate_pooled_n"]


def test_first_position_sign_test() -> None:
    """Nine (A, A) and one (B, B) among the order-following disagreements give p = 0.021484375 (k=9, n=10)."""
    s = summarize(rows(*[("A", "A")] * 9, ("B", "B"), *[("A", "B")] * 5))
    assert (10, 9, 0.021484375) == (s["first_position_n"], s["first_position_k"], s["first_position_p"])


def test_preference_score_counts_tie_mixed_pairs() -> None:
    """Primacy (A,A), (A,tie), (tie,A) = 3, recency (B,B) = 1, 5 readable pairs: (1 - 3) / 5 = -0.4."""
    s = summarize(rows(("A", "A"), ("A", "tie"), ("tie", "A"), ("B", "B"), ("A", "B"), ("invalid", "A")))
    assert pytest.approx(-0.4) == s["preference_score"]
    assert 5 == s["preference_score_n"]


def test_invalid_replies_are_counted_and_inconsistent() -> None:
    """An unreadable reply is a tie for the verdict, counts as invalid and makes the item inconsistent."""
    s = summarize(rows(("invalid", "B"), ("A", "invalid"), ("A", "B")))
    assert 2 == s["n_invalid"]
    assert pytest.approx(1 / 3) == s["position_consistency"]
    assert pytest.approx((0.5 + 0.5 + 1) / 3) == s["win_rate"]


def test_errors_excluded_from_figures_but_counted() -> None:
    """A failed call makes the item "error": out of every rate, in n_errors, errors_call1/2, calls_total."""
    s = summarize(rows(("A", "B"), ("error", "A"), ("B", "error"), ("error", "error"), ("B", "A")))
    assert (5, 2) == (s["n_items"], s["n_scored"])
    assert (3, 2, 2) == (s["n_errors"], s["errors_call1"], s["errors_call2"])
    assert 0.5 == s["win_rate"]
    assert 1.0 == s["position_consistency"]
    assert 10 == s["calls_total"]
    assert 0 == s["n_invalid"]


def test_all_errors_gives_none_and_a_note() -> None:
    """When no item can be scored every rate is None (never NaN) and scored_note says why."""
    s = summarize(rows(("error", "A"), ("A", "error")))
    assert (0, None, None) == (s["n_scored"], s["win_rate"], s["position_consistency"])
    assert "no item could be scored" in s["scored_note"]
    json.dumps(s, allow_nan=False)


def test_one_order_data() -> None:
    """With call2 missing everywhere, position figures are None and the note says only one order exists."""
    data = rows(("A", None), ("B", None), ("tie", None), ("A", None), human="1")
    s = summarize(data)
    assert (1, 4) == (s["orders"], s["calls_total"])
    for name in ("position_consistency", "biased_first", "biased_second", "flip_rate", "residual_flip_rate"):
        assert None is s[name]
        assert None is s["ci"][name]
    assert None is s["first_position_p"]
    assert ONE_ORDER_NOTE == s["position_consistency_note"]
    assert "only one order was recorded" in s["position_consistency_note"]
    assert pytest.approx(2.5 / 4) == s["win_rate"]
    assert 0.5 == s["human_agreement"]


def test_mixed_orders_note() -> None:
    """Items judged in one order only are left out of the position figures, and the note says how many."""
    s = summarize(rows(("A", "B"), ("A", "A"), ("A", None)))
    assert 2 == s["orders"]
    assert 0.5 == s["position_consistency"]
    assert "1 of 3 scored items have one order only" in s["position_consistency_note"]
    assert 5 == s["calls_total"]


def test_calls_cache_and_tokens() -> None:
    """calls_total counts recorded calls; a failed call is neither a live nor a cached reply; tokens are summed."""
    hit = CallResult("A", "a", True, prompt_tokens=10, completion_tokens=2)
    miss = CallResult("B", "b", False, prompt_tokens=12, completion_tokens=3)
    failed = CallResult("error", None, True, error="timeout")
    data = [
        row("A", "B", id="0", calls=(hit, miss)),
        row("A", "error", id="1", calls=(hit, failed)),
    ]
    s = summarize(data)
    assert (4, 2, 1, 0) == (s["calls_total"], s["calls_cached"], s["calls_live"], s["calls_offline"])
    assert (32, 7) == (s["prompt_tokens"], s["completion_tokens"])


HUMAN = [
    row("A", "B", id="0", human="1"),
    row("A", "B", id="1", human="1"),
    row("B", "A", id="2", human="2"),
    row("A", "A", id="3", human="1"),
    row("B", "A", id="4", human="1"),
    row("tie", "tie", id="5", human="tie"),
]
"""Verdict / human: 1/1, 1/1, 2/2, tie/1, 2/1, tie/tie."""


def test_human_agreement() -> None:
    """Non-tie labels on items 0-4: matches 0, 1, 2 = 3/5; decisive verdicts only (0, 1, 2, 4): 3/4."""
    s = summarize(HUMAN)
    assert (0.6, 5) == (s["human_agreement"], s["human_agreement_n"])
    assert (0.75, 4) == (s["human_agreement_decisive"], s["human_agreement_decisive_n"])


def test_cohen_kappa_three_categories() -> None:
    """Verdict x human (1, 2, tie) = [[2,0,0],[1,1,0],[1,0,1]]: po = 4/6, pe = (2*4+2+2)/36 = 1/3: 0.5."""
    s = summarize(HUMAN)
    assert pytest.approx(0.5) == s["cohen_kappa"]
    assert 6 == s["cohen_kappa_n"]


def test_agreement_warning() -> None:
    """Agreement 0.6 under the 0.75 threshold warns and tells the user to rewrite the rubric; 0.5 does not."""
    s = summarize(HUMAN)
    assert (0.75, True) == (s["agreement_threshold"], s["agreement_warning"])
    assert "rubric is not good enough yet; rewrite it and measure again" in s["agreement_message"]
    calm = summarize(HUMAN, agreement_threshold=0.5)
    assert (False, None) == (calm["agreement_warning"], calm["agreement_message"])


def test_human_keys_absent_without_labels() -> None:
    """Runs without human labels or votes carry no human-calibration keys at all."""
    s = summarize(FIVE)
    assert [] == [k for k in s if k.startswith(("human", "agreement", "cohen"))]


VOTES = [
    row("A", "B", id="0", human_votes=("1", "1", "2")),
    row("A", "A", id="1", human_votes=("tie", "1")),
    row("B", "A", id="2", human_votes=("tie", "tie", "2", "2")),
    row("A", "B", id="3", human_votes=("2",)),
]
"""Verdicts 1, tie, 2, 1."""


def test_human_vote_agreement_with_ties() -> None:
    """Per item share of votes equal to the verdict: 2/3, 1/2, 2/4, 0/1; mean (2/3 + 1/2 + 1/2) / 4 = 5/12."""
    s = summarize(VOTES)
    assert pytest.approx(5 / 12) == s["human_vote_agreement"]
    assert 4 == s["human_vote_agreement_n"]


def test_human_vote_agreement_without_ties() -> None:
    """Tie votes and tie verdicts dropped: 2/3, (item 1 out), 2/2, 0/1; mean (2/3 + 1 + 0) / 3 = 5/9."""
    s = summarize(VOTES)
    assert pytest.approx(5 / 9) == s["human_vote_agreement_no_ties"]
    assert 3 == s["human_vote_agreement_no_ties_n"]


def test_human_human_agreement() -> None:
    """Two distinct annotators agree: {1,1,2}: 2/6, {tie,1}: 0/2, {tie,tie,2,2}: 4/12; (1/3 + 0 + 1/3) / 3."""
    s = summarize(VOTES)
    assert pytest.approx(2 / 9) == s["human_human_agreement"]
    assert 3 == s["human_human_agreement_n"]
    assert "human_agreement" not in s


LENGTHS = [
    row("A", "B", id="0", chars_a=100, chars_b=50),
    row("B", "A", id="1", chars_a=100, chars_b=50),
    row("B", "A", id="2", chars_a=30, chars_b=60),
    row("A", "B", id="3", chars_a=40, chars_b=40),
    row("A", "A", id="4", chars_a=80, chars_b=20),
]
"""Verdicts 1, 2, 2, 1, tie; length differences 50, 50, -30, 0, 60."""


def test_longer_wins() -> None:
    """Decisive items with unequal lengths: 0 (longer a wins), 1 (longer a loses), 2 (longer b wins): 2/3."""
    s = summarize(LENGTHS)
    assert (pytest.approx(2 / 3), 3) == (s["longer_wins"], s["longer_wins_n"])


def test_length_verdict_correlation() -> None:
    """dx = (24, 24, -56, -26, 34), dy = (.5, -.5, -.5, .5, 0): sxy 15, sxx 6120, syy 1: r = 15/sqrt(6120)."""
    s = summarize(LENGTHS)
    assert pytest.approx(15 / math.sqrt(6120)) == s["length_verdict_corr"]


def _lc_items(groups: list[tuple[int, int, int, int]]) -> list[ItemResult]:
    """Rows from (words_a, words_b, n_a_wins, n_b_wins) groups."""
    out: list[ItemResult] = []
    for words_a, words_b, a_wins, b_wins in groups:
        for calls in [("A", "B")] * a_wins + [("B", "A")] * b_wins:
            out.append(row(*calls, id=str(len(out)), words_a=words_a, words_b=words_b, chars_a=1, chars_b=1))
    return out


def test_length_controlled_without_length_effect() -> None:
    """a wins 70% whether longer or shorter: slope 0 and LC = the raw decisive win rate 28/40 = 0.7."""
    s = summarize(_lc_items([(200, 100, 14, 6), (100, 200, 14, 6)]))
    assert 0.7 == s["decisive_win_rate"]
    assert pytest.approx(0.7, abs=1e-4) == s["length_controlled_win_rate"]
    assert 40 == s["length_controlled_n"]


def test_length_controlled_removes_length_advantage() -> None:
    """a longer in 30 items (wins 80%), shorter in 10 (wins 20%): raw 26/40 = 0.65, at equal length 0.5."""
    s = summarize(_lc_items([(200, 100, 24, 6), (100, 200, 2, 8)]))
    assert 0.65 == s["decisive_win_rate"]
    assert pytest.approx(0.5, abs=1e-4) == s["length_controlled_win_rate"]
    low, high = s["ci"]["length_controlled_win_rate"]
    assert low < 0.5 < high


def test_length_controlled_needs_enough_items() -> None:
    """Fewer than 10 decisive items, or no length variation, give None and a note instead of a fit."""
    few = summarize(_lc_items([(200, 100, 3, 2)]))
    assert None is few["length_controlled_win_rate"]
    assert "at least 10" in few["length_controlled_note"]
    flat = summarize(_lc_items([(100, 100, 14, 6)]))
    assert None is flat["length_controlled_win_rate"]
    assert "do not differ" in flat["length_controlled_note"]


def test_self_preference() -> None:
    """Own-family scores 1 (gpt-4-0613 as a wins), 0 (GPT-4o as b loses), 0.5 (tie): mean 0.5 over n = 3."""
    data = [
        row("A", "B", id="0", model_a="gpt-4-0613", model_b="llama-2"),
        row("A", "B", id="1", model_a="claude", model_b="GPT-4o"),
        row("A", "B", id="2", model_a="gpt-4", model_b="gpt-4-turbo"),
        row("A", "B", id="3", model_a="llama", model_b="claude"),
        row("A", "A", id="4", model_a="mistral", model_b="gpt-4"),
    ]
    s = summarize(data, judge_family="GPT-4")
    assert {"family": "GPT-4", "n": 3, "own_win_rate": 0.5} == s["self_preference"]
    assert "self_preference" not in summarize(data)


def test_soft_preference_by_hand() -> None:
    """call1 (.6 A, .2 B, .2 tie): (.6 + .1) / 1 = .7; call2 (.3 A, .5 B): .5 / .8 = .625; mean .6625."""
    first, second = {"A": 0.6, "B": 0.2, "tie": 0.2}, {"A": 0.3, "B": 0.5}
    assert pytest.approx(0.6625) == soft_preference(first, second)
    assert pytest.approx(0.7) == soft_preference(first, None)
    assert None is soft_preference(None, None)
    assert None is soft_preference({}, None)


def test_soft_win_rate() -> None:
    """Mean soft value over items that have one ((.7 + .5) / 2); none at all gives None and the note."""
    data = [row("A", "B", id="0", soft=0.7), row("A", "B", id="1", soft=0.5), row("A", "B", id="2")]
    s = summarize(data)
    assert (pytest.approx(0.6), 2) == (s["soft_win_rate"], s["soft_n"])
    none = summarize(FIVE, logprobs_requested=True)
    assert (None, SOFT_NOTE) == (none["soft_win_rate"], none["soft_note"])
    assert "endpoint returned no log-probabilities" in SOFT_NOTE
    assert "soft_note" not in summarize(FIVE)  # nobody asked for log-probabilities: nothing to explain


def test_ensemble_majorities() -> None:
    """Majority verdict ignores ties; call1/call2 are majorities of A/B; "error" if every judge failed."""
    call = CallResult("A", "a", False, prompt_tokens=5)
    judges = {
        "j1": [row("A", "B", id="x", calls=(call, call)), row("A", "B", id="y"), row("error", "A", id="z")],
        "j2": [row("A", "B", id="x", calls=(call, call)), row("A", "A", id="y"), row("A", "error", id="z")],
        "j3": [
            row("B", "A", id="x", calls=(call, call)),
            row("B", "A", id="y"),
            row("error", "error", id="z"),
        ],
    }
    x, y, z = ensemble_results(judges)
    assert ("1", "A", "B", True) == (x.verdict, x.call1, x.call2, x.consistent)
    assert ("tie", "A", "A", False) == (y.verdict, y.call1, y.call2, y.consistent)
    assert ("error", "A", "A") == (z.verdict, z.call1, z.call2)
    assert 6 == len(x.calls)
    assert 30 == summarize([x])["prompt_tokens"]


def test_ensemble_all_errors_stay_errors() -> None:
    """When every judge's call failed, the ensemble call is "error" too (never a silent tie)."""
    judges = {"j1": [row("error", "error", id="z")], "j2": [row("error", "error", id="z")]}
    (z,) = ensemble_results(judges)
    assert ("error", "error", "error", None) == (z.verdict, z.call1, z.call2, z.consistent)


def test_ensemble_ties_and_one_order() -> None:
    """Equal decisive votes give "tie"; call2 is None when no judge has a second order."""
    judges = {"j1": [row("A", None, id="q")], "j2": [row("B", None, id="q")]}
    (q,) = ensemble_results(judges)
    assert ("tie", "tie", None, None) == (q.verdict, q.call1, q.call2, q.consistent)


def test_ensemble_residual_flip_rate() -> None:
    """The ensemble's residual flip rate is measured on its majority calls: item y still follows position."""
    judges = {
        "j1": [row("A", "B", id="x"), row("A", "B", id="y")],
        "j2": [row("A", "B", id="x"), row("A", "A", id="y")],
        "j3": [row("B", "A", id="x"), row("B", "A", id="y")],
    }
    s = summarize(ensemble_results(judges))
    assert 0.5 == s["residual_flip_rate"]


def test_ensemble_rejects_misaligned_items() -> None:
    """Judges must list the same ids in the same order; otherwise the error names the judge and position."""
    with pytest.raises(ValueError, match=r"judge 'j2'.*position 0"):
        misaligned = {
            "j1": [row("A", "B", id="a"), row("A", "B", id="b")],
            "j2": rows(("A", "B"), ("A", "B")),
        }
        ensemble_results(misaligned)
    with pytest.raises(ValueError, match="count 1"):
        ensemble_results({"j1": [row("A", "B", id="a")] * 2, "j2": [row("A", "B", id="a")]})
    with pytest.raises(ValueError, match="at least one judge"):
        ensemble_results({})


def _tournament() -> list[ItemResult]:
    """A beats B 3-1, B beats C 3-1, A beats C 4-0 (a = first model, verdict from consistent calls)."""
    out: list[ItemResult] = []
    for a, b, a_wins, b_wins in (
        ("A-model", "B-model", 3, 1),
        ("B-model", "C-model", 3, 1),
        ("A-model", "C-model", 4, 0),
    ):
        for calls in [("A", "B")] * a_wins + [("B", "A")] * b_wins:
            out.append(row(*calls, id=str(len(out)), model_a=a, model_b=b))
    return out


def test_bradley_terry_ratings_order() -> None:
    """The obvious order A > B > C comes out as ranks 1-3, mean rating 1000, each inside its interval."""
    ratings = bradley_terry_ratings(_tournament(), resamples=200, seed=1)
    assert ["A-model", "B-model", "C-model"] == [r["model"] for r in ratings]
    assert [1, 2, 3] == [r["rank"] for r in ratings]
    assert [8, 8, 8] == [r["n"] for r in ratings]
    assert pytest.approx(1000.0) == sum(r["rating"] for r in ratings) / 3
    assert all(r["low"] <= r["rating"] <= r["high"] for r in ratings)
    assert ratings == bradley_terry_ratings(_tournament(), resamples=200, seed=1)


def test_bradley_terry_needs_three_models() -> None:
    """Fewer than three models (or none recorded) give an empty list."""
    assert [] == bradley_terry_ratings(rows(("A", "B"), ("B", "A"), model_a="m1", model_b="m2"))
    assert [] == bradley_terry_ratings(FIVE)


def test_same_seed_same_bytes() -> None:
    """The same seed gives byte-identical summaries; another seed gives other intervals."""
    data = HUMAN * 5 + LENGTHS * 5

    def dump(seed: int) -> str:
        return json.dumps(summarize(data, resamples=300, seed=seed), sort_keys=True, allow_nan=False)

    assert dump(7) == dump(7)
    assert dump(7) != dump(8)
    assert 300 == summarize(data, resamples=300, seed=7)["bootstrap_resamples"]


def test_intervals_cover_every_rate() -> None:
    """Every rate figure has a 95% interval [low, high] around its value; resamples=0 gives None intervals."""
    data = [
        row(
            *calls,
            id=str(i),
            human=h,
            human_votes=("1", h),
            soft=0.6,
            chars_a=i + 10,
            chars_b=20,
            words_a=i + 1,
        )
        for i, (calls, h) in enumerate(
            [
                (("A", "B"), "1"),
                (("B", "A"), "2"),
                (("A", "A"), "1"),
                (("B", "B"), "2"),
                (("tie", "tie"), "1"),
            ]
            * 6
        )
    ]
    s = summarize(data, resamples=500)
    for name in ("win_rate", "position_consistency", "biased_first", "biased_second", "flip_rate"):
        low, high = s["ci"][name]
        assert low <= s[name] <= high
    # Every interval summarize() orders, but those of the figures this data set cannot have.
    no_judge_family = {"self_preference"}  # it needs the judge's family and the answers' model names
    one_sample_per_order = {  # these need several samples of each order (judge.samples > 1)
        "repetition_stability_order1",
        "repetition_stability_order2",
        "majority_win_rate",
        "majority_position_consistency",
        "soft_win_rate_mean",
    }
    cannot_have = no_judge_family | one_sample_per_order
    assert cannot_have <= set(catalogue.with_intervals())
    expected = set(catalogue.with_intervals()) - cannot_have
    assert expected == set(s["ci"])
    # A figure dropped from the interval order shows up here: the only numbers without one are a setting, the
    # human ceiling, a test's p-value and a share of calls.
    without_interval = {"agreement_threshold", "agreement_ceiling", "first_position_p", "no_verdict_share"}
    assert without_interval == {k for k, v in s.items() if isinstance(v, float)} - set(s["ci"])
    undrawn = summarize(data, resamples=0)["ci"]  # no bootstrap: none drawn; the corrected ones come with their figure
    assert {None} == {undrawn[name] for name in undrawn if name in catalogue.bootstrapped()}
    assert all(undrawn[name] for name in undrawn if name not in catalogue.bootstrapped())


def _json_types_only(value: Any) -> bool:
    """True when value holds only str/int/float/bool/None, lists and str-keyed dicts, and no NaN or inf."""
    if value is None or isinstance(value, (str, bool, int)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_json_types_only(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_types_only(v) for k, v in value.items())
    return False


@pytest.mark.parametrize(
    "data",
    [
        [],
        FIVE,
        HUMAN,
        VOTES,
        LENGTHS,
        rows(("A", None), ("B", None)),
        rows(("error", "A")),
        rows(("tie", "tie")),
    ],
)
def test_summary_is_json_ready(data: list[ItemResult]) -> None:
    """Every summary, even for empty or degenerate input, holds plain JSON types only and never NaN."""
    s = summarize(data, resamples=50, judge_family="gpt")
    assert _json_types_only(s)
    json.dumps(s, allow_nan=False)


def _simulate(rng: random.Random, n: int, p: float, q: float) -> list[ItemResult]:
    """A judge that knows the better answer (a with probability p) but picks the first slot w.p. q."""
    out = []
    for i in range(n):
        a_better = rng.random() < p
        # call1 shows a first: position picks "A"; otherwise the better answer. call2 shows b first.
        call1 = "A" if rng.random() < q or a_better else "B"
        call2 = "A" if rng.random() < q or not a_better else "B"
        out.append(row(call1, call2, id=str(i)))
    return out


def test_intervals_cover_the_truth() -> None:
    """Over 100 simulated runs the 95% intervals cover the true values in at least 90 of them.

    Truths for true preference p and first-slot probability q: biased_first = q (a better: call1 = A always,
    call2 = A w.p. q; b better: the reverse); win_rate = p(1 - q/2) + (1 - p) q/2 (a position-driven call
    makes the item a tie); win_rate_consistent = p (both sides stay consistent with probability 1 - q).
    """
    rng = random.Random(20240601)
    p, q, n = 0.65, 0.2, 200
    truth = {"win_rate": p * (1 - q / 2) + (1 - p) * q / 2, "biased_first": q, "win_rate_consistent": p}
    covered = dict.fromkeys(truth, 0)
    for run in range(100):
        ci = summarize(_simulate(rng, n, p, q), seed=run)["ci"]
        for name, value in truth.items():
            low, high = ci[name]
            covered[name] += low <= value <= high
    assert all(count >= 90 for count in covered.values()), covered
