"""`python -m judgebias.compare` and `judgebias.check --baseline` on real runs of scripted judges: the figures are
checked against counts made in the test from the verdict lines themselves, the gate's exit codes on a change that
makes the judge follow the first slot and on one that changes nothing, and the mistakes a user can make."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judgebias import check, compare
from tests.helpers import InProcessCli, write_items
from tests.reliability.helpers import pairs, run_here, verdict_lines

pytestmark = pytest.mark.slow

QUICK = ("bootstrap.resamples=200", "report=false", "progress=off")


def runs(tmp_path: Path, *cand: str, base: tuple[str, ...] = ()) -> tuple[Path, Path]:
    """A base run of q1 by the noisy judge (first_bias 0.2) and a candidate with `cand` overrides."""
    folders = tmp_path / "base", tmp_path / "cand"
    run_here(folders[0], *QUICK, *base)
    run_here(folders[1], *QUICK, *base, *cand)
    return folders


def compared(tmp_path: Path, base: Path, cand: Path, *more: str) -> tuple[int, dict[str, Any], list[str]]:
    out = tmp_path / "compare"
    printed: list[str] = []
    code = compare.main([str(base), str(cand), "--out", str(out), *more], echo=printed.append)
    document = json.loads((out / "compare.json").read_text(encoding="utf-8")) if code == 0 else {}
    return code, document, printed


def test_the_differences_are_those_the_verdict_lines_show(tmp_path: Path) -> None:
    """A judge pushed to the first slot (first_bias 0.2 -> 0.6) on the same 48 items: each run's value, the
    difference and McNemar's discordant counts as counted by hand from both verdicts.jsonl files."""
    base, cand = runs(tmp_path, "judge.first_bias=0.6")
    old = {line["id"]: line for line in verdict_lines(base)}
    new = {line["id"]: line for line in verdict_lines(cand)}

    code, document, printed = compared(tmp_path, base, cand)

    assert 0 == code
    consistency = document["differences"]["position_consistency"]
    by_hand = (
        sum(old[i]["consistent"] for i in old) / len(old),
        sum(new[i]["consistent"] for i in new) / len(new),
    )
    assert (consistency["base"], consistency["cand"]) == pytest.approx(by_hand)
    assert consistency["diff"] == pytest.approx(by_hand[1] - by_hand[0])
    lost = sum(1 for i in old if old[i]["consistent"] and not new[i]["consistent"])
    gained = sum(1 for i in old if new[i]["consistent"] and not old[i]["consistent"])
    assert (lost, gained) == (consistency["base_only"], consistency["cand_only"])
    lo, hi = consistency["ci"]
    assert lo <= consistency["diff"] <= hi < 0  # the change is real: the whole interval is a drop
    first = document["differences"]["biased_first"]
    aa = lambda lines: sum(1 for line in lines.values() if (line["call1"], line["call2"]) == ("A", "A"))  # noqa: E731
    assert first["diff"] == pytest.approx((aa(new) - aa(old)) / 48)
    assert 48 == document["matched"] and (0, 0) == (document["only_base"], document["only_cand"])
    # The base drew 200: a comparison draws at least 1,000 (the base run's count only when larger).
    assert document["bootstrap"] == {"resamples": 1000, "seed": 0, "paired": True, "cluster": None, "clusters": None}
    assert document["moved_counts"]["became_inconsistent"] == lost
    moved = {item["id"] for item in document["moved"] if "became_inconsistent" in item["kinds"]}
    assert moved == {i for i in old if old[i]["consistent"] and not new[i]["consistent"]}
    assert any(line.strip().startswith("position_consistency") for line in printed[0].splitlines())
    assert (tmp_path / "compare" / "compare.html").exists()
    # All 48 items matched: each run's value is the one its own summary.json reports.
    for side, folder in (("base", base), ("cand", cand)):
        summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
        for name, difference in document["differences"].items():
            if name in summary and name != "cost_usd":
                assert difference[side] == pytest.approx(summary[name]), (side, name)


def test_the_same_run_compared_with_itself_moves_nothing(tmp_path: Path) -> None:
    base, cand = runs(tmp_path)
    code, document, _ = compared(tmp_path, base, cand)
    assert 0 == code and [] == document["moved"]
    assert all(d["diff"] in (0.0, None) for d in document["differences"].values())
    assert [0.0, 0.0] == document["differences"]["position_consistency"]["ci"]


