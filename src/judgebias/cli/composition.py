"""Hydra composes the whole config once just to read `hydra.mode`, then again for the job: skip the first when it
can only answer "unset".

`hydra.main` first composes the config to see whether it sets `hydra.mode` (a config may ask for a multirun
without `-m`), then composes it again for the job. With judgebias's typed schema and five groups each composition
is a third of a small run's start-up. When the configs are only the packaged ones (no `--config-dir` or other
search path) and no override names `hydra.mode` or `hydra.searchpath`, nothing can set the mode: the probe would
return None, and Hydra then runs as it always does without one (RUN, or MULTIRUN with `-m`). Only then is the
probe skipped; in every other case Hydra composes twice as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from judgebias.core.fields import OPEN_MAPS

PACKAGED = {("hydra", "pkg://hydra.conf"), ("main", "pkg://judgebias.conf"), ("schema", "structured://")}
MODE_KEYS = ("hydra.mode", "hydra.searchpath")


def opened_maps(overrides: list[str]) -> list[str]:
    """`data.fields.a=x` and `data.labels.v1=a` as Hydra takes a key a map does not hold yet (`++`): the user's own
    names are the keys, so none can be listed in advance, and no plus should be needed to give one."""
    return [f"++{arg}" if arg.startswith(OPEN_MAPS) and "=" in arg else arg for arg in overrides]


CONFIG_FLAGS = ("--config-dir", "-cd", "--config-path", "-cp", "--config-name", "-cn")


def config_flags_first(argv: list[str]) -> list[str]:
    """The command line with --config-dir (and Hydra's other config flags) before the overrides: Hydra's parser
    takes the overrides as one list, so an override after the flag would be refused ("unrecognized arguments")."""
    flags: list[str] = []
    rest: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg in CONFIG_FLAGS:
            flags += [arg, next(args, "")]
        elif arg.startswith(tuple(f"{flag}=" for flag in CONFIG_FLAGS)):
            flags.append(arg)
        else:
            rest.append(arg)
    return [*flags, *rest]


def may_set_mode(overrides: list[str]) -> bool:
    """Whether an override could set `hydra.mode` (directly, or by adding configs through the search path)."""
    for override in overrides:
        key = override.partition("=")[0].lstrip("+~").strip()
        if key == "hydra" or key.startswith(MODE_KEYS):
            return True
    return False


@contextmanager
def mode_probe_skipped() -> Iterator[None]:
    """Within the block, Hydra's mode probe answers None at once when nothing could have set the mode."""
    from hydra._internal.hydra import Hydra

    probe = Hydra.get_mode

    def get_mode(self: Hydra, config_name: str | None, overrides: list[str]) -> Any:
        search_path = {(entry.provider, entry.path) for entry in self.config_loader.get_search_path().get_path()}
        if config_name == "config" and search_path <= PACKAGED and not may_set_mode(overrides):
            return None
        return probe(self, config_name, overrides)

    Hydra.get_mode = get_mode  # type: ignore[method-assign]
    try:
        yield
    finally:
        Hydra.get_mode = probe  # type: ignore[method-assign]
