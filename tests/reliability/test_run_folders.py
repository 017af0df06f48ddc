"""No run writes into a folder it did not make: a used or a system folder named as the run or sweep folder is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import Cli
from tests.reliability.helpers import judgebias, snapshot

pytestmark = [pytest.mark.reliability, pytest.mark.slow]

QUICK = ("data.limit=2", "report=false", "progress=off")


def test_a_run_folder_holding_ones_own_files_is_refused_and_left_as_it_was(cli: Cli) -> None:
    """A hydra.run.dir holding a report.html, ratings.csv and .hydra/ of the user's is refused in one line, untouched."""
    mine = cli.tmp_path / "mine"
    (mine / ".hydra").mkdir(parents=True)
    for name in ("report.html", "ratings.csv", ".hydra/config.yaml"):
        (mine / name).write_text(f"the user's own {name}\n", encoding="utf-8")
    before = snapshot(mine)
    result = judgebias(cli, f"hydra.run.dir={mine}", f"cache.dir={cli.cache_dir}", *QUICK)
    assert 2 == result.returncode
    assert [
        f"judgebias: error: hydra.run.dir='{mine}' is not empty (it holds '.hydra'): choose another "
        "hydra.run.dir, leave it unset (every run then gets a new folder), or add --reuse-dir to write into "
        "it anyway"
    ] == result.stderr.splitlines()
    assert before == snapshot(mine)


def test_a_second_sweep_into_the_same_folder_is_refused_and_the_first_sweeps_jobs_stay(cli: Cli) -> None:
    """`-m ... hydra.sweep.dir=D` run twice: the second is refused and the first sweep's jobs are unchanged."""
    sweep = cli.tmp_path / "sweep"
    args = ("-m", "judge=noisy,longer", f"hydra.sweep.dir={sweep}", f"cache.dir={cli.cache_dir}", *QUICK)
    first = judgebias(cli, *args)
    assert 0 == first.returncode, first.stderr
    before = snapshot(sweep)
    second = judgebias(cli, *args[:1], "judge=always_a,always_b", *args[2:])
    assert 2 == second.returncode
    assert 1 == len(second.stderr.splitlines()) and "hydra.sweep.dir=" in second.stderr
    assert before == snapshot(sweep)


def test_the_opt_in_writes_a_rerun_into_the_same_folder(cli: Cli) -> None:
    """--reuse-dir lets a deliberate rerun write into the folder of an earlier run."""
    folder = cli.tmp_path / "again"
    first = judgebias(cli, f"hydra.run.dir={folder}", f"cache.dir={cli.cache_dir}", *QUICK)
    assert 0 == first.returncode, first.stderr
    rerun = judgebias(cli, f"hydra.run.dir={folder}", f"cache.dir={cli.cache_dir}", "--reuse-dir", *QUICK)
    assert 0 == rerun.returncode, rerun.stderr
    assert f"run folder: {folder}" in rerun.stdout.splitlines()


@pytest.mark.parametrize("folder", ["/", "/etc/judgebias", "/proc", "/usr/lib/runs", "/tmp"])
def test_system_folders_are_refused_even_with_the_opt_in(cli: Cli, folder: str) -> None:
    """`/` and the system folders are never a run folder, with or without --reuse-dir."""
    for extra in ((), ("--reuse-dir",)):
        result = judgebias(cli, f"hydra.run.dir={folder}", *extra, *QUICK)
        assert 2 == result.returncode
        expected = "is a system folder: choose a folder of your own, or leave hydra.run.dir unset"
        assert [f"judgebias: error: hydra.run.dir='{folder}' {expected}"] == result.stderr.splitlines()


def test_an_empty_folder_of_ones_own_is_used(cli: Cli) -> None:
    """An existing but empty folder is a fine run folder: the run writes its results there."""
    empty = cli.tmp_path / "empty"
    empty.mkdir()
    result = judgebias(cli, f"hydra.run.dir={empty}", f"cache.dir={cli.cache_dir}", *QUICK)
    assert 0 == result.returncode, result.stderr
    assert (Path(empty) / "summary.json").is_file()


@pytest.mark.parametrize(
    "override",
    ["hydra.output_subdir=/OUTSIDE", "hydra.output_subdir=../outside", "hydra.sweep.subdir=../outside"],
)
def test_a_hydra_path_outside_the_run_folder_is_refused_and_writes_nothing(cli: Cli, override: str) -> None:
    """hydra.output_subdir or hydra.sweep.subdir pointing out of the run's folder (absolute, or with ..) is refused
    in one line before Hydra writes anything, so a user's config.yaml or summary.json there stays as it was."""
    mine = cli.tmp_path / "outside"
    mine.mkdir()
    (mine / "config.yaml").write_text("mine\n", encoding="utf-8")
    (mine / "summary.json").write_text("{}\n", encoding="utf-8")
    value = override.replace("/OUTSIDE", str(mine))
    args = ("-m", "judge=noisy,longer", value) if "sweep" in override else (value,)

    result = cli(*args, "data.limit=2", "report=false")

    assert 2 == result.code and 1 == len(result.stderr.strip().splitlines())
    assert "would write outside the run's folder" in result.stderr
    assert ("mine\n", "{}\n") == ((mine / "config.yaml").read_text(), (mine / "summary.json").read_text())
    assert not result.run_dir.exists()
