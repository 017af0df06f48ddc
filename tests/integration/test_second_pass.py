"""What a new user still tripped over on a second pass: the header's overrides, --version, hints, the README's
commands, file permissions and the note on a run answered wholly from the cache."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from judgebias.io.files import current_umask as umask
from judgebias.io.versions import installed_versions
from tests.helpers import REPO, InProcessCli

pytestmark = pytest.mark.slow


def test_header_names_the_overrides_that_change_the_run(cli_here: InProcessCli) -> None:
    """`rubric.labels=tags` shows in the printed header, beside the group choices, without Hydra's own settings."""
    result = cli_here("rubric.labels=tags", "data.limit=3", "report=false")

    header = result.stdout.splitlines()[0]
    assert header.startswith("judgebias  judge=noisy  rubric=default  data=q1  status=ok  overrides: ")
    assert "rubric.labels=tags" in header and "data.limit=3" in header
    assert "hydra.run.dir" not in header


def test_version_is_judgebiass_own() -> None:
    """`python -m judgebias.run --version` prints judgebias and its version, not Hydra's."""
    completed = subprocess.run(
        [sys.executable, "-m", "judgebias.run", "--version"], capture_output=True, text=True, timeout=60, check=False
    )

    assert (0, f"judgebias {installed_versions(['judgebias'])['judgebias']}\n") == (
        completed.returncode,
        completed.stdout,
    )


def test_every_file_of_a_run_has_the_same_mode_under_the_umask(cli_here: InProcessCli) -> None:
    """A run's files (summary.json, report.html, verdicts.jsonl, ...) share one mode, the one the umask gives."""
    result = cli_here("data.limit=3", env={})

    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in result.run_dir.iterdir() if p.is_file()}
    expected = 0o666 & ~umask()
    assert {"summary.json", "report.html", "verdicts.jsonl"} <= set(modes)
    assert {expected} == set(modes.values()), modes


def test_the_readme_command_finds_the_newest_report_sweep_jobs_included(tmp_path: Path) -> None:
    """README step 5's command names the newest report.html, also when it is a sweep job's."""
    (command,) = re.findall(r"^(ls -t .*report\.html.*)$", (REPO / "README.md").read_text(encoding="utf-8"), re.M)
    older = tmp_path / "outputs" / "2026-11-30" / "22-04-45" / "report.html"
    newer = tmp_path / "outputs" / "multirun" / "2026-11-30" / "23-40-11" / "0" / "report.html"
    for number, page in enumerate((older, newer)):
        page.parent.mkdir(parents=True)
        page.write_text("<html></html>", encoding="utf-8")
        os.utime(page, (1_000_000 + number, 1_000_000 + number))

    found = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, check=True)

    assert "outputs/multirun/2026-11-30/23-40-11/0/report.html\n" == found.stdout
