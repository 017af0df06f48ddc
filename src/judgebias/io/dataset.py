"""Reading a dataset: every line checked before the first judge call, every error naming file, line and field.

Deliberate choices (documented in README): blank lines are skipped; an answer may be empty (an empty answer is
a real, bad answer) but must be a string; a question must contain a non-space character; ids are strings,
unique; `prompt` is accepted for `question`; human labels may say a/b or 1/2 (core/labels.py); any other field is kept and passed through.
"""

from __future__ import annotations

import array
import dataclasses
import json
import os
import re
from collections.abc import Generator, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from judgebias.core.errors import UserError
from judgebias.core.item import Item, new_item, shared_name
from judgebias.core.labels import SPELLED, HumanLabel, human_label
from judgebias.core.style import strip_markdown as plain_text
from judgebias.core.style import style_of
from judgebias.io.jsonl import json_line, lone_surrogate

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
                f"those); for a file of your own, choose data=jsonl: data=jsonl data.path={path}"
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


def load_items(path: Path) -> list[Item]:
    """All items of a JSONL file, or one UserError naming the file, line and field of each problem (up to
    MAX_PROBLEMS of them, so a file with several mistakes is fixed in one pass, not one run per mistake)."""
    return list(read_items(path))


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

    def extend(self, later: Findings) -> None:
        """Add what the next part of the file found (parts in the file's order)."""
        self.problems += later.problems
        self.hashes += later.hashes
        self.lines += later.lines
        self.found = self.found or later.found

    def conclude(self, path: Path) -> None:
        """The file's one UserError (up to MAX_PROBLEMS problems in line order, duplicate ids among them), if any."""
        problems = _in_line_order(path, self.problems, _duplicates(path, self.hashes, self.lines))[:MAX_PROBLEMS]
        if problems:
            raise UserError(_problems_text(path, problems))
        if not self.found:
            raise UserError(f"{path}: the dataset is empty: it needs at least one JSON object per line")


