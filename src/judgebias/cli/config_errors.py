"""Hydra's composition errors as one `judgebias: error:` line, with a did-you-mean for misspelt keys and options.

Hydra prints several lines for a misspelt override and recommends `+key=...`, which only leads to a second error.
The CLI holds stderr while Hydra composes the config (`HeldStderr`) and, when composition fails, prints one line
made here instead. Nothing here imports Hydra at module level: the messages are read from the exception text.
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO, get_type_hints

from judgebias.config.schema import Config

OVERRIDE_FAILED = re.compile(r"Could not override '([^']+)'")
MISSING_OPTION = re.compile(r"Could not find '([^']+)/([^'/]+)'")
MERGE_FAILED = re.compile(r"Error merging override (\S+)")
AMBIGUOUS = re.compile(r"Ambiguous value for argument '([^']+)'")
APPEND_FAILED = re.compile(r"Could not append to config\. An item is already at '([^']+)'")
NOT_A_CHOICE = re.compile(r"Invalid value '(.*)', expected one of \[(.*)\]")
UNREADABLE_OVERRIDE = re.compile(r"^(?:LexerNoViableAltException|mismatched input [^:]*): (\S+=.*)$", re.MULTILINE)
IN_CONFIG = re.compile(r"^In '([^']+)': \w+ raised while composing config")
NO_CONFIG_DIR = re.compile(r"Additional config directory '([^']+)' not found")


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


def config_dirs(argv: list[str]) -> list[Path]:
    """The folders given with --config-dir / -cd, where the user's own YAML options are."""
    found = []
    for flag, value in itertools.pairwise(["", *argv]):
        if flag in ("--config-dir", "-cd"):
            found.append(Path(value))
        elif value.startswith("--config-dir="):
            found.append(Path(value.partition("=")[2]))
    return found


def _config_file(name: str, dirs: Iterable[Path]) -> str:
    """The user's YAML file of config `name` (e.g. judge/j1), or the config's name when it is not one of theirs."""
    for folder in dirs:
        path = folder / f"{name}.yaml"
        if path.is_file():
            return str(path)
    return f"config {name!r}"


def _own_file_message(error: BaseException, dirs: Iterable[Path]) -> str | None:
    """One line for a mistake inside a YAML file (a syntax error, a misspelt key, a wrong type), naming file and key."""
    mark = getattr(error, "problem_mark", None)
    if mark is not None:  # yaml's MarkedYAMLError
        problem = " ".join(str(part) for part in (getattr(error, "problem", ""), getattr(error, "context", "")) if part)
        return f"{mark.name}:{mark.line + 1}: not valid YAML ({problem or type(error).__name__})"
    text = str(error)
    missing_dir = NO_CONFIG_DIR.search(text)
    if missing_dir:
        return f"--config-dir {missing_dir.group(1)!r}: no such folder (the folder holding your judge/, rubric/, data/)"
    inside = IN_CONFIG.match(text)
    if inside is None:
        return None
    where = _config_file(inside.group(1), dirs)
    # Hydra folds OmegaConf's error into its own text: the reason on the next line, then `full_key: ...`.
    lines = [line.strip() for line in text.splitlines()[1:] if line.strip()]
    key = next((line.partition(": ")[2] for line in lines if line.startswith("full_key: ")), None)
    reason = lines[0] if lines else text.splitlines()[0]
    if key and reason.startswith("Key '") and " not in " in reason:
        return f"{where}: {unknown_key_message(key)}"
    return f"{where}: {key + ': ' if key else ''}{reason}"


# A launcher whose Hydra plugin is not installed: Hydra cannot load its config ("Could not load
# 'hydra/launcher/submitit_slurm'"), which our slurm option inherits.
MISSING_LAUNCHER = re.compile(r"(?:In 'hydra/launcher/(\w+)': )?Could not (?:load|find) 'hydra/launcher/(\w+)'")
LAUNCHER_EXTRAS = {
    "submitit": ("cluster", "hydra-submitit-launcher"),
    "slurm": ("cluster", "hydra-submitit-launcher"),
    "ray": ("ray", "hydra-ray-launcher"),
    "joblib": ("parallel", "hydra-joblib-launcher"),
}


def composition_message(error: BaseException, dirs: Iterable[Path] = ()) -> str:
    """One line for an exception Hydra raised while composing the config from the command line or the user's files."""
    own = _own_file_message(error, dirs)
    if own is not None:
        return own
    text = str(error)
    launcher = MISSING_LAUNCHER.search(text)
    if launcher and launcher.group(2).split("_")[0] in LAUNCHER_EXTRAS:
        typed, plugin = launcher.group(1) or launcher.group(2), launcher.group(2)
        extra, package = LAUNCHER_EXTRAS[plugin.split("_")[0]]
        return f"hydra/launcher={typed}: that launcher is not installed: pip install 'judgebias[{extra}]' ({package})"
    unread = UNREADABLE_OVERRIDE.match(text)
    if unread:
        override = unread.group(1)
        key, _, value = override.partition("=")
        return (
            f"{override}: the value cannot be read as written (characters such as ~ or spaces): quote it for Hydra "
            f"inside the shell's quotes, e.g. '{key}=\"{value}\"'"
        )
    missing = MISSING_OPTION.search(text)
    if missing:
        group, option = missing.groups()
        options = list(getattr(error, "options", None) or [])
        guess = suggest(option, options)
        listed = ", ".join(options)
        hint = f"did you mean {group}={guess}? " if guess else ""
        files = (".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".tab", ".parquet", ".pq", ".arrow", ".feather")
        if group == "data" and (option.lower().endswith(files) or "/" in option):
            # A file where an option goes: the option that reads a file of one's own, and where its path goes.
            reader = "jsonl" if option.lower().endswith(".jsonl") else "file"
            hint = f"for a file of your own, give data={reader} data.path={option} "
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
