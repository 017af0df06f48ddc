"""Print the Markdown row of a live run for docs/real-judges.md: its summary's figures and its soft verdicts' calibration.

Usage: python benchmarks/real_model.py RUN_DIR [RUN_DIR ...]

Method. Consistency, biased first/second, invalid share, human agreement and judging time are the run's own
summary.json figures. The soft-verdict columns are read from verdicts.jsonl on the items whose human label is
decisive ("1" or "2"): `soft` is P(a preferred) averaged over both orders (judgebias.core.judged.soft_preference);
the Brier score is the mean of (soft - [human = a])^2 (0.25 for a constant 0.5: no information), soft agreement is the
share of items where soft > 0.5 agrees with the human; P(first) is the mean over every call of P(first shown label)
among the two labels, the position preference the probabilities themselves show.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _first_share(probs: dict[str, float] | None) -> float | None:
    """P(first shown) among the two labels of one call's probabilities."""
    if not probs:
        return None
    first, second = probs.get("A", 0.0), probs.get("B", 0.0)
    return first / (first + second) if first + second > 0 else None


def row(run_dir: Path) -> str:
    """The Markdown row of one run folder."""
    summary: dict[str, Any] = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    lines = [json.loads(line) for line in (run_dir / "verdicts.jsonl").read_text(encoding="utf-8").splitlines()]
    decisive = [line for line in lines if line.get("human") in ("1", "2") and line.get("soft") is not None]
    truth = [1.0 if line["human"] == "1" else 0.0 for line in decisive]
    soft = [float(line["soft"]) for line in decisive]
    brier = sum((s - t) ** 2 for s, t in zip(soft, truth, strict=True)) / len(soft) if soft else None
    agreement = sum((s > 0.5) == (t == 1.0) for s, t in zip(soft, truth, strict=True)) / len(soft) if soft else None
    shares = [x for line in lines for x in (_first_share(line.get("probs1")), _first_share(line.get("probs2"))) if x]
    calls = summary["calls_total"]
    seconds = summary["judging_seconds"]

    def number(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.3f}"

    return (
        f"| {summary['data']} | {summary['n_items']} | {number(summary['position_consistency'])} | "
        f"{number(summary['biased_first'])} | {number(summary['biased_second'])} | "
        f"{summary['n_invalid']}/{calls} | {number(summary.get('human_agreement'))} | "
        f"{number(brier)} | {number(agreement)} | {number(sum(shares) / len(shares) if shares else None)} | "
        f"{summary['calls_live']} in {seconds:.0f} s ({summary['calls_live'] / seconds:.3f}/s) |"
    )


def main(argv: list[str]) -> int:
    """Print the header and one row per run folder."""
    print(
        "| data | n | position consistency | biased first | biased second | invalid | human agreement | "
        "soft Brier | soft agreement | P(first) | live calls |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for folder in argv:
        print(row(Path(folder)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
