"""The Redis reply store against a real redis-server: same replies as disk, leases, failures that lose nothing."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from judgebias.cache import ReplyCache, call_key, open_store
from judgebias.cache.shared import LEASE, REPLY, RedisCache
from judgebias.core.errors import CacheUnavailable, UserError
from tests.redis.helpers import RedisServer, free_port

pytestmark = pytest.mark.redis

REPLY_VALUE = {"text": "A", "prompt_tokens": 12, "completion_tokens": 1, "model": "m", "finish_reason": "stop"}


def key_of(n: int) -> str:
    """A cache key as the runner makes them."""
    return call_key(
        {"endpoint": "http://127.0.0.1:1/v1", "model": "m", "messages": [{"role": "user", "content": str(n)}]}
    )


def test_a_reply_stored_by_one_process_is_read_by_another_with_its_own_cache_dir(
    redis_env: RedisServer, tmp_path: Path
) -> None:
    """Two stores with different cache.dir (two nodes) share every reply through Redis."""
    first = open_store("redis", str(tmp_path / "node1"), "use")
    second = open_store("redis", str(tmp_path / "node2"), "use")
    keys = [key_of(n) for n in range(1200)]  # more than one MGET chunk
    for key in keys:
        first.put(key, REPLY_VALUE)
    assert {key: REPLY_VALUE for key in keys} == second.get_many([*keys, key_of(-1)])
    assert REPLY_VALUE == second.get(keys[0])
    first.close()
    second.close()


def test_redis_holds_the_same_key_and_json_text_as_the_disk_cache(redis_env: RedisServer, tmp_path: Path) -> None:
    """A reply is stored under the disk cache's key as the same JSON text, so bundles move between them as is."""
    disk = ReplyCache(str(tmp_path / "disk"), "use")
    shared = open_store("redis", str(tmp_path / "node"), "use")
    key = key_of(1)
    disk.put(key, REPLY_VALUE)
    shared.put(key, REPLY_VALUE)
    assert disk._open().get(key).encode("utf-8") == redis_env.client().get(REPLY + key)
    disk.close()
    shared.close()


def test_modes_refresh_and_off_read_nothing_and_off_stores_nothing(redis_env: RedisServer, tmp_path: Path) -> None:
    """cache.mode behaves on Redis as on disk: refresh and off miss every lookup, off writes nothing."""
    key = key_of(1)
    open_store("redis", str(tmp_path), "use").put(key, REPLY_VALUE)
    refresh = open_store("redis", str(tmp_path), "refresh")
    off = open_store("redis", str(tmp_path), "off")
    off.put(key_of(2), REPLY_VALUE)
    assert (None, {}, None, 0) == (
        refresh.get(key),
        refresh.get_many([key]),
        off.get(key),
        redis_env.client().exists(REPLY + key_of(2)),
    )


def test_a_missing_url_variable_is_named_with_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the env var the error names the variable and what it should hold."""
    monkeypatch.delenv("MY_REDIS", raising=False)
    with pytest.raises(UserError) as error:
        open_store("redis", str(tmp_path), "use", url_env="MY_REDIS")
    assert "cache.backend=redis needs MY_REDIS in the environment" in str(error.value)


def test_an_unreachable_redis_names_host_and_port_but_never_the_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening a store on a port nobody listens on fails at once with Redis and host:port, without the password."""
    port = free_port()
    monkeypatch.setenv("JUDGEBIAS_REDIS_URL", f"redis://:hunter2-secret@127.0.0.1:{port}/0")
    with pytest.raises(CacheUnavailable) as error:
        open_store("redis", str(tmp_path), "use")
    assert (
        f"Redis at 127.0.0.1:{port} could not connect while opening the cache: check that it runs and that JUDGEBIAS_REDIS_URL holds its host, port and password (or use cache.backend=disk)"
        == str(error.value)
    )


