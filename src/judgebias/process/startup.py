"""Ctrl-C before the run starts: one line and exit 130, not a KeyboardInterrupt traceback from an import.

`python -m judgebias.run` spends its first second or two importing Hydra and composing the config. Imported by the
command before anything heavy, this module makes SIGINT in that window end the process at once with one line
(nothing has been sent or written that needs finishing); the job puts Python's own handler back when the run
begins, so a run stopped later keeps its replies and its own message. Imported elsewhere (tests, tools) it changes
nothing.
"""

from __future__ import annotations

import _signal  # the C module: `signal` would import enum first, a window in which Ctrl-C is still a traceback
import os
import sys

EXIT_INTERRUPTED = 130


RUN_NOT_STARTED = "interrupted before the run started: nothing was sent"
_said = [b"\njudgebias: interrupted while starting: nothing was done\n"]


def _stop_at_start(signum: int, frame: object) -> None:  # `object`: `types` is not imported yet either
    os.write(2, _said[0])
    os._exit(EXIT_INTERRUPTED)


def quiet_interrupts(message: str | None = None) -> None:
    """Until `run_begins`, Ctrl-C ends the process with one line (main thread only; elsewhere a no-op); `message`
    replaces the run's (for a command that has not written anything yet either)."""
    if message is not None:
        _said[0] = f"\njudgebias: {message}\n".encode()
    try:  # noqa: SIM105 (contextlib is not imported yet this early)
        _signal.signal(_signal.SIGINT, _stop_at_start)
    except ValueError:  # not the main thread
        pass


def run_begins() -> None:
    """Python's own Ctrl-C handling from here on (KeyboardInterrupt), if start-up had replaced it."""
    try:
        if _signal.getsignal(_signal.SIGINT) is _stop_at_start:
            _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    except ValueError:  # not the main thread
        pass


if sys.argv[:1] == ["-m"]:  # `python -m judgebias.<command>` is starting (runpy sets argv[0] to "-m" meanwhile)
    quiet_interrupts()  # here, not in the importer: the handler is in place before this import is done
_main = sys.modules.get("__main__")
if getattr(getattr(_main, "__spec__", None), "name", None) == "judgebias.run":
    quiet_interrupts(RUN_NOT_STARTED)  # `python -m judgebias.run`: before run.py's own imports (Hydra) begin
