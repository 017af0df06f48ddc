"""The regression gate and compare against a hostile user: a candidate judged on a sliver of the items, items
changed under their ids, forged numbers in the files another run wrote, too few resamples, and verdict files of
huge replies. Every expected value comes from the files themselves (lines counted, ids read), never from the gate.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from judgebias import check, compare
from tests.helpers import write_items
from tests.reliability.helpers import pairs, run_here, verdict_lines

pytestmark = pytest.mark.reliability

QUICK = ("report=false", "progress=off", "bootstrap.resamples=200")


def two_runs(
    tmp_path: Path, items: int, *cand: str, cand_items: list[dict[str, Any]] | None = None
) -> tuple[Path, Path]:
    """A base run of the noisy judge on `items` pairs and a candidate with `cand` overrides (on other items when
    given)."""
    data = write_items(tmp_path / "items.jsonl", pairs(items))
    other = write_items(tmp_path / "cand-items.jsonl", cand_items) if cand_items is not None else data
    base, cand_dir = tmp_path / "base", tmp_path / "cand"
    run_here(base, *QUICK, "data=jsonl", f"data.path={data}")
    run_here(cand_dir, *QUICK, "data=jsonl", f"data.path={other}", *cand)
    return base, cand_dir


def gate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """check.main's exit code (a usage error's too), stdout and stderr."""
    try:
        code = check.main(list(args))
    except SystemExit as stopped:
        code = int(stopped.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_candidate_judged_on_three_percent_of_the_items_fails_the_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """2,000 base items, a candidate of the same judge with data.limit=60: exit 1, naming both counts as the files
    hold them; --min-overlap 0.03 lets the 60 items through (they are 3% of the base); compare says the same first."""
    base, cand = two_runs(tmp_path, 2000, "data.limit=60")
    base_n, cand_n = len(verdict_lines(base)), len(verdict_lines(cand))
    assert (2000, 60) == (base_n, cand_n)

    code, out, err = gate(capsys, str(cand), "--baseline", str(base))
    assert 1 == code, out
    assert f"judged on {cand_n} of the baseline's {base_n} items (3.0%), needs at least 100%" in out
    assert "1 of 1 jobs failed" in err

    code, out, _ = gate(capsys, str(cand), "--baseline", str(base), "--min-overlap", "0.03")
    assert 0 == code, out

    printed: list[str] = []
    assert 0 == compare.main([str(base), str(cand)], echo=printed.append)
    first = printed[0].splitlines()[0]
    assert first.startswith(f"WARNING: the candidate judged {cand_n} of the base's {base_n} items (3.0%)"), first


def test_items_changed_under_their_ids_fail_the_gate_unless_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The candidate's data gives items i3 and i7 other answers under the same ids: the gate fails naming them;
    --allow-changed-items accepts them and says how many."""
    items = pairs(40)
    changed = [
        dict(item, b=item["b"] + " and a new sentence") if item["id"] in ("i3", "i7") else item for item in items
    ]
    base, cand = two_runs(tmp_path, 40, cand_items=changed)
    differ = [
        old["id"]
        for old, new in zip(verdict_lines(base), verdict_lines(cand), strict=True)
        if (old["chars_b"], old["words_b"]) != (new["chars_b"], new["words_b"])
    ]
    assert ["i3", "i7"] == differ

    code, out, _ = gate(capsys, str(cand), "--baseline", str(base))
    assert 1 == code
    assert "2 matched items hold other answers or human labels than in the baseline under the same ids" in out
    assert "first: i3, i7" in out

    code, out, _ = gate(capsys, str(cand), "--baseline", str(base), "--allow-changed-items")
    assert 0 == code, out
    assert "2 matched items changed their answers or human labels, accepted" in out


