"""summary.json against its declared contract (core.summary): every field real runs write is declared, with the
type it has there; and a summary.json whose field holds another type is one line naming the file and the field in
compare, the sweep's table and the gate, never a figure read as something else or a gate passed without it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judgebias import aggregate, check, compare
from judgebias.core.summary import SummaryError, read_summary, summary_problem, undeclared_fields
from tests.helpers import missing_shared_data, shared_data_root, write_items
from tests.reliability.helpers import pairs, run_here

pytestmark = pytest.mark.slow

QUICK = ("bootstrap.resamples=50", "report=false", "progress=off")
DATA_ROOT = shared_data_root()
needs_shared = pytest.mark.skipif(DATA_ROOT is None, reason=missing_shared_data())


def written(folder: Path) -> dict[str, Any]:
    value: dict[str, Any] = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    return value


def nested_fields(value: Any, path: str = "") -> set[str]:
    """Every dotted field path of a JSON value (list entries under [])."""
    if isinstance(value, dict):
        return {p for key, inner in value.items() for p in {f"{path}{key}"} | nested_fields(inner, f"{path}{key}.")}
    if isinstance(value, list):
        return {p for inner in value for p in nested_fields(inner, f"{path}[].")}
    return set()


def clustered_items(tmp_path: Path) -> Path:
    return write_items(
        tmp_path / "clustered.jsonl", [dict(item, question_id=f"q{i % 3}") for i, item in enumerate(pairs(12))]
    )


@pytest.mark.parametrize(
    "overrides",
    [
        ("judge=noisy", "data=q1"),
        ("judge=longer", "data=q1"),
        ("judge=noisy", "data=q1", "judge.samples=3"),
        ("judge=noisy", "data=q1", "dry_run=false", "judge.first_bias=1.0"),
    ],
    ids=["noisy", "longer", "samples", "always-first"],
)
def test_every_field_a_run_writes_is_declared_with_its_type(tmp_path: Path, overrides: tuple[str, ...]) -> None:
    run_here(tmp_path, *QUICK, *overrides)
    summary = written(tmp_path)

    assert [] == undeclared_fields(summary)
    assert summary_problem(summary) is None
    assert summary == read_summary(summary, "summary.json")


def test_a_clustered_runs_fields_are_declared(tmp_path: Path) -> None:
    data = clustered_items(tmp_path)
    run_here(tmp_path / "run", *QUICK, f"data.path={data}", "data.name=clustered", "bootstrap.cluster=question_id")
    summary = written(tmp_path / "run")

    assert ("question_id", 3) == (summary["bootstrap_cluster"], summary["bootstrap_clusters"])
    assert [] == undeclared_fields(summary) and summary_problem(summary) is None


@needs_shared
def test_an_ensemble_with_human_votes_declares_its_judges_and_calibration(tmp_path: Path) -> None:
    """Four recorded judges of the MT-Bench human set: the ensemble's figures, each judge's own, and the calibration
    against every person's vote, all declared down to the nested entries."""
    run_here(
        tmp_path, *QUICK, "ensemble=mtbench_vanilla", "data=mtbench_human", "rubric=llmbar", f"data.root={DATA_ROOT}"
    )
    summary = written(tmp_path)

    assert {"gpt4", "chatgpt", "llama2", "palm2"} == set(summary["judges"])
    assert "calibration.per_annotator.[].kappa" in nested_fields(summary)
    assert [] == undeclared_fields(summary) and summary_problem(summary) is None
    for own in summary["judges"].values():
        assert [] == undeclared_fields(own)


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        ({"win_rate": "0.5"}, "field 'win_rate' is '0.5', not a finite number"),
        ({"n_items": 4.5}, "field 'n_items' is 4.5, not an integer"),
        ({"ci": {"win_rate": ["low", 0.6]}}, "field 'ci' ['win_rate'] [0] is 'low', not a finite number"),
        ({"status": "fine"}, "field 'status' is 'fine', not one of"),
    ],
)
def test_a_field_of_another_type_is_named(edit: dict[str, Any], said: str) -> None:
    summary: dict[str, Any] = {"status": "ok", "n_items": 4, "win_rate": 0.5, "a_field_of_a_newer_writer": [1]}
    assert read_summary(summary, "x/summary.json")["a_field_of_a_newer_writer"] == [1]  # kept: the change rule

    with pytest.raises(SummaryError) as raised:
        read_summary(summary | edit, "x/summary.json")
    assert str(raised.value).startswith(f"x/summary.json: {said}"), raised.value


def test_compare_names_the_file_and_field_of_a_damaged_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, cand = tmp_path / "base", tmp_path / "cand"
    run_here(base, *QUICK)
    run_here(cand, *QUICK)
    path = cand / "summary.json"
    path.write_text(json.dumps(written(cand) | {"bootstrap_cluster": 3}), encoding="utf-8")

    assert 2 == compare.main([str(base), str(cand)], echo=lambda _: None)
    err = capsys.readouterr().err.strip()
    assert 1 == len(err.splitlines()) and f"{path}: field 'bootstrap_cluster' is 3" in err, err


def test_the_gate_does_not_pass_a_figure_it_cannot_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A position_consistency of "0.99" (text) is not a missing figure that --skip-missing may pass: the job is
    unreadable, the gate fails it and says which field."""
    run_here(tmp_path, *QUICK)
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(written(tmp_path) | {"position_consistency": "0.99"}), encoding="utf-8")

    assert 1 == check.main([str(tmp_path), "--min-consistency", "0.5", "--skip-missing"])
    out = capsys.readouterr().out
    assert "field 'position_consistency' is '0.99', not a finite number" in out, out

    (row,) = aggregate.aggregate([tmp_path], report=False)
    assert "failed" == row["status"] and "field 'position_consistency'" in row["error"]
