"""A run folder of its own for every run, whatever the timing: created atomically, never reused.

`hydra.run.dir` and `hydra.sweep.dir` go through the `unique_dir` resolver: it creates the timestamped folder
with an exclusive mkdir and, when another run (started the same second, or at the same moment from another shell)
already has it, takes the next free `-2`, `-3`, ... The result is remembered per process and per base, so Hydra
resolving the key again gets the same folder.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from judgebias.core.commands import commands_table

_made: dict[str, str] = {}
_lock = threading.Lock()


def unique_dir(base: str) -> str:
    """A new folder at `base` (or `base-N`, the first free N), made now; the same answer for the same base."""
    with _lock:
        made = _made.get(base)
        if made is not None:
            return made
        Path(base).parent.mkdir(parents=True, exist_ok=True)
        candidate, number = base, 1
        while True:
            try:
                os.mkdir(candidate)
                break
            except FileExistsError:
                number += 1
                candidate = f"{base}-{number}"
        _made[base] = candidate
        return candidate


def register_resolver() -> None:
    """Make `${unique_dir:...}` and `${judgebias_commands:}` (the run's help lists the other commands from their one
    table) available to the configs (idempotent)."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("unique_dir"):
        OmegaConf.register_new_resolver("unique_dir", unique_dir, use_cache=True)
    if not OmegaConf.has_resolver("judgebias_commands"):
        OmegaConf.register_new_resolver("judgebias_commands", lambda: commands_table(module_form=True, leave_out="run"))


REUSE_FLAG = "--reuse-dir"
"""The opt-in for a deliberate rerun into a folder that is not empty (taken off the command line before Hydra)."""

_SYSTEM_TREES = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/proc", "/sbin", "/sys", "/usr")
"""Folders no run writes into, nor anywhere below them."""

_SYSTEM_FOLDERS = ("/", "/home", "/media", "/mnt", "/opt", "/root", "/run", "/srv", "/tmp", "/var")
"""Folders no run writes into itself (a folder below them is fine)."""


ROOT_FOLDERS = ("hydra.run.dir", "hydra.sweep.dir")  # a run's own folder: anywhere of the user's choosing
_PATH_KEYS = ("dir", "subdir", "output_subdir", "filename", "file", "path")  # hydra.* keys whose value is a path


def escaping_path(argv: list[str]) -> str | None:
    """Why a `hydra.*` path given on the command line would put Hydra's writes outside the run or sweep folder
    (an absolute path, or one with `..`), or None. Hydra writes its config dumps (`hydra.output_subdir`) and the
    job folders (`hydra.sweep.subdir`) relative to the run's folder; a path that leaves it replaces a user's files."""
    for arg in argv:
        key, sep, value = arg.lstrip("+~").partition("=")
        if not sep or not key.startswith("hydra.") or key in ROOT_FOLDERS or "${" in value:
            continue
        if key.rsplit(".", 1)[-1] not in _PATH_KEYS:
            continue
        path = Path(unquoted(value)).expanduser()
        if value.strip().lower() in ("null", "~", ""):
            continue
        if path.is_absolute() or ".." in path.parts:
            return (
                f"{key}={value!r} would write outside the run's folder: give a name inside it (e.g. "
                f"{key}={'.hydra' if key.endswith('output_subdir') else 'job'}), or choose the folder itself with "
                f"{'hydra.sweep.dir' if 'sweep' in key else 'hydra.run.dir'}"
            )
    return None


def refused_folder(argv: list[str], *, reuse: bool) -> str | None:
    """Why the run folder named on the command line must not be used, or None.

    Checked before Hydra starts, since Hydra writes its .hydra/ dumps (and a sweep its multirun.yaml and job
    folders) into the folder first thing. Only an explicit folder is checked: the default one is new every time.
    A value holding an interpolation (`${...}`) is only known to Hydra and is not checked.
    """
    escaping = escaping_path(argv)
    if escaping:
        return escaping
    multirun = any(arg in ("-m", "--multirun") or arg == "hydra.mode=MULTIRUN" for arg in argv)
    option = "hydra.sweep.dir" if multirun else "hydra.run.dir"
    values = [arg.partition("=")[2] for arg in argv if arg.lstrip("+").partition("=")[0] == option]
    if not values or "${" in values[-1]:
        return None
    folder = Path(unquoted(values[-1])).expanduser()
    real = Path(os.path.realpath(folder))
    named = f"{option}={str(folder)!r}"
    if (
        str(real) in _SYSTEM_FOLDERS
        or str(Path.home()) == str(real)
        or any(real == Path(tree) or real.is_relative_to(tree) for tree in _SYSTEM_TREES)
    ):
        return f"{named} is a system folder: choose a folder of your own, or leave {option} unset"
    if real.exists() and not real.is_dir():
        return f"{named} is a file, not a folder: choose another {option}, or leave it unset"
    if reuse or not real.is_dir():
        return None
    first = next(iter(sorted(real.iterdir())), None)
    if first is None:
        return None
    return (
        f"{named} is not empty (it holds {first.name!r}): choose another {option}, leave it unset (every run "
        f"then gets a new folder), or add {REUSE_FLAG} to write into it anyway"
    )


def unquoted(value: str) -> str:
    """A Hydra override value without the quotes that may surround it."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value
