"""The sweep table: read job folders, build rows, write CSV and Markdown, exit non-zero when a job failed."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from judgebias import aggregate
from judgebias.cli.sweep_callback import AggregateCallback


def ok_summary(judge: str = "noisy", win_rate: float = 0.45, **extra: Any) -> dict[str, Any]:
    """A finished job's summary.json with the figures the table shows."""
    return {
        "status": "ok",
        "judge": judge,
        "rubric": "default",
        "data": "q1",
        "n_items": 48,
        "win_rate": win_rate,
        "position_consistency": 0.8125,
        "biased_first": 0.1667,
        "biased_second": 0.0,
        "human_agreement": 0.8222,
        "human_agreement_n": 45,
        "n_invalid": 1,
        "failed_calls": 0,
        "calls_live": 90,
        "calls_cached": 6,
        "prompt_tokens": 1200,
        "completion_tokens": 96,
        "cost_usd": 0.0123,
        "saved_usd": 0.001,
        "ci": {"win_rate": [0.32, 0.57], "position_consistency": [0.7, 0.92], "human_agreement": [0.71, 0.93]},
        **extra,
    }


def make_job(sweep: Path, name: str, summary: dict[str, Any] | None, overrides: list[str] | None = None) -> Path:
    """A job folder as Hydra leaves it: .hydra/overrides.yaml and (unless None) summary.json."""
    folder = sweep / name
    (folder / ".hydra").mkdir(parents=True)
    (folder / ".hydra" / "overrides.yaml").write_text("".join(f"- {o}\n" for o in (overrides or [])), encoding="utf-8")
    if summary is not None:
        (folder / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    return folder


def read_csv(path: Path) -> list[dict[str, str]]:
    """The rows of a CSV file."""
    with path.open(encoding="utf-8") as file:
        return list(csv.DictReader(file))


def test_jobs_are_listed_in_job_number_order(tmp_path: Path) -> None:
    """Job folders 0..11 appear as 0, 1, 2, ..., 10, 11 (not 0, 1, 10, 11, 2)."""
    for number in range(12):
        make_job(tmp_path, str(number), ok_summary())

    rows = aggregate.aggregate([tmp_path], report=False)

    assert [str(n) for n in range(12)] == [row["job"] for row in rows]


def test_csv_holds_numbers_and_intervals_as_separate_columns(tmp_path: Path) -> None:
    """sweep_summary.csv has plain numbers a spreadsheet can sort, with each interval as low and high columns."""
    make_job(tmp_path, "0", ok_summary())

    aggregate.aggregate([tmp_path], report=False)

    (row,) = read_csv(tmp_path / "sweep_summary.csv")
    expected = {
        "judge": "noisy",
        "n": "48",
        "win_rate": "0.45",
        "win_rate_low": "0.32",
        "win_rate_high": "0.57",
        "position_consistency_low": "0.7",
        "human_agreement_high": "0.93",
        "calls_live": "90",
        "calls_cached": "6",
        "prompt_tokens": "1200",
        "cost_usd": "0.0123",
    }
    assert expected == {key: row[key] for key in expected}


def test_markdown_shows_percentages_with_intervals(tmp_path: Path) -> None:
    """sweep_summary.md shows each rate in percent with its 95% interval, and calls as live/cached."""
    make_job(tmp_path, "0", ok_summary())

    aggregate.aggregate([tmp_path], report=False)

    table = (tmp_path / "sweep_summary.md").read_text(encoding="utf-8")
    expected_row = (
        "| 0 | ok | noisy | default | q1 | 48 | 45.0 [32.0, 57.0] | 81.2 [70.0, 92.0] | 16.7 | 0.0 | "
        "82.2 [71.0, 93.0] |  | 1 | 90/6 | 1200/96 | 0.0123 |"
    )
    assert expected_row == table.splitlines()[2]


def test_styled_wins_column_with_its_interval_and_count(tmp_path: Path) -> None:
    """The table shows styled_wins in percent with its interval; the CSV has value, low, high and n."""
    ci = {"win_rate": [0.32, 0.57], "styled_wins": [0.55, 0.8]}
    make_job(tmp_path, "0", ok_summary(styled_wins=0.675, styled_wins_n=40, ci=ci))

    aggregate.aggregate([tmp_path], report=False)

    (row,) = read_csv(tmp_path / "sweep_summary.csv")
    expected = {"styled_wins": "0.675", "styled_wins_low": "0.55", "styled_wins_high": "0.8", "styled_wins_n": "40"}
    assert expected == {key: row[key] for key in expected}
    table = (tmp_path / "sweep_summary.md").read_text(encoding="utf-8").splitlines()
    column = table[0].split(" | ").index("styled wins % [CI]")
    assert "67.5 [55.0, 80.0]" == table[2].split(" | ")[column]


def test_failed_job_is_a_row_with_its_error_and_the_others_survive(tmp_path: Path) -> None:
    """A job that recorded a failure is listed with its error; the finished jobs keep their figures."""
    make_job(tmp_path, "0", ok_summary())
    make_job(tmp_path, "1", {"status": "failed", "error": "judge.name is required", "judge": "replay"})

    rows = aggregate.aggregate([tmp_path], report=False)

    assert [("0", "ok", 0.45), ("1", "failed", None)] == [(r["job"], r["status"], r["win_rate"]) for r in rows]
    assert "- job 1 failed: judge.name is required" in (tmp_path / "sweep_summary.md").read_text(encoding="utf-8")


def test_job_folder_without_summary_is_reported_missing(tmp_path: Path) -> None:
    """A job killed before it wrote summary.json still gets a row, marked missing, named from its overrides."""
    make_job(tmp_path, "0", ok_summary())
    make_job(tmp_path, "1", None, ["judge=longer", "rubric=content_only"])

    rows = aggregate.aggregate([tmp_path], report=False)

    assert ("missing", "longer", "content_only") == (rows[1]["status"], rows[1]["judge"], rows[1]["rubric"])


def test_dry_run_job_shows_its_estimate(tmp_path: Path) -> None:
    """A dry-run sweep gets a table of the calls that would go live and their estimated cost."""
    folder = tmp_path / "0"
    folder.mkdir()
    estimate = {"dry_run": True, "judge": "gpt4o", "rubric": "default", "data": "q1", "n_items": 48}
    estimate |= {"calls_live": 96, "calls_cached": 0, "prompt_tokens_est": 20000, "cost_usd_est": 0.06}
    (folder / "dry_run.json").write_text(json.dumps(estimate), encoding="utf-8")

    (row,) = aggregate.aggregate([tmp_path], report=False)

    assert ("dry-run", 96, 20000, 0.06) == (row["status"], row["calls_live"], row["prompt_tokens"], row["cost_usd"])


def test_overrides_column_shows_only_what_the_sweep_varied(tmp_path: Path) -> None:
    """The overrides column names what differs between jobs, not the settings every job shares."""
    make_job(tmp_path, "0", ok_summary(), ["data.limit=3", "judge.strategy=always_a"])
    make_job(tmp_path, "1", ok_summary(), ["data.limit=3", "judge.strategy=longer"])

    rows = aggregate.aggregate([tmp_path], report=False)

    assert ["judge.strategy=always_a", "judge.strategy=longer"] == [row["overrides"] for row in rows]


def test_overrides_already_shown_as_judge_rubric_or_data_are_left_out(tmp_path: Path) -> None:
    """A sweep over judge=... options needs no overrides column: the judge column already tells the jobs apart."""
    make_job(tmp_path, "0", ok_summary("noisy"), ["judge=noisy", "data.limit=3"])
    make_job(tmp_path, "1", ok_summary("longer"), ["judge=longer", "data.limit=3"])

    rows = aggregate.aggregate([tmp_path], report=False)

    assert ["", ""] == [row["overrides"] for row in rows]
    assert "overrides" not in aggregate.text_table(rows).splitlines()[0]


def test_several_sweeps_make_one_table_named_by_sweep(tmp_path: Path) -> None:
    """Aggregating two sweeps by hand lists every job, prefixed by its sweep folder, in the --out folder."""
    make_job(tmp_path / "10-00-00", "0", ok_summary("noisy"))
    make_job(tmp_path / "11-00-00", "0", ok_summary("longer"))
    make_job(tmp_path / "11-00-00", "1", ok_summary("always_a"))
    out = tmp_path / "combined"

    code = aggregate.main([str(tmp_path / "10-00-00"), str(tmp_path / "11-00-00"), "--out", str(out)])

    assert 0 == code
    expected = [("10-00-00/0", "noisy"), ("11-00-00/0", "longer"), ("11-00-00/1", "always_a")]
    assert expected == [(r["job"], r["judge"]) for r in read_csv(out / "sweep_summary.csv")]


def test_by_hand_aggregation_exits_1_when_a_job_failed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m judgebias.aggregate` writes the table and then exits 1 when any job failed, naming it."""
    make_job(tmp_path, "0", ok_summary())
    make_job(tmp_path, "1", {"status": "failed", "error": "boom"})

    code = aggregate.main([str(tmp_path)])

    assert 1 == code
    assert (tmp_path / "sweep_summary.csv").exists()
    assert "job 1 failed: boom" in capsys.readouterr().out


def test_by_hand_aggregation_usage_errors_exit_2(tmp_path: Path) -> None:
    """A path that is not a folder, or a folder without any job, is a usage error (exit 2)."""
    assert 2 == aggregate.main([str(tmp_path / "nope")])
    assert 2 == aggregate.main([str(tmp_path)])


def test_job_with_failed_calls_counts_as_failed(tmp_path: Path) -> None:
    """A job whose calls failed after retries (status errors) makes the sweep fail, with the count shown."""
    make_job(tmp_path, "0", ok_summary(status="errors", failed_calls=3))

    rows = aggregate.aggregate([tmp_path], report=False)

    assert ["0"] == [row["job"] for row in aggregate.failed(rows)]
    assert "job 0 errors: 3 calls failed after their retries" in aggregate.text_table(rows)


def test_callback_writes_the_table_then_exits_1_on_a_failed_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """At the end of a multirun the table is written and printed first, then the sweep exits with code 1."""
    make_job(tmp_path, "0", ok_summary())
    make_job(tmp_path, "1", {"status": "failed", "error": "boom"})
    config = OmegaConf.create({"hydra": {"sweep": {"dir": str(tmp_path)}}, "report": True})

    with pytest.raises(SystemExit) as stopped:
        AggregateCallback().on_multirun_end(config)

    assert 1 == stopped.value.code
    assert (tmp_path / "sweep_summary.md").exists()
    assert (tmp_path / "sweep_report.html").exists()
    assert "job 1 failed: boom" in capsys.readouterr().out


def test_callback_returns_normally_when_every_job_finished(tmp_path: Path) -> None:
    """A sweep whose jobs all finished ends normally (exit 0) after writing its table."""
    make_job(tmp_path, "0", ok_summary())
    config = OmegaConf.create({"hydra": {"sweep": {"dir": str(tmp_path)}}, "report": False})

    AggregateCallback().on_multirun_end(config)

    assert (tmp_path / "sweep_summary.csv").exists()
    assert not (tmp_path / "sweep_report.html").exists()


def test_markdown_cells_cannot_break_the_table(tmp_path: Path) -> None:
    """An error message with a pipe or a newline stays inside its Markdown cell."""
    make_job(tmp_path, "0", {"status": "failed", "error": "bad | value\nsecond line", "judge": "a|b"})

    aggregate.aggregate([tmp_path], report=False)

    row = (tmp_path / "sweep_summary.md").read_text(encoding="utf-8").splitlines()[2]
    assert "| 0 | failed | a\\|b |" == row[: len("| 0 | failed | a\\|b |")]


def test_unreadable_summary_is_a_failed_row(tmp_path: Path) -> None:
    """A damaged summary.json shows as a failed row instead of stopping the table."""
    folder = make_job(tmp_path, "0", None)
    (folder / "summary.json").write_text("{not json", encoding="utf-8")

    (row,) = aggregate.aggregate([tmp_path], report=False)

    assert "failed" == row["status"]
    assert row["error"].startswith("unreadable summary.json")


def wide_sweep(sweep: Path) -> list[dict[str, Any]]:
    """A 2x2 sweep over judges and rubrics whose full printed table is about 200 characters wide."""
    for number, (judge, rubric) in enumerate([("noisy", "default"), ("noisy", "content_only"), ("longer", "default")]):
        make_job(sweep, str(number), ok_summary(judge, rubric=rubric, styled_wins=1.0, styled_wins_n=3))
    return aggregate.aggregate([sweep], report=False)


def test_printed_table_fits_the_width_and_names_the_columns_left_out(tmp_path: Path) -> None:
    """At 120 columns every printed line fits, the columns left out are named, and the Markdown keeps them all."""
    rows = wide_sweep(tmp_path)

    printed = aggregate.text_table(rows, 120)

    assert max(len(line) for line in aggregate.text_table(rows).splitlines()) > 120
    assert all(len(line) <= 120 for line in printed.splitlines())
    assert "left out to fit 120 columns: tokens in/out, cost $" in printed
    assert ["job", "status", "judge", "rubric", "data"] == printed.splitlines()[0].split()[:5]
    assert "tokens in/out" in (tmp_path / "sweep_summary.md").read_text(encoding="utf-8")


def test_narrow_terminal_keeps_the_columns_that_tell_jobs_apart(tmp_path: Path) -> None:
    """At 80 columns the table still shows each job's judge, rubric, win rate and consistency."""
    rows = wide_sweep(tmp_path)

    heading = aggregate.text_table(rows, 80).splitlines()[0]

    assert all(len(line) <= 80 for line in aggregate.text_table(rows, 80).splitlines())
    assert {"job", "judge", "rubric", "data", "win", "consist."} <= set(heading.split())


@pytest.mark.parametrize("width", [100, 90])
def test_a_narrow_table_keeps_human_agreement_before_the_position_columns(tmp_path: Path, width: int) -> None:
    """Whether a rubric works (agreement with people) is the last figure left out: biased 1st/2nd % go first."""
    rows = wide_sweep(tmp_path)

    heading = aggregate.text_table(rows, width).splitlines()[0]

    assert "human % [CI]" in heading
    assert "1st %" not in heading and "2nd %" not in heading


def test_an_unreadable_job_is_said_under_the_table(tmp_path: Path) -> None:
    """A job that finished unreadable (or mixed) is not a failure, but the table says why under it, in words."""
    note = "8 of 8 replies (100%) carry no readable verdict"
    make_job(tmp_path, "0", ok_summary("noisy"))
    make_job(tmp_path, "1", ok_summary("local") | {"status": "unreadable", "unreadable_note": note})
    rows = aggregate.aggregate([tmp_path], report=False)

    assert f"job 1 unreadable: {note}" in aggregate.text_table(rows).splitlines()
    assert f"- job 1 unreadable: {note}" in (tmp_path / "sweep_summary.md").read_text(encoding="utf-8")
    assert 0 == aggregate.exit_code(rows)


def test_table_width_follows_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """$COLUMNS sets the width the printed table is fitted to."""
    monkeypatch.setenv("COLUMNS", "97")

    assert 97 == aggregate.terminal_width()


def write_backend(job: Path, backend: str) -> None:
    """The part of Hydra's composed config the scripted-judge note reads."""
    (job / ".hydra" / "config.yaml").write_text(f"judge:\n  backend: {backend}\n", encoding="utf-8")


def test_rubric_sweep_with_scripted_judges_says_why_rows_are_the_same(tmp_path: Path) -> None:
    """Rows that differ only by rubric for a scripted judge come with one line saying the judge ignores rubrics."""
    write_backend(make_job(tmp_path, "0", ok_summary(rubric="default")), "scripted")
    write_backend(make_job(tmp_path, "1", ok_summary(rubric="content_only")), "scripted")

    rows = aggregate.aggregate([tmp_path], report=False)

    (note,) = [line for line in aggregate.text_table(rows).splitlines() if line.startswith("note:")]
    assert note.startswith("note: noisy is a scripted judge (a fixed rule that never reads the rubric)")
    assert note in (tmp_path / "sweep_summary.md").read_text(encoding="utf-8")


def test_rubric_sweep_with_a_live_judge_has_no_scripted_note(tmp_path: Path) -> None:
    """A live judge reads the rubric, so a rubric sweep of it gets no such note."""
    write_backend(make_job(tmp_path, "0", ok_summary("local", rubric="default")), "openai")
    write_backend(make_job(tmp_path, "1", ok_summary("local", rubric="content_only")), "openai")

    rows = aggregate.aggregate([tmp_path], report=False)

    assert "note:" not in aggregate.text_table(rows)
