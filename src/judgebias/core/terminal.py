"""Text of a server's choosing shown on a terminal: control characters escaped, so none of them acts.

An error message may carry escape sequences (colours, cursor moves, a window title, a fake `judgebias: ...` line
after a carriage return); printed as they are, they rewrite what the user sees. Pure logic, no I/O.
"""

from __future__ import annotations

import re

_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def escape_controls(text: str) -> str:
    """`text` with every control character (C0 but tab and newline, DEL, C1, bidi overrides) as a visible escape."""
    return _CONTROLS.sub(lambda match: match.group(0).encode("unicode_escape").decode("ascii"), text)