def read_items(
    path: Path,
    *,
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
    for number, offset, record in _records(path, found.problems, start, stop):
        try:
            item = _checked_item(record, path, number)
        except UserError as error:
            found.problems.append(str(error))
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
        found.conclude(path)


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


def _duplicates(path: Path, hashes: array.array[int], lines: array.array[int]) -> list[str]:
    """One problem per item whose id an earlier valid item has, naming that item's line."""
    digest = np.frombuffer(hashes, dtype=np.int64)
    order = np.argsort(digest, kind="stable")
    repeated = np.flatnonzero(digest[order][1:] == digest[order][:-1])
    if not repeated.size:
        return []
    suspects = {int(lines[i]) for i in np.concatenate([order[repeated], order[repeated + 1]]).tolist()}
    first: dict[str, int] = {}
    problems = []
    for number, item_id in _ids_on_lines(path, suspects):
        if item_id in first:
            problems.append(f"{path}:{number}: field 'id': duplicate id {item_id!r} (first on line {first[item_id]})")
        else:
            first[item_id] = number
    return problems


def _ids_on_lines(path: Path, numbers: set[int]) -> Iterator[tuple[int, str]]:
    """(line, id) of these lines, in order: lines read once already, each a valid item."""
    with path.open("rb") as file:
        for number, line in enumerate(file, start=1):
            if number in numbers:
                yield number, str(json.loads(_decoded(line.rstrip(b"\n"), path, number))["id"])


def _in_line_order(path: Path, problems: list[str], more: list[str]) -> list[str]:
    """Both lists of problems ("PATH:LINE: ...") merged in the order of their lines."""
    if not more:
        return problems
    start = len(str(path)) + 1
    return sorted(problems + more, key=lambda problem: int(problem[start:].split(":", 1)[0]))


def _problems_text(path: Path, problems: list[str]) -> str:
    """One problem as its own line; several as a count and one line each."""
    if len(problems) == 1:
        return problems[0]
    more = f" (the check stopped at {MAX_PROBLEMS}; there may be more)" if len(problems) >= MAX_PROBLEMS else ""
    return f"{path}: {len(problems)} problems{more}; fix them and run again:\n" + "\n".join(
        f"  {problem}" for problem in problems
    )


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


# Names other datasets give the fields judgebias reads, to suggest a renaming when a required field is missing.
ALIASES = {
    "id": ("question_id", "uid", "idx", "_id"),
    "question": ("prompt", "instruction", "input", "query", "turns"),
    "a": ("response_a", "answer_a", "output_a", "output_1", "completion_a", "ans1", "answer1", "response_1"),
    "b": ("response_b", "answer_b", "output_b", "output_2", "completion_b", "ans2", "answer2", "response_2"),
}


def _found_fields(record: dict[str, Any], field: str) -> str:
    """What the line holds instead of `field`, and the renaming that would fix it (jq), when a known name is there."""
    found = f" (the line has {', '.join(repr(name) for name in record) or 'no fields'})"
    renames: dict[str, str] = {}
    for wanted, aliases in ALIASES.items():
        alias = next((name for name in aliases if name in record), None)
        if wanted not in record and alias is not None:
            renames[wanted] = alias
    if field not in renames:
        return found
    assign = " | ".join(f".{wanted} = .{alias}" for wanted, alias in renames.items())
    dropped = ", ".join(f".{alias}" for alias in renames.values())
    mapping = ", ".join(f"{alias!r} as {wanted!r}" for wanted, alias in renames.items())
    return f"{found}: to read {mapping}, rename them, e.g. jq -c '{assign} | del({dropped})' in.jsonl > out.jsonl"


# The fields an item is read from (the rest go to `extra`), by the name its question is given.
_KNOWN_FIELDS = {
    name: frozenset({"id", name, "a", "b", "human", "human_votes", "human_voters", "model_a", "model_b"})
    for name in ("question", "prompt")
}


def _item(record: dict[str, Any], path: Path, number: int) -> Item:
    """One validated item from one JSON object (read twice per run, each line: no closure or set built per call)."""
    question_field = "question" if "question" in record or "prompt" not in record else "prompt"
    item_id = _text(record, "id", path, number, nonblank=True)
    question = _text(record, question_field, path, number, nonblank=True)
    a, b = _text(record, "a", path, number), _text(record, "b", path, number)
    raw_human = record.get("human")
    human = None if raw_human is None else human_label(raw_human)
    if raw_human is not None and human is None:
        raise _fail(path, number, "human", f"must be {SPELLED}, or null, got {json.dumps(raw_human)[:40]}")
    votes: list[HumanLabel | None] = []
    if raw_votes := record.get("human_votes"):
        votes = [human_label(v) for v in raw_votes] if isinstance(raw_votes, list) else [None]
        if any(v is None for v in votes):
            raise _fail(path, number, "human_votes", f"must be a list of {SPELLED}")
    voters = record.get("human_voters") or []
    if voters:
        if not isinstance(voters, list) or any(not isinstance(v, str) or not v.strip() for v in voters):
            problem = "must be a list of annotator names (non-empty strings), one per vote"
            raise _fail(path, number, "human_voters", problem)
        if len(voters) != len(votes):
            problem = f"has {len(voters)} names for {len(votes)} human_votes: give one name per vote"
            raise _fail(path, number, "human_voters", problem)
    model_a = None if record.get("model_a") is None else _text(record, "model_a", path, number)
    model_b = None if record.get("model_b") is None else _text(record, "model_b", path, number)
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


def _checked_item(record: dict[str, Any], path: Path, number: int) -> Item:
    """The item `_item` builds of a line, its usual fields checked inline (a million lines read); any line whose
    required fields are not all text, or that has votes or anything odd, goes through `_item`, which names its
    problem."""
    question_field = "question" if "question" in record or "prompt" not in record else "prompt"
    item_id, question, a, b = record.get("id"), record.get(question_field), record.get("a"), record.get("b")
    if not (type(item_id) is str and type(question) is str and type(a) is str and type(b) is str):
        return _item(record, path, number)
    if not item_id or item_id.isspace() or not question or question.isspace():
        return _item(record, path, number)
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
        return _item(record, path, number)  # votes and their names, or anything odd: every check, as the first time
    return _made_item(record, question_field, (item_id, question, a, b), human, model_a, model_b)


def _fail(path: Path, number: int, field: str, problem: str) -> UserError:
    return UserError(f"{path}:{number}: field {field!r}: {problem}")


def _text(record: dict[str, Any], field: str, path: Path, number: int, *, nonblank: bool = False) -> str:
    """A string field's value, or the one-line problem with it (missing: the fields the line has instead)."""
    value = record.get(field)
    if value is None:
        raise _fail(path, number, field, "missing" + _found_fields(record, field))
    if not isinstance(value, str):
        raise _fail(path, number, field, f"must be a string, got {type(value).__name__} {json.dumps(value)[:40]}")
    if nonblank and not value.strip():
        raise _fail(path, number, field, "is empty or only whitespace")
    return value


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
