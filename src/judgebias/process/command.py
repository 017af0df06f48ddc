"""How a small command ends: its work done and exit 0, or the user's mistake said in one line and exit 2."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import NoReturn

from judgebias.core.errors import EXIT_USER_ERROR, UserError

EXIT_INTERRUPTED = 130


def run_command(work: Callable[[], None]) -> int:
    """Do `work`; its exit code: 0 when done, 2 after a UserError printed as one `judgebias: error: ...` line."""
    try:
        work()
    except UserError as error:
        print(f"judgebias: error: {error}", file=sys.stderr)
        return EXIT_USER_ERROR
    return 0


def exit_as_command(main: Callable[[], int], interrupted: str) -> NoReturn:
    """End the process with `main()`'s exit code; Ctrl-C during it is the one line `judgebias: <interrupted>`, 130."""
    try:
        code = main()
    except KeyboardInterrupt:
        print(f"\njudgebias: {interrupted}", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(code)
