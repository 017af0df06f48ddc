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
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            where = f" at column {error.colno}" if column else ""
            raise UserError(f"{source}:{number}: not valid JSON ({error.msg}{where})") from None
        except ValueError as error:  # an integer of more digits than Python converts (4,300)
            raise UserError(f"{source}:{number}: a number too long to read ({str(error).split(':')[0]})") from None
        except RecursionError:
            raise UserError(f"{source}:{number}: values nested too deeply to read (arrays or objects)") from None
        yield number, value