def test_items_in_one_run_only_are_counted_and_said_first(tmp_path: Path) -> None:
    """The candidate judged 30 of the 48 items: 18 only in base, the figures on the 30, and the first printed line
    says the candidate covers 62.5% of the base."""
    base, cand = tmp_path / "base", tmp_path / "cand"
    run_here(base, *QUICK)
    run_here(cand, *QUICK, "data.limit=30")

    code, document, printed = compared(tmp_path, base, cand)

    assert 0 == code
    assert (30, 18, 0) == (document["matched"], document["only_base"], document["only_cand"])
    assert {"base_items": 48, "cand_items": 30, "matched": 30, "share": 0.625, "changed": 0} == {
        key: document["coverage"][key] for key in ("base_items", "cand_items", "matched", "share", "changed")
    }
    first = printed[0].splitlines()[0]
    assert first.startswith("WARNING: the candidate judged 30 of the base's 48 items (62.5%): 18 base items"), first


def test_two_runs_with_no_common_item_are_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, cand = tmp_path / "base", tmp_path / "cand"
    run_here(base, *QUICK)
    other = write_items(tmp_path / "other.jsonl", pairs(6))
    run_here(cand, *QUICK, f"data.path={other}", "data.name=other")

    assert 2 == compare.main([str(base), str(cand)], echo=lambda _: None)
    err = capsys.readouterr().err.strip()
    assert 1 == len(err.splitlines()) and "have no item id in common" in err, err


def test_a_malformed_verdict_line_is_named_by_file_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, cand = runs(tmp_path)
    path = cand / "verdicts.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    broken = json.loads(lines[2]) | {"call2": "maybe"}
    path.write_text("\n".join([*lines[:2], json.dumps(broken), *lines[3:]]) + "\n", encoding="utf-8")

    assert 2 == compare.main([str(base), str(cand)], echo=lambda _: None)
    err = capsys.readouterr().err.strip()
    assert f"{path}:3: field 'call2'" in err and 1 == len(err.splitlines()), err


def test_a_folder_without_a_finished_run_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, _ = runs(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert 2 == compare.main([str(base), str(empty)], echo=lambda _: None)
    assert "has no summary.json: no finished run" in capsys.readouterr().err


def test_a_clustered_run_is_compared_by_clusters(tmp_path: Path) -> None:
    """Items sharing a question_id (3 questions x 4 pairs): each verdict line carries its cluster, and compare
    draws the same clusters for both runs."""
    items = [dict(item, question_id=f"q{i % 3}") for i, item in enumerate(pairs(12))]
    data = write_items(tmp_path / "clustered.jsonl", items)
    base, cand = runs(tmp_path, "judge.first_bias=0.6", base=(f"data.path={data}", "data.name=clustered"))

    lines = verdict_lines(base)
    assert {f"q{i % 3}" for i in range(12)} == {line["cluster"] for line in lines}
    code, document, _ = compared(tmp_path, base, cand)
    assert 0 == code
    assert ("question_id", 3) == (document["bootstrap"]["cluster"], document["bootstrap"]["clusters"])


def test_the_gate_fails_a_change_towards_the_first_slot_and_passes_a_neutral_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 1 naming the figure, its paired difference and the tolerance; exit 0 for a rubric that changes
    nothing the judge decides by; --strict adds nothing on a neutral change."""
    base, biased = runs(tmp_path / "biased", "judge.first_bias=0.6")
    _, neutral = runs(tmp_path / "neutral", "rubric=content_only")

    assert 1 == check.main([str(biased), "--baseline", str(base)])
    out = capsys.readouterr().out
    assert "position_consistency dropped against the baseline" in out
    assert "biased_first rose against the baseline" in out and "--max-rise biased_first=0.02 (default)" in out

    assert 0 == check.main([str(neutral), "--baseline", str(base), "--strict"])
    assert capsys.readouterr().out.startswith("OK: 1 job passes")


def test_the_gate_takes_the_tolerance_given(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A tolerance larger than any possible drop passes the figure; the other defaults still apply."""
    base, biased = runs(tmp_path, "judge.first_bias=0.6")
    code = check.main(
        [str(biased), "--baseline", str(base), "--max-drop", "consistency=1", "--max-rise", "biased_first=1",
         "--max-drop", "agreement=1", "--max-drop", "kappa=1"]
    )  # fmt: skip
    assert 0 == code, capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--max-drop", "consistency=0.02"], "need --baseline"),
        (["--baseline", "nowhere"], "--baseline: nowhere is not a folder"),
    ],
)
def test_gate_usage_errors_are_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], expected: str
) -> None:
    base, _ = runs(tmp_path)
    assert 2 == check.main([str(base), *args])
    assert expected in capsys.readouterr().err


