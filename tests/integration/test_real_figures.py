"""The summary of real recorded judges equals a plain recount of the recorded letters and published figures.

Data: $JUDGEBIAS_DATA_ROOT, else shared/data beside the project. The ItemResults are built the way the
runner builds them (verdict.reconcile / is_consistent); the expected figures are recounted here with plain
loops over the recorded letters, without verdict.py or metrics.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judgebias.core.record import ItemResult
from judgebias.core.verdict import is_consistent, reconcile
from judgebias.figures.metrics import summarize
from tests.helpers import missing_shared_data, shared_data_root


def _data_root() -> Path:
    """The shared datasets' folder; the module skips, naming where it looked, without them."""
    root = shared_data_root()
    if root is None:
        pytest.skip(missing_shared_data(), allow_module_level=True)
    return root


ROOT = _data_root()

TWO_ORDER = {"mtbench-human": 8, "llmbar": 18, "jtj-mtbench": 3}


def _read(path: Path) -> list[dict[str, Any]]:
    """The records of a JSONL file."""
    with path.open(encoding="utf-8") as file:
        return [json.loads(line) for line in file if line.strip()]


def _load(dataset: str) -> tuple[dict[str, dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """Items by id and the recorded judgment rows grouped by judge configuration."""
    items = {record["id"]: record for record in _read(ROOT / dataset / "items.jsonl")}
    by_judge: dict[str, list[dict[str, Any]]] = {}
    for record in _read(ROOT / dataset / "judgments.jsonl"):
        by_judge.setdefault(record["judge"], []).append(record)
    return items, by_judge


DATA = {name: _load(name) for name in [*TWO_ORDER, "pandalm-test"]}
CONFIGS = [(name, judge) for name in TWO_ORDER for judge in sorted(DATA[name][1])]


def _results(dataset: str, judge: str) -> list[ItemResult]:
    """ItemResults from the recorded calls, as the runner would build them (null = unparsed = "invalid")."""
    items, by_judge = DATA[dataset]
    out = []
    for record in by_judge[judge]:
        item = items[record["id"]]
        call1 = record["call1"] or "invalid"
        call2 = None if dataset == "pandalm-test" else record["call2"] or "invalid"
        out.append(
            ItemResult(
                id=record["id"],
                verdict=reconcile(call1, call2),
                call1=call1,
                call2=call2,
                consistent=is_consistent(call1, call2),
                human=item.get("human"),
                human_votes=tuple(item.get("human_votes") or ()),
                model_a=item.get("model_a"),
                model_b=item.get("model_b"),
            )
        )
    return out


def _recount(dataset: str, judge: str) -> dict[str, Any]:
    """The figures recounted from the recorded letters with plain loops (call2 = "A" means b was chosen)."""
    items, by_judge = DATA[dataset]
    records = by_judge[judge]
    consistent = first = second = agree = labelled = 0
    points = 0.0
    vote_shares = []
    for record in records:
        call1, call2 = record["call1"], record["call2"]
        pick1 = {"A": "a", "B": "b", "tie": "tie"}.get(call1)  # None: unparsed
        pick2 = {"A": "b", "B": "a", "tie": "tie"}.get(call2)
        if pick1 is not None and pick1 == pick2:
            consistent += 1
        first += call1 == "A" and call2 == "A"
        second += call1 == "B" and call2 == "B"
        winner = pick1 if pick1 in ("a", "b") and pick1 == pick2 else "tie"
        points += {"a": 1.0, "b": 0.0, "tie": 0.5}[winner]
        label = {"a": "1", "b": "2", "tie": "tie"}[winner]
        human = items[record["id"]].get("human")
        if human in ("1", "2"):
            labelled += 1
            agree += label == human
        votes = items[record["id"]].get("human_votes") or []
        if votes:
            vote_shares.append(sum(vote == label for vote in votes) / len(votes))
    n = len(records)
    return {
        "n_items": n,
        "position_consistency": consistent / n,
        "biased_first": first / n,
        "biased_second": second / n,
        "win_rate": points / n,
        "human_agreement": agree / labelled if labelled else None,
        "human_vote_agreement": sum(vote_shares) / len(vote_shares) if vote_shares else None,
    }


def test_every_recorded_configuration_is_present() -> None:
    """The shared data hold 8 mtbench-human, 18 llmbar and 3 jtj-mtbench judge configurations."""
    assert TWO_ORDER == {name: len(DATA[name][1]) for name in TWO_ORDER}


@pytest.mark.parametrize(("dataset", "judge"), CONFIGS, ids=[f"{d}:{j}" for d, j in CONFIGS])
def test_summary_matches_recount(dataset: str, judge: str) -> None:
    """Position consistency, first/second bias, win rate and human agreement equal a plain recount."""
    expected = _recount(dataset, judge)
    summary = summarize(_results(dataset, judge), resamples=200)
    if expected["human_agreement"] is None:
        assert "human_agreement" not in summary
    votes = expected.pop("human_vote_agreement")
    if votes is None:
        assert "human_vote_agreement" not in summary
    else:
        # Counts over counts are bit-identical; this average of shares differs only in summation order.
        assert pytest.approx(votes, rel=1e-12) == summary["human_vote_agreement"]
    assert expected == {key: summary.get(key) for key in expected}


def test_llmbar_published_positional_agreement() -> None:
    """LLMBar publishes GPT-4/Vanilla_NoRules positional agreement on its MT-Bench set as 174/200 = 0.87."""
    summary = summarize(_results("mtbench-human", "GPT-4/Vanilla_NoRules"), resamples=0)
    assert (0.87, 200) == (summary["position_consistency"], summary["position_consistency_n"])


def test_judging_the_judges_consistency_is_close_to_the_full_run() -> None:
    """gpt-4-0613 on these 800 pairs is within 0.05 of 3914/4800 = 81.54% in the full Judging-the-Judges."""
    summary = summarize(_results("jtj-mtbench", "gpt-4-0613"), resamples=0)
    full_run = 3914 / 4800
    consistency = summary["position_consistency"]
    print(f"jtj-mtbench gpt-4-0613 consistency on 800 pairs: {consistency:.4f} (full run {full_run:.4f})")
    assert abs(consistency - full_run) < 0.05


@pytest.mark.parametrize("judge", ["gpt-3.5-turbo", "PandaLM-7B"])
def test_pandalm_one_order(judge: str) -> None:
    """PandaLM's verdicts exist in one order: no position consistency (a note says why), human agreement."""
    items, by_judge = DATA["pandalm-test"]
    results = _results("pandalm-test", judge)
    agree = labelled = 0
    for record in by_judge[judge]:
        label = {"A": "1", "B": "2"}.get(record["call1"], "tie")
        human = items[record["id"]]["human"]
        if human in ("1", "2"):
            labelled += 1
            agree += label == human
    summary = summarize(results, resamples=200)
    assert (1, 999, 999) == (summary["orders"], summary["n_items"], summary["calls_total"])
    assert (None, None, None) == (
        summary["position_consistency"],
        summary["biased_first"],
        summary["ci"]["position_consistency"],
    )
    assert "only one order was recorded" in summary["position_consistency_note"]
    assert (agree / labelled, labelled) == (summary["human_agreement"], summary["human_agreement_n"])
