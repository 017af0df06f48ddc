"""The audit's importers attacked as the run command is: hostile values, names and special files are one line and
exit 2; a user's folder is never written over; a stored command runs nothing when pasted; Ctrl-C is one line."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from judgebias.audit.command import main as audit_main
from tests.helpers import REPO

pytestmark = pytest.mark.reliability

FASTCHAT = REPO / "tests" / "data" / "audit" / "fastchat" / "mt_bench"


def annotation(
    instruction: str = "Say hi.", annotator: str = "weighted_alpaca_eval_gpt4_turbo", **extra: Any
) -> dict[str, Any]:
    """One AlpacaEval annotations.json entry."""
    return {
        "instruction": instruction,
        "output_1": "Hello there, how can I help?",
        "output_2": "Hi.",
        "generator_1": "gpt4_1106_preview",
        "generator_2": "my-model",
        "annotator": annotator,
        "preference": 1.2,
    } | extra


def write_annotations(folder: Path, entries: list[dict[str, Any]] | str) -> Path:
    """An annotations.json (a JSON array, or the given text) under results/my-model/<annotator>/."""
    path = folder / "results" / "my-model" / "annotator" / "annotations.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(entries if isinstance(entries, str) else json.dumps(entries), encoding="utf-8")
    return path


def audited(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run the audit command in this process: exit code, stdout, stderr."""
    code = audit_main([*args, "--resamples", "20"])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param('[{"preference": NaN}]', "NaN is not a JSON number", id="nan"),
        pytest.param('[{"preference": Infinity}]', "Infinity is not a JSON number", id="infinity"),
        pytest.param("[" + "[" * 200_000 + "]" * 200_000 + "]", "nested too deeply", id="deep"),
        pytest.param('[{"preference": ' + "9" * 4301 + "}]", "a number too long to read", id="long-number"),
        pytest.param('[{"instruction": "\\ud83d"}]', "half of a UTF-16 surrogate pair", id="lone-surrogate"),
        pytest.param("[]", "no judgment records", id="empty"),
    ],
)
def test_a_hostile_annotations_file_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    """NaN, infinities, deep nesting, a 4,301-digit number, a lone surrogate, no records: one line naming the file."""
    path = write_annotations(tmp_path, text)

    code, _, err = audited(capsys, "alpacaeval", str(path), "--out", str(tmp_path / "out"))

    (line,) = err.strip().splitlines()
    assert (2, True) == (code, line.startswith("judgebias: error: ")), err
    assert expected in line and ("annotations.json" in line or expected == "no judgment records")


