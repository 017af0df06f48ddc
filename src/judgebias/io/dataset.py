"""Reading a dataset: every line checked before the first judge call, every error naming file, line and field.

Deliberate choices (documented in docs/data.md): blank lines are skipped; an answer may be empty (an empty answer
is a real, bad answer) but must be a string; a question must contain a non-space character; ids are text (a number
is read as its text), unique; `prompt` is accepted for `question`; human labels may say a/b or 1/2 (core/labels.py);
any other field is kept and passed through. A file's own field names and label words are mapped first
(core/fields.py), answers given as chat conversations read as text (core/conversation.py); CSV, Parquet and the
other formats are read by io/tables.py and checked here, as JSONL is.
"""

from __future__ import annotations

import array
import dataclasses
import json
import os
import re
from collections.abc import Generator, Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from judgebias.config.schema import DataConfig, DataFormat
from judgebias.core.conversation import ConversationError, as_item_fields, is_conversation
from judgebias.core.errors import UserError
from judgebias.core.fields import REQUIRED, FieldMap, guessed_fields, missing_everywhere
from judgebias.core.item import Item, new_item, shared_name
from judgebias.core.labels import SPELLED, HumanLabel, human_label
from judgebias.core.style import strip_markdown as plain_text
from judgebias.core.style import style_of
from judgebias.io.jsonl import json_line, lone_surrogate
from judgebias.io.tables import LINE_FORMATS, format_of, table_records

EMBEDDED = "embedded"  # data.root value for datasets shipped inside the package
SHARED = "shared"  # data.root value for the shared datasets under $JUDGEBIAS_DATA_ROOT
SHARED_ROOT_ENV = "JUDGEBIAS_DATA_ROOT"
FENCED = re.compile(r"\A```[^\n]*\n(.*?)\n?```\Z", re.DOTALL)


def resolve_path(path: str, root: str | None) -> Path:
    """Where a dataset file is: in the package (root=embedded), under $JUDGEBIAS_DATA_ROOT (root=shared), under
    `root` when it is a folder, else as written (relative to the launch folder). Always an absolute path, so every
    error names the file that was really looked for."""
    if root == EMBEDDED:
        shipped = Path(str(resources.files("judgebias") / "datasets" / path))
        if not os.path.isabs(path) and not shipped.exists():
            raise UserError(
                f"data.path={path!r}: no such dataset is shipped in the package (the chosen data option reads only "
                f"those); for a file of your own, choose data={_reader(path)}: data={_reader(path)} data.path={path}"
            )
        return shipped
    if os.path.isabs(path):
        return Path(path)
    if root == SHARED:
        return _shared_root(path) / path
    if root is None:
        return Path(path).expanduser().absolute()
    base = Path(root).expanduser().absolute()
    if not base.is_dir():
        raise UserError(
            f"data.root={root!r}{_resolved_as(root, base)} is not a folder: pass the folder that holds {path}"
        )
    return base / path


def _reader(path: str) -> str:
    """The data option that reads a file of one's own: jsonl for a JSONL file (as ever), file for any format."""
    return "jsonl" if path.lower().endswith(".jsonl") else "file"


def _resolved_as(value: str, base: Path) -> str:
    """Where a folder setting led, when that is not what was written (a relative path, or one with ~)."""
    if str(base) == value:
        return ""
    relative = "" if os.path.isabs(os.path.expanduser(value)) else f", relative to the current folder {os.getcwd()}"
    return f" (read as {str(base)!r}{relative})"


def _shared_root(path: str) -> Path:
    """The shared datasets' folder from $JUDGEBIAS_DATA_ROOT, read now and resolved (a relative value is read
    from the current folder, and the error shows where that led)."""
    value = os.environ.get(SHARED_ROOT_ENV)
    if not value:
        raise UserError(
            f"{path} is in the shared datasets and {SHARED_ROOT_ENV} is not set: point it at the folder that "
            f"holds them (export {SHARED_ROOT_ENV}=/path/to/shared/data) or pass data.root=/path/to/shared/data"
        )
    base = Path(value).expanduser().absolute()
    if not base.is_dir():
        raise UserError(
            f"{SHARED_ROOT_ENV}={value!r}{_resolved_as(value, base)} is not a folder: set it to the absolute path "
            f"of the shared data folder (the one that holds {path})"
        )
    return base


MAX_PROBLEMS = 20  # a data file's problems reported in one go; past this many the check stops reading


