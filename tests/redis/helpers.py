"""Helpers of the Redis tests: a real redis-server process, the cache CLI, and counting requests per second."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from tests.helpers import free_port


class RedisServer:
    """One redis-server process: started, killed and restarted on the same port and folder by the test."""

    def __init__(self, folder: Path) -> None:
        executable = shutil.which("redis-server")
        if executable is None:
            pytest.skip("redis-server is not installed (tools/install-system.sh installs it)")
        self.executable = executable
        self.folder = folder
        self.port = free_port()
        self.password = "pw-" + secrets.token_hex(12)
        self.url = f"redis://:{self.password}@127.0.0.1:{self.port}/0"
        self.where = f"127.0.0.1:{self.port}"
        self.config = folder / "redis.conf"
        self.config.write_text(
            f'port {self.port}\nbind 127.0.0.1\ndir {folder}\nrequirepass {self.password}\nsave ""\n'
            "appendonly yes\nappendfsync always\nprotected-mode yes\nlogfile redis.log\n",
            encoding="utf-8",
        )
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the server and wait until it answers a PING."""
        self.process = subprocess.Popen([self.executable, str(self.config)], cwd=self.folder)
        client = redis.Redis(host="127.0.0.1", port=self.port, password=self.password, socket_connect_timeout=1)
        deadline = time.monotonic() + 20
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError(f"redis-server did not start on port {self.port}") from None
                time.sleep(0.05)
        client.close()

    def client(self) -> redis.Redis:
        """A client of this server (for the test's own checks)."""
        return redis.Redis(host="127.0.0.1", port=self.port, password=self.password)

    def kill(self) -> None:
        """SIGKILL the server, as a crashed or unplugged Redis."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process = None


def cache_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The cache tools in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "judgebias.cache", *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def most_in_any_second(times: list[float]) -> int:
    """The largest number of requests that arrived within any one-second window [t, t + 1)."""
    times = sorted(times)
    most, start = 0, 0
    for end, moment in enumerate(times):
        while moment - times[start] >= 1.0:
            start += 1
        most = max(most, end - start + 1)
    return most