def test_fastchat_tstamp_nan_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A FastChat judgment line with "tstamp": NaN is refused with its file and line, not a traceback."""
    bench = tmp_path / "mt_bench"
    subprocess.run(["cp", "-r", str(FASTCHAT), str(bench)], check=True)
    judgments = bench / "model_judgment" / "gpt-4_pair.jsonl"
    lines = judgments.read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2].replace('"tstamp": ', '"tstamp": NaN, "was": ', 1)
    judgments.write_text("\n".join(lines) + "\n", encoding="utf-8")

    code, _, err = audited(capsys, "fastchat", str(bench), "--out", str(tmp_path / "out"))

    assert 2 == code and f"{judgments}:3: NaN is not a JSON number" in err and 1 == len(err.strip().splitlines())


@pytest.mark.parametrize("special", ["fifo", "dev-zero"])
def test_a_fifo_or_a_device_as_question_file_is_refused_at_once(tmp_path: Path, special: str) -> None:
    """question.jsonl as a FIFO (nothing ever written to it) or a link to /dev/zero: refused in one line at once,
    never a hang or memory without bound."""
    bench = tmp_path / "mt_bench"
    subprocess.run(["cp", "-r", str(FASTCHAT), str(bench)], check=True)
    (bench / "question.jsonl").unlink()
    if special == "fifo":
        os.mkfifo(bench / "question.jsonl")
    else:
        (bench / "question.jsonl").symlink_to("/dev/zero")
    started = time.monotonic()

    done = subprocess.run(
        [sys.executable, "-m", "judgebias.audit", "fastchat", str(bench), "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip

    assert 2 == done.returncode, done.stderr
    assert "is not a regular file" in done.stderr and 1 == len(done.stderr.strip().splitlines())
    assert time.monotonic() - started < 30


def test_out_with_a_users_files_is_refused_and_left_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--out naming a folder with a file of the user's in it is refused, the file untouched; --reuse-dir writes;
    an earlier audit's own folder is written again without it."""
    path = write_annotations(tmp_path, [annotation()])
    out = tmp_path / "mine"
    out.mkdir()
    (out / "items.jsonl").write_text("my own items\n", encoding="utf-8")

    code, _, err = audited(capsys, "alpacaeval", str(path), "--out", str(out))

    assert 2 == code and "--reuse-dir" in err and "my own items\n" == (out / "items.jsonl").read_text()
    assert 0 == audited(capsys, "alpacaeval", str(path), "--out", str(tmp_path / "fresh"))[0]
    assert 0 == audited(capsys, "alpacaeval", str(path), "--out", str(tmp_path / "fresh"))[0]  # its own: again
    assert 0 == audited(capsys, "alpacaeval", str(path), "--out", str(out), "--reuse-dir")[0]


def test_names_become_distinct_safe_folders_inside_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Annotators named `..`, `gpt 4`, `gpt/4` and 5,000 characters: each run in a folder of its own under
    out/runs/, none of them out itself or outside it, no name longer than the file system takes."""
    names = ["..", "gpt 4", "gpt/4", "x" * 5000]
    entries = [annotation(f"Question {n}?", annotator=name) for n, name in enumerate(names)]
    path = write_annotations(tmp_path, entries)
    out = tmp_path / "out"

    code, _, err = audited(capsys, "alpacaeval", str(path), "--out", str(out))

    assert 0 == code, err
    report = json.loads((out / "audit.json").read_text(encoding="utf-8"))
    runs = [Path(report["judges"][name]["run"]) for name in names]
    assert len(set(runs)) == 4
    assert all(run.parent == out / "runs" and run.name not in (".", "..") and len(run.name) <= 80 for run in runs)
    assert all((run / "summary.json").exists() for run in runs)


def test_a_stored_command_pasted_into_a_shell_runs_nothing_but_the_replay(tmp_path: Path) -> None:
    """A judge named `$(touch pwned)` with quotes in it: the command audit.json stores, run through a shell,
    creates no file and replays that judge."""
    hostile = 'it\'s $(touch pwned) `touch pwned2` "x"'
    path = write_annotations(tmp_path, [annotation(annotator=hostile)])
    out = tmp_path / "out"
    assert 0 == audit_main(["alpacaeval", str(path), "--out", str(out), "--resamples", "20"])
    command = json.loads((out / "audit.json").read_text(encoding="utf-8"))["judges"][hostile]["command"]
    work = tmp_path / "work"
    work.mkdir()
    shell_command = command.replace("python -m", f"{shlex.quote(sys.executable)} -m", 1)

    done = subprocess.run(
        ["bash", "-c", f"{shell_command} hydra.run.dir=rerun report=false"],
        cwd=work, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip

    assert 0 == done.returncode, done.stderr
    assert not (work / "pwned").exists() and not (work / "pwned2").exists()
    assert 1 == json.loads((work / "rerun" / "summary.json").read_text(encoding="utf-8"))["n_items"]


def test_control_characters_in_names_are_escaped_on_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An annotator name with an escape sequence and a carriage return is printed escaped, never acted on."""
    path = write_annotations(tmp_path, [annotation(annotator="evil\x1b]0;pwned\x07\rjudgebias: ok")])

    code, out, _ = audited(capsys, "alpacaeval", str(path), "--out", str(tmp_path / "out"))

    assert 0 == code and "\x1b" not in out and "\r" not in out and "\\x1b" in out


