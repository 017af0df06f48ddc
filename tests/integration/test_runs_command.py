"""`python -m judgebias.runs`: run folders that hold no result (an input mistake, Ctrl-C) are listed and removed;
nothing a user or a rerun needs is."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judgebias.runs import main as runs
from tests.helpers import InProcessCli

pytestmark = pytest.mark.slow


def interrupted_run(cli: InProcessCli, url: str) -> Path:
    """A run stopped by Ctrl-C after some replies arrived (a subprocess, as a user's terminal sends SIGINT)."""
    run_dir = cli.tmp_path / "interrupted"
    command = [
        sys.executable, "-m", "judgebias.run", f"cache.dir={cli.cache_dir}", f"hydra.run.dir={run_dir}",
        "judge=local", f"judge.base_url={url}", "judge.api_key_env=null", "max_concurrency=1",
    ]  # fmt: skip
    process = subprocess.Popen(command, cwd=cli.tmp_path, env=cli.env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (run_dir / "verdicts.jsonl.part").exists() or (run_dir / "verdicts.jsonl.part").stat().st_size == 0:
        assert process.poll() is None and time.monotonic() < deadline, "the run ended before it could be stopped"
        time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert 130 == process.returncode, stderr
    assert "python -m judgebias.runs clean" in stderr
    return run_dir


def test_list_and_clean_remove_only_the_folders_with_no_result(
    cli_here: InProcessCli,
    server,  # type: ignore[no-untyped-def]
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An input mistake and a Ctrl-C leave folders `list` marks and `clean` removes; a finished run, a folder with a
    file of the user's in it, and the cache stay; the interrupted run, rerun, pays only for what it had not got."""
    judge = server(policy="hash", latency=0.05)
    finished = cli_here("data.limit=3", "report=false")
    mistake = cli_here("data=jsonl", "data.path=nowhere.jsonl")
    assert (0, 2) == (finished.code, mistake.code)
    stopped = interrupted_run(cli_here, judge.url)
    answered = judge.stats()["completions_ok"]
    kept_by_user = cli_here("data=jsonl", "data.path=nowhere.jsonl").run_dir
    (kept_by_user / "notes.txt").write_text("mine", encoding="utf-8")
    capsys.readouterr()

    assert 0 == runs(["list", str(cli_here.tmp_path)])
    listed = capsys.readouterr().out.splitlines()
    assert "4 run folders, 0 sweep folders, 2 with no result: python -m judgebias.runs clean" in listed[-1]
    stub_lines = [line for line in listed[:-1] if "no result:" in line]
    assert {str(mistake.run_dir), str(stopped)} == {line.split()[0] for line in stub_lines}
    assert any("no such data file" in line for line in stub_lines)

    assert 0 == runs(["clean", "--dry-run", str(cli_here.tmp_path)])
    assert mistake.run_dir.exists() and stopped.exists()
    assert 0 == runs(["clean", str(cli_here.tmp_path)])
    assert "removed 2 run folders with no result; 2 kept" == capsys.readouterr().out.splitlines()[-1]
    assert not mistake.run_dir.exists() and not stopped.exists()
    assert (finished.run_dir / "verdicts.jsonl").exists() and (kept_by_user / "notes.txt").exists()

    rerun = cli_here("judge=local", f"judge.base_url={judge.url}", "judge.api_key_env=null")
    assert 0 == rerun.code, rerun
    assert answered == rerun.summary()["calls_cached"]
    assert 96 - answered == rerun.summary()["calls_live"]


def test_sweeps_are_listed_with_their_failed_jobs_and_a_killed_empty_sweep_is_cleaned(
    cli_here: InProcessCli, capsys: pytest.CaptureFixture[str]
) -> None:
    """A sweep with a failing job is listed with its jobs' statuses and the failure in one line (whole with
    --verbose); a sweep killed before any job started (only multirun.yaml) is removed by clean, a finished one kept."""
    sweep = cli_here("-m", "data.limit=3", "report=false", "data.path=q1.jsonl,nowhere.jsonl")
    assert 1 == sweep.code
    killed = cli_here.tmp_path / "killed-sweep"
    killed.mkdir()
    (killed / "multirun.yaml").write_text("hydra: {}\n", encoding="utf-8")  # as Hydra writes it before job 0
    capsys.readouterr()

    assert 0 == runs(["list", str(cli_here.tmp_path)])
    listed = capsys.readouterr().out.splitlines()
    assert any(line.startswith(str(sweep.run_dir)) and "sweep       2 jobs: 1 ok, 1 failed" in line for line in listed)
    (failed,) = [line for line in listed if line.startswith("    job 1: failed: ")]
    assert "nowhere.jsonl" in failed
    assert any(line.startswith(str(killed)) and "no job started" in line for line in listed)
    assert listed[-1].startswith("0 run folders, 2 sweep folders, 1 with no result")

    assert 0 == runs(["clean", str(cli_here.tmp_path)])
    assert "removed 0 run folders with no result and 1 sweep folders with no job; 0 kept" in capsys.readouterr().out
    assert not killed.exists() and (sweep.run_dir / "multirun.yaml").exists()


def test_a_folder_that_is_not_there_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`list` on a folder that does not exist says so in one line, exit 2."""
    assert 2 == runs(["list", str(tmp_path / "outputs")])
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("judgebias: error: ") and "no such folder" in line


def test_a_killed_run_s_part_files_are_leftovers_and_nothing_like_them_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run judged in parts and killed leaves verdicts.jsonl.part and its parts' verdicts.jsonl.part.N and
    .N.rows (no summary): `clean` removes that folder; a folder with a file merely named like them is kept."""
    killed, lookalike = tmp_path / "2026-12-04" / "killed", tmp_path / "2026-12-04" / "mine"
    for folder, extras in (
        (killed, ("verdicts.jsonl.part.1", "verdicts.jsonl.part.2", "verdicts.jsonl.part.2.rows")),
        (lookalike, ("verdicts.jsonl.part.1", "verdicts.jsonl.part.old")),
    ):
        (folder / ".hydra").mkdir(parents=True)
        (folder / "verdicts.jsonl.part").write_text('{"id": "i0"}\n', encoding="utf-8")
        for extra in extras:
            (folder / extra).write_text('{"id": "i9"}\n', encoding="utf-8")
    assert 0 == runs(["clean", str(tmp_path)])
    assert "removed 1 run folders with no result; 1 kept" in capsys.readouterr().out
    assert not killed.exists() and (lookalike / "verdicts.jsonl.part.old").exists()
