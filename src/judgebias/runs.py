"""`python -m judgebias.runs list|clean [FOLDER]`: the run folders under outputs/, and removal of those that hold
no result.

A run stopped by a mistake in its input, by Ctrl-C or by a crash leaves a folder with Hydra's config dumps, its
failure record and perhaps the verdicts decided so far (`verdicts.jsonl.part`). None of that is needed to rerun:
every reply received is in the cache, and a rerun makes a folder of its own. `list` shows every run folder with
what it holds; `clean` removes the ones that hold only such leftovers (`--dry-run` names them without removing).
A folder holding anything else (a finished run, a batch still out, a dry run's estimate, a file of the user's) is
never removed, nor a job of a sweep (the sweep's table lists its failed jobs). Sweep folders (`multirun.yaml`) are
listed too, each with its jobs' statuses and each failed job's reason in one line (`--verbose`: whole); a sweep
killed before its first job started holds only `multirun.yaml`, and `clean` removes it.

Exit codes: 0 done, 2 a user error (one line).
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from judgebias.core.errors import UserError
from judgebias.io.run_dir import HYDRA, MULTIRUN, SUMMARY, RunDir, is_leftover
from judgebias.process import startup
from judgebias.process.command import CommandParser, prog, run_command, say

NO_RESULT_STATUSES = frozenset({"failed", "missing"})  # summary.json of a run that stopped before its result


@dataclass(frozen=True)
class RunFolder:
    """One run folder and what it holds."""

    path: Path
    status: str  # the summary's status; "interrupted" or "missing" when the run wrote none
    reason: str  # the failure record's reason, or what the folder holds
    has_result: bool  # False: only leftovers (see run_dir.is_leftover), safe to remove


def describe(folder: Path) -> RunFolder:
    """What a run folder (one with Hydra's .hydra/ dumps) holds."""
    names = {entry.name for entry in folder.iterdir()}
    run = RunDir(folder)
    summary = _read_summary(run.summary)
    status = str(summary.get("status", "missing" if SUMMARY not in names else "ok"))
    partial = run.verdicts_partial
    if SUMMARY not in names or summary.get("error") == "interrupted":
        status = "interrupted"
    if all(map(is_leftover, names)) and status in NO_RESULT_STATUSES | {"interrupted"}:
        decided = _count_lines(partial) if partial.is_file() else 0
        reason = str(summary.get("error") or "stopped before it finished")
        if decided:
            reason += f"; {decided} verdicts decided before it stopped (their replies are in the cache)"
        return RunFolder(folder, status, reason, has_result=False)
    held = sorted(name for name in names if name != HYDRA)
    return RunFolder(folder, status, ", ".join(held), has_result=True)


@dataclass(frozen=True)
class SweepFolder:
    """One sweep folder: its jobs' (name, status, reason), whether its table was written, and whether it holds
    nothing but Hydra's multirun.yaml (killed before a job started: safe to remove)."""

    path: Path
    jobs: list[tuple[str, str, str]]
    has_table: bool
    only_config: bool


TABLE = "sweep_summary.csv"


def describe_sweep(folder: Path) -> SweepFolder:
    """What a sweep folder (one with Hydra's multirun.yaml) holds."""
    names = {entry.name for entry in folder.iterdir()}
    jobs = []
    for job in sorted((entry for entry in folder.iterdir() if (entry / HYDRA).is_dir()), key=_job_order):
        summary = _read_summary(job / SUMMARY)
        status = str(summary.get("status", "missing" if not (job / SUMMARY).exists() else "ok"))
        if not (job / SUMMARY).exists() or summary.get("error") == "interrupted":
            status = "interrupted"
        jobs.append((job.name, status, str(summary.get("error") or "")))
    return SweepFolder(folder, jobs, TABLE in names, names <= {MULTIRUN})


def _job_order(job: Path) -> tuple[int, str]:
    return (int(job.name), "") if job.name.isdigit() else (1 << 30, job.name)


def sweep_folders(root: Path) -> Iterator[SweepFolder]:
    """Every sweep folder below `root`, finished, failed or killed."""
    for config in sorted(root.rglob(MULTIRUN)):
        if config.is_file():
            yield describe_sweep(config.parent)


def one_line(text: str, verbose: bool, width: int = 160) -> str:
    """An error as one line: its first line, cut to `width` (whole with `verbose`)."""
    if verbose:
        return text
    first = text.strip().splitlines()[0] if text.strip() else ""
    cut = len(first) > width or len(text.strip().splitlines()) > 1
    return first[:width] + (" ... (--verbose: the whole error)" if cut else "")


def _sweep_text(sweep: SweepFolder) -> str:
    """'sweep  4 jobs: 3 ok, 1 failed' (and why a table is missing)."""
    if sweep.only_config:
        return "sweep       no job started (only multirun.yaml): runs clean removes it"
    counts: dict[str, int] = {}
    for _, status, _ in sweep.jobs:
        counts[status] = counts.get(status, 0) + 1
    each = ", ".join(f"{n} {status}" for status, n in sorted(counts.items(), key=lambda kv: kv[0] != "ok"))
    table = "" if sweep.has_table else "; no table (stopped before its end: python -m judgebias.aggregate writes it)"
    return f"sweep       {len(sweep.jobs)} job{'s' if len(sweep.jobs) != 1 else ''}: {each or 'none'}{table}"


def _read_summary(path: Path) -> dict[str, object]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _count_lines(path: Path) -> int:
    with path.open("rb") as lines:
        return sum(1 for line in lines if line.strip())


def run_folders(root: Path) -> Iterator[RunFolder]:
    """Every single run's folder below `root` (jobs of a sweep left out: the sweep's table lists them)."""
    for hydra in sorted(root.rglob(HYDRA)):
        folder = hydra.parent
        if hydra.is_dir() and not (folder.parent / MULTIRUN).exists():
            yield describe(folder)


def _root(folder: Path) -> Path:
    if not folder.exists():
        raise UserError(f"{folder}: no such folder (runs write under outputs/ in the folder they start in)")
    if not folder.is_dir():
        raise UserError(f"{folder}: is a file, not a folder of runs")
    return folder


def list_runs(folder: Path, *, verbose: bool = False) -> None:
    """Print every run folder with its status and what it holds, then every sweep folder with its jobs (each failed
    job's reason in one line); the last line counts those with no result."""
    root = _root(folder)
    runs = list(run_folders(root))
    sweeps = list(sweep_folders(root))
    width = max((len(str(path)) for path in [*(r.path for r in runs), *(s.path for s in sweeps)]), default=0)
    for run in runs:
        holds = run.reason if run.has_result else f"no result: {run.reason}"
        say(f"{str(run.path).ljust(width)}  {run.status:<11} {one_line(holds, verbose)}")
    for sweep in sweeps:
        say(f"{str(sweep.path).ljust(width)}  {_sweep_text(sweep)}")
        for name, status, reason in sweep.jobs:
            if status != "ok":
                say(f"    job {name}: {status}" + (f": {one_line(reason, verbose)}" if reason else ""))
    stubs = sum(not run.has_result for run in runs) + sum(sweep.only_config for sweep in sweeps)
    hint = f": python -m judgebias.runs clean {folder} removes them" if stubs else ""
    say(f"{len(runs)} run folders, {len(sweeps)} sweep folders, {stubs} with no result{hint}")


def clean_runs(folder: Path, *, dry_run: bool) -> None:
    """Remove (or with `dry_run` only name) the run folders that hold no result, then the date folders left empty."""
    root = _root(folder)
    runs = list(run_folders(root))
    stubs = [run for run in runs if not run.has_result]
    for run in stubs:
        say(
            f"{'would remove' if dry_run else 'removed'} {run.path}  ({run.status}: {run.reason.strip().splitlines()[0]})"
        )
        if not dry_run:
            shutil.rmtree(run.path)
            _remove_empty_parents(run.path.parent, root)
    empty_sweeps = [sweep for sweep in sweep_folders(root) if sweep.only_config]
    for sweep in empty_sweeps:
        say(f"{'would remove' if dry_run else 'removed'} {sweep.path}  (a sweep with no job: only {MULTIRUN})")
        if not dry_run:
            shutil.rmtree(sweep.path)
            _remove_empty_parents(sweep.path.parent, root)
    verb = "would remove" if dry_run else "removed"
    sweeps = f" and {len(empty_sweeps)} sweep folders with no job" if empty_sweeps else ""
    say(f"{verb} {len(stubs)} run folders with no result{sweeps}; {len(runs) - len(stubs)} kept")


def _remove_empty_parents(folder: Path, root: Path) -> None:
    while folder != root and folder.is_relative_to(root) and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry; returns the exit code."""
    startup.run_begins()  # started: from here on Ctrl-C is this command's to handle
    top = CommandParser(prog=prog("runs"), description=" ".join(__doc__.split("\n\n")[0].split()))
    commands = top.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="every run and sweep folder, its status and what it holds")
    listing.add_argument("--verbose", action="store_true", help="each failed run's or job's whole error")
    cleaning = commands.add_parser("clean", help="remove the run folders that hold no result")
    cleaning.add_argument("--dry-run", action="store_true", help="name them without removing anything")
    for command in (listing, cleaning):
        command.add_argument("folder", nargs="?", type=Path, default=Path("outputs"), help="default: ./outputs")
    args = top.parse_args(argv)
    if args.command == "list":
        return run_command(lambda: list_runs(args.folder, verbose=args.verbose))
    return run_command(lambda: clean_runs(args.folder, dry_run=args.dry_run))


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("\njudgebias: interrupted", file=sys.stderr)
        sys.exit(130)
