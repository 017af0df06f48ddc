"""JSONL text read line by line: a line that is not JSON is named by file and line, never a traceback."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from judgebias.core.errors import UserError


def text_lines(text: str) -> list[str]:
    """The lines of a JSONL text, split at "\n" only: str.splitlines also splits at U+2028, U+0085 and other
    characters that JSON strings hold unescaped (a reply that contains one would be cut in two)."""
    return text.split("\n")


def json_lines(lines: Iterable[str], source: object, *, column: bool = False) -> Iterator[tuple[int, Any]]:
    """(line number, value) for each non-blank line; "SOURCE:LINE: not valid JSON (why)" for one that is not.

    `column` adds where on the line the JSON broke, for files people edit by hand.
    """
    for number, line in enumerate(lines, start=1):
        if line.strip():
            yield number, json_line(line, source, number, column=column)


def json_line(line: str, source: object, number: int, *, column: bool = False) -> Any:
    """One line's JSON value, or a UserError "SOURCE:LINE: not valid JSON (why)"."""
    try:
        return json.loads(line)
    except json.JSONDecodeError as error:
        raise UserError(f"{source}:{number}: not valid JSON ({decode_problem(error, column=column)})") from None
    except ValueError as error:  # an integer of more digits than Python converts (4,300)
        raise UserError(f"{source}:{number}: a number too long to read ({str(error).split(':')[0]})") from None
    except RecursionError:
        raise UserError(f"{source}:{number}: values nested too deeply to read (arrays or objects)") from None


def decode_problem(error: json.JSONDecodeError, *, column: bool = True) -> str:
    """What broke and where on the line: "Expecting ',' delimiter at column 34"; json's own "Unterminated string
    starting at" already ends in its preposition."""
    if not column:
        return error.msg
    return f"{error.msg}{'' if error.msg.endswith(' at') else ' at'} column {error.colno}"


def lone_surrogate(value: Any) -> str | None:
    """The first lone UTF-16 surrogate in a decoded JSON value, as its escape ("\\ud83d"), or None: half a pair is
    not text, and no file or request could store it (JSON text decodes to one only from a "\\uD8xx" escape)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as error:
        return str(error.object[error.start : error.end].encode("unicode_escape").decode("ascii"))
    return None