@dataclasses.dataclass(frozen=True)
class Reading:
    """How a data file is read: its format (never auto here), the file's names for the fields and its label words,
    a Hugging Face dataset's split, and data.path as written (a Hub id is not a path)."""

    format: DataFormat = DataFormat.jsonl
    fields: FieldMap = dataclasses.field(default_factory=FieldMap)
    split: str | None = None
    given: str = ""

    @property
    def streams(self) -> bool:
        """Read a line at a time, from any line on, as often as needed (JSONL); every other format is read once."""
        return self.format == DataFormat.jsonl

    @property
    def by_row(self) -> bool:
        """Its records are numbered by row (Parquet, a JSON array, ...), not by the line they start on."""
        return self.format not in LINE_FORMATS

    def where(self, path: Path, number: int) -> str:
        """A record's place in an error: "file:line", or "file: row N"."""
        return f"{path}: row {number}" if self.by_row else f"{path}:{number}"

    def named(self, problem: str) -> str:
        """A problem with the file's own name for the field it names ("field 'response_v1' (read as a)")."""
        for role, name in self.fields.fields.items():
            problem = problem.replace(f"field {role!r}", f"field {name!r} (read as {role})", 1)
        return problem


JSONL = Reading()


def reading_of(data: DataConfig | Mapping[str, Any], path: Path) -> Reading:
    """How the run's data file is read: data.format (by extension when auto), data.fields, data.labels, data.split
    (from the config, or from a run's provenance, where the data config is a dict). A cell left empty is a missing
    value in every format but JSON (where null says so)."""
    given = data if isinstance(data, Mapping) else dataclasses.asdict(data)
    form = format_of(path, DataFormat(given.get("format") or DataFormat.auto))
    empty_is_none = form not in (DataFormat.jsonl, DataFormat.json)
    fields = FieldMap(dict(given.get("fields") or {}), dict(given.get("labels") or {}), empty_is_none)
    return Reading(form, fields, given.get("split"), str(given.get("path") or ""))


def mapped_records(path: Path, reading: Reading) -> Iterator[dict[str, Any]]:
    """The records of a data file that was read whole once (its items checked), under judgebias's names: what a
    copy of the dataset in judgebias's own JSONL shape holds."""
    for _, _, record in _numbered(path, reading, []):
        yield reading.fields.mapped(record)


def load_items(path: Path, reading: Reading = JSONL) -> list[Item]:
    """All items of a data file, or one UserError naming the file, line (or row) and field of each problem (up to
    MAX_PROBLEMS of them, so a file with several mistakes is fixed in one pass, not one run per mistake)."""
    return list(read_items(path, reading=reading))


Place = tuple[int, int]  # where a line starts in a data file: its byte offset and its line number
START: Place = (0, 1)


@dataclasses.dataclass
class Places:
    """Where each item's line starts (12 bytes an item), so that a later reading can start at any item."""

    offsets: array.array[int] = dataclasses.field(default_factory=lambda: array.array("q"))
    lines: array.array[int] = dataclasses.field(default_factory=lambda: array.array("I"))

    def __getitem__(self, index: int) -> Place:
        return self.offsets[index], self.lines[index]


