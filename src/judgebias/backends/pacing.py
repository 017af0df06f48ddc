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

With a `fleet` (RedisQuota below), the quota and the announced pauses are held in Redis and
shared by every process sending to the same endpoint and model; the adaptive cap stays per process.
"""

from __future__ import annotations

import hashlib
import math
import random
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from judgebias.core.errors import CacheUnavailable

DECREASE = 0.7  # a 429 leaves this share of the requests in flight


class Fleet(Protocol):
    """A quota shared with other processes: admits one request at a time, and holds pauses for all of them."""

    def take(self, tokens: int) -> float:
        """Admit one request of about `tokens` tokens (returns 0), or return the seconds to wait before asking again."""
        ...

    def pause(self, seconds: float) -> None:
        """Hold every process's requests for `seconds` (the server's announced wait)."""
        ...


class Pacer:
    """Token buckets for requests and tokens per minute, a shared pause-until time after a 429, an adaptive cap."""

    def __init__(
        self, requests_per_minute: float | None, tokens_per_minute: float | None, fleet: Fleet | None = None
    ) -> None:
        self.fleet = fleet  # when set, it holds the quota and the pauses instead of this process's buckets
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
        if self.fleet is not None:
            self.fleet.pause(seconds)

    def wait(self, tokens: int) -> int:
        """Block until a request of about `tokens` tokens may be sent; returns its ticket for `release`."""
        if self.fleet is not None:
            return self._wait_fleet(self.fleet, tokens)
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

    def _wait_fleet(self, fleet: Fleet, tokens: int) -> int:
        """`wait` with the quota and pauses held by the fleet: ask it outside the lock, holding a slot meanwhile."""
        while True:
            with self._lock:
                while self._limit is not None and self._in_flight >= self._limit:
                    self._slot_freed.wait(timeout=1.0)
                delay = self._resume_at - time.monotonic()
                if delay <= 0:
                    self._in_flight += 1  # the slot is held while the fleet is asked, so the cap is never passed
            if delay <= 0:
                try:
                    delay = fleet.take(tokens)
                except BaseException:
                    self._give_back()
                    raise
                if delay <= 0:
                    with self._lock:
                        self._sent += 1
                        return self._sent
                self._give_back()
            time.sleep(delay + random.uniform(0, min(0.05, delay / 4)))  # spread the processes' next asks

    def _give_back(self) -> None:
        """Return a slot held while the fleet said not yet."""
        with self._lock:
            self._in_flight -= 1
            if self._limit is not None:
                self._slot_freed.notify()

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


# A sliding-window log per quota, kept in Redis: a request is admitted only if the window ending now holds fewer
# than `limit` requests (and tokens); otherwise the reply is how long until the oldest one that must go has aged
# out. Redis's clock decides, so the processes' clocks need not agree. Times are milliseconds.
_TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local resume = tonumber(redis.call('GET', KEYS[3]) or '0')
if resume > now then return {tostring(resume - now), tostring(now)} end
local wait = 0
local rwin, rlim = tonumber(ARGV[1]), tonumber(ARGV[2])
local twin, tlim, amount = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
if rlim > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - rwin)
  local n = redis.call('ZCARD', KEYS[1])
  if n + 1 > rlim then
    local oldest = redis.call('ZRANGE', KEYS[1], n - rlim, n - rlim, 'WITHSCORES')
    wait = math.max(wait, tonumber(oldest[2]) + rwin - now)
  end
end
if tlim > 0 then
  amount = math.min(amount, tlim)
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - twin)
  local all = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
  local used = 0
  for i = 1, #all, 2 do used = used + tonumber(string.match(all[i], ':(%d+)$')) end
  local excess = used + amount - tlim
  if excess > 0 then
    for i = 1, #all, 2 do
      excess = excess - tonumber(string.match(all[i], ':(%d+)$'))
      if excess <= 0 then
        wait = math.max(wait, tonumber(all[i + 1]) + twin - now)
        break
      end
    end
  end
end
if wait > 0 then return {tostring(wait), tostring(now)} end
local seq = redis.call('INCR', KEYS[4])
redis.call('PEXPIRE', KEYS[4], 3600000)
if rlim > 0 then
  redis.call('ZADD', KEYS[1], now, seq)
  redis.call('PEXPIRE', KEYS[1], math.ceil(rwin) + 1000)
end
if tlim > 0 then
  redis.call('ZADD', KEYS[2], now, seq .. ':' .. amount)
  redis.call('PEXPIRE', KEYS[2], math.ceil(twin) + 1000)
end
return {'0', tostring(now)}
"""

_PAUSE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local resume = now + tonumber(ARGV[1])
if resume > tonumber(redis.call('GET', KEYS[1]) or '0') then
  redis.call('SET', KEYS[1], string.format('%.3f', resume), 'PX', math.ceil(tonumber(ARGV[1])) + 1000)
end
return 0
"""


def window(per_minute: float | None, *, spaced: bool = False) -> tuple[float, int]:
    """(window in ms, amount allowed in it) for a per-minute quota: about one second's worth, or one at a time.

    The window holds a whole number and lasts exactly as long as the quota allows them, so the fleet never sends
    more than `per_minute / 60` in any second, nor more than `per_minute` in any minute. Requests are `spaced`
    (a window of one): admitting a second's worth at once would let a late start of one burst (a slow first
    connection) land in the same second as the next burst at the server.
    """
    if not per_minute:
        return 0.0, 0
    limit = 1 if spaced else max(1, math.floor(per_minute / 60.0))
    return 60_000.0 * limit / per_minute, limit


class RedisQuota:
    """The Fleet of every process sharing one Redis and sending to the same endpoint and model."""

    def __init__(
        self,
        client: Any,
        where: str,
        scope: str,
        requests_per_minute: float | None,
        tokens_per_minute: float | None,
    ) -> None:
        self.where = where
        name = "judgebias:quota:" + hashlib.sha256(scope.encode("utf-8")).hexdigest()[:16]
        self._keys = [f"{name}:requests", f"{name}:tokens", f"{name}:pause", f"{name}:seq"]
        self._windows = [*window(requests_per_minute, spaced=True), *window(tokens_per_minute)]
        self._take = client.register_script(_TAKE)
        self._pause = client.register_script(_PAUSE)

    def take(self, tokens: int) -> float:
        """Admit one request now (0) or say how many seconds until the fleet's quota has room."""
        return self.ask(tokens)[0]

    def ask(self, tokens: int) -> tuple[float, float]:
        """take, with Redis's clock (epoch seconds) at the answer: the moment a request was admitted."""
        wait, now = self._call(lambda: self._take(keys=self._keys, args=[*self._windows, max(0, tokens)]))
        return float(wait) / 1000.0, float(now) / 1000.0

    def pause(self, seconds: float) -> None:
        """Hold every process's requests to this endpoint for `seconds` (no shorter pause undoes a longer one)."""
        self._call(lambda: self._pause(keys=[self._keys[2]], args=[seconds * 1000.0]))

    def _call(self, command: Callable[[], Any]) -> Any:
        import redis

        try:
            return command()
        except redis.RedisError:
            raise CacheUnavailable(f"Redis at {self.where} could not be reached for the shared request quota") from None
