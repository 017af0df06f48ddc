"""A real redis-server on 127.0.0.1 for each test: a free port, a temp folder, and a password to prove it never leaks.

It keeps an append-only file synced on every write, as a shared cache should run: a killed and restarted server
still holds every reply it acknowledged.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.redis.helpers import RedisServer


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A running password-protected redis-server on a free 127.0.0.1 port; stopped after the test."""
    folder = tmp_path / "redis"
    folder.mkdir()
    server = RedisServer(folder)
    server.start()
    yield server
    server.kill()


@pytest.fixture
def redis_env(redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch) -> RedisServer:
    """The server's URL in JUDGEBIAS_REDIS_URL, as a user would set it."""
    monkeypatch.setenv("JUDGEBIAS_REDIS_URL", redis_server.url)
    return redis_server
