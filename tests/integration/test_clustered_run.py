"""A run on a dataset whose pairs share questions resamples by question, says so, and can be told not to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from judgebias.core.errors import UserError
from judgebias.engine.runner import run_experiment
from tests.helpers import write_items
from tests.reliability.helpers import config_of, pairs


def dataset(tmp_path: Path) -> Path:
    """24 pairs from 6 questions (question_id repeats four times each)."""
    items = pairs(24)
    for i, record in enumerate(items):
        record["question_id"] = i // 4
    return write_items(tmp_path / "items.jsonl", items)


def run(tmp_path: Path, *overrides: str) -> tuple[dict[str, Any], list[str]]:
    """Run the noisy scripted judge in-process on the dataset; return the summary and what it printed."""
    printed: list[str] = []
    out = tmp_path / f"run{len(list(tmp_path.glob('run*')))}"
    out.mkdir()
    config = config_of(
        "judge=noisy",
        "data=jsonl",
        f"data.path={dataset(tmp_path)}",
        f"cache.dir={tmp_path / 'cache'}",
        "bootstrap.resamples=200",
        "report=false",
        "progress=off",
        *overrides,
    )
    summary = run_experiment(config, out, echo=printed.append)
    return dict(summary), printed


def test_repeated_question_id_clusters_by_default(tmp_path: Path) -> None:
    """With question_id repeating, summary.json names the cluster field and count, and the printed header says so."""
    summary, printed = run(tmp_path)
    assert ("question_id", 6) == (summary["bootstrap_cluster"], summary["bootstrap_clusters"])
    assert "95% bootstrap over 6 clusters by question_id" in printed[-1]


def test_cluster_none_resamples_items(tmp_path: Path) -> None:
    """bootstrap.cluster=none gives the item bootstrap, stated as such."""
    summary, printed = run(tmp_path, "bootstrap.cluster=none")
    assert (None, None) == (summary["bootstrap_cluster"], summary["bootstrap_clusters"])
    assert "95% bootstrap over items" in printed[-1]


def test_unknown_cluster_field_stops_the_run(tmp_path: Path) -> None:
    """A cluster field no item has is a user error before any call."""
    with pytest.raises(UserError, match=r"bootstrap\.cluster='topic'"):
        run(tmp_path, "bootstrap.cluster=topic")
