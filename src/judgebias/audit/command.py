"""The command line of `python -m judgebias.audit fastchat|arenahard|alpacaeval PATH... --out DIR` (docs/audit.md).
Exit codes: 0 done, 2 a mistake in the input (one line naming file, line and field), 130 interrupted."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from judgebias.audit.formats import FORMATS
from judgebias.audit.formats.common import Options
from judgebias.core.bounds import RESAMPLES
from judgebias.process import startup
from judgebias.process.command import CommandParser, bounded, prog, run_command, say


def parser() -> argparse.ArgumentParser:
    """The audit's command line."""
    top = CommandParser(
        prog=prog("audit"),
        description="Audit a judge run made with FastChat, Arena-Hard-Auto or AlpacaEval (see docs/audit.md).",
    )
    top.add_argument("tool", choices=sorted(FORMATS))
    top.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="bench folders or judgment files")
    top.add_argument("--out", required=True, type=Path, help="folder for items, judgments, runs and audit.json")
    top.add_argument("--human", type=Path, help="FastChat mt_bench_human_judgments votes (JSON or JSON lines)")
    top.add_argument("--baseline", help="Arena-Hard v0.1: the baseline model, when the records do not show it")
    top.add_argument("--no-run", action="store_true", help="convert only; replay later with the stored commands")
    top.add_argument("--resamples", type=bounded(RESAMPLES), default=1000, help="bootstrap resamples of every interval")
    top.add_argument("--reuse-dir", action="store_true", help="write into an --out folder that holds other files")
    return top


def _audit_and_say(args: argparse.Namespace) -> None:
    """Audit the files the options name and print the comparison and where audit.json went."""
    from judgebias.audit.auditing import audit

    report = audit(
        args.tool,
        args.paths,
        args.out,
        options=Options(human=args.human, baseline=args.baseline),
        run=not args.no_run,
        resamples=args.resamples,
        reuse=args.reuse_dir,
        echo=lambda _: None,  # each replay's own summary is in its run folder; the audit prints the comparison
    )
    from judgebias.audit.report import format_audit

    say(format_audit(report), end="")
    say(f"audit: {args.out / 'audit.json'}")


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry; returns the exit code."""
    startup.run_begins()  # started: from here on Ctrl-C is this command's to handle
    args = parser().parse_args(argv)
    return run_command(lambda: _audit_and_say(args))
