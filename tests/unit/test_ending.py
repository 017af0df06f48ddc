"""How a run's job ends: the one table from what happened to the exit code, the message and the summary.json record,
checked against the exit codes docs/outputs.md promises (0, 1, 2, 3, 75, 130)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from judgebias.cli.ending import Ending, ending_of_error, ending_of_summary
from judgebias.core.errors import BatchPending, CacheFull, FatalJudgeError, Stopped, UserError

DOCUMENTED = Path(__file__).parents[2] / "docs" / "outputs.md"


def documented_codes() -> set[int]:
    """The codes in the exit-code table of docs/outputs.md."""
    table = DOCUMENTED.read_text(encoding="utf-8").split("## Exit codes", 1)[1]
    return {int(code) for code in re.findall(r"^\| (\d+) \|", table, flags=re.MULTILINE)}


@pytest.mark.parametrize(
    ("error", "multirun", "code", "record"),
    [
        pytest.param(UserError("bad data"), False, 2, "bad data", id="user-error"),
        pytest.param(FatalJudgeError("bad key"), True, 2, "bad key", id="permanent-judge-error"),
        pytest.param(KeyboardInterrupt(), False, 130, None, id="ctrl-c"),
        pytest.param(KeyboardInterrupt(), True, 130, "interrupted", id="ctrl-c-in-a-sweep"),
        pytest.param(Stopped(), False, 130, "stopped by SLURM", id="scancel"),
        pytest.param(Stopped(), True, 1, "stopped by SLURM", id="scancel-in-a-sweep"),
        pytest.param(BatchPending("1 batch out"), False, 75, None, id="batch-pending"),
        pytest.param(BatchPending("1 batch out"), True, 75, "1 batch out", id="batch-pending-in-a-sweep"),
        pytest.param(RuntimeError("a bug"), True, 1, "RuntimeError: a bug", id="crash-in-a-sweep"),
    ],
)
def test_each_way_a_job_stops_has_its_documented_code_and_at_most_one_record(
    error: BaseException, multirun: bool, code: int, record: str | None
) -> None:
    ending = ending_of_error(error, multirun=multirun)
    assert ending is not None and code == ending.code and code in documented_codes()
    assert (record is None) == (ending.failure is None)
    assert record is None or (ending.failure is not None and ending.failure.startswith(record))


def test_a_bug_outside_a_sweep_is_raised_not_swallowed() -> None:
    assert None is ending_of_error(RuntimeError("a bug"), multirun=False)


def test_a_full_cache_whose_run_was_written_keeps_that_summary() -> None:
    """Its summary counts every paid reply: no failure record replaces it."""
    full = CacheFull("the cache is full")
    full.run_written = True
    ending = ending_of_error(full, multirun=False)
    assert ending is not None and (2, None) == (ending.code, ending.failure)


def test_a_finished_run_ends_by_its_summary() -> None:
    """The spending cap (3) takes precedence over failed calls (1); a clean run is 0 and says nothing."""
    capped = ending_of_summary({"status": "budget", "budget": {"calls_not_sent": 4}, "failed_calls": 2})
    failed = ending_of_summary({"status": "errors", "failed_calls": 2, "errors_call1": 1, "errors_call2": 1})
    assert (3, 1, Ending(0)) == (capped.code, failed.code, ending_of_summary({"status": "ok", "failed_calls": 0}))
    assert capped.message is not None and "4 calls were not sent" in capped.message
    assert failed.message is not None and "errors_call1=1, errors_call2=1" in failed.message
    assert {0, 1, 3} <= documented_codes()
