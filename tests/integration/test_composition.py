"""A config or override that sets hydra.mode is still honoured when the mode probe is skipped elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import InProcessCli, Result

pytestmark = pytest.mark.slow

OFFLINE = ("data.limit=2", "report=false", "bootstrap.resamples=0", "progress=off")


def run(tmp_path: Path, *args: str) -> Result:
    """The real entry point in this process (composition is what is checked, not the process), with its own cache and
    sweep folder under tmp_path; flags come last, where Hydra's parser takes them after the overrides."""
    overrides = [arg for arg in args if not arg.startswith("--")]
    flags = [arg for arg in args if arg.startswith("--")]
    return InProcessCli(tmp_path)(*overrides, *OFFLINE, f"hydra.sweep.dir={tmp_path / 'sweep'}", *flags)


def test_a_mode_override_still_makes_a_multirun(tmp_path: Path) -> None:
    """`hydra.mode=MULTIRUN` without -m runs a sweep, as Hydra documents."""
    completed = run(tmp_path, "hydra.mode=MULTIRUN", "judge=always_a,longer")
    assert 0 == completed.code, completed
    assert ["0", "1"] == sorted(p.name for p in (tmp_path / "sweep").iterdir() if p.is_dir())


def test_a_user_config_that_sets_the_mode_is_honoured(tmp_path: Path) -> None:
    """An option from --config-dir that sets hydra.mode: MULTIRUN still turns the run into a sweep."""
    options = tmp_path / "mine" / "mode"
    options.mkdir(parents=True)
    (options / "sweep.yaml").write_text("# @package _global_\nhydra:\n  mode: MULTIRUN\n", encoding="utf-8")
    completed = run(tmp_path, f"--config-dir={tmp_path / 'mine'}", "+mode=sweep", "judge=always_a")
    assert 0 == completed.code, completed
    assert (tmp_path / "sweep" / "0" / "summary.json").is_file()
