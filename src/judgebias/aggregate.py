"""One table for a sweep: every job's headline figures, written as sweep_summary.csv and .md, and printed.

Runs at the end of a multirun (a Hydra callback) and by hand on one or more sweep folders:
`python -m judgebias.aggregate outputs/multirun/2026-11-30/10-00-00 [more sweep dirs]`. It reads only each
job's summary.json, so a failed job (which records its failure there) shows as a row instead of losing the rest;
a job folder without one (a job killed from outside) shows as "missing"; a dry-run job shows its estimate.

Exit status: after the table is written, a sweep in which any job failed, had failed calls or is missing ends
with exit code 1 (both at the end of a multirun and by hand), so a script or CI notices; 2 means nothing to
aggregate. The table itself is always written first.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import yaml

from judgebias.core.errors import EXIT_BATCH_PENDING
from judgebias.core.fields import as_typed
from judgebias.core.overrides import readable_jobs
from judgebias.core.summary import Summary, SummaryError, read_summary, status_reason
from judgebias.figures import catalogue
from judgebias.figures.catalogue import Figure, Sweep
from judgebias.figures.formatting import ci_text, points
from judgebias.figures.headline import models_text, seen_from_side
from judgebias.io.files import write_csv, write_text_atomic
from judgebias.io.run_dir import DRY_RUN, HYDRA, SUMMARY, RunDir
from judgebias.process import startup
from judgebias.process.command import CommandParser, prog, say

FAILED_STATUSES = ("failed", "errors", "missing", "budget")
SWEEP_FIGURES = catalogue.in_sweep()  # (figure, how it shows) in the order of the table's columns
RATES = tuple(entry.name for entry, sweep in SWEEP_FIGURES if sweep.interval)  # shown with their interval


def _figure_columns(entry: Figure, sweep: Sweep) -> tuple[str, ...]:
    """A figure's CSV columns: its value, its interval's ends, the count it is computed on."""
    ends = (f"{entry.name}_low", f"{entry.name}_high") if sweep.interval else ()
    return (entry.name, *ends, *((entry.count,) if entry.count else ()))


COLUMNS = (
    "job",
    "status",
    "judge",
    "rubric",
    "data",
    "models",
    "overrides",
    "n",
    *(column for entry, sweep in SWEEP_FIGURES for column in _figure_columns(entry, sweep)),
    "n_invalid",
    "failed_calls",
    "calls_live",
    "calls_cached",
    "calls_offline",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "saved_usd",
    "error",
    "status_note",
)

# (heading, how to show a row) for the Markdown file and the printed table.
READABLE = (
    "job",
    "status",
    "judge",
    "rubric",
    "data",
    "models",
    "overrides",
    "n",
    *(sweep.heading for _, sweep in SWEEP_FIGURES),
    "invalid",
    "calls live/cached",
    "tokens in/out",
    "cost $",
)


@dataclass
class Job:
    """One job folder of a sweep and what it left behind."""

    name: str
    path: Path
    summary: Summary  # summary.json as written; a dry run's estimate or a failure record have a few of its keys
    overrides: list[str] = field(default_factory=list)
    backend: str | None = None  # judge.backend from the job's composed config (None: not recorded)


def find_jobs(sweep_dirs: Sequence[Path]) -> list[Job]:
    """Every job folder under the given sweep folders: its summary.json, dry_run.json, or a 'missing' record."""
    sweeps = [Path(os.path.abspath(sweep)) for sweep in sweep_dirs]
    base = sweeps[0] if len(sweeps) == 1 else Path(os.path.commonpath([sweep.parent for sweep in sweeps]))
    jobs, seen = [], set()
    for sweep in sweeps:
        for folder in sorted(_job_folders(sweep), key=lambda p: _natural(p.relative_to(sweep))):
            if folder in seen:
                continue
            seen.add(folder)
            name = folder.relative_to(base).as_posix() if folder != base else folder.name
            jobs.append(Job(name, folder, _job_summary(folder), _overrides(folder), _backend(folder)))
    return jobs


def _job_folders(sweep: Path) -> set[Path]:
    """Folders that hold a job's results, or a Hydra job record (.hydra/) without results."""
    folders = {p.parent for p in sweep.rglob(SUMMARY)}
    folders |= {p.parent for p in sweep.rglob(DRY_RUN)}
    folders |= {p.parent.parent for p in sweep.rglob(f"{HYDRA}/overrides.yaml")}
    return folders


