"""Sweeps end to end: the table at the end of a multirun, failures, parallel and cluster launchers."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Cli

QUICK = ("bootstrap.resamples=200", "report=false")
HAS_SUBMITIT = importlib.util.find_spec("hydra_plugins.hydra_submitit_launcher") is not None


def table(sweep_dir: Path) -> list[dict[str, str]]:
    """The rows of a sweep's sweep_summary.csv."""
    with (sweep_dir / "sweep_summary.csv").open(encoding="utf-8") as file:
        return list(csv.DictReader(file))


def local(server: Any, *more: str) -> tuple[str, ...]:
    """Overrides for the `local` judge pointed at a test server."""
    return ("judge=local", f"judge.base_url={server.url}", "judge.api_key_env=null", "data.limit=4", *QUICK, *more)


@pytest.mark.slow
def test_a_failing_job_is_recorded_and_the_sweep_still_aggregates(cli: Cli) -> None:
    """In `-m judge=noisy,replay` replay fails; the table lists both jobs, names the error, and the sweep exits 1."""
    result = cli("-m", "data.limit=3", *QUICK, "judge=noisy,replay")

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
def test_aggregation_by_hand_over_several_sweeps(cli: Cli, tmp_path: Path) -> None:
    """`python -m judgebias.aggregate A B --out C` puts the jobs of two sweeps into one table and exits 0."""
    first = cli("-m", "data.limit=3", *QUICK, "judge=noisy,longer")
    second = cli("-m", "data.limit=3", *QUICK, "judge=always_a")
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
    judge = server(policy="hash", latency=0.1)
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


FAKE_SLURM = r"""
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def sbatch(script_path: str) -> None:
    script = Path(script_path).read_text()
    match = re.search(r"^#SBATCH --array=0-(\d+)", script, flags=re.M)
    tasks = int(match.group(1)) + 1 if match else 1
    counter = HERE / "next_job_id"
    job_id = int(counter.read_text()) if counter.exists() else 4200
    counter.write_text(str(job_id + 1))
    subprocess.Popen(
        [sys.executable, __file__, "run", script_path, str(job_id), str(tasks)],
        start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    print(f"Submitted batch job {job_id}")


def run(script_path: str, job_id: str, tasks: str) -> None:
    script = Path(script_path).read_text()
    folder = script.strip().splitlines()[-1].split()[-1]
    for task in range(int(tasks)):
        task_id = f"{job_id}_{task}"
        pickle = Path(folder.replace("%j", task_id)) / f"{task_id}_submitted.pkl"
        deadline = time.monotonic() + 60
        while not pickle.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        env = dict(os.environ, SLURM_JOB_ID=str(int(job_id) * 100 + task), SLURM_ARRAY_JOB_ID=job_id,
                   SLURM_ARRAY_TASK_ID=str(task), SLURM_NTASKS="1", SLURM_JOB_NUM_NODES="1", SLURM_NODEID="0",
                   SLURM_JOB_NODELIST="localhost", SLURM_PROCID="0", SLURM_LOCALID="0")
        subprocess.run(["bash", script_path], env=env, check=False)


def srun(args: list[str]) -> None:
    logs = {}
    while args and args[0].startswith("--"):
        flag = args.pop(0)
        if flag in ("--output", "--error"):
            logs[flag] = args.pop(0)
    names = {"%A": os.environ["SLURM_ARRAY_JOB_ID"], "%a": os.environ["SLURM_ARRAY_TASK_ID"], "%t": "0",
             "%j": os.environ["SLURM_JOB_ID"]}
    files = {}
    for flag, pattern in logs.items():
        for key, value in names.items():
            pattern = pattern.replace(key, value)
        Path(pattern).parent.mkdir(parents=True, exist_ok=True)
        files[flag] = open(pattern, "a")
    result = subprocess.run(args, stdout=files.get("--output"), stderr=files.get("--error", files.get("--output")))
    sys.exit(result.returncode)


if __name__ == "__main__":
    mode, rest = sys.argv[1], sys.argv[2:]
    if mode == "sbatch":
        sbatch(rest[-1])
    elif mode == "run":
        run(*rest)
    elif mode == "srun":
        srun(rest)
    elif mode == "sacct":
        print("JobID|State|NodeList")
"""


def fake_slurm(folder: Path) -> str:
    """sbatch, srun and sacct stand-ins in `folder` (array tasks run here, one after another); returns a PATH."""
    folder.mkdir()
    (folder / "fake_slurm.py").write_text(FAKE_SLURM, encoding="utf-8")
    for tool in ("sbatch", "srun", "sacct"):
        wrapper = folder / tool
        wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{folder / "fake_slurm.py"}" {tool} "$@"\n', "utf-8")
        wrapper.chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"


@pytest.mark.slow
@pytest.mark.skipif(not HAS_SUBMITIT, reason="hydra-submitit-launcher is not installed (pip install -e '.[dev]')")
def test_slurm_launcher_config_submits_an_array_job(cli: Cli, tmp_path: Path) -> None:
    """hydra/launcher=slurm submits the sweep as one sbatch array with the config's resources, then aggregates it."""
    path = fake_slurm(tmp_path / "slurm")

    result = cli(
        "-m", "hydra/launcher=slurm", "hydra.launcher.partition=debug", "data.limit=3", *QUICK, "judge=noisy,replay",
        env={"PATH": path},
    )  # fmt: skip

    assert 1 == result.code, result
    rows = table(result.run_dir)
    assert [("0", "ok"), ("1", "failed")] == [(r["job"], r["status"]) for r in rows]
    assert "judge.name is required" in rows[1]["error"]
    (script,) = (result.run_dir / ".submitit").glob("*/*_submission.sh")
    lines = script.read_text(encoding="utf-8").splitlines()
    expected = ["--array=0-1%2", "--cpus-per-task=2", "--mem=4GB", "--partition=debug", "--time=240"]
    assert expected == [line[len("#SBATCH ") :] for line in lines if line[len("#SBATCH ") :] in expected]


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
def test_dry_run_sweep_tabulates_the_estimates(cli: Cli) -> None:
    """`-m dry_run=true` over two judges ends with a table of the calls each job would make."""
    result = cli("-m", "data.limit=5", *QUICK, "dry_run=true", "judge=gpt4o,gpt4o_mini")

    assert 0 == result.code, result
    rows = table(result.run_dir)
    assert [("dry-run", "10"), ("dry-run", "10")] == [(r["status"], r["calls_live"]) for r in rows]
    assert json.loads((result.run_dir / "0" / "dry_run.json").read_text(encoding="utf-8"))["dry_run"]
