"""One table for a sweep: every job's headline figures, written as sweep_summary.csv and .md, and printed.

Runs at the end of a multirun (a Hydra callback) and by hand on one or more sweep folders:
`python -m judgebias.aggregate outputs/multirun/2026-11-30/10-00-00 [more sweep dirs]`. It reads only each
job's summary.json, so a failed job (which records its failure there) shows as a row instead of losing the rest.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

COLUMNS = (
    "job",
    "status",
    "judge",
    "rubric",
    "data",
    "n",
    "win_rate",
    "win_rate_ci",
    "position_consistency",
    "position_consistency_ci",
    "biased_first",
    "biased_second",
    "human_agreement",
    "human_agreement_ci",
    "n_invalid",
    "failed_calls",
    "calls_live",
    "calls_cached",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "error",
)


def job_summaries(sweep_dirs: Sequence[Path]) -> list[tuple[str, dict[str, Any]]]:
    """(job name, summary) for every job folder holding a summary.json under the given sweep folders."""
    found = []
    for sweep in sweep_dirs:
        for path in sorted(sweep.rglob("summary.json"), key=lambda p: _natural(p.parent.relative_to(sweep))):
            name = str(path.parent.relative_to(sweep.parent if len(sweep_dirs) > 1 else sweep)) or "."
            try:
                found.append((name, json.loads(path.read_text(encoding="utf-8"))))
            except (OSError, json.JSONDecodeError) as error:
                found.append((name, {"status": "failed", "error": f"unreadable summary.json: {error}"}))
    return found


def _natural(path: Path) -> list[Any]:
    """Sort job folders 0, 1, 2, ..., 10 rather than 0, 1, 10, 2."""
    return [int(part) if part.isdigit() else part for part in path.parts]


def table_rows(summaries: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """One row per job with the columns of COLUMNS (intervals as 'low–high')."""
    rows = []
    for name, s in summaries:
        ci = s.get("ci") or {}
        row = {column: s.get(column) for column in COLUMNS}
        row |= {
            "job": name,
            "status": s.get("status", "ok"),
            "n": s.get("n_items"),
            "win_rate_ci": _interval(ci.get("win_rate")),
            "position_consistency_ci": _interval(ci.get("position_consistency")),
            "human_agreement_ci": _interval(ci.get("human_agreement")),
        }
        rows.append(row)
    return rows


def _interval(pair: Any) -> str | None:
    if not pair or pair[0] is None:
        return None
    return f"{pair[0]:.3f}–{pair[1]:.3f}"


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown(rows: list[dict[str, Any]]) -> str:
    """The table as Markdown."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_cell(row[c]) for c in COLUMNS) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def aggregate(sweep_dirs: Sequence[Path], out_dir: Path | None = None) -> list[dict[str, Any]]:
    """Write sweep_summary.csv, sweep_summary.md (and the sweep report) into `out_dir`; return the rows."""
    target = out_dir or sweep_dirs[0]
    rows = table_rows(job_summaries(sweep_dirs))
    with (target / "sweep_summary.csv").open("w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=list(COLUMNS))
        writer.writeheader()
        writer.writerows(rows)
    (target / "sweep_summary.md").write_text(markdown(rows), encoding="utf-8")
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    """A compact terminal table of the sweep."""
    columns = (
        "job",
        "status",
        "judge",
        "rubric",
        "data",
        "n",
        "win_rate",
        "position_consistency",
        "biased_first",
        "biased_second",
        "human_agreement",
        "calls_live",
    )
    widths = {c: max(len(c), *(len(_cell(r[c])) for r in rows)) for c in columns}
    print("  ".join(c.ljust(widths[c]) for c in columns))
    for row in rows:
        print("  ".join(_cell(row[c]).ljust(widths[c]) for c in columns))
    failed = [r for r in rows if r["status"] == "failed"]
    for row in failed:
        print(f"job {row['job']} failed: {row['error']}")


class AggregateCallback(Callback):
    """At the end of a multirun, aggregate the sweep folder."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        if not sweep_dir.is_dir():
            return
        rows = aggregate([sweep_dir])
        if rows:
            print(f"\nsweep summary ({sweep_dir}/sweep_summary.md):")
            print_table(rows)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m judgebias.aggregate SWEEP_DIR [SWEEP_DIR ...] [--out DIR]`."""
    parser = argparse.ArgumentParser(prog="python -m judgebias.aggregate", description=__doc__.splitlines()[0])
    parser.add_argument("sweep_dirs", nargs="+", type=Path, help="sweep folders (outputs/multirun/...)")
    parser.add_argument("--out", type=Path, default=None, help="where to write the table (default: the first sweep)")
    args = parser.parse_args(argv)
    for sweep in args.sweep_dirs:
        if not sweep.is_dir():
            print(f"judgebias: error: {sweep} is not a folder", file=sys.stderr)
            return 2
    rows = aggregate(args.sweep_dirs, args.out)
    if not rows:
        print(f"judgebias: error: no summary.json under {', '.join(map(str, args.sweep_dirs))}", file=sys.stderr)
        return 2
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
