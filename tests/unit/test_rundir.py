"""Run folders: a new one for every run, never an existing one."""

from __future__ import annotations

from pathlib import Path

from judgebias.cli import rundir


def test_a_taken_folder_gets_the_next_free_suffix(tmp_path: Path) -> None:
    """When the timestamped folder exists already, the run gets base-2 (then base-3), created on the spot."""
    base = tmp_path / "outputs" / "12-00-00"
    base.mkdir(parents=True)
    (tmp_path / "outputs" / "12-00-00-2").mkdir()
    made = rundir.unique_dir(str(base))
    assert str(base) + "-3" == made
    assert Path(made).is_dir()


def test_the_same_base_resolves_to_the_same_folder_within_a_run(tmp_path: Path) -> None:
    """Hydra resolving hydra.run.dir twice in one process gets one folder, not two."""
    base = str(tmp_path / "13-00-00")
    assert rundir.unique_dir(base) == rundir.unique_dir(base)
    assert [tmp_path / "13-00-00"] == sorted(tmp_path.iterdir())
