"""The `judgebias` console script: the commands of core/commands.py's table, each run by its name.

`judgebias <command> ...` runs the same code as `python -m judgebias.<command> ...`; both forms keep working. A first
argument that names no command belongs to the run, so `judgebias judge=gpt4o data=q1` is `judgebias run judge=gpt4o
data=q1`. The commands are imported only when asked for: `judgebias check` starts without Hydra.
"""

from __future__ import annotations

import os
import re
import sys

from judgebias.core.commands import COMMANDS, commands_table, typed
from judgebias.core.errors import EXIT_USER_ERROR
from judgebias.process import startup
from judgebias.process.command import say

HELP = ("-h", "--help", "help")


def main() -> None:
    """The `judgebias` console script: the command named first, else the run."""
    startup.quiet_interrupts()  # Ctrl-C while the command imports: one line (each command undoes it when it starts)
    args = sys.argv[1:]
    if args[:1] == ["help"] and len(args) == 2 and args[1] in COMMANDS:
        args = [args[1], "--help"]  # `judgebias help check` is `judgebias check --help`
    elif args[:1] and args[0] in HELP and len(args) == 1:
        _print_help()
        return
    if args[:1] and args[0] not in COMMANDS and _a_word(args[0]):
        import difflib

        close = difflib.get_close_matches(args[0], COMMANDS, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        say(
            f"judgebias: error: no command {args[0]!r}: {hint}the commands are {', '.join(COMMANDS)} (judgebias --help)",
            error=True,
        )
        sys.exit(EXIT_USER_ERROR)
    name = args[0] if args[:1] and args[0] in COMMANDS else "run"
    rest = args[1:] if args[:1] == [name] else args
    if name == "run":
        from judgebias.run import main as run_main

        sys.argv[1:] = rest
        run_main()
        return
    import runpy

    sys.argv = [typed(name), *rest]
    runpy.run_module(COMMANDS[name].module, run_name="__main__", alter_sys=False)


def _print_help() -> None:
    """The commands, for `judgebias --help`; a reader that goes away early (`| head`) ends it quietly."""
    try:
        print("judgebias: pairwise LLM-as-a-judge runs that survive scrutiny (each item judged in both orders)\n")
        print(f"Usage: judgebias COMMAND [ARGS ...]    (or python -m judgebias.COMMAND)\n\n{commands_table()}\n")
        print("With no command, the arguments are the run's: judgebias judge=gpt4o data=q1 (judgebias run --help)")
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _a_word(arg: str) -> bool:
    """A first argument that can only be meant as a command: not an override (key=value, +key, ~key) or a flag."""
    return bool(re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", arg))