@dataclasses.dataclass
class Findings:
    """What reading a data file (or a part of it) found: the problem of each bad line, a 64-bit hash of each valid
    item's id and its line (duplicate ids are looked for once every part is read), and whether any item was valid.

    Duplicates are found by the hashes (12 bytes an item, where a set of the ids held every id's text), then
    confirmed on the lines themselves: a million items' check holds no id."""

    problems: list[str] = dataclasses.field(default_factory=list)
    hashes: array.array[int] = dataclasses.field(default_factory=lambda: array.array("q"))
    lines: array.array[int] = dataclasses.field(default_factory=lambda: array.array("I"))
    found: bool = False
    refused: int = 0  # lines refused (each lacking the roles counted in `lacking`, or refused for another reason)
    lacking: dict[str, int] = dataclasses.field(default_factory=dict)  # role -> refused lines without it
    names: list[str] = dataclasses.field(
        default_factory=list
    )  # the first refused line's fields, as the file names them

    def extend(self, later: Findings) -> None:
        """Add what the next part of the file found (parts in the file's order)."""
        self.problems += later.problems
        self.hashes += later.hashes
        self.lines += later.lines
        self.found = self.found or later.found
        self.refused += later.refused
        for role, count in later.lacking.items():
            self.lacking[role] = self.lacking.get(role, 0) + count
        self.names = self.names or later.names

    def refuse(self, record: dict[str, Any], original: dict[str, Any]) -> None:
        """Count a refused line and the required fields it lacks (a file that lacks them on every line is told so
        once, not once a line)."""
        self.refused += 1
        if not self.names:
            self.names = list(original)[:40]
        if is_conversation(record):
            return
        for role in REQUIRED:
            if record.get(role) is None and not (role == "question" and record.get("prompt") is not None):
                self.lacking[role] = self.lacking.get(role, 0) + 1

    def conclude(self, path: Path, reading: Reading = JSONL) -> None:
        """The file's one UserError (up to MAX_PROBLEMS problems in line order, duplicate ids among them), if any:
        one line when every line read lacks the same required fields."""
        everywhere = [role for role in REQUIRED if self.refused > 1 and self.lacking.get(role) == self.refused]
        if everywhere and not self.found:
            read = f"the {self.refused} {'rows' if reading.by_row else 'lines'} read"
            raise UserError(missing_everywhere(str(path), read, self.names, everywhere, reading.fields))
        duplicates = _duplicates(path, self.hashes, self.lines, reading)
        problems = _in_line_order(path, self.problems, duplicates)[:MAX_PROBLEMS]
        if problems:
            raise UserError(_problems_text(path, problems))
        if not self.found:
            unit = "row" if reading.by_row else "line"
            raise UserError(
                f"{path}: the dataset is empty: it needs at least one item (a {unit} with id, question, a and b)"
            )


def read_items(
    path: Path,
    *,
    reading: Reading = JSONL,
    checked: bool = False,
    start: Place = START,
    stop: int | None = None,
    places: Places | None = None,
    findings: Findings | None = None,
) -> Generator[Item, None, None]:
    """The items of a JSONL file one at a time, as load_items reads them; its UserError comes once the whole
    file is read (after every valid item is yielded), so a caller that keeps nothing can check a file of any size.

    `checked`: the file was read whole once already with no problem, so its ids are known to be unique (not
    looked for again; a line that no longer passes the checks, the file edited since, is still refused); `start`:
    read from this line on (a place a checked reading gave, or one `cut_lines` gave); `stop`: up to the line starting
    at this byte offset. `places` gets the place of each item's line, in the order they are yielded. `findings`:
    gather what the reading finds there and raise nothing (a part of the file, concluded with the others by
    `Findings.conclude`)."""
    found = Findings() if findings is None else findings
    records = _numbered(path, reading, found.problems, start, stop)
    mapping = None if reading.fields.identity else reading.fields
    for number, offset, original in records:
        record = original if mapping is None else mapping.mapped(original)
        try:
            item = _checked_item(record, path, number, reading)
        except UserError as error:
            found.problems.append(str(error) if mapping is None else reading.named(str(error)))
            found.refuse(record, original)
            if len(found.problems) >= MAX_PROBLEMS and not reading.streams:
                break
            continue
        if not checked:
            found.hashes.append(hash(item.id))
            found.lines.append(number)
        if places is not None:
            places.offsets.append(offset)
            places.lines.append(number)
        found.found = True
        yield item
    if findings is None:
        found.conclude(path, reading)


