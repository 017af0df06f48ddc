"""Interruptions and concurrency: a killed run loses no received reply, and runs sharing one cache lose no write."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from judgebias.devserver.server import RunningServer, ServerOptions, start_server
from tests.helpers import Cli, write_items
from tests.reliability.helpers import KEY, KEY_ENV, cached_replies, decisions, local, pairs, run_here

pytestmark = [pytest.mark.reliability, pytest.mark.slow]

StartServer = Callable[..., RunningServer]
JUDGE = {"policy": "hash", "first_bias": 0.3}
ITEMS = 12
CALLS = 2 * ITEMS
WORKERS = 4


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, tuple[str, str, str]]]]:
    """The dataset of the kill tests and the verdicts of one uninterrupted run of it."""
    folder = tmp_path_factory.mktemp("reference")
    data = write_items(folder / "items.jsonl", pairs(ITEMS))
    with pytest.MonkeyPatch.context() as patch, start_server(ServerOptions(**JUDGE)) as clean:
        patch.setenv(KEY_ENV, KEY[KEY_ENV])
        run_here(folder / "run", *local(clean.url, f"cache.dir={folder / 'cache'}", "data=jsonl", f"data.path={data}"))
    yield data, decisions(folder / "run")


def settle(server: RunningServer) -> dict[str, Any]:
    """The server's counters once it has finished every request it received (answers to a dead client included)."""
    deadline = time.monotonic() + 30
    while server.stats()["in_flight"] and time.monotonic() < deadline:
        time.sleep(0.01)
    return server.stats()


@pytest.mark.parametrize(
    ("signum", "after"),
    [
        pytest.param(signal.SIGINT, 2, id="SIGINT-early"),
        pytest.param(signal.SIGKILL, 7, id="SIGKILL-early"),
        pytest.param(signal.SIGINT, 15, id="SIGINT-late"),
        pytest.param(signal.SIGKILL, 19, id="SIGKILL-late"),
    ],
)
def test_a_killed_run_keeps_every_reply_and_a_rerun_makes_only_the_missing_calls(
    cli: Cli, server: StartServer, reference: tuple[Path, dict[str, tuple[str, str, str]]], signum: int, after: int
) -> None:
    """Killed after `after` replies: the cache holds every reply received, uncorrupted; the rerun finishes the rest."""
    data, clean = reference
    judge = server(**JUDGE, latency=0.1)
    args = local(judge.url, "data=jsonl", f"data.path={data}", f"max_concurrency={WORKERS}")
    run_dir = cli.tmp_path / "killed"
    process = start(cli, run_dir.name, *args)
    wait_for_replies(judge, process, after)
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=60)

    answered = settle(judge)["completions_ok"]
    kept = len(cached_replies(cli.cache_dir))
    assert not (run_dir / "verdicts.jsonl").exists()  # no complete-looking output from a run that did not complete
    if signum == signal.SIGINT:
        assert 130 == process.returncode, stderr
        assert "Traceback" not in stderr and "interrupted" in stderr
        assert answered == kept  # the calls in flight were let finish, and their replies stored
    else:
        assert -signal.SIGKILL == process.returncode
        assert 0 <= answered - kept <= WORKERS  # at most the replies in flight at the kill, paid for and lost
    assert after <= answered < CALLS

    rerun = cli(*args, env=KEY)
    assert 0 == rerun.code, rerun
    assert CALLS - kept == judge.stats()["completions_ok"] - answered == rerun.summary()["calls_live"]
    assert clean == decisions(rerun.run_dir)
    assert CALLS == len(cached_replies(cli.cache_dir))


def wait_for_replies(judge: RunningServer, process: subprocess.Popen[str], replies: int) -> None:
    """Until the server has answered `replies` calls of the running `process` (which must still be running)."""
    deadline = time.monotonic() + 60
    while judge.stats()["completions_ok"] < replies:
        assert process.poll() is None, f"the run ended before {replies} replies"
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.002)