def _job_summary(folder: Path) -> Summary:
    """The job's summary.json; else its dry-run estimate; else a record saying the job left no result."""
    run = RunDir(folder)
    for path, status in ((run.summary, None), (run.dry_run, "dry-run")):
        name = path.name
        if not path.exists():
            continue
        try:
            value = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as error:  # ValueError: bad JSON, or a number too long to read
            return {"status": "failed", "error": f"unreadable {name}: {error}"}
        if not isinstance(value, dict):
            return {"status": "failed", "error": f"unreadable {name}: not a JSON object"}
        if status is not None:  # a dry run's estimate, read under the summary's names for the table
            value |= {
                "status": status,
                "prompt_tokens": value.get("prompt_tokens_est"),
                "cost_usd": value.get("cost_usd_est"),
            }
        try:
            return read_summary(value, str(path))
        except SummaryError as error:
            return {"status": "failed", "error": f"unreadable {name}: {error}"}
    overrides = _overrides(folder)
    choices = {o.split("=", 1)[0]: o.split("=", 1)[1] for o in overrides if "=" in o}
    return {
        "status": "missing",
        "error": "no summary.json: the job was interrupted or killed before it finished (see its log)",
        "judge": choices.get("judge"),
        "rubric": choices.get("rubric"),
        "data": choices.get("data"),
    }


def _overrides(folder: Path) -> list[str]:
    """The job's command-line overrides as Hydra recorded them (empty when Hydra kept no record)."""
    path = folder / ".hydra" / "overrides.yaml"
    if not path.exists():
        return []
    value = _yaml(path)
    return [as_typed(str(v)) for v in value] if isinstance(value, list) else []


def _backend(folder: Path) -> str | None:
    """The job's judge.backend as Hydra saved its composed config (None when there is no readable record)."""
    path = folder / ".hydra" / "config.yaml"
    if not path.exists():
        return None
    config = _yaml(path)
    judge = config.get("judge") if isinstance(config, dict) else None
    value = judge.get("backend") if isinstance(judge, dict) else None
    return None if value is None else str(value)


def _yaml(path: Path) -> Any:
    """A Hydra record (plain YAML), or None when it cannot be read: a damaged record must not stop the table."""
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None


def scripted_rubric_note(rows: Sequence[dict[str, Any]]) -> str | None:
    """Why rows that differ only by rubric look the same: a scripted judge decides by rule and never reads it."""
    if len({row["rubric"] for row in rows}) < 2:
        return None
    scripted = sorted({str(row["judge"]) for row in rows if row.get("backend") == "scripted"})
    if not scripted:
        return None
    who = f"{scripted[0]} is a scripted judge" if len(scripted) == 1 else f"{', '.join(scripted)} are scripted judges"
    return (
        f"note: {who} (a fixed rule that never reads the rubric): rows that differ only in rubric are the same; "
        "compare rubrics with a live or replay judge"
    )


def _natural(path: Path) -> list[Any]:
    """Sort job folders 0, 1, 2, ..., 10 rather than 0, 1, 10, 2."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in path.parts]


def varying_overrides(jobs: Sequence[Job]) -> dict[str, list[str]]:
    """Per job, the overrides that differ between the jobs: what the sweep varied, readable (values unquoted, a
    file by its name, a URL by its host:port, unless that would hide the difference)."""
    if len(jobs) < 2:
        return {job.name: [] for job in jobs}
    common = set.intersection(*(set(job.overrides) for job in jobs))
    varied = readable_jobs([[o for o in job.overrides if o not in common] for job in jobs])
    return {job.name: overrides for job, overrides in zip(jobs, varied, strict=True)}


def table_rows(jobs: Sequence[Job]) -> list[dict[str, Any]]:
    """One row per job with the columns of COLUMNS (intervals as separate low/high numbers)."""
    varied = varying_overrides(jobs)
    rows = []
    for job in jobs:
        s = cast(Summary, seen_from_side(job.summary))  # win rates of the side the headline reports
        ci = s.get("ci") or {}
        fields: Mapping[str, object] = s  # the columns are named by COLUMNS, not literally
        row = {column: fields.get(column) for column in COLUMNS}
        shown = " ".join(o for o in varied[job.name] if not _in_columns(o, s))
        status = s.get("status", "ok")
        row |= {"job": job.name, "status": status, "n": s.get("n_items"), "overrides": shown}
        row["models"] = models_text(s) or None
        row["status_note"] = "" if status in ("ok", "dry-run") else status_reason(s)
        row["backend"] = job.backend  # not a CSV column: read by the note on scripted judges
        for name in RATES:
            low, high = _pair(ci.get(name))
            row[f"{name}_low"], row[f"{name}_high"] = low, high
        rows.append(row)
    return rows


def _in_columns(override: str, summary: Summary) -> bool:
    """Whether an override only picks the judge, rubric or data that the row's own columns already name."""
    key, _, value = override.partition("=")
    named = {"judge": summary.get("judge"), "rubric": summary.get("rubric"), "data": summary.get("data")}
    return key in named and named[key] == value


