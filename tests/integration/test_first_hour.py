"""What a new user meets in the first hour: run folders, where files went, hints, misspellings, own configs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import REPO, InProcessCli

pytestmark = pytest.mark.slow


def run_plain(cwd: Path, *overrides: str, config_dir: str | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m judgebias.run` with the default run folder (no hydra.run.dir override), from `cwd`."""
    options = ["--config-dir", config_dir] if config_dir else []
    return subprocess.run(
        [sys.executable, "-m", "judgebias.run", *options, f"cache.dir={cwd / 'cache'}", *overrides],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def test_runs_started_at_once_each_get_their_own_folder(tmp_path: Path) -> None:
    """Several runs started together from one folder write into as many run folders, none shared."""
    args = [sys.executable, "-m", "judgebias.run", f"cache.dir={tmp_path / 'cache'}", "data.limit=3", "report=false"]
    runs = [
        subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    outputs = [run.communicate(timeout=240) for run in runs]
    assert [0] * 4 == [run.returncode for run in runs], outputs
    folders = {
        line.removeprefix("run folder: ") for out, _ in outputs for line in out.splitlines() if "run folder" in line
    }
    assert 4 == len(folders)
    assert all((Path(folder) / "summary.json").is_file() for folder in folders)


def test_a_run_says_where_its_files_went(tmp_path: Path) -> None:
    """The last lines of a run name its folder and its report."""
    result = run_plain(tmp_path, "data.limit=3")
    assert 0 == result.returncode, result.stderr
    folder_line, report_line = result.stdout.splitlines()[-2:]
    folder = Path(folder_line.removeprefix("run folder: "))
    assert (folder / "summary.json").is_file() and folder.is_relative_to(tmp_path / "outputs")
    assert f"report: {folder / 'report.html'}" == report_line


def test_a_folder_holding_a_run_is_never_written_into(cli_here: InProcessCli) -> None:
    """Naming the folder of an earlier run as hydra.run.dir is refused; the earlier results stay as they were."""
    first = cli_here("data.limit=3", "report=false")
    assert 0 == first.code, first
    before = (first.run_dir / "summary.json").read_bytes()
    second = subprocess.run(
        [sys.executable, "-m", "judgebias.run", f"hydra.run.dir={first.run_dir}", f"cache.dir={cli_here.cache_dir}"],
        cwd=cli_here.tmp_path,
        env=cli_here.env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert 2 == second.returncode
    assert "is not empty" in second.stderr and str(first.run_dir) in second.stderr
    assert before == (first.run_dir / "summary.json").read_bytes()


def test_a_missing_file_of_ones_own_is_named_without_the_shared_data_hint(cli_here: InProcessCli) -> None:
    """data=jsonl with a path that does not exist names the resolved file, not JUDGEBIAS_DATA_ROOT."""
    result = cli_here("data=jsonl", "data.path=mine/items.jsonl")
    assert 2 == result.code
    assert f"{cli_here.tmp_path / 'mine' / 'items.jsonl'}: no such data file" in result.stderr
    assert "JUDGEBIAS_DATA_ROOT" not in result.stderr


def test_a_relative_shared_data_root_is_shown_resolved(cli_here: InProcessCli) -> None:
    """A relative JUDGEBIAS_DATA_ROOT that leads nowhere is shown as the folder it resolved to."""
    result = cli_here("data=mtbench_human", env={"JUDGEBIAS_DATA_ROOT": "../shared/data"})
    assert 2 == result.code
    resolved = (cli_here.tmp_path / "../shared/data").absolute()
    assert str(resolved) in result.stderr and "relative to the current folder" in result.stderr
    assert 1 == len(result.stderr.strip().splitlines())


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("judge.temprature=0", "judge.temprature is not a judgebias setting: did you mean judge.temperature?"),
        ("max_concurency=2", "max_concurency is not a judgebias setting: did you mean max_concurrency?"),
        ("judge=gpt4o_mni", "did you mean judge=gpt4o_mini?"),
        ("data.normalize.strp=true", "did you mean data.normalize.strip?"),
        ("+judge.temprature=0", "judge.temprature (added with +judge.temprature=...) is not a judgebias setting"),
        ("+judge.temperature=0", "judge.temperature is already a setting: set it without the plus"),
    ],
)
def test_a_misspelling_is_one_line_with_a_did_you_mean(cli_here: InProcessCli, override: str, expected: str) -> None:
    """A misspelt key or option gets one `judgebias: error:` line naming the likely meaning, and exit 2."""
    result = cli_here(override, "data.limit=2", "report=false")
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert 2 == result.code
    assert 1 == len(lines), result.stderr
    assert lines[0].startswith("judgebias: error: ") and expected in lines[0], lines[0]


def test_help_lists_the_other_commands() -> None:
    """--help names every other entry point, so a user finds the dev server, aggregate, check and cache."""
    out = subprocess.run(
        [sys.executable, "-m", "judgebias.run", "--help"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    for command in (
        "judgebias.devserver",
        "judgebias.aggregate",
        "judgebias.check",
        "judgebias.cache",
        "judgebias.runs",
    ):
        assert f"python -m {command}" in out


def run_example(tmp_path: Path, *overrides: str) -> dict[str, Any]:
    """The shipped example configs, copied as a user would, run with `overrides`: the run's summary."""
    shutil.copytree(REPO / "examples", tmp_path / "examples", dirs_exist_ok=True)
    result = run_plain(tmp_path, *overrides, "report=false", config_dir="examples/own-configs")
    assert 0 == result.returncode, result.stderr
    folder = Path(result.stdout.splitlines()[-1].removeprefix("run folder: "))
    return dict(json.loads((folder / "summary.json").read_text(encoding="utf-8")))


def test_own_judge_rubric_and_data_from_a_config_dir(tmp_path: Path, server) -> None:  # type: ignore[no-untyped-def]
    """The shipped example of one's own judge, rubric and dataset runs as docs/configs.md shows it."""
    judge = server(policy="longer")
    summary = run_example(tmp_path, "judge=team_judge", f"judge.base_url={judge.url}", "rubric=support", "data=tickets")
    assert ("team_judge", "support", "tickets", 4) == (
        summary["judge"],
        summary["rubric"],
        summary["data"],
        summary["n_items"],
    )
    assert 8 == judge.stats()["requests"]
    wrong = run_plain(tmp_path, "judge=team_jduge", config_dir="examples/own-configs")
    assert "did you mean judge=team_judge?" in wrong.stderr


def test_the_example_judge_fits_a_rubric_that_explains_first(tmp_path: Path, server) -> None:  # type: ignore[no-untyped-def]
    """The copied example judge with rubric=brackets gives readable verdicts: its budget fits an explanation."""
    judge = server(policy="longer")
    summary = run_example(
        tmp_path, "judge=team_judge", f"judge.base_url={judge.url}", "rubric=brackets", "data.limit=4"
    )
    assert ("ok", 0, 8) == (summary["status"], summary["n_invalid"], judge.stats()["requests"])


def test_a_reply_budget_too_small_for_the_rubric_is_refused_before_any_call(
    cli_here: InProcessCli,
    server,  # type: ignore[no-untyped-def]
) -> None:
    """judge.max_tokens below what the rubric's answer format needs is one line naming both, and nothing is sent."""
    judge = server(policy="longer")
    result = cli_here("judge=local", f"judge.base_url={judge.url}", "rubric=brackets", "judge.max_tokens=8")
    assert 2 == result.code
    (line,) = result.stderr.strip().splitlines()
    assert "judge.max_tokens=8 is too few for rubric=brackets" in line and "judge.max_tokens=512" in line
    assert 0 == judge.stats()["requests"]


def test_offline_judges_are_counted_as_offline_not_live(cli_here: InProcessCli) -> None:
    """A scripted judge sends no request: calls_live is 0, its calls are calls_offline, no tokens, no soft note."""
    result = cli_here("data.limit=6", "report=false")
    summary = result.summary()
    assert (12, 0, 12, 0, 0) == (
        summary["calls_total"],
        summary["calls_live"],
        summary["calls_offline"],
        summary["prompt_tokens"],
        summary["completion_tokens"],
    )
    assert "soft_note" not in summary
    assert "calls_offline: 12" in result.stdout and "calls_live" not in result.stdout


def test_failed_calls_are_not_counted_as_live_replies(cli_here: InProcessCli, server) -> None:  # type: ignore[no-untyped-def]
    """Calls that failed after their retries are failed_calls; calls_live counts only the replies that came back."""
    judge = server(policy="longer", p500=0.5, fault_seed=3)
    overrides = ["judge=local", f"judge.base_url={judge.url}", "judge.max_retries=0", "judge.api_key_env=null"]
    result = cli_here(*overrides, "data.limit=10", "report=false")
    summary = result.summary()
    assert 1 == result.code and summary["failed_calls"] > 0
    assert summary["calls_total"] - summary["failed_calls"] == summary["calls_live"]
    assert judge.stats()["completions_ok"] == summary["calls_live"]


def test_a_verdict_line_reads_on_its_own(cli_here: InProcessCli) -> None:
    """Each line names the winner and each call's pick as a or b, in the item's frame, beside the raw fields."""
    result = cli_here("data.limit=12", "report=false")
    for line in result.verdicts():
        assert {"1": "a", "2": "b"}.get(line["verdict"], line["verdict"]) == line["winner"]
        assert {"A": "a", "B": "b"}.get(line["call1"], line["call1"]) == line["pick1"]
        assert {"A": "b", "B": "a"}.get(line["call2"], line["call2"]) == line["pick2"]
        if line["pick1"] == line["pick2"] and line["pick1"] in ("a", "b"):
            assert line["pick1"] == line["winner"]
