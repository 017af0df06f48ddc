"""A finished run's verdicts.jsonl read as a stream into the columns its figures need, never its lines whole.

A million lines of a run hold 600 MB of text, mostly the judges' replies: compare and the gate keep a row of each
(figures.rows, a few dozen bytes), its id's hash, its line number and its cluster, and fetch again, by line number,
only the lines they show (the items that moved). Every line is checked as it is read (core.verdict_lines); a
problem is one line naming the file, the line and the field.
"""

from __future__ import annotations

import json
import zlib
from array import array
from collections.abc import Collection
from pathlib import Path
from typing import Any

import numpy as np

from judgebias.core.errors import UserError
from judgebias.core.verdict_lines import NO_CLUSTER, LineProblem, record_of_line, result_of_record
from judgebias.figures.clustering import label_value
from judgebias.figures.comparison import VerdictColumns
from judgebias.figures.rows import Rows

BOM = b"\xef\xbb\xbf"
NO_CLUSTER_CODE = -1  # a row whose line names no cluster (or null)


def read_verdicts(path: Path) -> VerdictColumns:
    """Every line of `path` checked and kept as a row; a repeated id, a bad line: one UserError naming it."""
    rows = Rows()
    hashes, checks, numbers, clusters = array("q"), array("I"), array("I"), array("i")
    values: dict[object, int] = {}
    try:
        with path.open("rb") as lines:
            for number, raw in enumerate(lines, start=1):
                if number == 1 and raw.startswith(BOM):
                    raw = raw[len(BOM) :]
                if raw.isspace() or not raw:
                    continue
                try:
                    record = record_of_line(raw)
                except LineProblem as problem:
                    raise UserError(f"{path}:{number}: {problem}") from None
                rows.append(result_of_record(record))
                hashes.append(hash(record.id))
                checks.append(zlib.crc32(record.id.encode("utf-8", "surrogatepass")))
                numbers.append(number)
                cluster = record.cluster
                if cluster is NO_CLUSTER or cluster is None:
                    clusters.append(NO_CLUSTER_CODE)
                else:
                    clusters.append(values.setdefault(label_value(cluster), len(values)))
    except OSError as error:
        raise UserError(f"{path}: cannot be read ({error.strerror or error})") from None
    if not len(rows):
        raise UserError(f"{path}: no verdict lines")
    columns = VerdictColumns(
        path,
        rows,
        np.frombuffer(hashes, dtype=np.int64),
        np.frombuffer(checks, dtype=np.uint32),
        np.frombuffer(numbers, dtype=np.uint32),
        np.frombuffer(clusters, dtype=np.int32),
        list(values),
    )
    _refuse_repeated_ids(columns)
    return columns


def _refuse_repeated_ids(columns: VerdictColumns) -> None:
    """An id on two lines is one error naming the later line (ids whose hashes and checks both collide are told
    apart by their text)."""
    order = np.lexsort((columns.id_checks, columns.id_hashes))
    hashes, checks = columns.id_hashes[order], columns.id_checks[order]
    same = np.flatnonzero((hashes[1:] == hashes[:-1]) & (checks[1:] == checks[:-1]))
    repeats = [
        int(order[at + 1])
        for at in same.tolist()
        if columns.rows.id(int(order[at])) == columns.rows.id(int(order[at + 1]))
    ]
    if repeats:
        later = min(repeats)  # the first repeat in the file's order
        raise UserError(
            f"{columns.path}:{int(columns.line_numbers[later])}: field 'id': {columns.rows.id(later)!r} is on an "
            "earlier line too"
        )


def fetch_lines(path: Path, numbers: Collection[int]) -> dict[int, dict[str, Any]]:
    """The lines of `path` at these line numbers, parsed (a second pass reads and parses only those)."""
    wanted, found = set(numbers), dict[int, dict[str, Any]]()
    if not wanted:
        return found
    last = max(wanted)
    try:
        with path.open("rb") as lines:
            for number, raw in enumerate(lines, start=1):
                if number in wanted:
                    value = json.loads(raw.removeprefix(BOM) if number == 1 else raw)
                    found[number] = value if isinstance(value, dict) else {}
                if number >= last:
                    break
    except (OSError, ValueError) as error:
        raise UserError(f"{path}: changed while it was read ({error})") from None
    return found