def cut_lines(path: Path, count: int) -> tuple[list[tuple[Place, int]], int]:
    """The file cut into `count` parts of about equal bytes, each from the start of a line: (its first line's place,
    the offset it stops at); and the file's number of lines. One pass counting line ends, so each part knows its line
    numbers."""
    size = path.stat().st_size
    targets = [size * k // count for k in range(1, count)]
    starts: list[Place] = [START]
    lines, read, last = 1, 0, b""
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            while targets and targets[0] < read + len(chunk):
                end = chunk.find(b"\n", max(targets[0] - read, 0))
                if end < 0:
                    break  # the line goes on into the next chunk
                place = (read + end + 1, lines + chunk.count(b"\n", 0, end + 1))
                if place[0] > starts[-1][0] and place[0] < size:
                    starts.append(place)
                targets.pop(0)
            lines += chunk.count(b"\n")
            read += len(chunk)
            targets = [max(target, read) for target in targets]
            last = chunk[-1:]
    stops = [offset for offset, _ in starts[1:]] + [size]
    return list(zip(starts, stops, strict=True)), lines - (last in (b"\n", b""))


def _duplicates(path: Path, hashes: array.array[int], lines: array.array[int], reading: Reading) -> list[str]:
    """One problem per item whose id an earlier valid item has (ids that read as the same text: 7 and "7"), naming
    that item's line."""
    digest = np.frombuffer(hashes, dtype=np.int64)
    order = np.argsort(digest, kind="stable")
    repeated = np.flatnonzero(digest[order][1:] == digest[order][:-1])
    if not repeated.size:
        return []
    suspects = {int(lines[i]) for i in np.concatenate([order[repeated], order[repeated + 1]]).tolist()}
    first: dict[str, int] = {}
    problems = []
    unit = "row" if reading.by_row else "line"
    for number, item_id in _ids_on_lines(path, suspects, reading):
        if item_id in first:
            problem = f"field 'id': duplicate id {item_id!r} (first on {unit} {first[item_id]})"
            problems.append(reading.named(f"{reading.where(path, number)}: {problem}"))
        else:
            first[item_id] = number
    return problems


def _ids_on_lines(path: Path, numbers: set[int], reading: Reading) -> Iterator[tuple[int, str]]:
    """(line, id) of these lines, in order: lines read once already, each a valid item."""
    if not reading.streams:
        for number, _, record in _numbered(path, reading, []):
            if number in numbers:
                yield number, id_text(reading.fields.mapped(record)["id"])
        return
    with path.open("rb") as file:
        for number, line in enumerate(file, start=1):
            if number in numbers:
                record = json.loads(_decoded(line.rstrip(b"\n"), path, number))
                yield number, id_text(reading.fields.mapped(record)["id"])


def id_text(value: object) -> str:
    """An id as the text it is read as: a number's text (7 -> "7"), a string as it is."""
    return value if isinstance(value, str) else json.dumps(value)


def _in_line_order(path: Path, problems: list[str], more: list[str]) -> list[str]:
    """Both lists of problems ("PATH:LINE: ...") merged in the order of their lines."""
    if not more:
        return problems
    start = len(str(path)) + 1
    return sorted(problems + more, key=lambda problem: int(problem[start:].removeprefix(" row ").split(":", 1)[0]))


def _problems_text(path: Path, problems: list[str]) -> str:
    """One problem as its own line; several as a count and one line each."""
    if len(problems) == 1:
        return problems[0]
    more = f" (the check stopped at {MAX_PROBLEMS}; there may be more)" if len(problems) >= MAX_PROBLEMS else ""
    return f"{path}: {len(problems)} problems{more}; fix them and run again:\n" + "\n".join(
        f"  {problem}" for problem in problems
    )


def _numbered(
    path: Path, reading: Reading, problems: list[str], start: Place = START, stop: int | None = None
) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(line or row number, byte offset of a JSONL line (0 elsewhere), record) of each record of the file, as
    `_records` gives them; every format but JSONL read whole by io.tables."""
    if reading.streams:
        return _records(path, problems, start, stop)
    records = table_records(path, reading.format, reading.split, reading.given)
    return ((number, 0, record) for number, record in records)


def _records(
    path: Path, problems: list[str], start: Place = START, stop: int | None = None
) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(line number, byte offset of the line, JSON object) for each non-blank line that is one, from `start` on
    (to the line at byte `stop`); each other line's problem is added to `problems`, and reading stops once they
    reach MAX_PROBLEMS."""
    try:
        file = path.open("rb")
    except FileNotFoundError:
        raise UserError(f"{path}: no such data file (check data.path and data.root)") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a folder, not a JSONL data file (check data.path)") from None
    with file:  # read a line at a time: the file's bytes are never held whole beside its items
        offset, first = start
        if offset:
            file.seek(offset)
        for number, line in enumerate(file, start=first):
            at = offset
            offset += len(line)
            if len(problems) >= MAX_PROBLEMS or (stop is not None and at >= stop):
                return
            if line.endswith(b"\n"):
                line = line[:-1]
            try:
                text = _decoded(line, path, number)
                if not text.strip():
                    continue
                record = json_line(text, path, number, column=True)
                if not isinstance(record, dict):
                    raise UserError(f"{path}:{number}: expected a JSON object, got {type(record).__name__}")
                if SURROGATE_ESCAPE.search(line) is not None:  # the only way a line decodes to a lone surrogate
                    _check_encodable(record, path, number)
            except UserError as error:
                problems.append(str(error))
                continue
            yield number, at, record


def _decoded(line: bytes, path: Path, number: int) -> str:
    """One line of the file as text (a UTF-8 byte order mark allowed at the start of the first)."""
    try:
        return line.decode("utf-8-sig" if number == 1 else "utf-8")
    except UnicodeDecodeError as error:
        raise UserError(f"{path}:{number}: not UTF-8 text (byte {error.start + 1}): save the file as UTF-8") from None


# A \uD800-\uDFFF escape: UTF-8 bytes cannot encode a surrogate, so a file without one decodes to none.
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _check_encodable(record: dict[str, Any], path: Path, number: int) -> None:
    """Refuse a lone surrogate escape ("\\ud83d" without its pair): it is not text, and no request could carry it."""
    if lone_surrogate(record) is None:  # the whole line at once: fields only when it fails
        return
    for field, value in record.items():
        bad = lone_surrogate(value)
        if bad is not None:
            raise UserError(
                f"{path}:{number}: field {field!r}: contains {bad}, half of a UTF-16 surrogate pair, which is not "
                f"text: fix the line (an emoji escape needs both halves, e.g. \\ud83d\\ude00)"
            )


def _found_fields(record: dict[str, Any], field: str) -> str:
    """What the line holds instead of `field`, and the mapping that would read it, when a likely name is there."""
    found = f" (the line has {', '.join(repr(name) for name in record) or 'no fields'})"
    guesses = guessed_fields(list(record), [role for role in REQUIRED if role not in record])
    if field not in guesses:
        return found
    overrides = " ".join(f"data.fields.{role}={name}" for role, name in guesses.items())
    return f"{found}: to read your names, map them: {overrides}"


# The fields an item is read from (the rest go to `extra`), by the name its question is given.
_KNOWN_FIELDS = {
    name: frozenset({"id", name, "a", "b", "human", "human_votes", "human_voters", "model_a", "model_b"})
    for name in ("question", "prompt")
}


def _item(record: dict[str, Any], where: str, labels: FieldMap) -> Item:
    """One validated item from one record (`where`: its place in errors), its conversations read as text."""
    if is_conversation(record):
        try:
            record = as_item_fields(record)
        except ConversationError as error:
            raise _fail(where, error.field, error.problem) from None
    question_field = "question" if "question" in record or "prompt" not in record else "prompt"
    item_id = _id(record, where)
    question = _text(record, question_field, where, nonblank=True)
    a, b = _text(record, "a", where), _text(record, "b", where)
    raw_human = record.get("human")
    human = None if raw_human is None else human_label(raw_human)
    if raw_human is not None and human is None:
        problem = f"must be {SPELLED}, or null, got {json.dumps(raw_human)[:40]}{labels.label_hint(raw_human)}"
        raise _fail(where, "human", problem)
    votes: list[HumanLabel | None] = []
    if raw_votes := record.get("human_votes"):
        votes = [human_label(v) for v in raw_votes] if isinstance(raw_votes, list) else [None]
        if any(v is None for v in votes):
            unknown = (
                next((v for v in raw_votes if human_label(v) is None), None) if isinstance(raw_votes, list) else None
            )
            raise _fail(where, "human_votes", f"must be a list of {SPELLED}{labels.label_hint(unknown)}")
    voters = record.get("human_voters") or []
    if voters:
        if not isinstance(voters, list) or any(not isinstance(v, str) or not v.strip() for v in voters):
            problem = "must be a list of annotator names (non-empty strings), one per vote"
            raise _fail(where, "human_voters", problem)
        if len(voters) != len(votes):
            problem = f"has {len(voters)} names for {len(votes)} human_votes: give one name per vote"
            raise _fail(where, "human_voters", problem)
    model_a = None if record.get("model_a") is None else _text(record, "model_a", where)
    model_b = None if record.get("model_b") is None else _text(record, "model_b", where)
    votes_given = tuple(v for v in votes if v is not None)
    return _made_item(record, question_field, (item_id, question, a, b), human, model_a, model_b, votes_given, voters)


def _made_item(
    record: dict[str, Any],
    question_field: str,
    texts: tuple[str, str, str, str],
    human: HumanLabel | None,
    model_a: str | None,
    model_b: str | None,
    votes: tuple[HumanLabel, ...] = (),
    voters: list[str] | tuple[str, ...] = (),
) -> Item:
    """The Item of a line's fields once they are known to be right (id, question, a, b in `texts`)."""
    known = _KNOWN_FIELDS[question_field]
    item_id, question, a, b = texts
    return new_item(
        id=item_id,
        question=question,
        a=a,
        b=b,
        human=human,
        human_votes=votes,
        human_voters=tuple(voters),
        model_a=None if model_a is None else shared_name(model_a),
        model_b=None if model_b is None else shared_name(model_b),
        extra={k: v for k, v in record.items() if k not in known},
        style_a=None,
        style_b=None,
        tokens_a=None,
        tokens_b=None,
    )


def _checked_item(record: dict[str, Any], path: Path, number: int, reading: Reading = JSONL) -> Item:
    """The item `_item` builds of a line, its usual fields checked inline (a million lines read); any line whose
    required fields are not all text, or that has votes, a conversation or anything odd, goes through `_item`, which
    names its problem."""
    question_field = "question" if "question" in record or "prompt" not in record else "prompt"
    item_id, question, a, b = record.get("id"), record.get(question_field), record.get("a"), record.get("b")
    if not (type(item_id) is str and type(question) is str and type(a) is str and type(b) is str):
        return _item(record, reading.where(path, number), reading.fields)
    if not item_id or item_id.isspace() or not question or question.isspace() or "messages" in record:
        return _item(record, reading.where(path, number), reading.fields)
    raw_human, votes, voters = record.get("human"), record.get("human_votes"), record.get("human_voters")
    human = None if raw_human is None else human_label(raw_human)
    model_a, model_b = record.get("model_a"), record.get("model_b")
    if (
        (raw_human is not None and human is None)
        or votes
        or voters
        or not (model_a is None or type(model_a) is str)
        or not (model_b is None or type(model_b) is str)
    ):
        return _item(record, reading.where(path, number), reading.fields)  # votes, or anything odd: every check
    return _made_item(record, question_field, (item_id, question, a, b), human, model_a, model_b)


def _fail(where: str, field: str, problem: str) -> UserError:
    return UserError(f"{where}: field {field!r}: {problem}")


def _text(record: dict[str, Any], field: str, where: str, *, nonblank: bool = False) -> str:
    """A string field's value, or the one-line problem with it (missing: the fields the line has instead)."""
    value = record.get(field)
    if value is None:
        raise _fail(where, field, "missing" + _found_fields(record, field))
    if not isinstance(value, str):
        raise _fail(
            where, field, f"must be a string, got {type(value).__name__} {json.dumps(value, default=repr)[:40]}"
        )
    if nonblank and not value.strip():
        raise _fail(where, field, "is empty or only whitespace")
    return value


def _id(record: dict[str, Any], where: str) -> str:
    """An item's id as text: a string as it is, a whole or decimal number as its text (7 -> "7"); not blank."""
    value = record.get("id")
    if isinstance(value, int | float) and not isinstance(value, bool) and value == value and abs(value) != float("inf"):
        return id_text(value)
    return _text(record, "id", where, nonblank=True)


def normalize_item(item: Item, *, strip: bool, truncate_words: int | None, strip_markdown: bool = False) -> Item:
    """The item as judged, each answer normalised, with the formatting of the answers as written recorded."""
    # style_a/style_b count the features of the answer after strip and truncation but before strip_markdown:
    # a run that strips the markdown still knows which answer was the more formatted one, so its styled_wins
    # shows whether stripping removed the judge's preference for it.
    a = normalize_answer(item.a, strip=strip, truncate_words=truncate_words)
    b = normalize_answer(item.b, strip=strip, truncate_words=truncate_words)
    if not strip_markdown and a is item.a and b is item.b and item.style_a is None and item.style_b is None:
        return item  # nothing to change: the answers' formatting is read from them as judged (a million copies saved)
    style_a, style_b = style_of(a), style_of(b)
    if strip_markdown:
        a = normalize_answer(item.a, strip=strip, truncate_words=truncate_words, strip_markdown=True)
        b = normalize_answer(item.b, strip=strip, truncate_words=truncate_words, strip_markdown=True)
    return item.with_text(item.question, a, b, style_a, style_b)


def normalize_answer(text: str, *, strip: bool, truncate_words: int | None, strip_markdown: bool = False) -> str:
    """Strip whitespace and a whole-answer fence, render markdown as plain text, then cut to `truncate_words`."""
    if strip:
        text = text.strip()
        fenced = FENCED.match(text)
        if fenced:
            text = fenced.group(1).strip()
    if strip_markdown:
        text = plain_text(text)
    if truncate_words is not None:
        words = text.split()
        if len(words) > truncate_words:
            text = " ".join(words[:truncate_words])
    return text