def test_ctrl_c_during_an_audit_is_one_line_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    """SIGINT while the audit reads and replays a large file: exit 130, one line, no traceback, nothing half written."""
    entries = [annotation(f"Question number {n}?", preference=1.0 + (n % 3) / 2) for n in range(20_000)]
    path = write_annotations(tmp_path, entries)
    out = tmp_path / "out"
    process = subprocess.Popen(
        [sys.executable, "-m", "judgebias.audit", "alpacaeval", str(path), "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    time.sleep(2.5)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)

    assert 130 == process.returncode, err
    assert "Traceback" not in err and 1 == len(err.strip().splitlines()) and "interrupted" in err
    assert not list(out.rglob("*.tmp")) if out.exists() else True


def test_a_question_id_given_twice_with_another_text_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """question.jsonl gives question 81 again with another text: which did the judge see? Refused, both lines
    named; the same line given twice is one question (the audit goes on)."""
    bench = tmp_path / "mt_bench"
    subprocess.run(["cp", "-r", str(FASTCHAT), str(bench)], check=True)
    questions = bench / "question.jsonl"
    lines = questions.read_text(encoding="utf-8").splitlines()
    first = next(number for number, line in enumerate(lines, start=1) if json.loads(line)["question_id"] == 81)
    questions.write_text("\n".join([*lines, lines[first - 1]]) + "\n", encoding="utf-8")
    code, _, err = audited(capsys, "fastchat", str(bench), "--out", str(tmp_path / "same"), "--no-run")
    assert 0 == code, err

    other = json.loads(lines[first - 1])
    other["turns"] = ["Another question under the same id.", *other["turns"][1:]]
    questions.write_text("\n".join([*lines, json.dumps(other)]) + "\n", encoding="utf-8")
    code, _, err = audited(capsys, "fastchat", str(bench), "--out", str(tmp_path / "other"), "--no-run")
    assert 2 == code and 1 == len(err.strip().splitlines()), err
    assert f"{questions}:{len(lines) + 1}: field 'turns': question 81 is given again with another text" in err
    assert f"first at {questions}:{first}" in err


def test_a_pair_recorded_again_with_the_models_swapped_is_the_same_item_judged_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A FastChat judgment line appended again with model_1 and model_2 exchanged (and the games' winners with
    them) is the same question and the same two answers: a repeat of its first line (show_result counts it), not a
    second item, and it gives the first's verdicts."""
    bench = tmp_path / "mt_bench"
    subprocess.run(["cp", "-r", str(FASTCHAT), str(bench)], check=True)
    judgments = bench / "model_judgment" / "gpt-4_pair.jsonl"
    lines = judgments.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[0])
    flip = {"model_1": "model_2", "model_2": "model_1"}
    swapped = record | {
        "model_1": record["model_2"],
        "model_2": record["model_1"],
        "g1_winner": flip.get(record["g1_winner"], record["g1_winner"]),
        "g2_winner": flip.get(record["g2_winner"], record["g2_winner"]),
    }
    judgments.write_text("\n".join([*lines, json.dumps(swapped)]) + "\n", encoding="utf-8")

    code, _, err = audited(capsys, "fastchat", str(bench), "--out", str(tmp_path / "out"), "--no-run")

    assert 0 == code, err
    report = json.loads((tmp_path / "out" / "audit.json").read_text(encoding="utf-8"))
    (entry,) = [entry for entry in report["judges"].values() if "repeats" in entry]
    assert entry["repeats"]["sources"] == [f"{judgments}:{len(lines) + 1}"]
    assert entry["repeats"]["same_verdicts"] == 1  # the same verdicts, read with the games the other way round
    items = (tmp_path / "out" / "items.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(items) == len(lines)  # not a second item