def _pair(value: Any) -> tuple[float | None, float | None]:
    if isinstance(value, list | tuple) and len(value) == 2 and None not in value:
        return float(value[0]), float(value[1])
    return None, None


def _rate(row: dict[str, Any], name: str) -> str:
    value = row.get(name)
    if value is None:
        return ""
    low, high = row.get(f"{name}_low"), row.get(f"{name}_high")
    return points(value) + ci_text((low, high))


def readable(row: dict[str, Any]) -> list[str]:
    """A row as the people-facing table shows it: percentages with intervals, paired counts."""

    def text(value: Any) -> str:
        return "" if value is None else str(value)

    live, cached, offline = row.get("calls_live"), row.get("calls_cached"), row.get("calls_offline")
    tokens_in, tokens_out = row.get("prompt_tokens"), row.get("completion_tokens")
    cost = row.get("cost_usd")
    return [
        text(row["job"]),
        text(row["status"]),
        text(row["judge"]),
        text(row["rubric"]),
        text(row["data"]),
        text(row.get("models")),
        text(row["overrides"]),
        text(row["n"]),
        *(_rate(row, entry.name) if sweep.interval else points(row.get(entry.name)) for entry, sweep in SWEEP_FIGURES),
        text(row.get("n_invalid")),
        f"{offline} offline" if offline else ("" if live is None else f"{live}/{text(cached)}"),
        "" if tokens_in is None else f"{tokens_in}/{text(tokens_out)}",
        "" if cost is None else f"{float(cost):.4f}",
    ]


_OPTIONAL_HEADINGS = {sweep.heading: entry.name for entry, sweep in SWEEP_FIGURES if sweep.optional}


def _shown_columns(rows: Sequence[dict[str, Any]]) -> list[int]:
    """Indexes of READABLE to show: all, except the overrides column when the sweep varied nothing visible and an
    optional figure's column when no job has it."""
    hidden = {"overrides"} if not any(r["overrides"] for r in rows) else set()
    hidden |= {"models"} if not any(r.get("models") for r in rows) else set()
    hidden |= {heading for heading, name in _OPTIONAL_HEADINGS.items() if all(r.get(name) is None for r in rows)}
    return [i for i, name in enumerate(READABLE) if name not in hidden]


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The table as Markdown (percentages; failures listed under it)."""
    shown = _shown_columns(rows)
    lines = ["| " + " | ".join(READABLE[i] for i in shown) + " |", "|" + "---|" * len(shown)]
    for row in rows:
        cells = readable(row)
        lines.append("| " + " | ".join(_md_cell(cells[i]) for i in shown) + " |")
    failures = [f"- {line}" for line in status_lines(rows)]
    note = scripted_rubric_note(rows)
    failures += [note] if note else []
    return "\n".join(lines) + "\n" + ("\n" + "\n".join(failures) + "\n" if failures else "")


def status_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """One line per job that did not end plainly ok, saying why: failed, missing, unreadable, mixed, capped."""
    return [f"job {row['job']} {row['status']}: {row['status_note']}" for row in rows if row["status_note"]]


# When the printed table is wider than the terminal: first these shorter headings, then whole columns left out.
SHORT_HEADINGS = {
    **{sweep.heading: sweep.short for _, sweep in SWEEP_FIGURES},
    "invalid": "inv.",
    "calls live/cached": "calls",
    "tokens in/out": "tokens",
}
# Columns left out to fit a terminal, least telling first: the table's own columns here, the figures' by their
# catalogue entry. job, judge, rubric, data, overrides and the figures without a rank always stay.
_LEFT_OUT_RANKS = {
    "tokens in/out": 0,
    "cost $": 1,
    "calls live/cached": 3,
    "invalid": 4,
    "n": 7,
    "status": 8,
    **{sweep.heading: sweep.leave_out for _, sweep in SWEEP_FIGURES if sweep.leave_out is not None},
}
LEFT_OUT_FIRST = tuple(sorted(_LEFT_OUT_RANKS, key=lambda heading: _LEFT_OUT_RANKS[heading]))


def terminal_width() -> int | None:
    """The width to fit the printed table to: $COLUMNS, else the terminal's; None (no limit) when not a terminal."""
    if os.environ.get("COLUMNS", "").strip().isdigit() or sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def text_table(rows: Sequence[dict[str, Any]], width: int | None = None) -> str:
    """The table as aligned plain text for the terminal, with one line per failed job under it.

    Given a `width`, the table is made to fit it: shorter headings, then columns left out (named under the
    table; the .md and .csv files keep them all).
    """
    cells = [readable(row) for row in rows]
    headings = {i: READABLE[i] for i in _shown_columns(rows)}
    left_out: list[str] = []
    lines = _aligned(headings, cells)
    if width is not None and _widest(lines) > width:
        headings = {i: SHORT_HEADINGS.get(h, h) for i, h in headings.items()}
        for name in LEFT_OUT_FIRST:
            lines = _aligned(headings, cells)
            if _widest(lines) <= width:
                break
            if READABLE.index(name) in headings:
                del headings[READABLE.index(name)]
                left_out.append(name)
        lines = _aligned(headings, cells)
    said = status_lines(rows)
    if left_out:
        said.append(f"(left out to fit {width} columns: {', '.join(left_out)}; sweep_summary.md and .csv have them)")
    note = scripted_rubric_note(rows)
    said += [note] if note else []
    if width is not None:
        said = [textwrap.fill(line, width, subsequent_indent="  ", break_on_hyphens=False) for line in said]
    return "\n".join(lines + said)


