"""styled_wins of real recorded judges equals a plain recount of the recorded letters (the figures in real-judges.md).

Data: the shared real data (skipped when absent). The expected share is recounted with plain loops over the
recorded call1/call2 letters and the answers' feature totals, without verdict.py or metrics.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgebias.core.record import ItemResult
from judgebias.core.style import style_of
from judgebias.core.verdict import is_consistent, reconcile
from judgebias.figures.metrics import summarize


@pytest.mark.parametrize(
    ("dataset", "judge"),
    [("mtbench-human", "GPT-4/Vanilla_NoRules"), ("llmbar", "ChatGPT/CoT"), ("jtj-mtbench", "gpt-4-0613")],
)
def test_styled_wins_of_a_recorded_judge_equals_a_recount(data_root: Path, dataset: str, judge: str) -> None:
    """Among items where both orders name the same answer and the answers' feature totals differ, the share where
    that answer is the more formatted one."""
    folder = data_root / dataset
    items = {r["id"]: r for r in map(json.loads, (folder / "items.jsonl").read_text("utf-8").splitlines())}
    recorded = [r for r in map(json.loads, (folder / "judgments.jsonl").read_text("utf-8").splitlines())]
    recorded = [r for r in recorded if r["judge"] == judge]
    totals = {key: (style_of(r["a"]).total, style_of(r["b"]).total) for key, r in items.items()}
    won = counted = 0
    rows = []
    for r in recorded:
        call1, call2 = r["call1"] or "invalid", r["call2"] or "invalid"
        a_chosen = call1 == "A" and call2 == "B"  # call2 shows b first: its "B" is a
        b_chosen = call1 == "B" and call2 == "A"
        total_a, total_b = totals[r["id"]]
        if (a_chosen or b_chosen) and total_a != total_b:
            counted += 1
            won += (total_a > total_b) == a_chosen
        rows.append(
            ItemResult(
                id=r["id"],
                verdict=reconcile(call1, call2),
                call1=call1,
                call2=call2,
                consistent=is_consistent(call1, call2),
                style_a=style_of(items[r["id"]]["a"]),
                style_b=style_of(items[r["id"]]["b"]),
            )
        )
    summary = summarize(rows, resamples=0)
    assert (won / counted, counted) == (summary["styled_wins"], summary["styled_wins_n"])
