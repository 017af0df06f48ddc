"""The Redis store of judge replies: one cache for every process and node that can reach the same Redis.

Same keys and the same JSON text as the disk cache, under the prefix `judgebias:reply:`. The URL (which may hold
a password) is read from the environment variable the config names, and only host:port ever appears in a
message. Three things a disk cache cannot do:

- *Pay once across processes*: before a live call the runner claims a lease on its key (SET NX with an expiry,
  renewed while the call is in flight); another process that needs the same call waits for the lease to go and
  then reads the reply. A process that dies stops renewing, so its lease expires and blocks nobody for long.
- *Lose nothing when Redis goes*: a reply that cannot be written to Redis is written to a local outbox (a disk
  cache under cache.dir) and pushed to Redis when the next run opens the store, before any lookup.
- *Fail early*: an unreachable Redis is found by a PING when the store opens, before any judge call.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from judgebias.backends.pacing import Fleet, RedisQuota
from judgebias.cache.disk import ReplyCache, checked_mode
from judgebias.cache.values import decode_value, encode_value
from judgebias.config.checks import ENV_VAR_NAME
from judgebias.core.errors import CacheUnavailable, UserError

PREFIX = "judgebias:"
REPLY = PREFIX + "reply:"
LEASE = PREFIX + "lease:"
LEASE_SECONDS = 30.0  # a dead process's calls are free to take after this long
CHUNK = 500  # keys per MGET / pipeline
OUTBOX = "redis-outbox"  # under cache.dir: replies received while Redis was unreachable

T = TypeVar("T")

# Delete or extend a lease only while it is still ours (it may have expired and been taken by another process).
_RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"
_RENEW = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0"


def connect(url_env: str) -> tuple[redis.Redis, str]:
    """A client for the Redis whose URL is in the environment variable `url_env`, and its host:port for messages."""
    if not ENV_VAR_NAME.fullmatch(url_env):
        # Most likely the URL itself, password included: never echo it.
        raise UserError(
            "cache.url_env takes the NAME of an environment variable holding the Redis URL (e.g. "
            "JUDGEBIAS_REDIS_URL), not the URL itself"
        )
    url = os.environ.get(url_env)
    if not url:
        raise UserError(
            f"cache.backend=redis needs {url_env} in the environment, holding the Redis URL "
            "(redis://[:password@]host:port/db or rediss://...; set cache.url_env to use another variable)"
        )
    try:
        client = redis.Redis.from_url(
            url,
            socket_timeout=10,
            socket_connect_timeout=5,
            retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), 2),
            health_check_interval=30,
        )
    except ValueError:
        # The parser's message may quote the URL, password included: name only the variable.
        raise UserError(
            f"{url_env} does not hold a Redis URL: use redis://[:password@]host:port/db or rediss://..."
        ) from None
    kwargs = client.connection_pool.connection_kwargs
    where = str(kwargs.get("path") or f"{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}")
    return client, where


def unavailable(where: str, error: Exception, doing: str) -> CacheUnavailable:
    """The one-line error for a Redis failure: host:port and the kind of failure, never the URL or password."""
    kind = {
        redis.AuthenticationError: "the password was refused",
        redis.TimeoutError: "timed out",
        redis.ConnectionError: "could not connect",
    }
    reason = next((text for cls, text in kind.items() if isinstance(error, cls)), type(error).__name__)
    return CacheUnavailable(f"Redis at {where} {reason} while {doing}")


class RedisCache:
    """Replies by key in Redis, with leases on calls in flight and a local outbox for replies Redis missed."""

    def __init__(self, url_env: str, directory: str, mode: str, *, lease_seconds: float = LEASE_SECONDS) -> None:
        self.mode = checked_mode(mode)
        self.lease_seconds = lease_seconds
        self.client, self.where = connect(url_env)
        self.directory = Path(directory).expanduser()  # this node's folder: the outbox, and batch records
        self._outbox_dir = self.directory / OUTBOX
        self._outbox_cache: ReplyCache | None = None  # opened only when there is something to keep or push
        self._token = uuid.uuid4().hex  # this process's mark on the leases it holds
        self._held: set[str] = set()
        self._lock = threading.Lock()
        self._renewer: threading.Thread | None = None
        self._closed = threading.Event()
        self._release = self.client.register_script(_RELEASE)
        self._renew = self.client.register_script(_RENEW)
        try:
            self.client.ping()
        except redis.RedisError as error:
            raise CacheUnavailable(
                f"{unavailable(self.where, error, 'opening the cache')}: check that it runs and that {url_env} "
                "holds its host, port and password (or use cache.backend=disk)"
            ) from None
        self.pushed = self._push_outbox()

    def _do(self, command: Callable[[], T], doing: str) -> T:
        """Run one Redis command; any Redis failure becomes a CacheUnavailable naming host:port only."""
        try:
            return command()
        except redis.RedisError as error:
            raise unavailable(self.where, error, doing) from None

    @property
    def _outbox(self) -> ReplyCache:
        """The local disk cache for replies Redis missed."""
        if self._outbox_cache is None:
            self._outbox_cache = ReplyCache(str(self._outbox_dir), "use")
        return self._outbox_cache

    def _push_outbox(self) -> int:
        """Send Redis the replies an earlier run kept locally when Redis was lost; returns how many."""
        if not self._outbox_dir.exists():
            return 0
        entries = list(self._outbox.entries())
        self.put_many(entries, doing="pushing the replies kept on disk")
        if entries:
            cache = self._outbox._open()
            for key, _ in entries:
                cache.delete(key, retry=True)
        return len(entries)

    def fleet(self, scope: str, requests_per_minute: float | None, tokens_per_minute: float | None) -> Fleet | None:
        """The quota and announced pauses of `scope`, held in this Redis for every process that sends to it."""
        return RedisQuota(self.client, self.where, scope, requests_per_minute, tokens_per_minute)

    def describe(self) -> str:
        """Where the replies live, for messages (host:port, never the URL)."""
        return f"Redis at {self.where}"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored reply, or None on a miss (always a miss in modes refresh and off)."""
        if not self.mode.reads:
            return None
        return decode_value(self._text(self._do(lambda: self.client.get(REPLY + key), "reading a reply")))

    def get_many(self, keys: list[str], *, requests: bool = True) -> dict[str, dict[str, Any]]:
        """The stored replies among `keys` (misses are absent), one MGET per few hundred keys; `requests=False`
        leaves out each reply's request where it can."""
        if not self.mode.reads or not keys:
            return {}
        return dict(self._stored(keys, requests))

    def _stored(self, keys: list[str], requests: bool = True) -> Iterator[tuple[str, dict[str, Any]]]:
        """(key, value) for each of `keys` that holds a readable reply, in order, one MGET per few hundred keys."""
        for start in range(0, len(keys), CHUNK):
            chunk = keys[start : start + CHUNK]
            texts = self._mget(chunk)
            for key, text in zip(chunk, texts, strict=True):
                value = decode_value(self._text(text), request=requests)
                if value is not None:
                    yield key, value

    def _mget(self, keys: list[str]) -> list[Any]:
        """The stored texts of `keys` (None where missing), in one round trip."""
        names = [REPLY + key for key in keys]
        return list(self._do(lambda: self.client.mget(names), "reading replies"))

    @staticmethod
    def _text(stored: Any) -> str | None:
        return stored.decode("utf-8", errors="replace") if isinstance(stored, bytes) else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Store a reply the moment it arrives; if Redis is gone, keep it in the local outbox and say so."""
        if not self.mode.writes:
            return
        text = encode_value(value)
        try:
            self.client.set(REPLY + key, text)
        except redis.RedisError as error:
            self._outbox.put(key, value)  # pushed to Redis by the next run: this reply is never paid for again
            raise unavailable(self.where, error, "storing a reply (it is kept on local disk)") from None

    def put_many(self, entries: Iterable[tuple[str, dict[str, Any]]], *, doing: str = "storing replies") -> None:
        """Store many replies, pipelined (bundle import, the outbox's push); `doing` names the step in errors."""
        batch = list(entries)
        for start in range(0, len(batch), CHUNK):
            pipe = self.client.pipeline(transaction=False)
            for key, value in batch[start : start + CHUNK]:
                pipe.set(REPLY + key, encode_value(value))
            self._do(pipe.execute, doing)

    def claim(self, key: str) -> bool:
        """Take the lease on a call: True if this process should send it, False if another one is sending it."""
        if not self.mode.writes:
            return True
        milliseconds = int(self.lease_seconds * 1000)
        taken = self._do(lambda: self.client.set(LEASE + key, self._token, nx=True, px=milliseconds), "claiming a call")
        if taken:
            with self._lock:
                self._held.add(key)
                if self._renewer is None:
                    self._renewer = threading.Thread(target=self._keep_leases, name="redis-leases", daemon=True)
                    self._renewer.start()
        return bool(taken)

    def release(self, key: str) -> None:
        """Give up the lease on a call (after its reply is stored, or after it failed)."""
        with self._lock:
            if key not in self._held:
                return
            self._held.discard(key)
        with contextlib.suppress(redis.RedisError):  # the lease expires on its own; put or claim report failures
            self._release(keys=[LEASE + key], args=[self._token])

    def wait_for(self, key: str, timeout: float) -> dict[str, Any] | None:
        """Wait while another process holds the call's lease, then its stored reply (None: it left none, or timeout)."""
        deadline = time.monotonic() + timeout
        pause = 0.02
        while True:
            pipe = self.client.pipeline(transaction=False)
            pipe.exists(LEASE + key)
            pipe.get(REPLY + key)
            leased, text = self._do(pipe.execute, "waiting for a reply from another process")
            if not leased or time.monotonic() >= deadline:
                return decode_value(self._text(text))
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(0.5, pause * 1.5)

    def _keep_leases(self) -> None:
        """Extend this process's leases every third of their life, so only a dead process's leases expire."""
        milliseconds = int(self.lease_seconds * 1000)
        while not self._closed.wait(self.lease_seconds / 3):
            with self._lock:
                held = list(self._held)
            for key in held:
                try:
                    self._renew(keys=[LEASE + key], args=[self._token, milliseconds])
                except redis.RedisError:
                    break  # Redis is gone: the calls themselves will report it

    def entries(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every stored reply as (key, value), in key order."""
        keys = sorted(self._text(k) or "" for k in self._scan())
        yield from self._stored(keys)

    def _scan(self) -> list[bytes]:
        """Every reply key without its prefix."""
        found = self._do(lambda: list(self.client.scan_iter(match=REPLY + "*", count=1000)), "listing replies")
        return [key[len(REPLY) :] for key in found if isinstance(key, bytes)]

    def stats(self) -> dict[str, Any]:
        """Entries and the bytes of their values."""
        keys = self._scan()
        size = 0
        for start in range(0, len(keys), CHUNK):
            pipe = self.client.pipeline(transaction=False)
            for key in keys[start : start + CHUNK]:
                pipe.strlen(REPLY.encode() + key)
            size += sum(self._do(pipe.execute, "measuring replies"))
        return {"backend": "redis", "where": self.where, "entries": len(keys), "bytes": size}

    def close(self) -> None:
        """Stop renewing leases, let go of any still held, close the connections and the outbox."""
        self._closed.set()
        with self._lock:
            held = list(self._held)
        for key in held:
            self.release(key)
        if self._outbox_cache is not None:
            self._outbox_cache.close()
        self.client.close()