def _aligned(headings: Mapping[int, str], cells: Sequence[list[str]]) -> list[str]:
    """The heading line and one line per row, each column as wide as its widest cell."""
    shown = list(headings)
    widths = [max(len(headings[i]), *(len(c[i]) for c in cells)) if cells else len(headings[i]) for i in shown]
    lines = ["  ".join(headings[i].ljust(w) for i, w in zip(shown, widths, strict=True)).rstrip()]
    lines += ["  ".join(c[i].ljust(w) for i, w in zip(shown, widths, strict=True)).rstrip() for c in cells]
    return lines


def _widest(lines: Sequence[str]) -> int:
    return max(len(line) for line in lines)


def failed(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of jobs that failed, had failed calls, or left no result."""
    return [row for row in rows if row["status"] in FAILED_STATUSES]


def aggregate(sweep_dirs: Sequence[Path], out_dir: Path | None = None, *, report: bool = True) -> list[dict[str, Any]]:
    """Write sweep_summary.csv, sweep_summary.md and sweep_report.html into `out_dir`; return the rows."""
    target = out_dir or sweep_dirs[0]
    jobs = find_jobs(sweep_dirs)
    rows = table_rows(jobs)
    if not rows:
        return rows
    target.mkdir(parents=True, exist_ok=True)
    write_csv(target / "sweep_summary.csv", list(COLUMNS), rows)
    write_text_atomic(target / "sweep_summary.md", markdown(rows))
    if report:
        from judgebias.report.sweep_report import SweepJob, write_sweep_report

        pages = []
        for job, row in zip(jobs, rows, strict=True):
            page = RunDir(job.path).report
            href = Path(os.path.relpath(page, target)).as_posix() if page.exists() else None
            pages.append(SweepJob(job.name, job.summary, row["overrides"], href, job.path))
        write_sweep_report(target, pages)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m judgebias.aggregate SWEEP_DIR [SWEEP_DIR ...] [--out DIR]`: 0 all ok, 1 a job failed, 2 usage."""
    startup.run_begins()  # started: from here on Ctrl-C is this command's to handle
    parser = CommandParser(prog=prog("aggregate"), description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("sweep_dirs", nargs="+", type=Path, help="sweep folders (outputs/multirun/...)")
    parser.add_argument("--out", type=Path, default=None, help="where to write the table (default: the first sweep)")
    parser.add_argument("--no-report", action="store_true", help="do not write sweep_report.html")
    args = parser.parse_args(argv)
    for sweep in args.sweep_dirs:
        if not sweep.is_dir():
            say(f"judgebias: error: {sweep} is not a folder", error=True)
            return 2
    rows = aggregate(args.sweep_dirs, args.out, report=not args.no_report)
    if not rows:
        say(f"judgebias: error: no job folder under {', '.join(map(str, args.sweep_dirs))}", error=True)
        return 2
    target = args.out or args.sweep_dirs[0]
    say(f"sweep summary ({target}/sweep_summary.md):")
    say(text_table(rows, terminal_width()))
    return exit_code(rows)


def pending(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The jobs whose calls are out as a batch, not collected yet."""
    return [row for row in rows if row["status"] == "pending"]


def exit_code(rows: list[dict[str, Any]]) -> int:
    """1 when a job failed; else 75 when a job's batch is still out (rerun to collect); else 0."""
    if failed(rows):
        return 1
    return EXIT_BATCH_PENDING if pending(rows) else 0


if __name__ == "__main__":
    sys.exit(main())
