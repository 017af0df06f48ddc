"""Every judgebias command, in one table: its name, the module `python -m` runs, and what it is for.

The `judgebias` console script (commands.py) dispatches by it, `judgebias --help` and the run's help list it, and
README's table of commands is checked against it.
"""

from __future__ import annotations

from typing import NamedTuple


class Command(NamedTuple):
    """One command: the module `python -m` runs, and what it is for (the line `judgebias --help` prints)."""

    module: str
    summary: str


COMMANDS: dict[str, Command] = {
    "run": Command("judgebias.run", "judge a dataset in both orders: verdicts.jsonl, summary.json, report.html"),
    "check": Command("judgebias.check", "gate CI on a run's or a sweep's figures, or against a baseline run"),
    "compare": Command("judgebias.compare", "two runs on the same items, item by item: paired differences"),
    "aggregate": Command("judgebias.aggregate", "the sweep table and report of one or several sweep folders"),
    "runs": Command("judgebias.runs", "list run folders, and remove those a stopped run left with no result"),
    "audit": Command("judgebias.audit", "audit a FastChat, Arena-Hard-Auto or AlpacaEval judge run you already have"),
    "review": Command("judgebias.review", "people's labels: sample items to label, merge the labels, plan how many"),
    "cache": Command("judgebias.cache", "export, import, count and verify cached judge replies"),
    "devserver": Command("judgebias.devserver", "a local OpenAI-compatible judge server, for trying live runs offline"),
}


def typed(name: str) -> str:
    """A command as the console script takes it (and as its usage line then names it): `judgebias NAME`."""
    return f"judgebias {name}"


def as_module(name: str) -> str:
    """A command as Python runs it: `python -m judgebias.NAME`."""
    return f"python -m {COMMANDS[name].module}"


def commands_table(*, module_form: bool = False, leave_out: str | None = None, indent: str = "  ") -> str:
    """The commands one line each, as `judgebias NAME` (or as `python -m judgebias.NAME`, for the run's help, which
    leaves itself out)."""
    named = {(as_module if module_form else typed)(name): c for name, c in COMMANDS.items() if name != leave_out}
    width = max(map(len, named))
    return "\n".join(f"{indent}{name:<{width}}  {command.summary}" for name, command in named.items())
