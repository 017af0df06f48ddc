"""Before and after: `python -m judgebias.compare BASE CAND [--out DIR]` compares two runs judged on the same items.

For each headline figure it gives the base value, the candidate's, and the paired difference (candidate minus
base) with its 95% interval, from one bootstrap that draws the same items (or clusters) for both runs, and an exact
paired test where one exists; then the items that moved (became consistent or inconsistent, verdict flipped, now
agrees or disagrees with people). `compare SWEEP_DIR --baseline-job 0` compares every job of a sweep with job 0.
With --out it writes compare.json and compare.html there (without, it only prints). Exit codes: 0 compared,
2 usage error (a folder without a finished run, no common item, a malformed verdict line).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from judgebias.core.bounds import LISTED, RESAMPLES, SEED
from judgebias.core.errors import EXIT_USER_ERROR, UserError
from judgebias.core.summary import Summary, SummaryError, read_summary
from judgebias.figures.comparison import DEFAULT_LISTED, DEFAULT_RESAMPLES, Comparison, RunFiles, compare_runs
from judgebias.figures.comparison_text import format_comparison, format_sweep
from judgebias.figures.metrics import PeopleSettings
from judgebias.figures.paired import SIDE_FIELDS
from judgebias.io.design import read_design
from judgebias.io.files import read_user_text, write_json
from judgebias.io.run_dir import RunDir
from judgebias.io.verdict_files import fetch_lines, read_verdicts
from judgebias.process import startup
from judgebias.process.command import CommandParser, bounded, exit_as_command, prog, say

__all__ = ["compare_runs", "main", "read_run"]


def read_run(folder: Path) -> RunFiles:
    """A finished run's summary.json and verdicts.jsonl (as columns); a folder without them, a bad line: one line."""
    if not folder.is_dir():
        raise UserError(f"{folder} is not a folder")
    run = RunDir(folder)
    summary = _summary(run.summary, folder)
    _text(run.verdicts, folder, read=False)  # a missing file says whether the run stopped before it finished
    return RunFiles(folder, summary, read_verdicts(run.verdicts))


def people_of(run: RunFiles) -> PeopleSettings | None:
    """How the base run's labels corrected its figures (its sampling design, its prediction), for the comparison's
    corrected figures; None: the labels are taken as a uniform sample."""
    corrected = run.summary.get("corrected") or {}
    source = (corrected.get("design") or {}).get("source")
    prediction = str(corrected.get("prediction") or "auto")
    if not source:
        return PeopleSettings(prediction=prediction) if corrected else None
    try:
        design = read_design(Path(source), None)
    except UserError as error:
        raise UserError(
            f"{run.folder}: its corrected figures used a sample this comparison cannot read: {error}"
        ) from None
    return PeopleSettings(design=design, prediction=prediction)


def with_replies(comparison: Comparison) -> list[dict[str, Any]]:
    """The listed moved items with both runs' verdicts, calls and replies, read again from their lines."""
    base = fetch_lines(comparison.base.verdicts.path, [item["base_line"] for item in comparison.moved])
    cand = fetch_lines(comparison.cand.verdicts.path, [item["cand_line"] for item in comparison.moved])
    return [
        {
            **{key: value for key, value in item.items() if not key.endswith("_line")},
            "base": _side(base.get(item["base_line"], {})),
            "cand": _side(cand.get(item["cand_line"], {})),
        }
        for item in comparison.moved
    ]


def _side(line: dict[str, Any]) -> dict[str, Any]:
    """What a reviewer reads of one run's item: its verdict, both calls and both replies as received."""
    return {key: line.get(key) for key in SIDE_FIELDS}


def _summary(path: Path, folder: Path) -> Summary:
    """summary.json of a run that has verdicts (not a dry run, a failure record or a job still pending)."""
    try:
        value = json.loads(_text(path, folder))
    except (ValueError, RecursionError) as error:  # JSONDecodeError is a ValueError
        raise UserError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(value, dict):
        raise UserError(f"{path}: not a JSON object")
    if value.get("status") in ("dry-run", "failed", "pending"):
        raise UserError(f"{folder}: its run is {value['status']}, with no verdicts to compare")
    try:
        return read_summary(value, str(path))
    except SummaryError as error:
        raise UserError(str(error)) from None


def _text(path: Path, folder: Path, *, read: bool = True) -> str:
    """A run file's text; a missing one says whether the run stopped before it finished."""
    if not path.is_file():
        stopped = RunDir(folder).verdicts_partial.exists()
        why = "the run stopped before it finished (verdicts.jsonl.part): rerun it" if stopped else "no finished run"
        raise UserError(f"{folder} has no {path.name}: {why}")
    if not read:
        return ""
    try:
        return read_user_text(path, "run file")
    except OSError as error:  # present but unreadable (permissions)
        raise UserError(f"{path}: cannot be read ({error.strerror or error})") from None


