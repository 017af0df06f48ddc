"""Labels people gave are never lost or misapplied: a merge never replaces an earlier merge's file, labels are
checked against the sample they were given on (its id, and each item as it was sampled), annotators are one person
whatever the case or spaces, a repeated CSV column is an error, and Ctrl-C is one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from judgebias.review.__main__ import main as review
from tests.helpers import InProcessCli, interrupt_after_start, write_items

pytestmark = pytest.mark.reliability

PAIRS = [{"id": f"p{i}", "question": f"Question {i}?", "a": f"first {i}", "b": f"second answer {i}"} for i in range(8)]


def labels_file(path: Path, annotator: str, labels: dict[str, str], sample: str | None = None) -> Path:
    """A labelling page's JSONL export."""
    rows = [
        {"id": i, "label": label, "annotator": annotator} | ({"sample": sample} if sample else {})
        for i, label in labels.items()
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def merged_votes(path: Path) -> dict[str, Any]:
    """id -> (votes, voters) of a labelled copy."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return {row["id"]: (row.get("human_votes"), row.get("human_voters")) for row in rows}


def test_two_merges_without_out_keep_both_and_add_combines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """ann's merge and then bob's, both without --out, write two files (ann's labels are not lost); naming ann's file
    again is refused; --add adds bob's labels to it."""
    data = write_items(tmp_path / "q1.jsonl", PAIRS)
    ann = labels_file(tmp_path / "ann.jsonl", "ann", {"p0": "a", "p1": "b"})
    bob = labels_file(tmp_path / "bob.jsonl", "bob", {"p0": "b"})
    monkeypatch.chdir(tmp_path)

    assert 0 == review(["merge", str(ann), "--into", str(data)])
    assert 0 == review(["merge", str(bob), "--into", str(data)])

    assert (["1"], ["ann"]) == merged_votes(tmp_path / "q1.labelled.jsonl")["p0"]
    assert (["2"], ["bob"]) == merged_votes(tmp_path / "q1.labelled-2.jsonl")["p0"]
    capsys.readouterr()
    assert 2 == review(["merge", str(bob), "--into", str(data), "--out", str(tmp_path / "q1.labelled.jsonl")])
    assert "is not replaced" in capsys.readouterr().err
    assert 0 == review(["merge", str(bob), "--into", str(data), "--out", str(tmp_path / "q1.labelled.jsonl"), "--add"])
    assert (["1", "2"], ["ann", "bob"]) == merged_votes(tmp_path / "q1.labelled.jsonl")["p0"]


def sampled_run(cli_here: InProcessCli, data: Path) -> tuple[Path, str]:
    """A run on `data` and a sample of it: (run folder, sample id)."""
    result = cli_here("data=jsonl", f"data.path={data}", "report=false", "bootstrap.resamples=0")
    assert 0 == result.code, result
    assert 0 == review(["sample", str(result.run_dir), "--n", "4", "--seed", "1"])
    info = json.loads((result.run_dir / "review" / "sample.json").read_text(encoding="utf-8"))
    return result.run_dir, str(info["sample_id"])


def test_labels_on_items_that_changed_since_the_sample_are_refused(tmp_path: Path, cli_here: InProcessCli) -> None:
    """After sampling, a and b swapped in the dataset (same ids): merging the old labels is refused naming the item,
    instead of pointing every label at the other answer."""
    data = write_items(tmp_path / "mine.jsonl", PAIRS)
    run, sample = sampled_run(cli_here, data)
    ids = json.loads((run / "review" / "sample.json").read_text(encoding="utf-8"))["ids"]
    labels = labels_file(run / "review" / "ann.jsonl", "ann", {ids[0]: "a"}, sample)
    write_items(data, [pair | {"a": pair["b"], "b": pair["a"]} for pair in PAIRS])

    done = subprocess.run(
        [sys.executable, "-m", "judgebias.review", "merge", str(labels), "--into", str(run), "--out", str(tmp_path / "o.jsonl")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip

    assert 2 == done.returncode and f"item {ids[0]!r} changed since it was sampled" in done.stderr
    assert not (tmp_path / "o.jsonl").exists()


def test_labels_of_another_sample_are_refused(
    tmp_path: Path, cli_here: InProcessCli, capsys: pytest.CaptureFixture[str]
) -> None:
    """Labels carrying a sample id that is not this data's sample: refused, naming the sample ids it knows."""
    data = write_items(tmp_path / "mine.jsonl", PAIRS)
    run, sample = sampled_run(cli_here, data)
    labels = labels_file(run / "review" / "ann.jsonl", "ann", {"p0": "a"}, "0123456789abcdef")
    capsys.readouterr()

    assert 2 == review(["merge", str(labels), "--into", str(run), "--out", str(tmp_path / "o.jsonl")])
    err = capsys.readouterr().err
    assert "'0123456789abcdef' is not a sample of this data" in err and sample in err


def test_an_annotator_is_one_person_whatever_the_case_and_spaces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`ANN` and `ann ` labelling the same item is one annotator labelling it twice: refused."""
    data = write_items(tmp_path / "q1.jsonl", PAIRS)
    first = labels_file(tmp_path / "a.jsonl", "ANN", {"p0": "a"})
    second = labels_file(tmp_path / "b.jsonl", "ann ", {"p0": "b"})

    assert 2 == review(["merge", str(first), str(second), "--into", str(data), "--out", str(tmp_path / "o.jsonl")])
    assert "labelled 'p0' twice" in capsys.readouterr().err


def test_a_repeated_csv_column_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A CSV with two `label` columns: which one counts? Refused, naming the column."""
    data = write_items(tmp_path / "q1.jsonl", PAIRS)
    sheet = tmp_path / "ann.csv"
    sheet.write_text("id,label,annotator,label\np0,a,ann,b\n", encoding="utf-8")

    assert 2 == review(["merge", str(sheet), "--into", str(data), "--out", str(tmp_path / "o.jsonl")])
    assert "column 'label' is in the header twice" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["review", "cache"])
def test_ctrl_c_while_a_command_starts_or_works_is_one_line(tmp_path: Path, command: str) -> None:
    """SIGINT at several moments of `review merge` / `cache stats`: exit 130 (or done), one line, no traceback."""
    data = write_items(tmp_path / "q1.jsonl", PAIRS)
    labels = labels_file(tmp_path / "ann.jsonl", "ann", {"p0": "a"})
    args = (
        ["review", "merge", str(labels), "--into", str(data), "--out", str(tmp_path / "o.jsonl"), "--add"]
        if command == "review"
        else ["cache", "stats", "--cache-dir", str(tmp_path / "cache")]
    )
    interrupted = 0
    for delay in (0.0, 0.05, 0.15, 0.3, 0.6):
        process = subprocess.Popen(
            [sys.executable, "-X", "importtime", "-m", f"judgebias.{args[0]}", *args[1:]],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=os.environ | {"PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        err = interrupt_after_start(process, delay)
        assert "Traceback" not in err, (delay, err)
        if process.returncode == -signal.SIGINT:
            assert "" == err  # the interpreter's own shut-down, the command done: Python's default, nothing said
            continue
        assert process.returncode in (0, 2, 130), (delay, process.returncode, err)
        if process.returncode == 130:
            interrupted += 1
            assert 1 == len(err.strip().splitlines()) and "interrupted" in err
    assert interrupted >= 1
