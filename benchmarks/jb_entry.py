"""`python -m judgebias.run` with the benchmark's probes, chosen by environment variables.

- JUDGEBIAS_BENCH_PREIMPORT_OPENAI=1: import the SDK before the run starts, as the bare-SDK baseline does
  before its clock starts, so the one-off import (measured on its own) is not counted in the judging phase.
- JUDGEBIAS_BENCH_PROBE=FILE: at exit, write JSON to FILE: whether `openai` was ever imported, and how long
  the summary (metrics, bootstrap) and the writing of the run's files took.

Every other argument is passed to judgebias unchanged.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

timings: dict[str, float] = {}


def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """`function`, adding the seconds each call takes to timings[name]."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            timings[name] = timings.get(name, 0.0) + time.perf_counter() - started

    return wrapper


def write_probe(path: str) -> None:
    """The probe's findings, as JSON."""
    probe = {"openai_imported": "openai" in sys.modules, **timings}
    with open(path, "w", encoding="utf-8") as file:
        json.dump(probe, file)


def main() -> None:
    """Install the probes, then hand over to judgebias's own entry point."""
    if os.environ.get("JUDGEBIAS_BENCH_PREIMPORT_OPENAI") == "1":
        import openai  # noqa: F401

    probe = os.environ.get("JUDGEBIAS_BENCH_PROBE")
    if probe:
        from judgebias.engine import outputs as output
        from judgebias.engine import runner

        runner.build_summary = timed("summary_seconds", runner.build_summary)
        runner.ratings_for = timed("write_seconds", runner.ratings_for)  # computed as write_run's argument
        output.write_run = timed("write_seconds", output.write_run)
        atexit.register(write_probe, probe)
    from judgebias.run import main as judgebias_main

    sys.argv = ["judgebias.run", *sys.argv[1:]]
    judgebias_main()


if __name__ == "__main__":
    main()
