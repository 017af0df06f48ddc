"""A gate for CI: fail when a judge or rubric regresses below the figures you promised.

`python -m judgebias.check RUN_OR_SWEEP_DIR [more] --min-consistency 0.8 --max-biased-first 0.1 --min-agreement 0.75`
(--min-labels 100 makes the agreement count only when that many decisive human labels stand behind it)
(and --max-styled-wins 0.6 for style bias, among others: see --help)
reads every summary.json under the given folders (a run folder, a sweep folder, or a folder of sweeps) and checks
each job against every threshold given. Exit codes: 0 every job passes, 1 a threshold failed (or a job failed,
had failed calls, or left no result), 2 usage error (bad option, no folder, no summary.json found).

Two checks are on without a threshold: a job whose replies mostly carry no verdict (status `unreadable`) fails,
and so does a job whose judge was not one judge (`mixed_judge`: a gateway fallback, several models answering, cached
replies of another model; `--same-judge`, on by default, `--no-same-judge` to allow it).

A figure a job does not have (agreement on data without human labels, consistency with one order recorded)
fails its threshold by default, because a gate that silently checks nothing protects nothing; pass
`--skip-missing` to report such a figure as skipped instead.

Against a baseline: `python -m judgebias.check CAND --baseline BASE [--max-drop consistency=0.02] [--max-rise
biased_first=0.02] [--strict]` compares each job with the base run on the same items (judgebias.compare's paired
bootstrap) and fails a figure only when its paired interval lies wholly beyond the tolerance on the worse side;
`--strict` also fails any figure whose interval lies wholly on the worse side of 0. Without a tolerance given for
it, a figure takes its default (DEFAULT_TOLERANCES); one the runs do not have (agreement without labels) is skipped
when defaulted and fails when asked for (unless --skip-missing).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from judgebias.aggregate import Job, find_jobs
from judgebias.core.bounds import GATE_RESAMPLES
from judgebias.core.errors import UserError
from judgebias.core.summary import Summary, figure_value
from judgebias.figures import catalogue
from judgebias.figures.headline import SIDED, models_text, seen_from_side
from judgebias.process import startup
from judgebias.process.command import CommandParser, bounded, prog, say

if TYPE_CHECKING:
    from judgebias.figures.comparison import Comparison, RunFiles
    from judgebias.figures.paired import Worse

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


@dataclass(frozen=True)
class Threshold:
    """One gate: a summary figure, a bound, and which side of it passes."""

    option: str
    figure: str
    bound: float
    minimum: bool

    def passes(self, value: float) -> bool:
        """Whether a value is on the passing side (the bound itself passes)."""
        return value >= self.bound if self.minimum else value <= self.bound

    def describe(self) -> str:
        """E.g. 'position_consistency >= 0.8'."""
        return f"{self.figure} {'>=' if self.minimum else '<='} {self.bound:g}"


# option name, summary figure, is a minimum: every threshold the catalogue gives a figure
GATES = tuple((option, entry.name, minimum) for option, entry, minimum in catalogue.gates())


@dataclass(frozen=True)
class Finding:
    """The outcome of one threshold on one job (or of the job itself when it did not finish)."""

    job: str
    ok: bool
    message: str
    skipped: bool = False


def figure(summary: Summary, name: str) -> float | None:
    """A figure of a summary; invalid_rate is derived: invalid replies per call."""
    if name == "invalid_rate":
        calls = summary.get("calls_total")
        invalid = summary.get("n_invalid")
        return invalid / calls if isinstance(calls, int) and calls > 0 and isinstance(invalid, int) else None
    return figure_value(summary, name)  # a threshold names its figure at run time


BOUNDS = ("point", "lower", "upper")  # --on: what of a figure a threshold reads


def gated_value(summary: Summary, name: str, on: str = "point") -> float | None:
    """What a threshold reads of a figure: its value, or its interval's lower or upper bound (`--on`); a win rate
    from the side the run's headline reports (side=b: b's). None when there is none (no figure, or no interval)."""
    seen = cast(Summary, seen_from_side(summary))
    value = figure(seen, name)
    if value is None or on == "point":
        return value
    interval = (seen.get("ci") or {}).get(name)
    if not interval or interval[0] is None or interval[1] is None:
        return None
    return float(interval[0] if on == "lower" else interval[1])


def _who(job: Job) -> str:
    """'3 (gpt4o / default / q1; bot-v2 vs bot-v1)': the job and what it judged, as far as known."""
    s = job.summary
    known = [str(value) for value in (s.get("judge"), s.get("rubric"), s.get("data")) if value is not None]
    models = models_text(s)
    vs = f"; {models}" if models else ""
    return f"{job.name} ({' / '.join(known)}{vs})" if known else job.name


def check_job(
    job: Job,
    thresholds: Sequence[Threshold],
    *,
    skip_missing: bool = False,
    same_judge: bool = True,
    allow_imported: bool = False,
    require_corrected: bool = False,
    on: str = "point",
) -> list[Finding]:
    """Every finding for one job: its status first, then each threshold (on the figure's value, or its interval's
    bound with `on`)."""
    s = job.summary
    who = _who(job)
    status = s.get("status", "ok")
    if status in ("failed", "missing"):
        return [Finding(job.name, False, f"FAIL {who}: job {status}: {s.get('error')}")]
    if status == "dry-run":
        return [Finding(job.name, False, f"FAIL {who}: a dry run has no figures to check")]
    findings = []
    if status == "budget":
        budget = s.get("budget") or {}
        findings.append(
            Finding(
                job.name,
                False,
                f"FAIL {who}: stopped at its spending cap with {budget.get('calls_not_sent')} calls not sent, so its "
                "figures leave items out (raise max_cost_usd or max_tokens_total and rerun: the rest comes from the cache)",
            )
        )
    elif status == "errors" or s.get("failed_calls"):
        findings.append(
            Finding(
                job.name,
                False,
                f"FAIL {who}: {s.get('failed_calls')} calls failed after their retries, so its figures leave items "
                f"out (rerun to retry them)",
            )
        )
    if s.get("unreadable_note"):
        findings.append(Finding(job.name, False, f"FAIL {who}: status unreadable: {s['unreadable_note']}"))
    imported = s.get("imported_replies")
    if imported and not allow_imported:
        files = ", ".join(str(b.get("file")) for b in imported.get("bundles") or [])
        findings.append(
            Finding(
                job.name,
                False,
                f"FAIL {who}: {imported.get('replies')} replies came from files handed in ({files}), not from a "
                "judge: nothing proves a provider sent them (--allow-imported accepts them)",
            )
        )
    routed = s.get("routed_elsewhere")
    if routed:
        where = routed if "model" in routed else next(iter(routed.values()))
        findings.append(
            Finding(
                job.name,
                False,
                f"FAIL {who}: routed elsewhere: the gateway serves {where.get('model')!r} but "
                f"{', '.join(where.get('answered_by') or [])} answered (name it in judge.expect_models to accept it)",
            )
        )
    if same_judge and s.get("mixed_judge"):
        note = s.get("mixed_judge_note") or "the judge was not one judge"
        findings.append(Finding(job.name, False, f"FAIL {who}: {note} (--same-judge; --no-same-judge allows it)"))
    if require_corrected and figure(s, "corrected_win_rate") is None:
        corrected = s.get("corrected") or {}
        why = corrected.get("refused") or "the data has no human labels"
        findings.append(
            Finding(job.name, False, f"FAIL {who}: no people's win rate ({why}); --require-corrected asks for one")
        )
    for threshold in thresholds:
        bounded_read = on != "point" and _has_interval(threshold.figure)
        value = gated_value(s, threshold.figure, on if bounded_read else "point")
        if value is None:
            reason = s.get(f"{threshold.figure}_note") or _missing_reason(threshold.figure)
            if bounded_read and figure(s, threshold.figure) is not None:
                reason = f"it has no interval to take the {on} bound of (bootstrap.resamples=0, or too few items)"
            text = f"{who}: {threshold.figure} is not available ({reason}), so --{threshold.option.replace('_', '-')}"
            if skip_missing:
                findings.append(Finding(job.name, True, f"SKIP {text} was not checked", skipped=True))
            else:
                findings.append(Finding(job.name, False, f"FAIL {text} cannot pass (use --skip-missing to skip it)"))
            continue
        if not threshold.passes(value):
            findings.append(
                Finding(
                    job.name,
                    False,
                    f"FAIL {who}: {_read_as(s, threshold.figure, on if bounded_read else 'point')} = "
                    f"{value:.{0 if threshold.figure.endswith('_n') else 3}f}, needs {threshold.describe()} "
                    f"(--{threshold.option.replace('_', '-')})",
                )
            )
    return findings


# The short names --max-drop / --max-rise accept, and the compared figure each means.
TOLERANCE_NAMES = {e.gate.alias: e.name for e in catalogue.FIGURES if e.gate is not None and e.gate.alias}
# figure: (which way is worse, tolerance) when --baseline is given and no tolerance for the figure.
DEFAULT_TOLERANCES: dict[str, tuple[Worse, float]] = {
    e.name: ("drop" if e.better == "higher" else "rise", e.gate.tolerance)
    for e in catalogue.FIGURES
    if e.gate is not None and e.gate.tolerance is not None and e.better != "neither"
}


@dataclass(frozen=True)
class Tolerance:
    """How far a figure may move the worse way before the paired interval fails the gate."""

    figure: str
    worse: Worse  # "drop" (lower is worse) or "rise"
    bound: float
    given: bool  # on the command line, not a default

    def option(self) -> str:
        """E.g. '--max-drop position_consistency=0.02'."""
        return f"--max-{self.worse} {self.figure}={self.bound:g}{'' if self.given else ' (default)'}"


def tolerances(drops: Sequence[tuple[str, float]], rises: Sequence[tuple[str, float]]) -> list[Tolerance]:
    """The options given, then every default tolerance for a figure none was given for."""
    given = [Tolerance(figure, "drop", bound, True) for figure, bound in drops]
    given += [Tolerance(figure, "rise", bound, True) for figure, bound in rises]
    named = {t.figure for t in given}
    defaults = [Tolerance(f, worse, bound, False) for f, (worse, bound) in DEFAULT_TOLERANCES.items() if f not in named]
    return given + defaults


@dataclass(frozen=True)
class Coverage:
    """What the gate asks of the items a candidate was judged on: a share of the base's at least, and (unless
    allowed) no matched id holding another item."""

    min_overlap: float = 1.0
    allow_changed: bool = False

    def findings(self, job: Job, comparison: Comparison) -> list[Finding]:
        """A failure when the candidate misses more of the base than allowed, or changed items under their ids."""
        who, c = _who(job), comparison.coverage
        out = []
        if c.share < self.min_overlap:
            out.append(
                Finding(
                    job.name,
                    False,
                    f"FAIL {who}: judged on {c.matched} of the baseline's {c.base_items} items ({100 * c.share:.1f}%), "
                    f"needs at least {100 * self.min_overlap:g}% (--min-overlap {self.min_overlap:g}): a regression "
                    f"on the {c.only_base} items left out could not show",
                )
            )
        if c.changed and not self.allow_changed:
            out.append(
                Finding(
                    job.name,
                    False,
                    f"FAIL {who}: {c.changed} matched items hold other answers or human labels than in the baseline "
                    f"under the same ids (first: {', '.join(c.changed_ids[:5])}): the figures do not compare the "
                    "same items (--allow-changed-items accepts them)",
                )
            )
        elif c.changed:
            out.append(
                Finding(
                    job.name,
                    True,
                    f"SKIP {who}: note: {c.changed} matched items changed their answers or human labels, accepted "
                    "(--allow-changed-items)",
                    skipped=True,
                )
            )
        return out


def baseline_findings(
    job: Job,
    base: RunFiles,
    limits: Sequence[Tolerance],
    *,
    strict: bool = False,
    skip_missing: bool = False,
    coverage: Coverage | None = None,
    resamples: int | None = None,
) -> list[Finding]:
    """The job against the base run on their common items: its coverage of the base's items first, then one
    finding per tolerance passed beyond, per figure missing, and (with `strict`) per figure significantly worse."""
    from judgebias.compare import compare_runs, people_of, read_run
    from judgebias.figures.comparison_text import diff_text
    from judgebias.figures.paired import worse_beyond, worse_side

    who = _who(job)
    comparison = compare_runs(base, read_run(job.path), resamples=resamples, listed=5, people=people_of(base))
    findings = (coverage or Coverage()).findings(job, comparison)
    for limit in limits:
        difference = comparison.differences.get(limit.figure)
        if difference is None or difference.diff is None:
            text = f"{who}: {limit.figure} is not in both runs ({_missing_reason(limit.figure)}), so {limit.option()}"
            if not limit.given or skip_missing:
                findings.append(Finding(job.name, True, f"SKIP {text} was not checked", skipped=True))
            else:
                findings.append(Finding(job.name, False, f"FAIL {text} cannot pass (use --skip-missing to skip it)"))
        elif difference.ci is None:  # no resample could measure it: a gate that cannot see a change passes none
            findings.append(
                Finding(
                    job.name,
                    False,
                    f"FAIL {who}: {limit.figure} has no paired interval, so {limit.option()} cannot be checked",
                )
            )
        elif worse_beyond(difference, limit.worse, limit.bound):
            moved = "dropped" if limit.worse == "drop" else "rose"
            findings.append(
                Finding(
                    job.name,
                    False,
                    f"FAIL {who}: {limit.figure} {moved} against the baseline: {diff_text(limit.figure, difference)} "
                    f"(paired, on {comparison.matched} items), wholly beyond {limit.option()}",
                )
            )
    for name, difference in comparison.differences.items() if strict else ():
        side = worse_side(name)
        if side is not None and worse_beyond(difference, side, 0.0):
            findings.append(
                Finding(
                    job.name,
                    False,
                    f"FAIL {who}: {name} is significantly worse than the baseline: "
                    f"{diff_text(name, difference)} (paired, on {comparison.matched} items; --strict)",
                )
            )
    findings += [Finding(job.name, True, f"SKIP {who}: note: {note}", skipped=True) for note in comparison.notes]
    return findings


def _tolerance(text: str) -> tuple[str, float]:
    from judgebias.figures.paired import BETTER

    name, sep, value = text.partition("=")
    figure = TOLERANCE_NAMES.get(name.strip(), name.strip())
    if not sep or figure not in BETTER or figure == "cost_usd":
        known = ", ".join(
            [*TOLERANCE_NAMES, *(f for f in BETTER if f not in TOLERANCE_NAMES.values() and f != "cost_usd")]
        )
        raise argparse.ArgumentTypeError(f"{text!r} is not FIGURE=TOLERANCE with a figure of {known}")
    try:
        bound = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: {value!r} is not a number") from None
    if not 0.0 <= bound <= 1.0:
        raise argparse.ArgumentTypeError(
            f"{text!r}: the tolerance is a change of the figure between 0 and 1 (0.02 = 2 points)"
        )
    return figure, bound


def _missing_reason(name: str) -> str:
    entry = catalogue.BY_NAME.get(name)
    return entry.missing if entry is not None else "the run did not report it"


def _overlap(text: str) -> float:
    value = _fraction(text)
    if value <= 0.0:
        raise argparse.ArgumentTypeError(f"{text}: a gate needs some of the baseline's items (a share above 0)")
    return value


def _fraction(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not a fraction between 0 and 1 (e.g. 0.8 for 80%)")
    return value


def _labels(text: str) -> float:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a number of labels (1 or more)")
    return float(value)


def _kappa(text: str) -> float:
    value = float(text)
    if not -1.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not a kappa between -1 and 1")
    return value


def _has_interval(name: str) -> bool:
    """Whether the catalogue gives the figure an interval (a count or a derived rate has none)."""
    entry = next((e for e in catalogue.FIGURES if e.name == name), None)
    return entry is not None and entry.interval


def _read_as(summary: Summary, name: str, on: str) -> str:
    """How a threshold's reading is named: the figure's name, "NAME of bot-v2", "lower bound of NAME of bot-v2"."""
    said = summary.get("headline") or {}
    text = name
    if name in SIDED and said.get("name") and said.get("side") == "b":
        text = f"{name} of {said['name']}"
    return text if on == "point" else f"{on} bound of {text}"


def parser() -> argparse.ArgumentParser:
    """The command line of the gate."""
    p = CommandParser(
        prog=prog("check"),
        description="Fail (exit 1) when a run or any job of a sweep misses a threshold; exit 2 on a usage error.",
    )
    p.add_argument("paths", nargs="+", type=Path, help="run folders, sweep folders, or folders holding sweeps")
    for option, entry, minimum in catalogue.gates():
        help_text = f"{'lowest' if minimum else 'highest'} {entry.gate.help if entry.gate else entry.name}"
        kind = _labels if entry.kind == "count" else _kappa if entry.kind == "kappa" else _fraction
        p.add_argument(f"--{option.replace('_', '-')}", type=kind, help=help_text)
    p.add_argument(
        "--on",
        choices=BOUNDS,
        default="point",
        help="what a threshold reads of a figure with an interval: its value (point, the default), or its 95%% "
        "interval's lower or upper bound (--on lower --min-win-rate 0.5: the candidate wins beyond the noise)",
    )
    p.add_argument(
        "--require-corrected",
        action="store_true",
        help="fail a job without the people's win rate (no labels, or too few to correct the judge's figures)",
    )
    p.add_argument(
        "--same-judge",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="fail a job whose calls were not all answered by one judge (status mixed_judge; default: on)",
    )
    p.add_argument(
        "--allow-imported",
        action="store_true",
        help="pass a job whose replies came from files handed in (bundles, batch output files; default: fail it)",
    )
    p.add_argument(
        "--baseline",
        type=Path,
        help="a run folder to compare each job with, on the same items (paired intervals; see --max-drop)",
    )
    p.add_argument(
        "--max-drop",
        type=_tolerance,
        action="append",
        default=[],
        metavar="FIGURE=TOL",
        help="with --baseline: fail when FIGURE's paired interval lies wholly below -TOL (consistency=0.02, "
        "agreement=0.02, kappa=0.05 by default)",
    )
    p.add_argument(
        "--max-rise",
        type=_tolerance,
        action="append",
        default=[],
        metavar="FIGURE=TOL",
        help="with --baseline: fail when FIGURE's paired interval lies wholly above TOL (biased_first=0.02, "
        "biased_second=0.02, invalid=0.02 by default)",
    )
    p.add_argument(
        "--min-overlap",
        type=_overlap,
        default=1.0,
        metavar="SHARE",
        help="with --baseline: the least share of the baseline's items the job must be judged on (default 1: "
        "every one; 0.95 allows 5%% missing)",
    )
    p.add_argument(
        "--allow-changed-items",
        action="store_true",
        help="with --baseline: accept matched ids whose answers or human label changed (default: fail them)",
    )
    p.add_argument(
        "--resamples",
        type=bounded(GATE_RESAMPLES),
        help="with --baseline: paired bootstrap resamples (default: the baseline's, at least 1000; fewer are refused)",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="with --baseline: also fail any figure whose paired interval lies wholly on its worse side of 0",
    )
    p.add_argument(
        "--skip-missing",
        action="store_true",
        help="report a figure a job does not have (e.g. agreement without labels) as skipped instead of failing",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Check the runs; print one line per failure (or one OK line); return the exit code."""
    startup.run_begins()  # started: from here on Ctrl-C is this command's to handle
    args = parser().parse_args(argv)
    thresholds = [
        Threshold(option, name, getattr(args, option), minimum)
        for option, name, minimum in GATES
        if getattr(args, option) is not None
    ]
    for path in args.paths:
        if not path.is_dir():
            say(f"judgebias.check: error: {path} is not a folder", error=True)
            return EXIT_USAGE
    jobs = find_jobs(args.paths)
    if not any(job.summary.get("status") not in ("missing", "dry-run") for job in jobs):
        where = ", ".join(map(str, args.paths))
        say(
            f"judgebias.check: error: no summary.json under {where}: point it at a finished run or sweep folder",
            error=True,
        )
        return EXIT_USAGE
    against_base = args.max_drop or args.max_rise or args.strict or args.allow_changed_items
    if (against_base or args.min_overlap != 1.0 or args.resamples is not None) and args.baseline is None:
        say(
            "judgebias.check: error: --max-drop, --max-rise, --strict, --min-overlap, --allow-changed-items and "
            "--resamples need --baseline BASE",
            error=True,
        )
        return EXIT_USAGE
    base = None
    if args.baseline is not None:
        from judgebias.compare import read_run

        try:
            base = read_run(args.baseline)
        except UserError as error:
            say(f"judgebias.check: error: --baseline: {error}", error=True)
            return EXIT_USAGE
    limits = tolerances(args.max_drop, args.max_rise)
    coverage = Coverage(args.min_overlap, args.allow_changed_items)
    findings = []
    for job in jobs:
        findings += check_job(
            job,
            thresholds,
            skip_missing=args.skip_missing,
            same_judge=args.same_judge,
            allow_imported=args.allow_imported,
            require_corrected=args.require_corrected,
            on=args.on,
        )
        if base is not None and job.summary.get("status") not in ("failed", "missing", "dry-run"):
            try:
                findings += baseline_findings(
                    job,
                    base,
                    limits,
                    strict=args.strict,
                    skip_missing=args.skip_missing,
                    coverage=coverage,
                    resamples=args.resamples,
                )
            except UserError as error:
                findings.append(
                    Finding(job.name, False, f"FAIL {_who(job)}: cannot compare with the baseline: {error}")
                )
    for finding in findings:
        if finding.skipped:
            say(finding.message)
    failures = [finding for finding in findings if not finding.ok]
    for finding in failures:
        say(finding.message)
    checked = ", ".join(t.describe() for t in thresholds)
    if thresholds and args.on != "point":
        checked += f" (on the interval's {args.on} bound)"
    if base is not None:
        against = f"against {args.baseline}: " + ", ".join(limit.option() for limit in limits)
        against += ", --strict" if args.strict else ""
        against += f", --min-overlap {args.min_overlap:g}" + (
            ", --allow-changed-items" if args.allow_changed_items else ""
        )
        checked = f"{checked}; {against}" if checked else against
    if args.require_corrected:
        checked = f"{checked}; the people's win rate required" if checked else "the people's win rate required"
    checked = checked or "no thresholds given: job status only"
    if failures:
        jobs_failing = len({finding.job for finding in failures})
        say(f"judgebias.check: {jobs_failing} of {len(jobs)} jobs failed ({checked})", error=True)
        return EXIT_FAILED
    said = (
        (jobs[0].summary.get("headline") or {}).get("text") if len(jobs) == 1 and models_text(jobs[0].summary) else None
    )
    say(f"OK: {len(jobs)} job{' passes' if len(jobs) == 1 else 's pass'} ({checked})" + (f": {said}" if said else ""))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
