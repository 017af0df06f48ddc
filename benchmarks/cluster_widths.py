"""Print the item and the clustered bootstrap interval widths of the main figures for the recorded judges.

Usage: python benchmarks/cluster_widths.py [--resamples 2000] [--seed 0]
Each recorded judge of jtj_mtbench (clustered by question_id) and pandalm (by question: its pairs carry no
question id, and 999 pairs share 170 instructions) is replayed in-process twice, once with bootstrap.cluster
set and once with bootstrap.cluster=none; data from $JUDGEBIAS_DATA_ROOT.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_module

from harness import figure_options
from judgebias.cli.schemas import register_schemas
from judgebias.engine.runner import run_experiment
from judgebias.run import to_config

RUNS = (
    ("jtj_mtbench", "brackets", "question_id", ("gpt-4-0613", "gpt-3.5-turbo-1106", "gemini-pro")),
    ("pandalm", "pandalm", "question", ("gpt-3.5-turbo", "PandaLM-7B")),
)
FIGURES = ("win_rate", "position_consistency", "preference_score", "human_agreement", "styled_wins")


def summary_of(data: str, rubric: str, judge: str, cluster: str, resamples: int, seed: int, out: Path) -> Any:
    """One replayed run's summary (no report, no progress line)."""
    overrides = [
        f"data={data}",
        f"rubric={rubric}",
        "judge=replay",
        f"judge.name={judge}",
        f"bootstrap.cluster={cluster}",
        f"bootstrap.resamples={resamples}",
        f"bootstrap.seed={seed}",
        f"cache.dir={out / 'cache'}",
        "report=false",
        "progress=off",
    ]
    with initialize_config_module("judgebias.conf", version_base="1.3"):
        config = to_config(compose("config", overrides=overrides))
    folder = out / f"{data}-{judge.replace('/', '_')}-{cluster}"
    folder.mkdir(parents=True)
    return run_experiment(config, folder, echo=lambda _: None)


def main() -> None:
    """Replay every recorded judge both ways and print one Markdown row per judge and figure."""
    args = figure_options(__doc__, resamples=2000)
    register_schemas()
    print("| data | judge | figure | value | item 95% CI (width) | clustered 95% CI (width) | clusters | wider |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        for data, rubric, cluster, judges in RUNS:
            for judge in judges:
                by_item = summary_of(data, rubric, judge, "none", args.resamples, args.seed, Path(scratch))
                clustered = summary_of(data, rubric, judge, cluster, args.resamples, args.seed, Path(scratch))
                for figure in FIGURES:
                    value, low, high = by_item.get(figure), by_item["ci"].get(figure), clustered["ci"].get(figure)
                    if value is None or low is None or high is None:
                        continue
                    w_item, w_cluster = low[1] - low[0], high[1] - high[0]
                    print(
                        f"| {data} | {judge} | {figure} | {value:.3f} | [{low[0]:.3f}, {low[1]:.3f}] ({w_item:.3f}) "
                        f"| [{high[0]:.3f}, {high[1]:.3f}] ({w_cluster:.3f}) | {clustered['bootstrap_clusters']} "
                        f"({cluster}) | {100 * (w_cluster / w_item - 1):+.0f}% |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
