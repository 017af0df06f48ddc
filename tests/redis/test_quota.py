"""The fleet quota in a real Redis: processes sending to one endpoint share one requests-per-minute budget."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from judgebias.backends.pacing import Pacer, RedisQuota
from judgebias.cache.shared import connect
from tests.redis.helpers import RedisServer, most_in_any_second

pytestmark = pytest.mark.redis

SENDER = textwrap.dedent(
    """
    import json, sys, threading, time
    from judgebias.cache.shared import connect
    from judgebias.backends.pacing import Pacer, RedisQuota

    rpm, count, scope = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    client, where = connect("JUDGEBIAS_REDIS_URL")
    times, lock = [], threading.Lock()

    class Recorded(RedisQuota):
        def take(self, tokens):
            wait, clock = self.ask(tokens)
            if wait <= 0:
                with lock:
                    times.append(clock)  # the moment Redis admitted the request, by Redis's clock
            return wait

    pacer = Pacer(rpm, None, Recorded(client, where, scope, rpm, None))

    def worker(n):
        for _ in range(n):
            pacer.release(pacer.wait(100))

    threads = [threading.Thread(target=worker, args=(count // 8,)) for _ in range(8)]
    print("ready", flush=True)
    sys.stdin.readline()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(json.dumps(times), flush=True)
    """
)


def test_four_processes_at_1200_rpm_never_send_more_than_about_20_in_any_second(redis_env: RedisServer) -> None:
    """Four processes, eight threads each, at requests_per_minute=1200 share the quota: about 20 per second in all."""
    senders = [
        subprocess.Popen(
            [sys.executable, "-c", SENDER, "1200", "32", "http://127.0.0.1:1/v1|m"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=os.environ.copy(),
        )
        for _ in range(4)
    ]
    for sender in senders:
        assert sender.stdout is not None
        assert "ready" == sender.stdout.readline().strip()
    for sender in senders:
        assert sender.stdin is not None
        sender.stdin.write("go\n")
        sender.stdin.flush()
    times: list[float] = []
    for sender in senders:
        out, _ = sender.communicate(timeout=120)
        times += json.loads(out.strip().splitlines()[-1])
    assert 128 == len(times)
    assert most_in_any_second(times) <= 20
    assert max(times) - min(times) >= (128 - 20) / 20  # the quota really held them back (none lost their turn)


def test_a_pause_announced_to_one_process_holds_the_others(redis_env: RedisServer) -> None:
    """pause_all in one process (a server's announced wait) makes another process's next request wait too."""
    scope = "http://127.0.0.1:1/v1|m"
    client, where = connect("JUDGEBIAS_REDIS_URL")
    announcer = Pacer(None, None, RedisQuota(client, where, scope, None, None))
    other_client, _ = connect("JUDGEBIAS_REDIS_URL")
    other = Pacer(None, None, RedisQuota(other_client, where, scope, None, None))
    announcer.pause_all(1.0)
    started = time.monotonic()
    other.release(other.wait(10))
    assert time.monotonic() - started >= 0.9


def test_quotas_of_different_endpoints_or_models_are_apart(redis_env: RedisServer) -> None:
    """A full quota for one endpoint and model does not hold requests to another."""
    client, where = connect("JUDGEBIAS_REDIS_URL")
    busy = RedisQuota(client, where, "http://a/v1|m", 60, None)
    free = RedisQuota(client, where, "http://b/v1|m", 60, None)
    assert 0.0 == busy.take(1)
    assert busy.take(1) > 0.5
    assert 0.0 == free.take(1)


def test_the_token_quota_is_shared_too(redis_env: RedisServer) -> None:
    """tokens_per_minute holds across processes: once a second's tokens are spent, the next request waits."""
    client, where = connect("JUDGEBIAS_REDIS_URL")
    first = RedisQuota(client, where, "http://a/v1|m", None, 6000)  # 100 tokens per second
    second_client, _ = connect("JUDGEBIAS_REDIS_URL")
    second = RedisQuota(second_client, where, "http://a/v1|m", None, 6000)
    assert 0.0 == first.take(60)
    assert 0.0 == second.take(40)
    assert second.take(10) > 0.5


def test_losing_redis_stops_the_pacer_with_one_line_naming_host_and_port(
    redis_env: RedisServer, tmp_path: Path
) -> None:
    """When Redis goes, waiting for the quota raises the cache's error naming Redis's host:port, not the password."""
    from judgebias.core.errors import CacheUnavailable

    client, where = connect("JUDGEBIAS_REDIS_URL")
    pacer = Pacer(1200, None, RedisQuota(client, where, "x|m", 1200, None))
    pacer.release(pacer.wait(1))
    redis_env.kill()
    with pytest.raises(CacheUnavailable) as error:
        pacer.wait(1)
    assert f"Redis at {where} could not be reached for the shared request quota" == str(error.value)