def sweep_comparisons(sweep: Path, baseline_job: str, **settings: Any) -> list[tuple[str, Comparison]]:
    """Every finished job of a sweep against the baseline job, in job order."""
    from judgebias.aggregate import find_jobs  # the sweep's job folders (only a sweep needs them)

    jobs = [job for job in find_jobs([sweep]) if job.summary.get("status") not in ("missing", "dry-run", "failed")]
    names = [job.name for job in jobs]
    if baseline_job not in names:
        raise UserError(
            f"--baseline-job {baseline_job}: no finished job of that name in {sweep} (jobs: {', '.join(names) or 'none'})"
        )
    base = read_run(jobs[names.index(baseline_job)].path)
    people = people_of(base)
    return [
        (job.name, compare_runs(base, read_run(job.path), people=people, **settings))
        for job in jobs
        if job.name != baseline_job
    ]


# ---------------------------------------------------------------- command


def parser() -> argparse.ArgumentParser:
    """The command line of compare."""
    p = CommandParser(
        prog=prog("compare"),
        description="Paired before/after comparison of two runs on the same items (or every job of a sweep "
        "against one job): differences with 95%% paired intervals, exact paired tests, the items that moved.",
    )
    p.add_argument(
        "paths", nargs="+", type=Path, help="BASE CAND (two run folders), or one sweep folder with --baseline-job"
    )
    p.add_argument("--baseline-job", help="with one sweep folder: the job every other job is compared with (e.g. 0)")
    p.add_argument("--out", type=Path, help="write compare.json and compare.html into this folder")
    p.add_argument(
        "--resamples",
        type=bounded(RESAMPLES),
        help=f"bootstrap resamples (default: the base run's, at least {DEFAULT_RESAMPLES})",
    )
    p.add_argument("--seed", type=bounded(SEED), help="bootstrap seed (default: the base run's, else 0)")
    p.add_argument(
        "--list",
        type=bounded(LISTED),
        default=DEFAULT_LISTED,
        metavar="N",
        help=f"list the first N moved items of each kind with their replies, and N ids of each other kind "
        f"(default {DEFAULT_LISTED}; every item is counted)",
    )
    return p


def main(argv: Sequence[str] | None = None, echo: Callable[[str], None] = say) -> int:
    """Compare, print, write; the exit code."""
    startup.run_begins()  # started: from here on Ctrl-C is this command's to handle
    args = parser().parse_args(argv)
    settings = {"resamples": args.resamples, "seed": args.seed, "listed": args.list}
    try:
        if args.baseline_job is not None:
            if len(args.paths) != 1:
                raise UserError("--baseline-job takes one sweep folder")
            comparisons = sweep_comparisons(args.paths[0], args.baseline_job, **settings)
            if not comparisons:
                raise UserError(f"{args.paths[0]}: no finished job besides job {args.baseline_job} to compare")
            echo(format_sweep(args.baseline_job, comparisons))
            if args.out is not None:
                documents = [{"job": job, **_document(c)} for job, c in comparisons]
                write_outputs(
                    args.out,
                    {"baseline_job": args.baseline_job, "comparisons": documents},
                    [c for _, c in comparisons],
                    [job for job, _ in comparisons],
                    [document["moved"] for document in documents],
                )
            return 0
        if len(args.paths) != 2:
            raise UserError("give two run folders (BASE CAND), or one sweep folder with --baseline-job")
        base = read_run(args.paths[0])
        comparison = compare_runs(base, read_run(args.paths[1]), people=people_of(base), **settings)
        echo(format_comparison(comparison))
        if args.out is not None:
            document = _document(comparison)
            write_outputs(args.out, document, [comparison], None, [document["moved"]])
    except UserError as error:
        say(f"judgebias.compare: error: {error}", error=True)
        return EXIT_USER_ERROR
    return 0


def _document(comparison: Comparison) -> dict[str, Any]:
    """compare.json's content for one comparison, the listed moved items with their replies."""
    return {**comparison.as_json(), "moved": with_replies(comparison)}


def write_outputs(
    out: Path,
    document: dict[str, Any],
    comparisons: Sequence[Comparison],
    jobs: Sequence[str] | None,
    moved: Sequence[list[dict[str, Any]]],
) -> None:
    """compare.json and compare.html in `out` (`jobs`: the sweep's job of each comparison; `moved`: each one's
    listed moved items with their replies)."""
    from judgebias.report.compare_page import write_compare_page

    try:
        out.mkdir(parents=True, exist_ok=True)
        write_json(out / "compare.json", document)
        write_compare_page(out / "compare.html", comparisons, jobs, moved)
    except OSError as error:
        raise UserError(f"cannot write into {out}: {error.strerror or error}") from None


if __name__ == "__main__":
    exit_as_command(main, "compare interrupted: nothing was written")
