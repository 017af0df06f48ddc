"""The in-process runner against the subprocess it stands in for: the same exit code, printed text and summary."""

from __future__ import annotations

import gc
import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Cli, InProcessCli, Result

pytestmark = pytest.mark.slow

VOLATILE = ("judging_seconds",)
"""summary.json fields that differ between any two runs (wall-clock time)."""


def both(tmp_path: Path, *overrides: str) -> tuple[Result, Result]:
    """The same command as a subprocess and in this process, each in a folder of its own."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "here").mkdir()
    return Cli(tmp_path / "sub")(*overrides), InProcessCli(tmp_path / "here")(*overrides)


def printed(result: Result) -> tuple[str, str]:
    """stdout and stderr with the run's own folder written as TMP, so two runs' texts compare."""
    folder = str(result.run_dir.parent)
    return result.stdout.replace(folder, "TMP"), result.stderr.replace(folder, "TMP")


def summary(result: Result) -> dict[str, Any]:
    """The run's summary.json without its wall-clock fields, its own folder written as TMP."""
    text = (result.run_dir / "summary.json").read_text(encoding="utf-8").replace(str(result.run_dir.parent), "TMP")
    return {key: value for key, value in json.loads(text).items() if key not in VOLATILE}


def test_a_default_run_in_process_prints_and_writes_what_the_subprocess_does(tmp_path: Path) -> None:
    """A default run gives the same exit code, stdout, stderr, summary and files in process as in a subprocess."""
    sub, here = both(tmp_path, "data.limit=12")
    assert (0, 0) == (sub.code, here.code), (sub, here)
    assert printed(sub) == printed(here)
    assert summary(sub) == summary(here)
    assert sub.verdicts() == here.verdicts()
    assert sorted(p.name for p in sub.run_dir.iterdir()) == sorted(p.name for p in here.run_dir.iterdir())


@pytest.mark.parametrize(
    ("overrides", "start"),
    [
        # Hydra cannot compose the config; then the job itself finds the mistake
        (("judge.temperature=abc",), "judgebias: error: judge.temperature=abc"),
        (("data=jsonl", "data.path=missing.jsonl"), "judgebias: error: TMP/missing.jsonl: no such data file"),
    ],
)
def test_a_user_error_in_process_is_the_same_one_line_and_exit_2(
    tmp_path: Path, overrides: tuple[str, ...], start: str
) -> None:
    """A user error is the same single `judgebias: error:` line, exit 2 and summary in process as in a subprocess."""
    sub, here = both(tmp_path, *overrides)
    assert (2, 2) == (sub.code, here.code), (sub, here)
    assert printed(sub) == printed(here)
    assert ("", start) == (printed(here)[0], printed(here)[1][: len(start)])
    assert 1 == len(here.stderr.splitlines())
    written = [(result.run_dir / "summary.json").is_file() for result in (sub, here)]
    assert written[0] == written[1]
    if written[0]:
        assert summary(sub) == summary(here)


def process_state() -> dict[str, Any]:
    """What a run could leave changed in the test process."""
    root = logging.getLogger()
    return {
        "environ": dict(os.environ),
        "cwd": os.getcwd(),
        "argv": list(sys.argv),
        "streams": (sys.stdout, sys.stderr),
        "root": (root.level, list(root.handlers), list(root.filters)),
        "httpx": logging.getLogger("httpx").level,
        "submitit": list(logging.getLogger("submitit").filters),
        "signals": [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2)],
        "gc": (gc.isenabled(), gc.get_threshold(), gc.get_freeze_count()),
    }


def test_runs_in_process_leave_the_test_process_as_they_found_it(tmp_path: Path) -> None:
    """After a run, a failed run and a sweep in process, environment, cwd, logging, signals and gc are as before."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig

    run = InProcessCli(tmp_path)
    before = process_state()
    results = [run("data.limit=4"), run("judge.temperature=abc"), run("-m", "data.limit=3", "rubric=default,brackets")]
    assert [0, 2, 0] == [result.code for result in results], results
    assert before == process_state()
    assert not GlobalHydra.instance().is_initialized()
    assert not HydraConfig.initialized()
    assert (results[0].run_dir / "summary.json").is_file()
    assert 2 == len(list(results[2].run_dir.glob("*/summary.json")))
