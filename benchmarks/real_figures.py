"""Print a Markdown table of every recorded judge configuration in the shared data, as `summarize` reports it.

Usage: python benchmarks/real_figures.py [--resamples 1000] [--seed 0]
Data: $JUDGEBIAS_DATA_ROOT, else shared/data beside the project.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from harness import figure_options
from judgebias.core.record import ItemResult
from judgebias.core.verdict import is_consistent, reconcile
from judgebias.figures.metrics import summarize

DATASETS = ("mtbench-human", "llmbar", "jtj-mtbench", "pandalm-test")


def data_root() -> Path | None:
    """$JUDGEBIAS_DATA_ROOT if it exists, else shared/data next to the project, else None."""
    candidates = [
        os.environ.get("JUDGEBIAS_DATA_ROOT"),
        Path(__file__).resolve().parents[2] / "shared" / "data",
    ]
    for candidate in candidates:
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return None


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a JSONL file."""
    with path.open(encoding="utf-8") as file:
        return [json.loads(line) for line in file if line.strip()]


def results_by_judge(folder: Path) -> dict[str, list[ItemResult]]:
    """One ItemResult list per recorded judge configuration (an unparsed recorded call is "invalid")."""
    items = {record["id"]: record for record in read_jsonl(folder / "items.jsonl")}
    judgments = read_jsonl(folder / "judgments.jsonl")
    one_order = all(record["call2"] is None for record in judgments)  # pandalm-test: response1 first only
    by_judge: dict[str, list[ItemResult]] = {}
    for record in judgments:
        item = items[record["id"]]
        call1 = record["call1"] or "invalid"
        call2 = None if one_order else record["call2"] or "invalid"
        by_judge.setdefault(record["judge"], []).append(
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
                chars_a=len(item["a"]),
                chars_b=len(item["b"]),
                words_a=len(item["a"].split()),
                words_b=len(item["b"].split()),
            )
        )
    return by_judge


def fmt(value: float | None) -> str:
    """A figure with three decimals, or an en dash when it does not exist."""
    return "–" if value is None else f"{value:.3f}"


def with_ci(summary: dict[str, Any], name: str) -> str:
    """A figure followed by its 95% bootstrap interval."""
    value, interval = summary.get(name), summary["ci"].get(name)
    if value is None:
        return "–"
    return f"{value:.3f} [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else fmt(value)


def table(root: Path, resamples: int, seed: int) -> str:
    """The Markdown table, one row per dataset and judge configuration."""
    header = (
        "| data | judge | n | position consistency [95% CI] | biased first | biased second "
        "| win rate of a | human agreement [95% CI] | kappa |"
    )
    lines = [header, "|" + "---|" * 9]
    for dataset in DATASETS:
        folder = root / dataset
        if not (folder / "judgments.jsonl").exists():
            continue
        for judge, results in sorted(results_by_judge(folder).items()):
            s = summarize(results, resamples=resamples, seed=seed)
            consistency = "one order only" if s["orders"] == 1 else with_ci(s, "position_consistency")
            cells = [
                dataset,
                judge,
                str(s["n_scored"]),
                consistency,
                fmt(s["biased_first"]),
                fmt(s["biased_second"]),
                fmt(s["win_rate"]),
                with_ci(s, "human_agreement"),
                fmt(s.get("cohen_kappa")),
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def start(doc: str) -> tuple[argparse.Namespace, Path | None]:
    """The --resamples and --seed options and the shared data folder (None, said on stderr, when not found)."""
    args = figure_options(doc, resamples=1000)
    root = data_root()
    if root is None:
        print("shared data not found: set JUDGEBIAS_DATA_ROOT to the shared/data folder", file=sys.stderr)
    return args, root


def main() -> int:
    """Print the table for the shared data, or say where the data were looked for."""
    args, root = start(__doc__)
    if root is None:
        return 1
    print(table(root, args.resamples, args.seed))
    print()
    print(
        f"n = items scored (no failed call); {args.resamples} item-bootstrap resamples, seed {args.seed}; "
        "an unparsed recorded reply is invalid (a tie, and inconsistent); win rate of a: win 1, tie 0.5; "
        "human agreement: verdict equals the human label over non-tie labels (a judge tie is a miss)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
