"""Sweeps on a real single-node SLURM through `python -m judgebias.run -m hydra/launcher=slurm`.

The jobs run on this machine, so they reach the local judge on 127.0.0.1 that each test starts; its request counts
say what a sweep paid for. Each test prints its wall time and requests (shown with `pytest -s`).
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

from judgebias.cli.clusterlog import NOTICE
from tests.cluster.slurm import LAUNCH, PARTITION, SlurmCluster, files_holding, local, measured
from tests.helpers import Cli, Result
from tests.integration.helpers import QUICK, table

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def array_tasks(sweep_dir: Path) -> list[str]:
    """The SLURM ids of the sweep's jobs, from submitit's folders (`ARRAYID_TASK`)."""
    return sorted(path.name for path in (sweep_dir / ".submitit").iterdir() if re.fullmatch(r"\d+_\d+", path.name))


class Sweep:
    """A sweep submitted in the background, so the test can act on the cluster while it runs; killed on exit."""

    def __init__(self, cli: Cli, slurm: SlurmCluster, *overrides: str) -> None:
        cli.runs += 1
        self.run_dir = cli.tmp_path / f"run{cli.runs}"
        args = [sys.executable, "-m", "judgebias.run", "-m", f"cache.dir={cli.cache_dir}"]
        args += [f"hydra.sweep.dir={self.run_dir}", *LAUNCH, *overrides]
        self.process = subprocess.Popen(
            args, cwd=cli.tmp_path, env=cli.env | slurm.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def result(self, timeout: float = 300) -> Result:
        """Wait for the sweep to end; its exit code, output and folder."""
        stdout, stderr = self.process.communicate(timeout=timeout)
        return Result(self.process.returncode, stdout, stderr, self.run_dir)

    def __enter__(self) -> Sweep:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate()


def running(slurm: SlurmCluster) -> list[str]:
    """Ids of the jobs (array tasks) running now."""
    return [line.split()[0] for line in slurm.jobs() if line.split()[1] == "RUNNING"]


def test_a_sweep_runs_as_one_job_array_and_shares_the_cache(cli: Cli, slurm: SlurmCluster, server: Any) -> None:
    """Three jobs, one array, the key from the environment: one table of ok jobs, the key written nowhere, a free rerun."""
    key = "sk-cluster-" + "7" * 24
    judge = server(policy="hash", latency=0.05, api_key=key)
    sweep = (
        "-m",
        *LAUNCH,
        "data.limit=6",
        "max_concurrency=2",
        "rubric=default,content_only,brackets",
        "judge.max_tokens=64",
    )
    overrides = (*sweep, *local(judge, key_env="JUDGEBIAS_CLUSTER_KEY"))
    started = time.monotonic()

    first = cli(*overrides, env=slurm.env | {"JUDGEBIAS_CLUSTER_KEY": key})
    sent = judge.stats()["requests"]
    measured("array sweep, first run", started, judge)
    started = time.monotonic()
    rerun = cli(*overrides, env=slurm.env | {"JUDGEBIAS_CLUSTER_KEY": key})
    measured("array sweep, rerun", started, judge)

    assert (0, 0) == (first.code, rerun.code), (first, rerun)
    assert (36, 36) == (sent, judge.stats()["with_auth"])  # 3 rubrics x 6 items x 2 orders, each with the key
    assert sent == judge.stats()["requests"]
    assert 1 == judge.stats()["max_per_body"]
    assert 3 * [("ok", "6")] == [(r["status"], r["n"]) for r in table(first.run_dir)]
    assert 3 * [("ok", "12")] == [(r["status"], r["calls_cached"]) for r in table(rerun.run_dir)]
    (array,) = {task.split("_")[0] for task in array_tasks(first.run_dir)}
    assert [f"{array}_0", f"{array}_1", f"{array}_2"] == array_tasks(first.run_dir)
    assert [] == files_holding(cli.tmp_path, key)
    assert first.stdout.rstrip().splitlines()[-1].startswith("2 ")  # the table is the last thing printed
    assert 1 == first.stderr.count(NOTICE)
    assert 1 == (first.stdout + first.stderr).count("Bypassing sacct error")  # in the notice only


def test_a_failing_job_still_ends_with_the_table(cli: Cli, slurm: SlurmCluster) -> None:
    """With the array's resources from the config, a job that fails is a row of the table and the sweep exits 1."""
    started = time.monotonic()
    result = cli(
        "-m", *LAUNCH, f"hydra.launcher.partition={PARTITION}", "data.limit=3", *QUICK, "judge=noisy,replay",
        env=slurm.env,
    )  # fmt: skip
    print(f"\nfailing job: {time.monotonic() - started:.1f} s wall, 0 requests (scripted and replay judges)")

    assert 1 == result.code, result
    rows = table(result.run_dir)
    assert [("0", "ok", "3"), ("1", "failed", "")] == [(r["job"], r["status"], r["n"]) for r in rows]
    assert "judge.name is required" in rows[1]["error"]
    assert "1 of 2 jobs did not finish cleanly" in result.stderr
    (script,) = (result.run_dir / ".submitit").glob("*/*_submission.sh")
    flags = [line[len("#SBATCH ") :] for line in script.read_text(encoding="utf-8").splitlines()]
    expected = ["--array=0-1%2", "--cpus-per-task=1", "--mem=1GB", f"--partition={PARTITION}", "--time=240"]
    assert expected == [flag for flag in flags if flag in expected]


