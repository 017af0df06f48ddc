"""The CI gate `python -m judgebias.check`: exit 0 on pass, 1 with readable reasons on a regression, 2 on misuse."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from judgebias import check
from tests.helpers import InProcessCli


def write_run(folder: Path, **figures: Any) -> Path:
    """A run folder whose summary.json has the given figures (a labelled, two-order run by default)."""
    summary = {
        "status": "ok",
        "judge": "noisy",
        "rubric": "default",
        "data": "q1",
        "n_items": 48,
        "win_rate": 0.45,
        "position_consistency": 0.85,
        "biased_first": 0.05,
        "biased_second": 0.02,
        "human_agreement": 0.8,
        "cohen_kappa": 0.7,
        "n_invalid": 0,
        "calls_total": 96,
        "failed_calls": 0,
    }
    summary |= figures
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps({k: v for k, v in summary.items() if v is not ...}), "utf-8")
    return folder


def gate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    """Run the gate in-process: exit code, stdout lines, stderr."""
    code = check.main(list(args))
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


STRICT = ("--min-consistency", "0.8", "--max-biased-first", "0.1", "--min-agreement", "0.75")


def test_a_run_within_every_threshold_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run that meets every threshold exits 0 with one short OK line."""
    run = write_run(tmp_path / "run")

    code, out, _ = gate(capsys, str(run), *STRICT)

    assert 0 == code
    assert ["OK: 1 job passes (position_consistency >= 0.8, biased_first <= 0.1, human_agreement >= 0.75)"] == out


def test_each_failing_threshold_is_one_line_naming_figure_value_and_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A regression exits 1 with one line per failing threshold: the job, the figure, its value, the bound."""
    run = write_run(tmp_path / "run", position_consistency=0.7, biased_first=0.25)

    code, out, err = gate(capsys, str(run), *STRICT)

    assert 1 == code
    assert [
        "FAIL run (noisy / default / q1): position_consistency = 0.700, needs position_consistency >= 0.8 "
        "(--min-consistency)",
        "FAIL run (noisy / default / q1): biased_first = 0.250, needs biased_first <= 0.1 (--max-biased-first)",
    ] == out
    assert "1 of 1 jobs failed" in err


def test_every_job_of_a_sweep_is_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """On a sweep folder the gate checks each job and names the ones that fail."""
    write_run(tmp_path / "sweep" / "0")
    write_run(tmp_path / "sweep" / "1", judge="always_a", biased_first=1.0, position_consistency=0.0)
    write_run(tmp_path / "sweep" / "2", judge="longer", biased_second=0.3)

    code, out, _ = gate(capsys, str(tmp_path / "sweep"), "--max-biased-first", "0.1", "--max-biased-second", "0.1")

    assert 1 == code
    assert [
        "FAIL 1 (always_a / default / q1): biased_first = 1.000, needs biased_first <= 0.1 (--max-biased-first)",
        "FAIL 2 (longer / default / q1): biased_second = 0.300, needs biased_second <= 0.1 (--max-biased-second)",
    ] == out


def test_a_failed_job_counts_as_failing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A job that recorded a failure fails the gate, with its error, even with no thresholds given."""
    write_run(tmp_path / "sweep" / "0")
    folder = tmp_path / "sweep" / "1"
    folder.mkdir()
    (folder / "summary.json").write_text(
        json.dumps({"status": "failed", "error": "judge.name is required", "judge": "replay"}), "utf-8"
    )

    code, out, _ = gate(capsys, str(tmp_path / "sweep"))

    assert 1 == code
    assert ["FAIL 1 (replay): job failed: judge.name is required"] == out


def test_failed_calls_count_as_failing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run whose calls failed after retries fails the gate: its figures leave those items out."""
    run = write_run(tmp_path / "run", status="errors", failed_calls=2)

    code, out, _ = gate(capsys, str(run), "--min-consistency", "0.5")

    assert 1 == code
    assert 1 == len(out)
    assert "2 calls failed after their retries" in out[0]


def test_a_missing_figure_fails_unless_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Agreement asked of unlabelled data fails with the reason; --skip-missing reports it as skipped and passes."""
    run = write_run(tmp_path / "run", human_agreement=..., cohen_kappa=...)

    failing = gate(capsys, str(run), "--min-agreement", "0.75")
    skipping = gate(capsys, str(run), "--min-agreement", "0.75", "--skip-missing")

    assert 1 == failing[0]
    assert [
        "FAIL run (noisy / default / q1): human_agreement is not available (the data has no human labels), so "
        "--min-agreement cannot pass (use --skip-missing to skip it)"
    ] == failing[1]
    assert 0 == skipping[0]
    assert skipping[1][0].startswith("SKIP run (noisy / default / q1): human_agreement is not available")
    assert skipping[1][1].startswith("OK: 1 job passes")


