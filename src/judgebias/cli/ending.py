"""How a run's job ends: every exception a run can raise, and the summary of one that finished, mapped to one exit
code, one message and at most one summary.json to write. The one table of exit codes; run.py applies it.

Pure: nothing is printed or written here; `Ending` says what to print and what to write.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from judgebias.core.errors import (
    EXIT_BATCH_PENDING,
    EXIT_USER_ERROR,
    BatchPending,
    Stopped,
    UserError,
)
from judgebias.figures.summary import nothing_readable
from judgebias.process import startup

EXIT_OK = 0
EXIT_CALLS_FAILED = 1  # calls failed after their retries (the rest is written), or a job of a sweep crashed
EXIT_BUDGET = 3  # stopped at the spending cap (status budget): everything written, a higher cap continues
EXIT_NOTHING_READABLE = 4  # the judge answered, but not one reply carried a readable verdict: everything written
EXIT_CRASHED = 1
EXIT_INTERRUPTED = startup.EXIT_INTERRUPTED

INTERRUPTED = (
    "interrupted: every reply received so far is in the cache; rerun the same command to resume "
    "(python -m judgebias.runs clean removes the folders of runs that hold no result)"
)
STOPPED = "stopped by SLURM (scancel or the time limit) before it finished"


@dataclass(frozen=True)
class Ending:
    """What a job does last: print `message` (to stderr, or stdout when `to_stdout`), write a failure record as its
    summary.json when `failure` is set (with `status`), and exit with `code`."""

    code: int
    message: str | None = None
    failure: str | None = None  # the summary's `error`: the job's summary.json is this record
    status: str = "failed"
    to_stdout: bool = False
    traceback: bool = False  # print the exception's traceback first (a crash inside a sweep)


def ending_of_error(error: BaseException, *, multirun: bool) -> Ending | None:
    """The ending of a job that raised `error`; None: not a run's own ending, raise it (a bug, outside a sweep)."""
    if isinstance(error, UserError):
        written = error.run_written  # its summary was written (a full cache: it counts every paid reply)
        return Ending(EXIT_USER_ERROR, f"judgebias: error: {error}", None if written else str(error))
    if isinstance(error, Stopped):
        message = f"judgebias: {STOPPED}: every reply received so far is in the cache; rerun to resume"
        return Ending(EXIT_CALLS_FAILED if multirun else EXIT_INTERRUPTED, message, STOPPED)
    if isinstance(error, BatchPending):
        return Ending(
            EXIT_BATCH_PENDING, f"judgebias: {error}", str(error) if multirun else None, "pending", to_stdout=True
        )
    if isinstance(error, KeyboardInterrupt):
        return Ending(EXIT_INTERRUPTED, f"\njudgebias: {INTERRUPTED}", "interrupted" if multirun else None)
    if isinstance(error, Exception) and multirun:
        # A launcher re-raises a job's exception after the sweep and then skips the end-of-sweep table.
        return Ending(EXIT_CRASHED, None, f"{type(error).__name__}: {error}", traceback=True)
    return None


def ending_of_summary(summary: Mapping[str, Any]) -> Ending:
    """The ending of a job whose run wrote its files: the spending cap, failed calls, or success."""
    if summary.get("status") == "budget":
        budget = summary.get("budget") or {}
        return Ending(
            EXIT_BUDGET,
            f"judgebias: stopped at the spending cap: {budget.get('calls_not_sent')} calls were not sent "
            "(everything received is written and cached); rerun with a higher max_cost_usd / max_tokens_total to "
            "continue without paying twice",
        )
    if summary.get("failed_calls"):
        return Ending(
            EXIT_CALLS_FAILED,
            f"judgebias: {summary['failed_calls']} calls failed after their retries "
            f"(errors_call1={summary.get('errors_call1')}, errors_call2={summary.get('errors_call2')}; reasons in "
            f"verdicts.jsonl); rerun the same command to retry only those",
        )
    if summary.get("status") == "unreadable" and nothing_readable(summary):
        answered = summary.get("calls_total", 0) - (summary.get("failed_calls") or 0)
        return Ending(
            EXIT_NOTHING_READABLE,
            f"judgebias: the judge answered nothing readable: none of its {answered} replies carries a verdict in the "
            "rubric's format (raw1/raw2 in verdicts.jsonl show what it said; every file is written)",
        )
    return Ending(EXIT_OK)