def test_a_cancelled_job_is_listed_and_the_rerun_pays_only_for_what_it_missed(
    cli: Cli, slurm: SlurmCluster, server: Any
) -> None:
    """scancel mid-run: the job is a failed row (exit 1); the same sweep rerun completes it and no reply is paid twice."""
    judge = server(policy="hash", latency=0.5)
    sweep = ("data.limit=10", "max_concurrency=1", "rubric=default,content_only", *local(judge))
    started = time.monotonic()

    with Sweep(cli, slurm, *sweep) as submitted:
        slurm.wait_for(lambda: len(running(slurm)) == 2 and judge.stats()["requests"] >= 6, "two jobs mid-run", 120)
        (second,) = [job for job in running(slurm) if job.endswith("_1")]
        slurm.command("scancel", second)
        first = submitted.result()
    sent = judge.stats()["requests"]
    measured("cancelled sweep", started, judge)
    judge.reconfigure(latency=0.0)
    started = time.monotonic()
    rerun = cli("-m", *LAUNCH, *sweep, env=slurm.env)
    measured("cancelled sweep, rerun", started, judge)

    assert 1 == first.code, first
    rows = table(first.run_dir)
    assert [("0", "ok"), ("1", "failed")] == [(r["job"], r["status"]) for r in rows]
    assert "stopped by SLURM" in rows[1]["error"]
    assert 20 < sent < 40  # job 0 whole (20 calls), job 1 in part
    assert 0 == rerun.code, rerun
    assert [("ok", "20", "0"), ("ok", str(sent - 20), str(40 - sent))] == [
        (r["status"], r["calls_cached"], r["calls_live"]) for r in table(rerun.run_dir)
    ]
    assert 40 == judge.stats()["requests"]
    assert 1 == judge.stats()["max_per_body"]  # no reply paid twice, the ones in flight at scancel included


@pytest.mark.timeout(600)
def test_a_job_past_its_time_limit_is_requeued_and_resumes_from_the_cache(
    cli: Cli, slurm: SlurmCluster, server: Any
) -> None:
    """With max_num_timeout=1 a job still running at its time limit is requeued and finishes from the cache.

    slurmctld tests time limits every 30 s (PERIODIC_TIMEOUT) and sends the warning signal at the first test within
    signal_delay_s + 30 s of the limit. The job is submitted with 10 minutes; once it is judging (submitit's handler
    is installed before the job runs, so the signal cannot kill it) its limit is lowered to 1 minute, so the next
    test, at most 30 s later, warns it. Its second run is given the 10 minutes back while it waits to start again
    (a requeued job begins after the credential lifetime), so it is never warned again, however busy the machine.
    """
    judge = server(policy="hash", latency=1.0)
    launcher = ("hydra.launcher.timeout_min=10", "hydra.launcher.signal_delay_s=30", "hydra.launcher.max_num_timeout=1")
    started = time.monotonic()

    with Sweep(cli, slurm, *launcher, "data.limit=48", "max_concurrency=1", *local(judge, "rubric=default")) as sweep:
        slurm.wait_for(lambda: len(running(slurm)) == 1 and judge.stats()["requests"] >= 1, "the job judging", 120)
        (job,) = running(slurm)
        slurm.command("scontrol", "update", f"JobId={job}", "TimeLimit=1")
        slurm.wait_for(
            lambda: "Restarts=1" in slurm.command("scontrol", "-o", "show", "job", job), "a requeue at the limit", 120
        )
        slurm.command("scontrol", "update", f"JobId={job}", "TimeLimit=10")
        before = judge.stats()["requests"]
        judge.reconfigure(latency=0.0)
        result = sweep.result()
    measured("time limit and requeue", started, judge)

    assert 0 == result.code, result
    assert [("ok", "48")] == [(r["status"], r["n"]) for r in table(result.run_dir)]
    assert 0 < before < 96
    assert 96 == judge.stats()["requests"]
    assert 1 == judge.stats()["max_per_body"]
    (log,) = (result.run_dir / ".submitit").glob("*/*_log.out")
    assert "Requeued job" in log.read_text(encoding="utf-8")