def test_win_rate_bounds_and_invalid_rate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--min-win-rate/--max-win-rate bound the win rate; --max-invalid-rate bounds unreadable replies per call."""
    run = write_run(tmp_path / "run", win_rate=0.7, n_invalid=12)

    code, out, _ = gate(capsys, str(run), "--min-win-rate", "0.4", "--max-win-rate", "0.6", "--max-invalid-rate", "0.1")

    assert 1 == code
    assert [
        "FAIL run (noisy / default / q1): win_rate = 0.700, needs win_rate <= 0.6 (--max-win-rate)",
        "FAIL run (noisy / default / q1): invalid_rate = 0.125, needs invalid_rate <= 0.1 (--max-invalid-rate)",
    ] == out


def test_styled_wins_bound_and_its_missing_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--max-styled-wins fails a judge that favours formatted answers; a run without the figure says why."""
    biased = write_run(tmp_path / "biased", styled_wins=0.72)
    unmeasured = write_run(tmp_path / "plain", styled_wins=None)

    code, out, _ = gate(capsys, str(biased), "--max-styled-wins", "0.6")
    missing = gate(capsys, str(unmeasured), "--max-styled-wins", "0.6")

    assert 1 == code
    assert [
        "FAIL biased (noisy / default / q1): styled_wins = 0.720, needs styled_wins <= 0.6 (--max-styled-wins)"
    ] == out
    assert 1 == missing[0]
    assert [
        "FAIL plain (noisy / default / q1): styled_wins is not available (no decisive verdict between answers that "
        "differ in formatting), so --max-styled-wins cannot pass (use --skip-missing to skip it)"
    ] == missing[1]


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No summary.json, a path that does not exist, or a threshold outside 0..1 is a usage error (exit 2)."""
    (tmp_path / "empty").mkdir()

    assert 2 == check.main([str(tmp_path / "empty"), "--min-consistency", "0.8"])
    assert "no summary.json under" in capsys.readouterr().err
    assert 2 == check.main([str(tmp_path / "absent")])
    with pytest.raises(SystemExit) as bad:
        check.main([str(tmp_path / "empty"), "--min-consistency", "80"])
    assert 2 == bad.value.code
    assert "is not a fraction between 0 and 1" in capsys.readouterr().err


@pytest.mark.slow
def test_gate_on_a_real_run_from_the_command_line(cli_here: InProcessCli) -> None:
    """On the q1 run (first-position bias 16.7%) the command exits 1 at --max-biased-first 0.1 and 0 at 0.2."""
    run = cli_here("bootstrap.resamples=200", "report=false")
    assert 0 == run.code, run

    def gate_cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "judgebias.check", str(run.run_dir), *args]
        return subprocess.run(command, capture_output=True, text=True, check=False)

    strict = gate_cli("--min-consistency", "0.8", "--max-biased-first", "0.1", "--min-agreement", "0.75")
    loose = gate_cli("--min-consistency", "0.8", "--max-biased-first", "0.2", "--min-agreement", "0.75")

    assert (1, 0) == (strict.returncode, loose.returncode), (strict, loose)
    assert "biased_first = 0.167, needs biased_first <= 0.1 (--max-biased-first)" in strict.stdout
    assert loose.stdout.startswith("OK: 1 job passes")


def test_agreement_needs_enough_labels_behind_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--min-labels fails a run whose agreement passes but stands on too few decisive labels, naming the count."""
    run = write_run(tmp_path / "run", human_agreement_n=12)
    assert 1 == check.main([str(run), "--min-agreement", "0.75", "--min-labels", "100"])
    out = capsys.readouterr().out
    assert "human_agreement_n = 12, needs human_agreement_n >= 100 (--min-labels)" in out
    assert "human_agreement =" not in out
    assert 0 == check.main([str(run), "--min-agreement", "0.75", "--min-labels", "12"])


def test_a_run_stopped_at_its_spending_cap_fails_naming_the_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run with status budget fails the gate with the calls it did not send and how to finish it, not as retries."""
    run = write_run(tmp_path / "run", status="budget", failed_calls=10, budget={"calls_not_sent": 10})

    code, out, _ = gate(capsys, str(run))

    assert 1 == code
    assert any("stopped at its spending cap with 10 calls not sent" in line for line in out), out
    assert not any("failed after their retries" in line for line in out), out
