"""Reading other tools' judgment files as strictly as the run command reads a dataset, and writing what the audit
makes of them.

A file the user names may be anything: a FIFO or /dev/zero (refused: not a regular file), a file of gigabytes
(refused past MAX_FILE_BYTES), JSON with NaN, numbers of thousands of digits, nesting thousands deep or a lone UTF-16
surrogate (each one line naming file and line). Records come back as (file, line, value) triples.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from judgebias.audit.formats.common import Record
from judgebias.core.errors import UserError
from judgebias.io.jsonl import decode_problem, lone_surrogate, text_lines

MAX_FILE_BYTES = 1 << 30  # a judgment, question or answer file larger than 1 GiB is refused, not read into memory
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # the only way JSON text decodes to a lone surrogate


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number (write null)")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


def read_text(path: Path, expected: str = "JSON file") -> str:
    """A regular file's UTF-8 text, within MAX_FILE_BYTES; else one line saying why it is not read."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except OSError as error:
        raise UserError(f"{path}: cannot be read ({error.strerror or error})") from None
    if stat.S_ISDIR(info.st_mode):
        raise UserError(f"{path}: is a folder, not a {expected}")
    if not stat.S_ISREG(info.st_mode):
        raise UserError(f"{path}: is not a regular file (a pipe, a device or a socket): pass a {expected}")
    if info.st_size > MAX_FILE_BYTES:
        raise UserError(f"{path}: {info.st_size:,} bytes, more than the {MAX_FILE_BYTES:,} a {expected} may have here")
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise UserError(f"{path}: cannot be read ({error.strerror or error})") from None
    if len(raw) > MAX_FILE_BYTES:
        raise UserError(f"{path}: grew past the {MAX_FILE_BYTES:,} bytes a {expected} may have while it was read")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise UserError(f"{path}: not UTF-8 text (byte {error.start + 1}): save the file as UTF-8") from None


def read_records(path: Path) -> list[Record]:
    """(file, line, value) for each JSON line, or each element of a JSON array with the line it starts on."""
    text = read_text(path)
    source = str(path)
    records = list(_array_elements(text, source)) if text.lstrip().startswith("[") else list(_lines(text, source))
    if _SURROGATE_ESCAPE.search(text):
        for record_source, line, value in records:
            _check_encodable(value, record_source, line)
    return records


def _decode(text: str, index: int, source: str, line: int) -> tuple[Any, int]:
    """One JSON value starting at `index`, strictly: NaN, over-long numbers and deep nesting are one-line errors."""
    try:
        return _DECODER.raw_decode(text, index)
    except json.JSONDecodeError as error:
        raise UserError(f"{source}:{error.lineno}: not valid JSON ({decode_problem(error)})") from None
    except RecursionError:
        raise UserError(f"{source}:{line}: values nested too deeply to read (arrays or objects)") from None
    except ValueError as error:  # NaN / Infinity, or an integer of more digits than Python converts (4,300)
        reason = str(error) if "JSON number" in str(error) else "a number too long to read"
        raise UserError(f"{source}:{line}: {reason}") from None


def _lines(text: str, source: str) -> Iterator[Record]:
    for number, line in enumerate(text_lines(text), start=1):
        if line.strip():
            value, end = _decode(line, len(line) - len(line.lstrip()), source, number)
            if line[end:].strip():
                raise UserError(f"{source}:{number}: not valid JSON (more after the value at column {end + 1})")
            yield source, number, value


def _array_elements(text: str, source: str) -> Iterator[Record]:
    """The elements of a JSON array, each with the line its first character is on."""
    index = text.index("[") + 1
    while True:
        index = _skip(text, index)
        if index < len(text) and text[index] == "]":
            return
        line = text.count("\n", 0, index) + 1
        value, end = _decode(text, index, source, line)
        yield source, line, value
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


def _check_encodable(value: Any, source: str, line: int) -> None:
    """Refuse a lone surrogate ("\\ud83d" without its pair): it is not text, and no file could store it."""
    bad = lone_surrogate(value)
    if bad is not None:
        raise UserError(
            f"{source}:{line}: contains {bad}, half of a UTF-16 surrogate pair, which is not text: fix the line"
        )


def records_of(paths: Sequence[Path]) -> list[Record]:
    """The records of several files, in order."""
    return [record for path in paths for record in read_records(path)]


def bench_of(path: Path, marker: str) -> Path:
    """The bench folder (the one holding question.jsonl) of a judgment file or folder under `marker`."""
    for parent in [path, *path.parents]:
        if parent.name == marker:
            return parent.parent
    raise UserError(f"{path}: not inside a {marker}/ folder: pass the bench folder (the one with question.jsonl)")


def jsonl_files(folder: Path, what: str, bench: Path) -> list[Path]:
    """The .jsonl files of a folder of the bench, or one line saying there are none."""
    files = sorted(folder.glob("*.jsonl"))
    if not files:
        raise UserError(f"{folder}: no .jsonl files ({what} of the bench {bench})")
    return files


def bench_inputs(
    paths: Sequence[Path], pattern: str, expected: str, *, judge_folders: bool, references: bool
) -> dict[str, list[Record]]:
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
            judgments += records_of(found)
            bench = path
        elif path.is_dir():
            judgments += records_of(jsonl_files(path, "judgments", path))
            bench = bench_of(path, "model_judgment")
        else:
            judgments += read_records(path)
            bench = bench_of(path, "model_judgment")
        if bench not in benches:
            benches.append(bench)
    inputs: dict[str, list[Record]] = {"judgments": judgments, "questions": [], "answers": [], "references": []}
    for bench in benches:
        inputs["questions"] += read_records(bench / "question.jsonl")
        inputs["answers"] += records_of(jsonl_files(bench / "model_answer", "model answers", bench))
        if references and (bench / "reference_answer").is_dir():
            inputs["references"] += records_of(sorted((bench / "reference_answer").glob("*.jsonl")))
    return inputs
