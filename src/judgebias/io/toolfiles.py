"""Reading other tools' judge-run folders and writing what judgebias makes of them (the I/O of `judgebias.audit`).

Where each tool keeps its files (as its own scripts write them):

- FastChat: `data/<bench>/question.jsonl`, `model_answer/<model>.jsonl`, `reference_answer/<judge>.jsonl`,
  `model_judgment/<judge>_pair.jsonl`.
- Arena-Hard-Auto v2: `data/<bench>/question.jsonl`, `model_answer/<model>.jsonl`,
  `model_judgment/<judge>/<model>.jsonl`.
- AlpacaEval: `results/<model>/<annotator>/annotations.json` (a JSON array; JSON lines are read too).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from judgebias.core.errors import UserError
from judgebias.core.toolformats import Record
from judgebias.io.files import read_user_text, write_text_atomic
from judgebias.io.jsonl import decode_problem, json_lines, text_lines


def read_records(path: Path) -> list[Record]:
    """(file, line, value) for each JSON line, or each element of a JSON array with the line it starts on."""
    text = read_user_text(path, expected="JSON file")
    if text.lstrip().startswith("["):
        return list(_array_elements(text, str(path)))
    return [(str(path), number, value) for number, value in json_lines(text_lines(text), path, column=True)]


def _array_elements(text: str, source: str) -> Iterator[Record]:
    """The elements of a JSON array, each with the line its first character is on."""
    decoder = json.JSONDecoder()
    index = text.index("[") + 1
    while True:
        index = _skip(text, index)
        if index < len(text) and text[index] == "]":
            return
        try:
            value, end = decoder.raw_decode(text, index)
        except json.JSONDecodeError as error:
            raise UserError(f"{source}:{error.lineno}: not valid JSON ({decode_problem(error)})") from None
        yield source, text.count("\n", 0, index) + 1, value
        index = _skip(text, end)
        if index < len(text) and text[index] == ",":
            index += 1
        elif index >= len(text) or text[index] != "]":
            line = text.count("\n", 0, index) + 1
            raise UserError(f"{source}:{line}: not valid JSON (expected ',' or ']' after an element)")


def _skip(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t\r\n":
        index += 1
    return index


def _records_of(paths: Sequence[Path]) -> list[Record]:
    return [record for path in paths for record in read_records(path)]


def _bench_of(path: Path, marker: str) -> Path:
    """The bench folder (the one holding question.jsonl) of a judgment file or folder under `marker`."""
    for parent in [path, *path.parents]:
        if parent.name == marker:
            return parent.parent
    raise UserError(f"{path}: not inside a {marker}/ folder: pass the bench folder (the one with question.jsonl)")


def _jsonl_files(folder: Path, what: str, bench: Path) -> list[Path]:
    files = sorted(folder.glob("*.jsonl"))
    if not files:
        raise UserError(f"{folder}: no .jsonl files ({what} of the bench {bench})")
    return files


def fastchat_inputs(paths: Sequence[Path]) -> dict[str, Any]:
    """The records of FastChat bench folders or `<judge>_pair.jsonl` files: judgments, questions, answers, refs."""
    return _bench_inputs(
        paths,
        "*_pair.jsonl",
        "model_judgment/*_pair.jsonl (FastChat's pairwise judgments)",
        judge_folders=False,
        references=True,
    )


def arenahard_inputs(paths: Sequence[Path]) -> dict[str, Any]:
    """The records of Arena-Hard-Auto bench folders, judge folders or judgment files."""
    return _bench_inputs(
        paths, "*/*.jsonl", "model_judgment/<judge>/<model>.jsonl", judge_folders=True, references=False
    )


def _bench_inputs(
    paths: Sequence[Path], pattern: str, expected: str, *, judge_folders: bool, references: bool
) -> dict[str, Any]:
    """The judgments of bench folders (their model_judgment/`pattern` files), judge folders (with `judge_folders`:
    a folder of .jsonl files under model_judgment/) or judgment files, then the questions and answers (and with
    `references`, the reference answers) of each bench they belong to, each bench read once."""
    judgments: list[Record] = []
    benches: list[Path] = []
    for path in paths:
        if path.is_dir() and (not judge_folders or (path / "model_judgment").is_dir()):
            found = sorted((path / "model_judgment").glob(pattern))
            if not found:
                raise UserError(f"{path}: no {expected} in this folder")
            judgments += _records_of(found)
            bench = path
        elif path.is_dir():
            judgments += _records_of(_jsonl_files(path, "judgments", path))
            bench = _bench_of(path, "model_judgment")
        else:
            judgments += read_records(path)
            bench = _bench_of(path, "model_judgment")
        if bench not in benches:
            benches.append(bench)
    questions: list[Record] = []
    answers: list[Record] = []
    reference_answers: list[Record] = []
    for bench in benches:
        questions += read_records(bench / "question.jsonl")
        answers += _records_of(_jsonl_files(bench / "model_answer", "model answers", bench))
        if references and (bench / "reference_answer").is_dir():
            reference_answers += _records_of(sorted((bench / "reference_answer").glob("*.jsonl")))
    inputs: dict[str, Any] = {"judgments": judgments, "questions": questions, "answers": answers}
    return (inputs | {"references": reference_answers}) if references else inputs


def alpacaeval_inputs(paths: Sequence[Path]) -> list[Record]:
    """The entries of AlpacaEval annotation files, or of every annotations.json under a folder."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(path.rglob("annotations.json"))
            if not found:
                raise UserError(f"{path}: no annotations.json under this folder")
            files += found
        else:
            files.append(path)
    return _records_of(files)


def write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """One JSON object per line, written atomically."""
    write_text_atomic(path, "".join(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n" for row in rows))
