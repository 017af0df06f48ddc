"""Client-side pacing shared by all worker threads: a known quota, and a pause when the server asks for one.

A 429 with Retry-After pauses every worker until the server's time has passed (plus jitter, so the workers do
not all return in the same instant); `requests_per_minute` / `tokens_per_minute` keep a run under a published
quota instead of discovering it by 429s.
"""

from __future__ import annotations

import random
import threading
import time


class Pacer:
    """Token buckets for requests and tokens per minute, and a shared pause-until time after a 429."""

    def __init__(self, requests_per_minute: float | None, tokens_per_minute: float | None) -> None:
        self._lock = threading.Lock()
        self._resume_at = 0.0
        self._buckets = [_Bucket(rate / 60.0) if rate else None for rate in (requests_per_minute, tokens_per_minute)]

    def pause_all(self, seconds: float) -> None:
        """Hold every worker for `seconds` (the server's Retry-After)."""
        with self._lock:
            self._resume_at = max(self._resume_at, time.monotonic() + seconds)

    def wait(self, tokens: int) -> None:
        """Block until a request of about `tokens` tokens may be sent."""
        while True:
            with self._lock:
                now = time.monotonic()
                delay = self._resume_at - now
                if delay > 0:
                    delay += random.uniform(0, min(0.25, delay / 4))  # spread the restart after a pause
                else:
                    wanted = [
                        (bucket, n) for bucket, n in zip(self._buckets, (1, tokens), strict=True) if bucket is not None
                    ]
                    delay = max((bucket.delay(n, now) for bucket, n in wanted), default=0.0)
                    if delay <= 0:
                        for bucket, n in wanted:
                            bucket.take(n)
                        return
            time.sleep(delay)


class _Bucket:
    """A token bucket refilled at `rate` per second, with one second's worth of burst."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.capacity = max(1.0, rate)
        self.level = self.capacity
        self.updated = time.monotonic()

    def delay(self, amount: float, now: float) -> float:
        """Refill to `now`; how long until `amount` (capped at the burst) is available."""
        self.level = min(self.capacity, self.level + (now - self.updated) * self.rate)
        self.updated = now
        return max(0.0, (min(amount, self.capacity) - self.level) / self.rate)

    def take(self, amount: float) -> None:
        """Spend `amount` (capped at the burst)."""
        self.level -= min(amount, self.capacity)
