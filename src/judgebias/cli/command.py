"""How a small command ends: its work done and exit 0, or the user's mistake said in one line and exit 2."""

from __future__ import annotations

import sys
from collections.abc import Callable

from judgebias.core.errors import EXIT_USER_ERROR, UserError


def run_command(work: Callable[[], None]) -> int:
    """Do `work`; its exit code: 0 when done, 2 after a UserError printed as one `judgebias: error: ...` line."""
    try:
        work()
    except UserError as error:
        print(f"judgebias: error: {error}", file=sys.stderr)
        return EXIT_USER_ERROR
    return 0
