"""What a person sees while a run works: a one-line progress bar on a terminal, quiet otherwise."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO


class Progress:
    """Items done, calls live / cached, retries so far and ETA, redrawn at most a few times a second."""

    def __init__(
        self,
        total: int,
        mode: str,
        judgings: Sequence[Any],
        stream: TextIO | None = None,
        *,
        elsewhere: Callable[[], int] | None = None,
        shared: Any = None,
    ) -> None:
        self.stream = stream or sys.stderr
        self.enabled = mode == "on" or (mode == "auto" and self.stream.isatty())
        self.total = total
        self.elsewhere = elsewhere  # items other processes finalised (parts of this run), shown with these
        self.shared = shared  # a shared integer (`.value`) this process's count is kept in, for the one showing it
        self.done = 0
        self.cached = 0
        self.live = 0
        self.judgings = judgings
        self.started = time.monotonic()
        self.drawn = 0.0

    def advance(self, *, calls: int, cached: int) -> None:
        """One more item finalised."""
        self.done += 1
        self.cached += cached
        self.live += calls - cached
        if self.shared is not None:
            self.shared.value = self.done
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.drawn > 0.2 or self.done == self.total:
            self.drawn = now
            self._draw(now)

    def absorb(self, done: int, calls: int, cached: int) -> None:
        """Items another process finalised, now counted here (their calls among these)."""
        self.done += done
        self.cached += cached
        self.live += calls - cached
        if self.enabled:
            self._draw(time.monotonic())

    def settle(self) -> None:
        """The items are all counted (a total that was the data file's lines becomes the items found there)."""
        self.total = self.done
        if self.enabled:
            self._draw(time.monotonic())

    def _draw(self, now: float) -> None:
        done = self.done + (self.elsewhere() if self.elsewhere is not None else 0)
        elapsed = now - self.started
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - done) / rate if rate > 0 else 0.0
        retries = sum(j.backend.retries for j in self.judgings)
        width = 24
        filled = int(width * done / max(1, self.total))
        bar = "#" * filled + "-" * (width - filled)
        self.stream.write(
            f"\r[{bar}] {done}/{self.total} items | calls live {self.live} cached {self.cached} | "
            f"retries {retries} | ETA {eta:5.0f}s "
        )
        self.stream.flush()

    def close(self) -> None:
        """End the progress line so the summary starts on a fresh one."""
        if self.enabled and self.done:
            self.stream.write("\n")
            self.stream.flush()