def test_the_gate_draws_its_own_thousand_resamples_from_a_base_that_drew_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A base run at bootstrap.resamples=1: compare draws 1,000 paired resamples (and the interval contains its
    estimate); the gate refuses --resamples below 1,000 in one line; the run's own printout never calls its
    one-draw interval "zero width"."""
    data = write_items(tmp_path / "items.jsonl", pairs(60))
    base, cand = tmp_path / "base", tmp_path / "cand"
    printed: list[str] = []
    from judgebias.engine.runner import run_experiment
    from tests.reliability.helpers import config_of

    run_experiment(
        config_of("report=false", "progress=off", "bootstrap.resamples=1", "data=jsonl", f"data.path={data}"),
        base,
        echo=printed.append,
    )
    run_here(cand, *QUICK, "data=jsonl", f"data.path={data}", "judge.first_bias=0.6")
    assert "zero width" not in "\n".join(printed)
    assert "no interval: drawn from only 1 resample" in "\n".join(printed)

    out = tmp_path / "compared"
    assert 0 == compare.main([str(base), str(cand), "--out", str(out)], echo=lambda _: None)
    document = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    assert 1000 == document["bootstrap"]["resamples"]
    difference = document["differences"]["position_consistency"]
    assert difference["ci"][0] <= difference["diff"] <= difference["ci"][1]

    code, _, err = gate(capsys, str(cand), "--baseline", str(base), "--resamples", "500")
    assert 2 == code
    assert 1 == len(err.strip().splitlines()) and "a number of resamples for a gate" in err, err


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--seed", "-1"], "-1 is not a bootstrap seed"),
        (["--resamples", str(10**11)], "is not a number of bootstrap resamples"),
        (["--list", "x"], "'x' is not a number of items to list"),
    ],
)
def test_compare_refuses_numbers_out_of_bounds_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], expected: str
) -> None:
    """The bounds `run` uses, said in one line before any work (numpy's traceback for a negative seed; an hour's
    bootstrap for 10**11 resamples)."""
    base, cand = tmp_path / "base", tmp_path / "cand"
    base.mkdir()
    cand.mkdir()
    with pytest.raises(SystemExit) as stopped:
        compare.main([str(base), str(cand), *args])
    assert 2 == stopped.value.code
    err = capsys.readouterr().err
    assert 1 == len(err.strip().splitlines()) and expected in err, err


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("bootstrap_seed", -1, "field 'bootstrap_seed' is out of bounds: -1 is not a bootstrap seed"),
        ("bootstrap_resamples", 10**12, "'bootstrap_resamples' is out of bounds: 1000000000000 is not a number of"),
        ("n_items", 10**400, "field 'n_items' is out of bounds: 1" + "0" * 36 + "... is not a count"),
    ],
)
def test_a_summary_with_forged_numbers_is_refused_by_the_gate_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: int, expected: str
) -> None:
    """A base summary.json edited to a negative seed, a trillion resamples or an integer of 401 digits: exit 2 in
    one line naming the file and the field; nothing hangs, nothing is drawn."""
    base, cand = two_runs(tmp_path, 12)
    summary_path = base / "summary.json"
    text = summary_path.read_text(encoding="utf-8")
    summary = json.loads(text)
    forged = json.dumps(summary | {field: 0}).replace(f'"{field}": 0', f'"{field}": {value}')
    summary_path.write_text(forged, encoding="utf-8")

    code, _, err = gate(capsys, str(cand), "--baseline", str(base))
    assert 2 == code
    assert 1 == len(err.strip().splitlines()) and str(summary_path) in err and expected in err, err


def test_a_verdict_line_with_a_length_of_400_digits_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """chars_a: 10**400 in the candidate's third line: exit 2 naming file, line and field (not an OverflowError)."""
    base, cand = two_runs(tmp_path, 12)
    path = cand / "verdicts.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2].replace('"chars_a": ', '"chars_a": 1' + "0" * 400 + ', "was": ', 1)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    assert 2 == compare.main([str(base), str(cand)], echo=lambda _: None)
    err = capsys.readouterr().err
    assert 1 == len(err.strip().splitlines()) and f"{path}:3: field 'chars_a'" in err, err


def test_compare_holds_no_reply_in_memory(tmp_path: Path) -> None:
    """Every line that did not move carries a 4 MB reply in both runs (over 100 MB a file): compare traces a peak of
    far less than one file (the old reader held every line whole), and still lists the moved items' replies, read
    again from their lines, with at least the first of every kind that moved."""
    base, cand = two_runs(tmp_path, 48, "judge.first_bias=0.4")
    old, new = verdict_lines(base), verdict_lines(cand)
    still = {
        a["id"]
        for a, b in zip(old, new, strict=True)
        if (a["verdict"], a["consistent"]) == (b["verdict"], b["consistent"])
    }
    assert len(still) >= 25, len(still)
    huge = "x" * (4 * 1024 * 1024)
    for run, lines in ((base, old), (cand, new)):
        inflated = [line | {"raw2": huge} if line["id"] in still else line for line in lines]
        (run / "verdicts.jsonl").write_text("".join(json.dumps(line) + "\n" for line in inflated), encoding="utf-8")
    out = tmp_path / "compared"

    tracemalloc.start()
    try:
        assert 0 == compare.main([str(base), str(cand), "--out", str(out), "--list", "1"], echo=lambda _: None)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert peak < 32 * 1024 * 1024, f"compare traced a peak of {peak / 2**20:.0f} MiB"
    document = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    by_id = {line["id"]: line for line in new}
    assert document["moved"] and all(item["cand"]["raw1"] == by_id[item["id"]]["raw1"] for item in document["moved"])
    listed = {kind for item in document["moved"] for kind in item["kinds"]}
    assert listed == {kind for kind, count in document["moved_counts"].items() if count}
    assert document["moved_total"] == len(old) - len(still)  # an item moves when its verdict or consistency does
