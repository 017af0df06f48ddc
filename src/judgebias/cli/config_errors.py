"""Hydra's composition errors as one `judgebias: error:` line, with a did-you-mean for misspelt keys and options.

Hydra prints several lines for a misspelt override and recommends `+key=...`, which only leads to a second error.
The CLI holds stderr while Hydra composes the config (`HeldStderr`) and, when composition fails, prints one line
made here instead. Nothing here imports Hydra at module level: the messages are read from the exception text.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TextIO, get_type_hints

from judgebias.config.schema import Config

OVERRIDE_FAILED = re.compile(r"Could not override '([^']+)'")
MISSING_OPTION = re.compile(r"Could not find '([^']+)/([^'/]+)'")
MERGE_FAILED = re.compile(r"Error merging override (\S+)")
AMBIGUOUS = re.compile(r"Ambiguous value for argument '([^']+)'")
APPEND_FAILED = re.compile(r"Could not append to config\. An item is already at '([^']+)'")
NOT_A_CHOICE = re.compile(r"Invalid value '(.*)', expected one of \[(.*)\]")


def setting_names(schema: type = Config, prefix: str = "") -> Iterator[str]:
    """Every dotted key of the schema (judge.temperature, data.normalize.strip, ...), for suggestions."""
    hints = get_type_hints(schema)
    for field in dataclasses.fields(schema):
        kind = hints[field.name]
        if isinstance(kind, type) and dataclasses.is_dataclass(kind):
            yield from setting_names(kind, f"{prefix}{field.name}.")
        else:
            yield prefix + field.name


def suggest(word: str, choices: Iterable[str]) -> str | None:
    """The closest choice to a misspelt word, if one is close enough to be a likely meaning."""
    matches = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return matches[0] if matches else None


def unknown_key_message(key: str, *, added: bool = False) -> str:
    """One line for a key that no schema field reads, with the nearest real key."""
    guess = suggest(key, setting_names())
    written = f"{key} (added with +{key}=...)" if added else key
    hint = f"did you mean {guess}?" if guess else "`python -m judgebias.run --cfg job` lists every key"
    return f"{written} is not a judgebias setting: {hint}"


def composition_message(error: BaseException) -> str:
    """One line for an exception Hydra raised while composing the config from the command line."""
    text = str(error)
    missing = MISSING_OPTION.search(text)
    if missing:
        group, option = missing.groups()
        options = list(getattr(error, "options", None) or [])
        guess = suggest(option, options)
        listed = ", ".join(options)
        hint = f"did you mean {group}={guess}? " if guess else ""
        return f"{group}={option}: no such option in group {group!r}: {hint}(options: {listed})"
    failed = OVERRIDE_FAILED.search(text)
    if failed:
        key = failed.group(1)
        cause = str(error.__cause__ or "").strip()
        reason = cause.splitlines()[0].strip() if cause else ""
        if reason.startswith("Key '") and "reference_type=Dict" in cause:  # a map such as judge.extra_headers
            return f"{key} takes its entries one at a time: +{key}.NAME=VALUE (or write them in a judge YAML)"
        if reason.startswith("Key '") and " not in " in reason and not key.startswith("hydra."):
            return unknown_key_message(key)
        return f"{key}: {reason or text.splitlines()[0]}"
    merged = MERGE_FAILED.search(text)
    if merged and error.__cause__ is not None:
        choice = NOT_A_CHOICE.search(str(error.__cause__))
        if choice:  # a closed set (an enum in the schema): the allowed values are the fix
            key = merged.group(1).partition("=")[0]
            return f"{key}={choice.group(1)!r} is not allowed: use one of {choice.group(2)}"
        return f"{merged.group(1)}: {str(error.__cause__).splitlines()[0].strip()}"
    ambiguous = AMBIGUOUS.search(text)
    if ambiguous:
        return f"{ambiguous.group(1)}: several values need -m (a sweep), or quotes/brackets for a string or list"
    appended = APPEND_FAILED.search(text)
    if appended:
        key = appended.group(1)
        return f"+{key}=...: {key} is already a setting: set it without the plus ({key}=...)"
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(error).__name__)
    origin = error.__cause__
    if origin is not None and str(origin).strip():
        first += f" ({str(origin).splitlines()[0].strip()})"
    return first


class HeldStderr:
    """Stands in for stderr while Hydra composes: output is held, then passed on, or dropped for our own line.

    Once a job starts (`release`), everything held is written out and later writes go straight through, so job
    output, warnings and tracebacks are never lost; only a failed composition's multi-line message is replaced.
    """

    def __init__(self, real: TextIO) -> None:
        self.real = real
        self.held: list[str] = []
        self.released = False

    def write(self, text: str) -> int:
        if self.released:
            return self.real.write(text)
        self.held.append(text)
        return len(text)

    def flush(self) -> None:
        if self.released:
            self.real.flush()

    def release(self) -> None:
        """Write out what was held; pass everything through from now on."""
        if not self.released:
            self.released = True
            self.real.write("".join(self.held))
            self.held.clear()
            self.real.flush()

    def drop(self) -> str:
        """Forget what was held (it is being replaced by one line); return it."""
        held = "".join(self.held)
        self.held.clear()
        return held

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def held_stderr() -> HeldStderr | None:
    """The HeldStderr in place, if any."""
    return sys.stderr if isinstance(sys.stderr, HeldStderr) else None
