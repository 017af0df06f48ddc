"""The cluster bootstrap (bootstrap.cluster): clusters drawn, items follow, every interval from the same draw."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from judgebias.core.errors import UserError
from judgebias.core.item import Item
from judgebias.core.record import ItemResult
from judgebias.core.style import Style
from judgebias.core.verdict import is_consistent, reconcile
from judgebias.figures import stats
from judgebias.figures.clustering import Clustering, resolve_clustering
from judgebias.figures.metrics import bradley_terry_ratings, summarize

MODELS = ("m0", "m1", "m2", "m3")


def rich_rows(questions: int, per_question: int, seed: int) -> tuple[list[ItemResult], Clustering]:
    """Rows with every kind of figure (labels, votes, soft, lengths, styles, models) and a strong question effect."""
    rng = random.Random(seed)
    rows, labels = [], []
    for q in range(questions):
        lean = rng.random()  # the question's own pull towards a, shared by its pairs
        for k in range(per_question):
            call1 = rng.choices(["A", "B", "tie"], [lean, 1 - lean, 0.2])[0]
            call2 = rng.choices(["B", "A", "tie"], [lean, 1 - lean, 0.2])[0]
            style = Style(headers=rng.randint(0, 3), list_items=rng.randint(0, 6), bold=rng.randint(0, 2))
            plain = Style(headers=rng.randint(0, 1), list_items=rng.randint(0, 3))
            a, b = rng.sample(MODELS, 2)
            rows.append(
                ItemResult(
                    id=f"{q}-{k}",
                    verdict=reconcile(call1, call2),
                    call1=call1,
                    call2=call2,
                    consistent=is_consistent(call1, call2),
                    human=rng.choices(["1", "2", "tie"], [lean, 1 - lean, 0.1])[0],
                    human_votes=tuple(rng.choices(["1", "2", "tie"], [lean, 1 - lean, 0.1], k=3)),
                    model_a=a,
                    model_b=b,
                    chars_a=rng.randint(50, 900),
                    chars_b=rng.randint(50, 900),
                    words_a=int(20 + 200 * lean) + rng.randint(0, 40),
                    words_b=rng.randint(20, 240),
                    soft=min(1.0, max(0.0, lean + rng.gauss(0, 0.1))),
                    style_a=style if lean > 0.5 else plain,
                    style_b=plain if lean > 0.5 else style,
                )
            )
            labels.append(q)
    return rows, Clustering("question_id", tuple(labels))


def width(interval: list[float] | None) -> float:
    """The width of an interval (high - low)."""
    assert interval is not None
    return interval[1] - interval[0]


def test_cluster_draw_moves_a_cluster_as_one() -> None:
    """Every item of a cluster gets the multiplicity its cluster was drawn with, and a resample draws as many clusters as there are."""
    groups = np.array([0, 0, 1, 2, 2, 2], dtype=np.int64)
    items = stats.units_of([np.arange(groups.size)], groups.size)  # each item a unit of its own
    counts = np.concatenate(list(stats.unit_counts(items, 500, seed=3, groups=groups)))
    assert (500, 6) == counts.shape
    assert np.array_equal(counts[:, 0], counts[:, 1])
    assert np.array_equal(counts[:, 3], counts[:, 5])
    per_cluster = counts[:, [0, 2, 3]]
    assert np.all(per_cluster.sum(axis=1) == 3)


def test_without_clusters_the_draw_is_the_item_bootstrap() -> None:
    """Items drawn without groups get exactly the numbers of the same items each its own cluster (the two ways to
    the item bootstrap agree, so intervals pinned elsewhere stay)."""
    items = stats.units_of([np.arange(40)], 40)
    plain = np.concatenate(list(stats.unit_counts(items, 300, 7)))
    routed = np.concatenate(list(stats.unit_counts(items, 300, 7, groups=np.arange(40))))
    assert plain.tobytes() == routed.tobytes()


def test_summary_without_clustering_keeps_item_intervals() -> None:
    """summarize with no clustering gives the same intervals as before and says it resampled items."""
    rows, _ = rich_rows(12, 5, seed=1)
    s = summarize(rows, resamples=200, seed=5)
    assert (None, None) == (s["bootstrap_cluster"], s["bootstrap_clusters"])
    again = summarize(rows, resamples=200, seed=5, clustering=None)
    assert s["ci"] == again["ci"]


def test_every_interval_uses_the_cluster_draw() -> None:
    """Pairs repeated within a question: the clustered intervals of the copies match the item intervals of the originals for every figure."""
    rows, _ = rich_rows(40, 1, seed=2)
    copies = [row for row in rows for _ in range(4)]  # each question's pair four times: no new information
    clustering = Clustering("question_id", tuple(i // 4 for i in range(len(copies))))
    original = summarize(rows, resamples=400, seed=9, judge_family="m0")
    clustered = summarize(copies, resamples=400, seed=9, judge_family="m0", clustering=clustering)
    by_item = summarize(copies, resamples=400, seed=9, judge_family="m0")
    assert ("question_id", 40) == (clustered["bootstrap_cluster"], clustered["bootstrap_clusters"])
    measured = [name for name, interval in original["ci"].items() if interval is not None and width(interval) > 0]
    assert {"win_rate", "position_consistency", "biased_first", "human_agreement", "cohen_kappa"} <= set(measured)
    assert {"length_verdict_corr", "soft_win_rate", "styled_wins", "human_vote_agreement"} <= set(measured)
    for name in measured:
        assert width(original["ci"][name]) == pytest.approx(width(clustered["ci"][name]), rel=0.1, abs=0.01), name
        assert width(by_item["ci"][name]) < 0.8 * width(clustered["ci"][name]), name


def test_calibration_uses_the_cluster_draw() -> None:
    """The human ceiling and the judge's agreement with the majority, clustered on copied pairs, are as wide as on the originals; by item they are too narrow."""
    rows, _ = rich_rows(50, 1, seed=6)
    copies = [row for row in rows for _ in range(4)]
    clustering = Clustering("question_id", tuple(i // 4 for i in range(len(copies))))
    original = summarize(rows, resamples=400, seed=3)["calibration"]
    clustered = summarize(copies, resamples=400, seed=3, clustering=clustering)["calibration"]
    by_item = summarize(copies, resamples=400, seed=3)["calibration"]
    for part, name in (("ceiling", "agreement_ci"), ("ceiling", "kappa_ci"), ("majority", "agreement_ci")):
        assert width(original[part][name]) == pytest.approx(width(clustered[part][name]), rel=0.15), (part, name)
        assert width(by_item[part][name]) < 0.8 * width(clustered[part][name]), (part, name)


def test_ratings_use_the_cluster_draw() -> None:
    """Bradley–Terry intervals of copied pairs, clustered, match those of the originals; by item they are too narrow."""
    rows, _ = rich_rows(60, 1, seed=4)
    copies = [row for row in rows for _ in range(3)]
    clustering = Clustering("question_id", tuple(i // 3 for i in range(len(copies))))
    original = {r["model"]: r["high"] - r["low"] for r in bradley_terry_ratings(rows, resamples=300, seed=1)}
    clustered = bradley_terry_ratings(copies, resamples=300, seed=1, clustering=clustering)
    by_item = {r["model"]: r["high"] - r["low"] for r in bradley_terry_ratings(copies, resamples=300, seed=1)}
    for r in clustered:
        assert original[r["model"]] == pytest.approx(r["high"] - r["low"], rel=0.15)
        assert by_item[r["model"]] < 0.8 * (r["high"] - r["low"])


def item(id: str, **extra: Any) -> Item:
    """An item with dataset fields beyond the core ones."""
    return Item(id=id, question=f"q{id}", a="x", b="y", extra=extra)


def test_auto_clusters_by_a_repeating_question_id() -> None:
    """bootstrap.cluster=auto resamples by question_id when a value repeats, by item when none does or it is absent."""
    repeated = [item("1", question_id=7), item("2", question_id=7), item("3", question_id=8)]
    found = resolve_clustering(repeated, "auto")
    assert found is not None and ("question_id", 2) == (found.field, found.count)
    assert resolve_clustering([item("1", question_id=1), item("2", question_id=2)], "auto") is None
    assert resolve_clustering([item("1"), item("2")], "auto") is None


def test_cluster_can_be_turned_off_or_named() -> None:
    """none or null resample items; a named field clusters by it, and an item without it stands alone."""
    repeated = [item("1", topic="x"), item("2", topic="x"), item("3", question_id=1)]
    assert resolve_clustering(repeated, "none") is None
    assert resolve_clustering(repeated, None) is None
    named = resolve_clustering(repeated, "topic")
    assert named is not None and 2 == named.count


def test_unknown_cluster_field_is_a_user_error() -> None:
    """A field no item has is refused before any call, naming the field and the ones there are."""
    with pytest.raises(UserError, match=r"bootstrap.cluster='qid'.*question_id"):
        resolve_clustering([item("1", question_id=1)], "qid")


def simulated_rows(rng: np.random.Generator, questions: int, per_question: int) -> list[ItemResult]:
    """Consistent verdicts whose P(a wins) is the question's own draw from Beta(2, 2): mean 0.5, a between-question effect."""
    rows = []
    for q, p in enumerate(rng.beta(2.0, 2.0, size=questions)):
        for k, wins in enumerate(rng.random(per_question) < p):
            call1, call2 = ("A", "B") if wins else ("B", "A")
            rows.append(
                ItemResult(id=f"{q}-{k}", verdict=reconcile(call1, call2), call1=call1, call2=call2, consistent=True)
            )
    return rows


@pytest.mark.statistical
def test_clustered_interval_covers_the_truth_and_the_item_interval_does_not() -> None:
    """With a known between-question effect, the clustered 95% interval of win_rate covers the true 0.5 in about 95% of runs, the item interval clearly less."""
    rng = np.random.default_rng(20240625)
    questions, per_question, runs = 30, 10, 200
    clustering = Clustering("question_id", tuple(i // per_question for i in range(questions * per_question)))
    covered = {"cluster": 0, "item": 0}
    for run in range(runs):
        rows = simulated_rows(rng, questions, per_question)
        for kind, chosen in (("cluster", clustering), ("item", None)):
            low, high = summarize(rows, resamples=300, seed=run, clustering=chosen)["ci"]["win_rate"]
            covered[kind] += low <= 0.5 <= high
    cluster_rate, item_rate = covered["cluster"] / runs, covered["item"] / runs
    print(f"coverage of win_rate's 95% interval over {runs} runs: clustered {cluster_rate:.3f}, item {item_rate:.3f}")
    assert 0.91 <= cluster_rate <= 0.98
    assert item_rate < cluster_rate - 0.15
