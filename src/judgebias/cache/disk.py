"""The disk cache of judge replies: a rerun costs nothing, an interrupted run resumes where it stopped.

Keys are sha256 of canonical JSON of everything that decides a reply (endpoint, model, messages, sampling
settings) and nothing that does not (timeouts, retry counts) or must not be stored (the API key). Values are
JSON text. A plain diskcache.Cache (SQLite, safe for several processes on one machine; not for NFS) with
eviction off: the default policy culls silently past 1 GB, which would break free reruns.

A full disk must not lose a paid reply: the folder keeps a reserve file (RESERVE_BYTES), made when the cache is
opened. When a reply cannot be stored, the reserve is given up and the reply is appended to an outbox file
beside the database instead, as is every later reply of the process; the caller is told (CacheFull) and stops
sending. The next open with room again moves the outbox into the database, so a rerun pays only for calls that
never got a reply.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import diskcache

from judgebias.backends.pacing import Fleet
from judgebias.cache.values import decode_value, encode_value
from judgebias.config.schema import CacheMode
from judgebias.core.errors import CacheFull, UserError
from judgebias.core.record import key_input

MODES = tuple(CacheMode)  # use, refresh, off, only
KEY_VERSION = 1  # bump when the meaning of a cached value changes
RESERVE = "reserve"  # a file of RESERVE_BYTES in the cache folder, given up when the disk is full
RESERVE_BYTES = 4 * 1024 * 1024  # room for the replies in flight (and the run's own files) once the disk is full
OUTBOX = "outbox-"  # outbox-<pid>.jsonl: replies a full disk kept out of the database, stored by the next open
OUTBOX_ATTEMPTS, OUTBOX_PAUSE = 20, 0.1  # a reply's outbox line finding no room either is tried again for 2 s

# One reply, one statement: the row diskcache's own `set` writes for a str key and a short str value (raw key,
# value inline, no expiry, no tag), inserted or replaced in a single autocommit transaction. An existing row whose
# value sits in a file of its own is left alone (no row changed), so diskcache's `set` replaces it and removes the file.
UPSERT = (
    "INSERT INTO Cache(key, raw, store_time, expire_time, access_time, access_count, tag, size, mode, filename, value)"
    " VALUES (?, 1, ?, NULL, ?, 0, NULL, 0, ?, NULL, ?)"
    " ON CONFLICT(key, raw) DO UPDATE SET store_time = excluded.store_time, expire_time = NULL,"
    " access_time = excluded.access_time, access_count = 0, tag = NULL, size = 0, mode = excluded.mode,"
    " filename = NULL, value = excluded.value WHERE filename IS NULL"
)


class TextOnlyDisk(diskcache.Disk):  # type: ignore[misc]
    """A diskcache Disk that refuses pickled values, so reading a cache file never runs code from it."""

    def fetch(self, mode: int, filename: str | None, value: Any, read: bool) -> Any:
        if mode == diskcache.core.MODE_PICKLE:
            raise UserError("the cache holds a pickled value; judgebias only writes JSON text: refusing to load it")
        return super().fetch(mode, filename, value, read)


def checked_mode(mode: str) -> CacheMode:
    """`mode` as a cache mode; a store opened outside a composed config (the cache CLI) checks it here."""
    if mode not in MODES:
        raise UserError(f"cache.mode={mode!r} is not a mode: use one of {', '.join(MODES)}")
    return CacheMode(mode)


def free_space(directory: Path) -> int:
    """Bytes free on the filesystem holding `directory` (or its nearest existing parent)."""
    for folder in (directory, *directory.parents):
        with contextlib.suppress(OSError):
            return shutil.disk_usage(folder).free
    return 0


def _written_by_another_live_process(outbox: Path) -> bool:
    """Whether the process an outbox file is named after is another one still running."""
    pid = outbox.stem.removeprefix(OUTBOX)
    if not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # alive, owned by someone else
    return True


def megabytes(count: float) -> str:
    """A byte count as messages show it (e.g. '4.1 MB', '12 KB')."""
    return f"{count / 1e6:.1f} MB" if count >= 1e6 else f"{max(count, 0) / 1e3:.0f} KB"


def call_key(request: dict[str, Any]) -> str:
    """The cache key of one judge request (the request must already exclude credentials and timeouts)."""
    canonical = json.dumps({"v": KEY_VERSION, **request}, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def sample_key(request: dict[str, Any], sample: int) -> str:
    """The cache key of one ask of judge.samples (see record.key_input: ask 0 keeps the single-sample key)."""
    return call_key(key_input(request, sample))


class ReplyCache:
    """Replies by key, stored the moment they arrive; `mode` decides whether lookups and writes happen."""

    def __init__(self, directory: str, mode: str) -> None:
        self.mode = checked_mode(mode)
        self.directory = Path(directory).expanduser()
        self._cache: diskcache.Cache | None = None
        self._writer: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._reading = threading.Lock()  # the lookups' connection, one query at a time
        self._refused: OSError | sqlite3.Error | None = None  # why the database refused a reply (then: outbox only)
        self._opening = threading.Lock()  # the first callers may race to open (the Redis outbox opens mid-run)

    def _open(self) -> diskcache.Cache:
        if self._cache is not None:  # opened once; every call after the first skips the lock
            return self._cache
        with self._opening:
            return self._open_once()

    def _open_once(self) -> diskcache.Cache:
        if self._cache is None:
            where = str(self.directory)
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                if self.mode.sends:
                    self._keep_reserve()
                self._cache = diskcache.Cache(
                    where, eviction_policy="none", cull_limit=0, disk=TextOnlyDisk, timeout=60
                )
            except (OSError, sqlite3.Error) as error:
                raise UserError(self._unopenable(error)) from None
            self._store_outbox()
        return self._cache

    def _unopenable(self, error: OSError | sqlite3.Error) -> str:
        """Why the cache folder cannot be opened, and what to do, in one line."""
        where, free = str(self.directory), megabytes(free_space(self.directory))
        reason = (getattr(error, "strerror", None) or str(error) or type(error).__name__).rstrip(".")
        if "full" in reason or "No space" in reason or "I/O" in reason:
            return f"cannot open the cache at {where!r}: {reason} ({free} free): free space there, or set cache.dir=..."
        if isinstance(error, sqlite3.DatabaseError) and not isinstance(error, sqlite3.OperationalError):
            return (
                f"the cache at {where!r} holds a cache.db that is not an SQLite database judgebias can read "
                f"({reason}): move {str(self.directory / diskcache.core.DBNAME)!r} away, or set cache.dir=..."
            )
        return f"cannot open the cache at {where!r}: {reason}: set cache.dir=... to a folder of your own"

    def _keep_reserve(self) -> None:
        """Make the reserve file if it is missing; a disk without room for it is refused before any call is paid."""
        reserve = self.directory / RESERVE
        if reserve.exists():
            return
        partial = reserve.with_name(f"{RESERVE}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            with open(partial, "wb") as handle:
                handle.write(bytes(RESERVE_BYTES))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(partial, reserve)
        except OSError as error:
            with contextlib.suppress(OSError):
                partial.unlink()
            raise CacheFull(
                f"the cache at {str(self.directory)!r} cannot be written ({error.strerror or error}; "
                f"{megabytes(free_space(self.directory))} free, it needs {megabytes(RESERVE_BYTES)} to start): "
                "free space there, or set cache.dir=... to another folder"
            ) from None

    def _store_outbox(self) -> None:
        """Move replies a full disk kept in outbox files into the database, then drop those files."""
        if not self.mode.writes:
            return
        for path in sorted(self.directory.glob(f"{OUTBOX}*.jsonl")):
            if _written_by_another_live_process(path):
                continue  # still being appended to: the next open stores it
            entries = []
            for line in path.read_text(encoding="utf-8", errors="replace").split("\n"):
                with contextlib.suppress(ValueError):
                    entry = json.loads(line)
                    if (
                        isinstance(entry, dict)
                        and isinstance(entry.get("key"), str)
                        and isinstance(entry.get("value"), dict)
                    ):
                        entries.append((entry["key"], entry["value"]))
            try:
                self.put_many(entries)
            except (OSError, sqlite3.Error) as error:
                raise CacheFull(
                    f"the cache at {str(self.directory)!r} is still full ({error}; "
                    f"{megabytes(free_space(self.directory))} free): free space there, then rerun"
                ) from None
            path.unlink()

    def damaged(self, error: sqlite3.Error) -> UserError:
        """A cache.db damaged inside (not in its header, which opening finds): one line with how to check and keep
        going, never a traceback. The replies it still holds can be exported before it is moved aside."""
        database = str(self.directory / diskcache.core.DBNAME)
        return UserError(
            f"the cache at {str(self.directory)!r} is damaged ({str(error) or type(error).__name__}): check it with "
            f"python -m judgebias.cache verify --cache-dir {str(self.directory)!r}, then move {database!r} aside "
            "(e.g. mv it to cache.db.damaged) and rerun: the calls whose replies are lost are asked again"
        )

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached reply, or None on a miss (always a miss in modes refresh and off)."""
        if not self.mode.reads:
            return None
        try:
            return self._decode(self._open().get(key, default=None, retry=True))
        except sqlite3.DatabaseError as error:
            if isinstance(error, sqlite3.OperationalError):
                raise
            raise self.damaged(error) from None

    def get_many(self, keys: list[str], *, requests: bool = True) -> dict[str, dict[str, Any]]:
        """The cached replies among `keys` (misses are absent), in one query per few hundred keys; `requests=False`
        leaves out each reply's request where it can (what a run's lookups do: only a bundle reads it).

        Reads diskcache's table directly (its schema has been stable since 5.x; pinned <6): str keys are stored
        raw, values through the Disk, so TextOnlyDisk still refuses pickles. Expiry is never set by judgebias.
        """
        if not self.mode.reads or not keys:
            return {}
        cache = self._open()
        try:
            return self._looked_up(cache, keys, requests)
        except sqlite3.DatabaseError as error:
            if isinstance(error, sqlite3.OperationalError):
                raise
            raise self.damaged(error) from None

    def _looked_up(self, cache: diskcache.Cache, keys: list[str], requests: bool) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        with self._reading:
            reader = self._reader_connection()
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                select = f"SELECT key, mode, filename, value FROM Cache WHERE raw = 1 AND key IN ({marks})"
                for key, mode, filename, stored in reader.execute(select, chunk).fetchall():
                    try:
                        value = decode_value(cache._disk.fetch(mode, filename, stored, False), request=requests)
                    except OSError:
                        continue  # removed by another process between the query and the read: a miss
                    if value is not None:
                        found[key] = value
        return found

    def verify(self) -> dict[str, Any]:
        """SQLite's integrity check of cache.db and a read of every reply: what is damaged, and what is readable."""
        cache = self._open()
        reader = self._reader_connection()
        try:
            problems = [row[0] for row in reader.execute("PRAGMA integrity_check").fetchall() if row[0] != "ok"]
        except sqlite3.DatabaseError as error:
            problems = [str(error)]
        readable, unreadable = 0, 0
        try:
            for mode, filename, stored in reader.execute("SELECT mode, filename, value FROM Cache WHERE raw = 1"):
                try:
                    readable += self._decode(cache._disk.fetch(mode, filename, stored, False)) is not None
                except (OSError, ValueError):
                    unreadable += 1
        except sqlite3.DatabaseError as error:
            problems.append(f"reading the replies stopped: {error}")
        return {"ok": not problems, "problems": problems[:20], "readable": readable, "unreadable": unreadable}

    def _reader_connection(self) -> sqlite3.Connection:
        """The connection a run's lookups read through: SQLite's defaults, without diskcache's 64 MB memory map
        and 32 MB page cache.

        A cached rerun reads every reply once, so the map and the cache only kept pages it never read again, and
        both count in the process's memory: 54 MiB of a 50,000-item rerun's peak (a value holds its request).
        """
        if self._reader is None:
            self._reader = sqlite3.connect(
                str(self.directory / diskcache.core.DBNAME),
                timeout=60,
                isolation_level=None,  # autocommit: every query sees the replies committed before it
                check_same_thread=False,
            )
        return self._reader

    @staticmethod
    def _decode(text: Any) -> dict[str, Any] | None:
        """A cached reply from its JSON text; anything else judgebias did not write is a miss (so the call is made
        again and the value replaced)."""
        return decode_value(text)

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Store a reply the moment it arrives (not at the end of the run), unless the cache is off.

        The row is committed before this returns: in the file (SQLite's write-ahead log), so a killed process
        keeps it. A reply is one statement on a connection of its own, not diskcache's `set` (BEGIN, SELECT,
        INSERT, COMMIT on a connection per thread): with 64 workers each statement waits to retake the
        interpreter lock, and the writers queue behind it.
        """
        if not self.mode.writes:
            return
        text = encode_value(value)
        cache = self._open()
        if self._refused is not None:
            # The database refused a reply of this process: the room the reserve freed is for the outbox, so the
            # replies still landing go there, not into the database (whose writes would use that room up first).
            raise self._keep_in_outbox(key, text, self._refused)
        try:
            self._write(cache, key, text)
        except (OSError, sqlite3.Error) as error:
            self._refused = error
            raise self._keep_in_outbox(key, text, error) from None

    def _keep_in_outbox(self, key: str, text: str, error: BaseException) -> CacheFull:
        """The reply the database refused, appended to this process's outbox after the reserve is given up."""
        with contextlib.suppress(OSError):
            (self.directory / RESERVE).unlink()
        outbox = self.directory / f"{OUTBOX}{os.getpid()}.jsonl"
        line = json.dumps({"key": key, "value": json.loads(text)}, ensure_ascii=False) + "\n"
        kept = False
        for attempt in range(OUTBOX_ATTEMPTS):
            try:
                with open(outbox, "a", encoding="utf-8") as handle:
                    # A retry starts on a line of its own: a failed attempt may have left part of its line.
                    handle.write(line if attempt == 0 else "\n" + line)
                    handle.flush()
                    os.fsync(handle.fileno())
                kept = True
                break
            except OSError as failed:
                if failed.errno != errno.ENOSPC:
                    break
                time.sleep(OUTBOX_PAUSE)  # room the reserve gave up can take a moment to be free to this file
        reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
        return CacheFull(f"the cache at {str(self.directory)!r} cannot store replies ({reason})", kept=kept)

    def _write(self, cache: diskcache.Cache, key: str, text: str) -> None:
        """One reply into the database, committed before this returns."""
        # One writer at a time within the process: threads queue on this lock instead of in SQLite's busy
        # handler, whose sleeps (1 ms, 2 ms, 5 ms, ...) cost more than the writes at high concurrency.
        with self._lock:
            if len(text) >= cache.disk_min_file_size:  # a long reply goes to a file of its own: diskcache's path
                cache.set(key, text, retry=True)
                return
            now = time.time()
            while True:
                try:
                    changed = self._connection(cache).execute(UPSERT, (key, now, now, diskcache.core.MODE_RAW, text))
                    break
                except sqlite3.OperationalError as error:
                    if "locked" not in str(error) and "busy" not in str(error):
                        raise
            if changed.rowcount == 0:  # the key's old value sits in a file: replace it the way that removes it
                cache.set(key, text, retry=True)

    def _connection(self, cache: diskcache.Cache) -> sqlite3.Connection:
        """The connection replies are written through (one for the process, used under the lock)."""
        if self._writer is None:
            writer = sqlite3.connect(
                str(self.directory / diskcache.core.DBNAME),
                timeout=60,
                isolation_level=None,  # autocommit: each statement is its own transaction
                check_same_thread=False,
            )
            writer.execute(f"PRAGMA synchronous = {int(cache.sqlite_synchronous)}")  # as diskcache's own connections
            self._writer = writer
        return self._writer

    def claim(self, key: str) -> bool:
        """Whether this process should send the call: always, since one machine's runs share no calls in flight."""
        return True

    def release(self, key: str) -> None:
        """Nothing to release: the disk store holds no leases."""

    def wait_for(self, key: str, timeout: float) -> dict[str, Any] | None:
        """The stored reply now (the disk store never has a call in flight elsewhere to wait for)."""
        return self.get(key)

    def fleet(self, scope: str, requests_per_minute: float | None, tokens_per_minute: float | None) -> Fleet | None:
        """None: on one machine each process paces itself."""
        return None

    def describe(self) -> str:
        """Where the replies live, for messages."""
        return f"disk cache at {self.directory}"

    def entries(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every stored reply as (key, value), in key order (so a bundle of the same cache is the same file)."""
        cache = self._open()
        for (key,) in cache._sql("SELECT key FROM Cache WHERE raw = 1 ORDER BY key").fetchall():
            value = self._decode(cache.get(key, default=None, retry=True))
            if isinstance(key, str) and value is not None:
                yield key, value

    def put_many(self, entries: Iterable[tuple[str, dict[str, Any]]]) -> None:
        """Store many replies in one transaction (bundle import)."""
        cache = self._open()
        with self._lock, cache.transact(retry=True):
            for key, value in entries:
                cache.set(key, encode_value(value), retry=True)

    def stats(self) -> dict[str, Any]:
        """Entries and bytes on disk."""
        cache = self._open()
        return {"backend": "disk", "where": str(self.directory), "entries": len(cache), "bytes": cache.volume()}

    def close(self) -> None:
        """Close the SQLite connections."""
        for connection in (self._writer, self._reader):
            if connection is not None:
                connection.close()
        self._writer = self._reader = None
        if self._cache is not None:
            self._cache.close()
            self._cache = None
