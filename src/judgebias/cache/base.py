"""What the runner and the bundle tools need of a reply store, whichever backend holds the replies."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

from judgebias.backends.pacing import Fleet
from judgebias.config.schema import CacheMode


class ReplyStore(Protocol):
    """Replies by key; `claim`/`release`/`wait_for` let processes sharing the store pay once for a call."""

    mode: CacheMode  # what lookups and writes do (its reads / writes / sends say which)
    directory: Path  # this machine's cache folder (cache.dir): the disk cache, or the Redis store's local outbox

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored reply, or None on a miss."""
        ...

    def get_many(self, keys: list[str], *, requests: bool = True) -> dict[str, dict[str, Any]]:
        """The stored replies among `keys` (misses are absent); `requests=False`: without each reply's request
        where the store can leave it out (a run's lookups: only a bundle reads it)."""
        ...

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Store a reply the moment it arrives."""
        ...

    def claim(self, key: str) -> bool:
        """True if this process should send the call; False if another process is sending it now."""
        ...

    def release(self, key: str) -> None:
        """The call is over here (reply stored, or failed): others may take it."""
        ...

    def wait_for(self, key: str, timeout: float) -> dict[str, Any] | None:
        """The reply once no other process is sending the call (None: it left none, or `timeout` passed)."""
        ...

    def entries(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every stored reply, in key order."""
        ...

    def put_many(self, entries: Iterable[tuple[str, dict[str, Any]]]) -> None:
        """Store many replies at once."""
        ...

    def stats(self) -> dict[str, Any]:
        """backend, where, entries, bytes."""
        ...

    def fleet(self, scope: str, requests_per_minute: float | None, tokens_per_minute: float | None) -> Fleet | None:
        """The quota and pauses shared by every process sending to `scope` (an endpoint and model), if shared."""
        ...

    def describe(self) -> str:
        """Where the replies live, for messages (never a password)."""
        ...

    def close(self) -> None:
        """Let go of connections and leases."""
        ...
