"""Data files of other shapes than JSONL: CSV and TSV, a JSON array, Parquet and Arrow (pyarrow), a Hugging Face
dataset (datasets). Each gives its records with their number: the line a CSV record starts on (a quoted cell may
span lines), the row elsewhere. These files are read once and held; JSONL alone is streamed twice (io.dataset).
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from judgebias.config.schema import DataFormat
from judgebias.core.errors import UserError

SUFFIXES = {
    ".jsonl": DataFormat.jsonl,
    ".ndjson": DataFormat.jsonl,
    ".csv": DataFormat.csv,
    ".tsv": DataFormat.tsv,
    ".tab": DataFormat.tsv,
    ".json": DataFormat.json,
    ".parquet": DataFormat.parquet,
    ".pq": DataFormat.parquet,
    ".arrow": DataFormat.arrow,
    ".feather": DataFormat.arrow,
    ".ipc": DataFormat.arrow,
}
LINE_FORMATS = frozenset({DataFormat.jsonl, DataFormat.csv, DataFormat.tsv})  # numbered by line; others by row
INSTALL = {
    DataFormat.parquet: "pip install 'judgebias[files]' (pyarrow)",
    DataFormat.arrow: "pip install 'judgebias[files]' (pyarrow)",
    DataFormat.hf: "pip install 'judgebias[datasets]' (datasets)",
}

Numbered = tuple[int, dict[str, Any]]  # a record and its line (CSV, TSV) or row number


def format_of(path: Path, chosen: DataFormat) -> DataFormat:
    """The format a data file is read as: the one chosen, else by its extension (a folder: a saved Hugging Face
    dataset). Any other extension is read as JSONL, as data=jsonl always has."""
    if chosen != DataFormat.auto:
        return chosen
    if path.is_dir():
        return DataFormat.hf
    return SUFFIXES.get(path.suffix.lower(), DataFormat.jsonl)


def table_records(path: Path, form: DataFormat, split: str | None = None, given: str = "") -> Iterator[Numbered]:
    """The records of a data file of any format but JSONL, each with its number; a file that cannot be read as that
    format is one UserError naming it (and the line or row where that shows)."""
    if form in (DataFormat.csv, DataFormat.tsv):
        return _delimited(path, "\t" if form == DataFormat.tsv else ",")
    if form == DataFormat.json:
        return enumerate(_json_array(path), start=1)
    if form == DataFormat.parquet:
        return enumerate(_parquet(path), start=1)
    if form == DataFormat.arrow:
        return enumerate(_arrow(path), start=1)
    if form == DataFormat.hf:
        return enumerate(_hugging_face(path, split, given), start=1)
    raise ValueError(f"not a table format: {form}")


def _opened_text(path: Path) -> Any:
    try:
        return path.open(encoding="utf-8-sig", newline="")
    except FileNotFoundError:
        raise UserError(f"{path}: no such data file (check data.path and data.root)") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a folder, not a data file (check data.path, or data.format=hf)") from None


def _delimited(path: Path, delimiter: str) -> Iterator[Numbered]:
    """CSV or TSV with a header line naming the fields (quoted cells may hold the delimiter, quotes and newlines; a
    UTF-8 byte order mark is allowed). A cell left empty is a missing value."""
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))  # an answer may be longer than csv's 128 KiB default
    kind = "TSV" if delimiter == "\t" else "CSV"
    with _opened_text(path) as file:
        reader = csv.reader(file, delimiter=delimiter, strict=True)
        line = 1
        try:
            header = next(reader, None)
            if header is None:
                return
            names = [name.strip() for name in header]
            _check_header(path, names, kind)
            line = reader.line_num + 1
            for cells in reader:
                start, line = line, reader.line_num + 1
                if not cells or (len(cells) == 1 and not cells[0].strip()):
                    continue  # a blank line
                if len(cells) > len(names):
                    raise UserError(
                        f"{path}:{start}: the record has {len(cells)} cells and the header {len(names)} fields: "
                        f'quote a cell that holds a {"tab" if delimiter == chr(9) else "comma"} ("...")'
                    )
                yield start, {name: cell for name, cell in zip(names, cells, strict=False) if cell != ""}
        except csv.Error as error:
            raise UserError(f"{path}:{reader.line_num}: not readable as {kind}: {error}") from None
        except UnicodeDecodeError as error:
            problem = f"not UTF-8 text (byte {error.start + 1} of a block): save the file as UTF-8"
            raise UserError(f"{path}: {problem}") from None


def _check_header(path: Path, names: list[str], kind: str) -> None:
    if not any(names):
        raise UserError(f"{path}:1: the header line is empty: a {kind} file starts with the names of its fields")
    blank = [i for i, name in enumerate(names, start=1) if not name]
    if blank:
        raise UserError(f"{path}:1: header field {blank[0]} has no name: name every column")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise UserError(f"{path}:1: the header names {name!r} twice: each column needs its own name")
        seen.add(name)


def _json_array(path: Path) -> Iterator[dict[str, Any]]:
    with _opened_text(path) as file:
        try:
            value = json.load(file)
        except json.JSONDecodeError as error:
            hint = " (one object per line is JSONL: data.format=jsonl)" if error.msg == "Extra data" else ""
            raise UserError(
                f"{path}:{error.lineno}: not a JSON array: {error.msg} (column {error.colno}){hint}"
            ) from None
        except UnicodeDecodeError as error:
            raise UserError(f"{path}: not UTF-8 text (byte {error.start + 1}): save the file as UTF-8") from None
    if isinstance(value, dict):
        lists = [key for key, inner in value.items() if isinstance(inner, list)]
        hint = f" (its list is under {lists[0]!r}: give the array itself)" if len(lists) == 1 else ""
        raise UserError(f"{path}: holds one JSON object, not an array of items{hint}")
    if not isinstance(value, list):
        raise UserError(f"{path}: expected a JSON array of objects, got {type(value).__name__}")
    for number, record in enumerate(value, start=1):
        if not isinstance(record, dict):
            raise UserError(f"{path}: row {number}: expected a JSON object, got {type(record).__name__}")
        yield record


def _module(form: DataFormat, name: str) -> Any:
    """An optional dependency, or one line saying how to install it."""
    try:
        return __import__(name)
    except ImportError:
        raise UserError(f"reading data.format={form} needs {name}, which is not installed: {INSTALL[form]}") from None


def _parquet(path: Path) -> Iterator[dict[str, Any]]:
    pq = _module(DataFormat.parquet, "pyarrow.parquet").parquet
    try:
        table = pq.ParquetFile(path)
    except FileNotFoundError:
        raise UserError(f"{path}: no such data file (check data.path and data.root)") from None
    except Exception as error:  # pyarrow's ArrowInvalid and kin: not a Parquet file
        raise UserError(f"{path}: not readable as Parquet: {_first_line(error)}") from None
    for batch in table.iter_batches(batch_size=4096):
        yield from batch.to_pylist()


def _arrow(path: Path) -> Iterator[dict[str, Any]]:
    pa = _module(DataFormat.arrow, "pyarrow")
    ipc = __import__("pyarrow.ipc").ipc
    try:
        source = pa.memory_map(str(path))
    except FileNotFoundError:
        raise UserError(f"{path}: no such data file (check data.path and data.root)") from None
    try:
        try:
            reader = ipc.open_file(source)
            batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
        except Exception:  # not the file format: the stream format (what datasets writes)
            source.seek(0)
            batches = iter(ipc.open_stream(source))
        for batch in batches:
            yield from batch.to_pylist()
    except UserError:
        raise
    except Exception as error:
        raise UserError(f"{path}: not readable as Arrow: {_first_line(error)}") from None


def _hugging_face(path: Path, split: str | None, given: str) -> Iterator[dict[str, Any]]:
    """A dataset saved by `save_to_disk` (a folder), or a Hub id (`given`, data.path as written) when no such folder
    is here and the Hub is reachable; a DatasetDict's split by data.split (its only split when there is one)."""
    datasets = _module(DataFormat.hf, "datasets")
    try:
        if path.exists():
            loaded = datasets.load_from_disk(str(path))
        else:
            loaded = datasets.load_dataset(given or str(path), split=split)
    except FileNotFoundError as error:
        raise UserError(f"{path}: not a saved Hugging Face dataset: {_first_line(error)}") from None
    except Exception as error:
        raise UserError(f"{path}: not readable as a Hugging Face dataset: {_first_line(error)}") from None
    if isinstance(loaded, datasets.DatasetDict):
        splits = list(loaded)
        if split is None and len(splits) != 1:
            raise UserError(f"{path}: holds the splits {', '.join(splits)}: choose one with data.split=<name>")
        chosen = split if split is not None else splits[0]
        if chosen not in loaded:
            raise UserError(f"data.split={chosen}: {path} has no such split (it has {', '.join(splits)})")
        loaded = loaded[chosen]
    yield from loaded


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
