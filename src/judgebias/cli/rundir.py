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
    """Make `${unique_dir:...}` available to the configs (idempotent)."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("unique_dir"):
        OmegaConf.register_new_resolver("unique_dir", unique_dir, use_cache=True)
