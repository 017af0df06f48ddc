"""How a small command speaks and ends: every line it prints with control characters escaped, its numbers checked
against the one table of bounds, its work done and exit 0, or the user's mistake said in one line and exit 2."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import NoReturn

from judgebias.core.bounds import Bound
from judgebias.core.commands import as_module, typed
from judgebias.core.errors import EXIT_USER_ERROR, UserError
from judgebias.core.terminal import escape_controls

EXIT_INTERRUPTED = 130


def prog(name: str) -> str:
    """The name a command's usage line gives it: the form it was started with (`judgebias NAME`, the console
    script's subcommand, or `python -m judgebias.NAME`)."""
    return typed(name) if sys.argv[:1] == [typed(name)] else as_module(name)


def say(text: str, *, error: bool = False, end: str = "\n") -> None:
    """Print a command's line (stderr with `error`), its control characters shown, never acted on: judge, rubric,
    data and folder names come from files anyone may have written (an audited summary, a shared sweep), and an
    escape sequence in one would rewrite what the user sees (a window title, a cleared screen, reversed text)."""
    print(escape_controls(text), end=end, file=sys.stderr if error else sys.stdout)


def run_command(work: Callable[[], None]) -> int:
    """Do `work`; its exit code: 0 when done, 2 after a UserError printed as one `judgebias: error: ...` line."""
    try:
        work()
    except UserError as error:
        say(f"judgebias: error: {error}", error=True)
        return EXIT_USER_ERROR
    return 0


class CommandParser(argparse.ArgumentParser):
    """argparse for a command, whose mistakes are one line (`prog: error: ...`, the fix named), exit 2: a usage
    block above the error pushes the reason off a CI log's last line, and echoes names of the user's choosing."""

    def error(self, message: str) -> NoReturn:
        """Say the mistake in one line and exit 2."""
        say(f"{self.prog}: error: {message} (--help lists the options)", error=True)
        sys.exit(EXIT_USER_ERROR)


def bounded(bound: Bound) -> Callable[[str], int]:
    """An argparse type for a whole number within `bound` (refused in its own words: argparse exits 2)."""

    def number(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {bound.what} (a whole number)") from None
        problem = bound.problem(value)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return value

    number.__name__ = bound.what  # argparse names the type in its own messages
    return number


def exit_as_command(main: Callable[[], int], interrupted: str) -> NoReturn:
    """End the process with `main()`'s exit code; Ctrl-C during it is the one line `judgebias: <interrupted>`, 130."""
    try:
        code = main()
    except KeyboardInterrupt:
        print(f"\njudgebias: {interrupted}", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(code)
