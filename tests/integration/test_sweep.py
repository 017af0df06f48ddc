"""Sweeps end to end: the table at the end of a multirun, failures, joblib and submitit_local (SLURM: tests/cluster)."""

from __future__ import annotations

import importlib.util
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Cli, InProcessCli
from tests.integration.helpers import QUICK, table


def installed(module: str) -> bool:
    """Whether `module` can be imported; find_spec raises (not returns None) when its parent package is absent,
    as `hydra_plugins` is when no Hydra plugin is installed."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


HAS_SUBMITIT = installed("hydra_plugins.hydra_submitit_launcher")


def local(server: Any, *more: str) -> tuple[str, ...]:
    """Overrides for the `local` judge pointed at a test server."""
    return ("judge=local", f"judge.base_url={server.url}", "judge.api_key_env=null", "data.limit=4", *QUICK, *more)


@pytest.mark.slow
def test_a_failing_job_is_recorded_and_the_sweep_still_aggregates(cli_here: InProcessCli) -> None:
    """In `-m judge=noisy,replay` replay fails; the table lists both jobs, names the error, and the sweep exits 1."""
    result = cli_here("-m", "data.limit=3", *QUICK, "judge=noisy,replay")

    assert 1 == result.code, result
    rows = table(result.run_dir)
    assert [("0", "ok", "noisy"), ("1", "failed", "replay")] == [(r["job"], r["status"], r["judge"]) for r in rows]
    assert "judge.name is required" in rows[1]["error"]
    assert "3" == rows[0]["n"]
    assert "sweep summary (" in result.stdout
    assert "job 1 failed: judge.name is required" in result.stdout
    assert "1 of 2 jobs did not finish cleanly" in result.stderr
    assert (result.run_dir / "sweep_summary.md").exists()


@pytest.mark.slow
def test_aggregation_by_hand_over_several_sweeps(cli_here: InProcessCli, tmp_path: Path) -> None:
    """`python -m judgebias.aggregate A B --out C` puts the jobs of two sweeps into one table and exits 0."""
    first = cli_here("-m", "data.limit=3", *QUICK, "judge=noisy,longer")
    second = cli_here("-m", "data.limit=3", *QUICK, "judge=always_a")
    out = tmp_path / "both"

    combined = subprocess.run(
        [sys.executable, "-m", "judgebias.aggregate", str(first.run_dir), str(second.run_dir), "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )

    assert (0, 0, 0) == (first.code, second.code, combined.returncode), combined.stderr
    expected = [("run1/0", "noisy"), ("run1/1", "longer"), ("run2/0", "always_a")]
    assert expected == [(r["job"], r["judge"]) for r in table(out)]
    assert (out / "sweep_report.html").exists()
    assert "run2/0" in combined.stdout


@pytest.mark.slow
def test_joblib_jobs_run_in_parallel_and_share_the_cache(cli: Cli, server: Any) -> None:
    """With hydra/launcher=joblib, parallel jobs fill one cache safely: a strict replay of the sweep then sends nothing."""
    # 0.5 s a call: each job sends for 4 s, so the two overlap even when one worker process starts seconds later.
    judge = server(policy="hash", latency=0.5)
    sweep = ("-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "bootstrap.seed=1,2", "max_concurrency=1")

    first = cli(*sweep, *local(judge))
    sent = judge.stats()["requests"]
    overlapping = judge.stats()["max_in_flight"]
    replay = cli(*sweep, *local(judge, "cache.mode=only"))

    assert (0, 0) == (first.code, replay.code), (first, replay)
    assert 8 <= sent <= 16  # 4 items x 2 orders, the same prompts in both jobs: at most once per job
    assert sent == judge.stats()["requests"]
    assert 2 == overlapping  # one call at a time per job, two jobs at a time
    before, after = table(first.run_dir), table(replay.run_dir)
    assert 2 * ["ok"] == [r["status"] for r in after]
    assert 2 * ["8"] == [r["calls_cached"] for r in after]
    assert [r["win_rate"] for r in before] == [r["win_rate"] for r in after]


@pytest.mark.slow
@pytest.mark.skipif(not HAS_SUBMITIT, reason="hydra-submitit-launcher is not installed (pip install -e '.[dev]')")
def test_submitit_launcher_runs_a_real_sweep(cli: Cli) -> None:
    """hydra/launcher=submitit_local runs each job as a submitit job and still ends with the sweep table."""
    result = cli("-m", "hydra/launcher=submitit_local", "data.limit=3", *QUICK, "judge=noisy,always_a")

    assert 0 == result.code, result
    assert [("0", "ok", "noisy"), ("1", "ok", "always_a")] == [
        (r["job"], r["status"], r["judge"]) for r in table(result.run_dir)
    ]
    assert any((result.run_dir / ".submitit").iterdir())
    assert "3" == table(result.run_dir)[1]["n"]


@pytest.mark.slow
def test_ctrl_c_stops_the_whole_sweep(cli: Cli, server: Any) -> None:
    """Ctrl-C during a sweep stops it (exit 130) instead of moving on to the next job; the stopped job says so."""
    judge = server(policy="hash", latency=0.3)
    sweep_dir = cli.tmp_path / "interrupted"
    command = [
        sys.executable,
        "-m",
        "judgebias.run",
        "-m",
        f"cache.dir={cli.cache_dir}",
        f"hydra.sweep.dir={sweep_dir}",
    ]
    command += [*local(judge, "data.limit=20", "max_concurrency=1"), "rubric=default,content_only"]
    process = subprocess.Popen(command, cwd=cli.tmp_path, env=cli.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while judge.stats()["requests"] < 2 and time.monotonic() < deadline:
        time.sleep(0.05)

    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)

    assert 130 == process.returncode, stderr
    assert "interrupted" in stderr.decode()
    assert {"status": "failed", "error": "interrupted"}.items() <= json.loads(
        (sweep_dir / "0" / "summary.json").read_text(encoding="utf-8")
    ).items()
    assert not (sweep_dir / "1").exists()


@pytest.mark.slow
def test_dry_run_sweep_tabulates_the_estimates(cli_here: InProcessCli) -> None:
    """`-m dry_run=true` over two judges ends with a table of the calls each job would make."""
    result = cli_here("-m", "data.limit=5", *QUICK, "dry_run=true", "judge=gpt4o,gpt4o_mini")

    assert 0 == result.code, result
    rows = table(result.run_dir)
    assert [("dry-run", "10"), ("dry-run", "10")] == [(r["status"], r["calls_live"]) for r in rows]
    assert json.loads((result.run_dir / "0" / "dry_run.json").read_text(encoding="utf-8"))["dry_run"]
