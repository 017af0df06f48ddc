"""Names of anyone's choosing reach the terminal with their control characters shown, never acted on: a judge,
rubric or data name a hostile file put in a summary, a folder name, a path in an error. Planted through every
command (run, check, compare, aggregate, runs, audit, review, cache): an OSC window-title sequence, a clear-screen
CSI sequence and a right-to-left override; none of them may reach stdout or stderr as it is."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from judgebias import aggregate, check, compare, runs
from judgebias.audit.command import main as audit_main
from judgebias.cache.__main__ import main as cache_main
from judgebias.review.__main__ import main as review_main
from tests.helpers import InProcessCli, write_items
from tests.reliability.helpers import pairs, run_here

pytestmark = pytest.mark.reliability

EVIL = "x\x1b]0;owned\x07\x1b[2J\u202eevil"  # a window title, a cleared screen, text turned right to left
RAW = ("\x1b", "\x07", "\u202e")  # what must never reach the terminal as it is


def a_run(folder: Path, tmp_path: Path, name: str = EVIL) -> Path:
    """A finished run whose summary names its judge, rubric and data `name` (as a forged summary would)."""
    data = write_items(tmp_path / "items.jsonl", pairs(12))
    run_here(folder, "report=false", "progress=off", "bootstrap.resamples=50", "data=jsonl", f"data.path={data}")
    path = folder / "summary.json"
    summary = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(summary | {"judge": name, "rubric": name, "data": name}), encoding="utf-8")
    return folder


def printed(capsys: pytest.CaptureFixture[str], command: Callable[[], object]) -> str:
    """Everything `command` printed, on stdout and stderr (a usage error's exit included)."""
    with contextlib.suppress(SystemExit):
        command()
    captured = capsys.readouterr()
    return captured.out + captured.err


def check_command(tmp_path: Path) -> Callable[[], object]:
    run = a_run(tmp_path / "run", tmp_path)
    return lambda: check.main([str(run), "--min-consistency", "1.0"])


def compare_command(tmp_path: Path) -> Callable[[], object]:
    base = a_run(tmp_path / "base", tmp_path)
    cand = a_run(tmp_path / "cand", tmp_path)
    return lambda: compare.main([str(base), str(cand)])


def aggregate_command(tmp_path: Path) -> Callable[[], object]:
    a_run(tmp_path / "sweep" / "0", tmp_path)
    return lambda: aggregate.main([str(tmp_path / "sweep"), "--no-report"])


def runs_command(tmp_path: Path) -> Callable[[], object]:
    run = a_run(tmp_path / "outputs" / "2026-12-06" / EVIL, tmp_path, name="plain")
    (run / ".hydra").mkdir()  # what makes a folder a run's for `runs`
    return lambda: runs.main(["list", str(tmp_path / "outputs")])


def audit_command(tmp_path: Path) -> Callable[[], object]:
    return lambda: audit_main(["fastchat", str(tmp_path / EVIL), "--out", str(tmp_path / "audit")])


def review_command(tmp_path: Path) -> Callable[[], object]:
    run = a_run(tmp_path / f"run{EVIL}", tmp_path, name="plain")
    return lambda: review_main(["sample", str(run), "--n", "3"])


def cache_command(tmp_path: Path) -> Callable[[], object]:
    return lambda: cache_main(["stats", "--cache-dir", str(tmp_path / f"cache{EVIL}")])


@pytest.mark.parametrize(
    "command",
    [check_command, compare_command, aggregate_command, runs_command, audit_command, review_command, cache_command],
    ids=lambda command: command.__name__.removesuffix("_command"),
)
def test_a_planted_name_is_shown_escaped_by_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: Callable[[Path], Callable[[], object]]
) -> None:
    """The planted name is printed (escaped: \\x1b, \\u202e), and no control character of it acts."""
    run_it = command(tmp_path)
    capsys.readouterr()
    text = printed(capsys, run_it)
    assert "\\x1b]0;owned" in text, text
    assert not any(raw in text for raw in RAW), repr(text)


def test_a_planted_name_is_shown_escaped_by_the_run(cli_here: InProcessCli, tmp_path: Path) -> None:
    """A data path holding the sequences, written as Hydra wants it quoted: the one-line error shows them escaped."""
    result = cli_here("data=jsonl", f"data.path='{tmp_path / EVIL}.jsonl'")
    assert 2 == result.code
    text = result.stdout + result.stderr
    assert "\\x1b]0;owned" in text and not any(raw in text for raw in RAW), repr(text)
