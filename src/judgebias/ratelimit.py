"""Client-side pacing shared by all worker threads: a known quota, and a pause when the server asks for one.

A 429 with Retry-After pauses every worker until the server's time has passed (plus jitter, so the workers do
not all return in the same instant); `requests_per_minute` / `tokens_per_minute` keep a run under a published
quota instead of discovering it by 429s.

A 429 also lowers the number of requests allowed in flight (AIMD, as TCP does with its window): a pause alone
lets every worker return at once and be refused again, so without a cap most requests of a run that outpaces
its quota would be 429s. The cap starts absent; the first 429 sets it to 0.7 x the requests then in flight;
further 429s cut it again, but only those of requests sent after the last cut (one cut per round of requests,
not one per refused request); each success while the cap is reached raises it by 1/cap, so by about one per
round trip, probing for the quota again.
"""

from __future__ import annotations

import math
import random
import threading
import time

DECREASE = 0.7  # a 429 leaves this share of the requests in flight


class Pacer:
    """Token buckets for requests and tokens per minute, a shared pause-until time after a 429, an adaptive cap."""

    def __init__(self, requests_per_minute: float | None, tokens_per_minute: float | None) -> None:
        self._lock = threading.Lock()
        self._slot_freed = threading.Condition(self._lock)
        self._resume_at = 0.0
        self._buckets = [_Bucket(rate / 60.0) if rate else None for rate in (requests_per_minute, tokens_per_minute)]
        self._in_flight = 0
        self._limit: float | None = None  # requests allowed in flight; none until the server first pushes back
        self._sent = 0  # requests started so far: each request's ticket is its number
        self._cut_after = 0  # only a request sent after this ticket may cut the cap again

    @property
    def limit(self) -> float | None:
        """The adaptive cap on requests in flight (None: not capped yet)."""
        return self._limit

    def pause_all(self, seconds: float) -> None:
        """Hold every worker for `seconds` (the server's Retry-After)."""
        with self._lock:
            self._resume_at = max(self._resume_at, time.monotonic() + seconds)

    def wait(self, tokens: int) -> int:
        """Block until a request of about `tokens` tokens may be sent; returns its ticket for `release`."""
        while True:
            with self._lock:
                while self._limit is not None and self._in_flight >= self._limit:
                    self._slot_freed.wait(timeout=1.0)
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
                        self._in_flight += 1
                        self._sent += 1
                        return self._sent
            time.sleep(delay)

    def release(self, ticket: int, *, succeeded: bool = True, throttled: bool = False) -> None:
        """The request `ticket` is over: a 429 (`throttled`) may cut the cap, a success while capped raises it."""
        with self._lock:
            self._in_flight -= 1
            if throttled:
                if ticket > self._cut_after:
                    self._limit = max(1.0, DECREASE * (self._in_flight + 1))
                    self._cut_after = self._sent
            elif succeeded and self._limit is not None and self._in_flight + 1 >= self._limit - 1:
                self._limit += 1.0 / self._limit
            if self._limit is not None:
                self._slot_freed.notify(max(1, math.ceil(self._limit) - self._in_flight))


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