def test_a_wrong_password_is_reported_without_echoing_it(
    redis_server: RedisServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refused password is named as such; neither it nor the right one appears in the message."""
    monkeypatch.setenv("JUDGEBIAS_REDIS_URL", redis_server.url.replace(redis_server.password, "not-the-password"))
    with pytest.raises(CacheUnavailable) as error:
        open_store("redis", str(tmp_path), "use")
    assert (
        f"Redis at {redis_server.where} the password was refused while opening the cache: check that it runs and that JUDGEBIAS_REDIS_URL holds its host, port and password (or use cache.backend=disk)"
        == str(error.value)
    )


def test_a_claimed_call_is_claimed_once_and_the_waiter_gets_the_reply(redis_env: RedisServer, tmp_path: Path) -> None:
    """While one process holds a call's lease another cannot claim it, and waits until the reply is stored."""
    holder = open_store("redis", str(tmp_path / "a"), "use")
    waiter = open_store("redis", str(tmp_path / "b"), "use")
    key = key_of(7)
    assert (True, False) == (holder.claim(key), waiter.claim(key))

    def answer() -> None:
        time.sleep(0.5)
        holder.put(key, REPLY_VALUE)
        holder.release(key)

    thread = threading.Thread(target=answer)
    thread.start()
    started = time.monotonic()
    assert REPLY_VALUE == waiter.wait_for(key, timeout=30)
    thread.join()
    assert time.monotonic() - started >= 0.4
    assert 0 == redis_env.client().exists(LEASE + key)


def test_a_released_call_without_a_reply_can_be_claimed_again(redis_env: RedisServer, tmp_path: Path) -> None:
    """A call that failed in the holder is released: the waiter hears None at once and may send it itself."""
    holder = open_store("redis", str(tmp_path / "a"), "use")
    waiter = open_store("redis", str(tmp_path / "b"), "use")
    key = key_of(8)
    holder.claim(key)
    holder.release(key)
    assert (None, True) == (waiter.wait_for(key, timeout=5), waiter.claim(key))


def test_a_lease_held_for_a_long_call_is_renewed(redis_env: RedisServer, tmp_path: Path) -> None:
    """A live process keeps its lease past the lease time, so a slow call is not sent twice."""
    holder = RedisCache("JUDGEBIAS_REDIS_URL", str(tmp_path / "a"), "use", lease_seconds=2.0)
    other = RedisCache("JUDGEBIAS_REDIS_URL", str(tmp_path / "b"), "use", lease_seconds=2.0)
    key = key_of(9)
    assert holder.claim(key)
    time.sleep(5.0)  # well past the lease time, with room for a slow renewal on a loaded machine
    assert False is other.claim(key)
    holder.close()
    assert True is other.claim(key)


def test_a_dead_process_lease_expires(redis_env: RedisServer, tmp_path: Path) -> None:
    """A process killed while holding a lease blocks the call only until the lease expires."""
    key = key_of(10)
    script = textwrap.dedent(
        f"""
        import sys, time
        from judgebias.cache.shared import RedisCache
        store = RedisCache("JUDGEBIAS_REDIS_URL", {str(tmp_path / "dead")!r}, "use", lease_seconds=2.0)
        assert store.claim({key!r})
        print("claimed", flush=True)
        time.sleep(600)
        """
    )
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    assert "claimed" == process.stdout.readline().strip()
    process.kill()
    process.wait()
    other = RedisCache("JUDGEBIAS_REDIS_URL", str(tmp_path / "b"), "use", lease_seconds=2.0)
    assert False is other.claim(key)
    started = time.monotonic()
    assert None is other.wait_for(key, timeout=30)
    assert time.monotonic() - started < 4.0
    assert True is other.claim(key)


def test_a_reply_that_redis_missed_is_kept_on_disk_and_pushed_next_time(redis_env: RedisServer, tmp_path: Path) -> None:
    """With Redis gone, put keeps the reply in the local outbox and says so; the next store pushes it to Redis."""
    store = open_store("redis", str(tmp_path / "node"), "use")
    key = key_of(11)
    redis_env.kill()
    with pytest.raises(CacheUnavailable) as error:
        store.put(key, REPLY_VALUE)
    assert redis_env.password not in str(error.value)
    assert f"Redis at {redis_env.where} could not connect while storing a reply (it is kept on local disk)" == str(
        error.value
    )
    store.close()
    redis_env.start()  # Redis never received this reply: it exists only on this node's disk
    reopened = RedisCache("JUDGEBIAS_REDIS_URL", str(tmp_path / "node"), "use")
    elsewhere = open_store("redis", str(tmp_path / "other-node"), "use")
    assert (1, REPLY_VALUE, []) == (
        reopened.pushed,
        elsewhere.get(key),
        list(ReplyCache(str(tmp_path / "node" / "redis-outbox"), "use").entries()),
    )


def test_stats_count_entries_and_bytes(redis_env: RedisServer, tmp_path: Path) -> None:
    """stats counts the replies and the bytes of their JSON text."""
    store = open_store("redis", str(tmp_path), "use")
    for n in range(3):
        store.put(key_of(n), REPLY_VALUE)
    stats = store.stats()
    size = sum(redis_env.client().strlen(REPLY + key_of(n)) for n in range(3))
    assert ("redis", 3, size) == (stats["backend"], stats["entries"], stats["bytes"])
