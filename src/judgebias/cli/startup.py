"""Ctrl-C before the run starts: one line and exit 130, not a KeyboardInterrupt traceback from an import.

`python -m judgebias.run` spends its first second or two importing Hydra and composing the config. Imported by the
command before anything heavy, this module makes SIGINT in that window end the process at once with one line
(nothing has been sent or written that needs finishing); the job puts Python's own handler back when the run
begins, so a run stopped later keeps its replies and its own message. Imported elsewhere (tests, tools) it changes
nothing.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from types import FrameType

EXIT_INTERRUPTED = 130


RUN_NOT_STARTED = "interrupted before the run started: nothing was sent"
_said = [b"\njudgebias: interrupted while starting: nothing was done\n"]


def _stop_at_start(signum: int, frame: FrameType | None) -> None:
    os.write(2, _said[0])
    os._exit(EXIT_INTERRUPTED)


def quiet_interrupts(message: str | None = None) -> None:
    """Until `run_begins`, Ctrl-C ends the process with one line (main thread only; elsewhere a no-op); `message`
    replaces the run's (for a command that has not written anything yet either)."""
    if message is not None:
        _said[0] = f"\njudgebias: {message}\n".encode()
    with contextlib.suppress(ValueError):  # not the main thread
        signal.signal(signal.SIGINT, _stop_at_start)


def run_begins() -> None:
    """Python's own Ctrl-C handling from here on (KeyboardInterrupt), if start-up had replaced it."""
    with contextlib.suppress(ValueError):
        if signal.getsignal(signal.SIGINT) is _stop_at_start:
            signal.signal(signal.SIGINT, signal.default_int_handler)


_main = sys.modules.get("__main__")
if getattr(getattr(_main, "__spec__", None), "name", None) == "judgebias.run":
    quiet_interrupts(RUN_NOT_STARTED)  # `python -m judgebias.run`: before run.py's own imports (Hydra) begin
