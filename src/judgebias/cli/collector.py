"""The garbage collector around a run: paused while Hydra starts up, then told what start-up left behind.

Start-up (Hydra composing the config, numpy and the judging modules imported) allocates ~60,000 objects that live as
long as the process. CPython's cyclic collector walks them again and again while they are allocated, and once more
when the interpreter exits: ~90 ms of a warm 10-item run's 0.54 s (benchmarks/RESULTS.md). So the collector is
paused during start-up, and when the run starts everything alive is frozen (`gc.freeze`): later passes, during the
run and at exit, skip it. Start-up's own garbage (~8,000 objects, about 1 MB) is frozen with it rather than found
by a full pass that would cost more than it frees. Everything the run allocates is collected as usual. A sweep
running its jobs in one process freezes nothing: a job's config would outlive it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """The collector off for the block (unless `resume` turns it back on), then as it was before."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def resume(*, freeze: bool) -> None:
    """Start-up is over: freeze what it allocated (when asked) and collect as usual from now on."""
    if freeze:
        gc.freeze()
    gc.enable()
