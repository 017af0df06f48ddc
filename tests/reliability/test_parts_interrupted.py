"""A run judged in parts (a free judge, many items, two cores) stopped while its parts run: Ctrl-C ends every
process with the run's one line and leaves no part's file beside verdicts.jsonl.part (whole lines of the first
part); SIGKILL of the run takes its part processes with it. The processes are watched in /proc, not asked."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judgebias.engine.items import CHECK_PART_MIN_BYTES
from judgebias.io.run_dir import is_leftover
from tests.helpers import Cli

pytestmark = [pytest.mark.reliability, pytest.mark.slow]

ITEMS = 240_000  # enough for two parts of the default size, and a few seconds of judging


def _items(path: Path, question: str) -> Path:
    with path.open("w", encoding="utf-8") as out:
        for n in range(ITEMS):
            record = {"id": f"i{n}", "question": f"Q{n}? {question}", "a": "a " * (n % 9), "b": "b " * (n % 4)}
            out.write(json.dumps(record))
            out.write("\n")
    return path


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as children:
            found += [int(child) for child in children.read().split()]
    return found


def _gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
                if stat.read().split(") ")[-1].startswith("Z"):
                    return True  # ended, not yet reaped by its parent
        except OSError:
            return True
        time.sleep(0.02)
    return False


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="reads processes in /proc (Linux)")
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="parts need two cores")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
@pytest.mark.parametrize(
    "question", ["", "word " * 20], ids=["checked-first", "checked-as-judged"]
)  # 17 MB: checked before judging; 41 MB: each part checked by the process judging it
def test_a_run_stopped_while_its_parts_run_leaves_no_process_and_no_part_file(
    cli: Cli, signum: int, question: str
) -> None:
    data = _items(cli.tmp_path / "items.jsonl", question)
    assert (data.stat().st_size > 2 * CHECK_PART_MIN_BYTES) is bool(question)
    run_dir = cli.tmp_path / "run"
    process = subprocess.Popen(
        [sys.executable, "-m", "judgebias.run", "judge=longer", "data=jsonl", f"data.path={data}", "report=false",
         "progress=off", f"cache.dir={cli.tmp_path / 'cache'}", f"hydra.run.dir={run_dir}"],
        cwd=cli.tmp_path, env=cli.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    partial = run_dir / "verdicts.jsonl.part"
    deadline = time.monotonic() + 60
    parts: list[int] = []
    while not (parts and partial.exists() and partial.stat().st_size > 100_000):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the run made no progress"
        parts = _children(process.pid)
        time.sleep(0.01)
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=60)
    assert all(_gone(part, within=10) for part in parts), "a part's process outlived the run"
    assert not (run_dir / "verdicts.jsonl").exists()
    if signum == signal.SIGINT:
        assert 130 == process.returncode, stderr
        assert "Traceback" not in stderr and "interrupted" in stderr
        assert [name for name in os.listdir(run_dir) if name.startswith("verdicts")] == ["verdicts.jsonl.part"]
        lines = partial.read_text(encoding="utf-8").splitlines()
        assert lines and all(json.loads(line)["id"] == f"i{n}" for n, line in enumerate(lines))
    else:
        assert -signal.SIGKILL == process.returncode
        assert all(map(is_leftover, os.listdir(run_dir))), os.listdir(run_dir)  # `runs clean` removes the folder
