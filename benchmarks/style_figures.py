"""Print a Markdown table of style bias for every recorded judge configuration in the shared data.

Usage: python benchmarks/style_figures.py [--resamples 1000] [--seed 0]
Data: $JUDGEBIAS_DATA_ROOT, else shared/data beside the project.

Method: each item's answers are counted for markdown features exactly as a run records them (style.style_of on
the answers as written); the recorded verdicts are read as benchmarks/real_figures.py reads them; the figures
are summarize()'s: styled_wins over decisive verdicts between answers that differ in formatting (more features
in all = more formatted), the style-controlled win rate beside the decisive and length-controlled ones, and
the fitted style coefficients (log-odds per standard deviation of the log ratio of counts, a over b). Where
the items carry human labels, the row "(human label)" reads the label as a verdict: how often people preferred
the more formatted answer on the same items, the baseline a judge's styled_wins should be read against.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

from judgebias.core.record import ItemResult
from judgebias.core.style import style_of
from judgebias.figures.metrics import summarize
from real_figures import DATASETS, fmt, read_jsonl, results_by_judge, start, with_ci

HUMANS = "(human label)"
CALLS = {"1": ("A", "B"), "2": ("B", "A"), "tie": ("tie", "tie")}


def styled_results(folder: Path) -> dict[str, list[ItemResult]]:
    """The recorded judges' rows with the style features of both answers, and the human labels as a judge."""
    items = read_jsonl(folder / "items.jsonl")
    styles = {r["id"]: (style_of(r["a"]), style_of(r["b"])) for r in items}
    out = {
        judge: [dataclasses.replace(r, style_a=styles[r.id][0], style_b=styles[r.id][1]) for r in rows]
        for judge, rows in results_by_judge(folder).items()
    }
    # The human label read as a verdict: how often people prefer the more formatted answer on the same items.
    labelled = [r for r in items if r.get("human") in CALLS]
    if labelled:
        out[HUMANS] = [
            ItemResult(
                id=r["id"],
                verdict=r["human"],
                call1=CALLS[r["human"]][0],
                call2=CALLS[r["human"]][1],
                consistent=True,
                words_a=len(r["a"].split()),
                words_b=len(r["b"].split()),
                style_a=styles[r["id"]][0],
                style_b=styles[r["id"]][1],
            )
            for r in labelled
        ]
    return out


def coefficients(summary: dict[str, Any]) -> str:
    """The fitted coefficients, largest first, as name +0.00."""
    pairs = sorted(summary["style_coefficients"].items(), key=lambda kv: -abs(kv[1]))
    return ", ".join(f"{name} {value:+.2f}" for name, value in pairs) or "–"


def table(root: Path, resamples: int, seed: int) -> str:
    """The Markdown table, one row per dataset and judge configuration."""
    header = (
        "| data | judge | styled_wins [95% CI] | n | decisive win rate of a | length-controlled "
        "| style-controlled [95% CI] | coefficients (log-odds per SD) |"
    )
    lines = [header, "|" + "---|" * 8]
    for dataset in DATASETS:
        folder = root / dataset
        if not (folder / "judgments.jsonl").exists():
            continue
        for judge, results in sorted(styled_results(folder).items(), key=lambda kv: (kv[0] != HUMANS, kv[0])):
            s = summarize(results, resamples=resamples, seed=seed)
            cells = [
                dataset,
                judge,
                with_ci(s, "styled_wins"),
                str(s["styled_wins_n"]),
                fmt(s["decisive_win_rate"]),
                fmt(s["length_controlled_win_rate"]),
                with_ci(s, "style_controlled_win_rate"),
                coefficients(s),
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def formatting_differs(root: Path) -> str:
    """Per dataset: items, and items whose answers differ in formatting."""
    parts = []
    for dataset in DATASETS:
        path = root / dataset / "items.jsonl"
        if path.exists():
            items = read_jsonl(path)
            differ = sum(1 for r in items if style_of(r["a"]).total != style_of(r["b"]).total)
            parts.append(f"{dataset}: {differ} of {len(items)} items")
    return "answers differ in formatting in " + "; ".join(parts)


def main() -> int:
    """Print the table for the shared data, or say where the data were looked for."""
    args, root = start(__doc__)
    if root is None:
        return 1
    print(table(root, args.resamples, args.seed))
    print()
    print(formatting_differs(root))
    print(
        f"{args.resamples} item-bootstrap resamples, seed {args.seed}; styled_wins: share of decisive verdicts won "
        "by the answer with more markdown features; style-controlled: decisive win rate of a at equal length and "
        "formatting (logistic fit); an unparsed recorded reply is invalid (a tie)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
