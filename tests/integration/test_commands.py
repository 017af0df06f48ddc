"""The `judgebias` console script: every command README's table lists, by its name, running the same code as
`python -m judgebias.<command>`; with no command, the run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO

pytestmark = pytest.mark.slow
SCRIPT = Path(sys.executable).parent / "judgebias"


def readme_commands() -> list[str]:
    """The commands README's table names, in its order (the table under "## The commands")."""
    section = (REPO / "README.md").read_text(encoding="utf-8").split("## The commands", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([a-z]+)` \|", section, flags=re.MULTILINE)


def script(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    if not SCRIPT.exists():
        pytest.skip(f"the console script is not installed beside {sys.executable}")
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=180, cwd=cwd, check=False)


def module(name: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", f"judgebias.{name}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, cwd=cwd, check=False)


def test_the_help_lists_the_commands_readme_documents() -> None:
    """`judgebias --help` lists exactly README's commands, in its order; each one's help names itself as it was
    started (`judgebias check`, or `python -m judgebias.check`)."""
    names = readme_commands()
    assert len(names) == 9

    listed = script("--help")

    assert 0 == listed.returncode
    assert names == re.findall(r"^  judgebias ([a-z]+) ", listed.stdout, flags=re.MULTILINE)
    for name in names:
        if name == "run":
            continue  # the run's help is Hydra's (below)
        mine, theirs = script(name, "--help"), module(name, "--help")
        assert (0, 0) == (mine.returncode, theirs.returncode), name
        assert mine.stdout.startswith(f"usage: judgebias {name} ") and theirs.stdout.startswith(
            f"usage: python -m judgebias.{name} "
        ), name
        assert mine.stdout.split("\n\n", 1)[1] == theirs.stdout.split("\n\n", 1)[1], name  # the usage block wraps apart
    assert "Usage: judgebias run" in script("run", "--help").stdout
    assert script("help", "audit").stdout == script("audit", "--help").stdout


def test_a_command_runs_the_same_code_either_way(tmp_path: Path) -> None:
    """A run with no command and with `run` writes the same verdicts; `judgebias check` and `python -m
    judgebias.check` on it print the same and exit the same."""
    plain = script("data.limit=4", "hydra.run.dir=plain", cwd=tmp_path)
    named = script("run", "data.limit=4", "hydra.run.dir=named", cwd=tmp_path)
    assert (0, 0) == (plain.returncode, named.returncode), plain.stderr + named.stderr
    assert (tmp_path / "plain" / "verdicts.jsonl").read_bytes() == (tmp_path / "named" / "verdicts.jsonl").read_bytes()

    gate = ("named", "--min-consistency", "0.99")
    mine, theirs = script("check", *gate, cwd=tmp_path), module("check", *gate, cwd=tmp_path)

    assert (mine.returncode, mine.stdout) == (theirs.returncode, theirs.stdout)
    assert mine.returncode in (0, 1) and mine.stdout


def test_a_word_that_names_no_command_is_one_line_and_exit_2() -> None:
    """A misspelt command is refused before anything starts, with the nearest command named."""
    done = script("chek", "outputs")

    assert 2 == done.returncode and "" == done.stdout
    assert done.stderr.splitlines() == [
        "judgebias: error: no command 'chek': did you mean 'check'? the commands are run, check, compare, aggregate, "
        "runs, audit, review, cache, devserver (judgebias --help)"
    ]