def test_an_unknown_figure_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as stop:
        check.main([str(tmp_path), "--baseline", str(tmp_path), "--max-drop", "wisdom=0.1"])
    assert 2 == stop.value.code
    assert "'wisdom=0.1' is not FIGURE=TOLERANCE" in capsys.readouterr().err


def test_a_sweep_is_compared_job_by_job_with_its_baseline_job(cli_here: InProcessCli, tmp_path: Path) -> None:
    """`compare SWEEP --baseline-job 0`: one row per other job, each the paired comparison with job 0."""
    result = cli_here("-m", "judge.first_bias=0.2,0.6,0.2", *QUICK)
    assert 0 == result.code, result
    printed: list[str] = []

    code = compare.main([str(result.run_dir), "--baseline-job", "0", "--out", str(tmp_path / "c")], echo=printed.append)

    assert 0 == code
    document = json.loads((tmp_path / "c" / "compare.json").read_text(encoding="utf-8"))
    jobs = {entry["job"]: entry for entry in document["comparisons"]}
    assert {"1", "2"} == set(jobs)
    assert jobs["2"]["moved"] == []  # the same settings as job 0
    assert jobs["1"]["differences"]["biased_first"]["diff"] > 0
    rows = printed[0].splitlines()
    assert rows[0].startswith("every job against job 0") and len(rows) == 4


def test_a_run_whose_p_value_underflows_prints_a_bound_not_zero(tmp_path: Path) -> None:
    """2,000 items judged by always_a: the sign test's p (2 / 2^2000) is below the smallest float, summary.json
    holds 0.0, and the printed summary says `p < 1e-300`, never `p = 0`."""
    from judgebias.engine.runner import run_experiment
    from tests.reliability.helpers import config_of

    data = write_items(tmp_path / "many.jsonl", pairs(2000))
    printed: list[str] = []
    summary = run_experiment(
        config_of("judge=always_a", f"data.path={data}", *QUICK), tmp_path / "run", echo=printed.append
    )
    assert 0.0 == summary["first_position_p"]
    (screen,) = printed
    assert "sign test p < 1e-300 on 2000 position-following items" in screen and "p = 0 " not in screen


def test_a_base_run_without_intervals_does_not_make_the_gate_toothless(tmp_path: Path) -> None:
    """The base ran with bootstrap.resamples=0: the comparison still draws 1,000 paired resamples, and the gate
    still fails the change towards the first slot."""
    base, cand = tmp_path / "base", tmp_path / "cand"
    run_here(base, "bootstrap.resamples=0", "report=false", "progress=off")
    run_here(cand, "bootstrap.resamples=0", "report=false", "progress=off", "judge.first_bias=0.6")

    code, document, _ = compared(tmp_path, base, cand)
    assert 0 == code and 1000 == document["bootstrap"]["resamples"]
    assert 1 == check.main([str(cand), "--baseline", str(base)])


def test_a_summary_newer_than_this_reader_is_said(tmp_path: Path) -> None:
    """schema_version 1 is written; a candidate whose summary.json says 2 gets a note, not a silent reading."""
    base, cand = runs(tmp_path)
    summary = json.loads((cand / "summary.json").read_text(encoding="utf-8"))
    assert 1 == summary["schema_version"]
    (cand / "summary.json").write_text(json.dumps(summary | {"schema_version": 2}), encoding="utf-8")

    code, document, _ = compared(tmp_path, base, cand)
    assert 0 == code
    assert any("schema_version 2, newer than this judgebias reads (1)" in note for note in document["notes"])