def start(cli: Cli, name: str, *args: str) -> subprocess.Popen[str]:
    """Start `python -m judgebias.run` (a sweep when `args` hold -m) on the shared cache, without waiting."""
    sweep = "-m" in args
    command = [sys.executable, "-m", "judgebias.run", *(["-m"] if sweep else []), f"cache.dir={cli.cache_dir}"]
    command.append(f"hydra.{'sweep' if sweep else 'run'}.dir={cli.tmp_path / name}")
    return subprocess.Popen(
        [*command, *(arg for arg in args if arg != "-m")],
        cwd=cli.tmp_path,
        env=cli.env | KEY,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_runs_and_a_parallel_multirun_share_one_cache_without_loss(cli: Cli, server: StartServer) -> None:
    """Three runs and a two-process sweep at once on a fresh cache: no lock error, no lost write, no in-run repeat."""
    items = [*pairs(10), {"id": "same", "question": "Q?", "a": "identical", "b": "identical"}]
    data = write_items(cli.tmp_path / "items.jsonl", items)
    judge = server(policy="longer", latency=0.02)
    args = local(judge.url, "data=jsonl", f"data.path={data}", "max_concurrency=8")
    prompts = 2 * 10 + 1  # a = b renders one prompt in both orders

    solo = cli(*args, env=KEY)
    assert 0 == solo.code, solo
    assert prompts == judge.stats()["requests"] == judge.stats()["distinct_bodies"]
    judge.reset()

    cli.cache_dir = cli.tmp_path / "shared-cache"
    sweep = ("-m", *args, "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "judge.temperature=0.0,0.5")
    # Folders of their own: the solo run above already holds run1, and a used run folder is refused.
    processes = [start(cli, f"parallel{i}", *args) for i in range(3)] + [start(cli, "sweep", *sweep)]
    outputs = [process.communicate(timeout=120) for process in processes]

    for process, (_, stderr) in zip(processes, outputs, strict=True):
        assert 0 == process.returncode, stderr
        assert "locked" not in stderr.lower() and "Traceback" not in stderr
    runs = [decisions(cli.tmp_path / f"parallel{i}") for i in range(3)] + [decisions(cli.tmp_path / "sweep" / "0")]
    assert all(run == decisions(solo.run_dir) for run in runs)
    stats = judge.stats()
    assert 2 * prompts == stats["distinct_bodies"] == len(cached_replies(cli.cache_dir))
    assert stats["max_per_body"] <= 4  # at most once per run that needed that prompt

    again = cli("-m", *args, "judge.temperature=0.0,0.5", "cache.mode=only", env=KEY)
    assert 0 == again.code, again
    assert stats["requests"] == judge.stats()["requests"]  # every reply of every run was stored


def test_a_data_file_edited_while_it_is_judged_stops_the_run_and_the_rerun_pays_only_unsent_calls(
    cli: Cli, server: StartServer
) -> None:
    """A line appended to the data file while the run still reads it: exit 2 with one line naming the file, no
    complete-looking verdicts.jsonl, every reply the server sent kept; the rerun judges the new file and sends
    exactly the calls the cache lacks (the server's own count)."""
    # More items than the run reads ahead (256 calls looked up at once, then a window of 64 items in flight): the
    # file is still being read while the first replies arrive.
    items = pairs(300)
    data = write_items(cli.tmp_path / "items.jsonl", items)
    judge = server(policy="longer", latency=0.02)
    args = local(judge.url, "data=jsonl", f"data.path={data}", f"max_concurrency={WORKERS}")
    run_dir = cli.tmp_path / "edited"
    process = start(cli, run_dir.name, *args)
    wait_for_replies(judge, process, 8)
    with data.open("a", encoding="utf-8") as file:
        file.write('{"id": "late", "question": "Q?", "a": "one more answer", "b": "two"}\n')
    _, stderr = process.communicate(timeout=60)

    assert 2 == process.returncode, stderr
    lines = stderr.strip().splitlines()
    assert "Traceback" not in stderr and f"{data}: the data file changed after it was checked" in lines[-1]
    assert not (run_dir / "verdicts.jsonl").exists()
    answered = settle(judge)["completions_ok"]
    kept = len(cached_replies(cli.cache_dir))
    assert answered == kept < 2 * len(items)  # stopped early, and no reply the server sent was lost

    rerun = cli(*args, env=KEY)
    assert 0 == rerun.code, rerun
    calls = 2 * (len(items) + 1)
    assert calls - kept == judge.stats()["completions_ok"] - answered == rerun.summary()["calls_live"]
    assert len(items) + 1 == len(rerun.verdicts())
