"""`python -m judgebias.cache export|import|stats` as a user runs it, between the disk cache and a real Redis."""

from __future__ import annotations

from pathlib import Path

import pytest

from judgebias.cache import ReplyCache, call_key
from tests.redis.helpers import RedisServer, cache_cli, free_port

pytestmark = pytest.mark.redis


def fill(directory: Path, n: int) -> dict[str, dict[str, object]]:
    """A disk cache of n replies, each with its request (as runs store them); returns them by key."""
    cache = ReplyCache(str(directory), "use")
    requests = [
        {"endpoint": "http://127.0.0.1:9/v1", "model": "m", "messages": [{"role": "user", "content": str(i)}]}
        for i in range(n)
    ]
    replies: dict[str, dict[str, object]] = {
        call_key(request): {"text": "A", "prompt_tokens": i, "completion_tokens": 1, "model": "m", "request": request}
        for i, request in enumerate(requests)
    }
    for key, value in replies.items():
        cache.put(key, value)
    cache.close()
    return replies


def test_disk_to_redis_to_disk_keeps_every_reply(redis_server: RedisServer, tmp_path: Path) -> None:
    """A bundle exported from disk, imported into Redis, exported again and imported into an empty disk cache."""
    env = {"JUDGEBIAS_REDIS_URL": redis_server.url}
    replies = fill(tmp_path / "disk", 25)
    steps = [
        cache_cli("export", str(tmp_path / "a.gz"), "--cache-dir", str(tmp_path / "disk")),
        cache_cli("import", str(tmp_path / "a.gz"), "--backend", "redis", "--cache-dir", str(tmp_path / "n"), env=env),
        cache_cli("stats", "--backend", "redis", "--cache-dir", str(tmp_path / "n"), env=env),
        cache_cli("export", str(tmp_path / "b.gz"), "--backend", "redis", "--cache-dir", str(tmp_path / "n"), env=env),
        cache_cli("import", str(tmp_path / "b.gz"), "--cache-dir", str(tmp_path / "copy")),
    ]
    assert [0] * 5 == [step.returncode for step in steps], steps
    assert f"checked 25 replies in {tmp_path / 'a.gz'}: 25 added to Redis at {redis_server.where}, 0 already there" == (
        steps[1].stdout.strip()
    )
    assert steps[2].stdout.startswith(f"Redis at {redis_server.where}: 25 replies, ")
    assert (tmp_path / "a.gz").read_bytes() == (tmp_path / "b.gz").read_bytes()
    copied = ReplyCache(str(tmp_path / "copy"), "use").entries()
    assert replies == {key: {k: v for k, v in value.items() if k != "bundle"} for key, value in copied}
    assert all(redis_server.password not in step.stdout + step.stderr for step in steps)


def test_an_unreachable_redis_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """The tools stop with one line naming Redis's host:port (not the password) and exit 2."""
    port = free_port()
    result = cache_cli(
        "stats", "--backend", "redis", env={"JUDGEBIAS_REDIS_URL": f"redis://:s3cret-pw@127.0.0.1:{port}/0"}
    )
    assert (
        2,
        f"judgebias: error: Redis at 127.0.0.1:{port} could not connect while opening the cache: check that it runs and that JUDGEBIAS_REDIS_URL holds its host, port and password (or use cache.backend=disk)\n",
    ) == (
        result.returncode,
        result.stderr,
    )


def test_a_bad_bundle_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """Importing a file that is not a bundle names the file and exits 2, importing nothing."""
    (tmp_path / "notes.gz").write_text("hello", encoding="utf-8")
    result = cache_cli("import", str(tmp_path / "notes.gz"), "--cache-dir", str(tmp_path / "c"))
    assert 2 == result.returncode
    assert result.stderr.startswith(f"judgebias: error: {tmp_path / 'notes.gz'}: not a judgebias bundle")
    assert 1 == len(result.stderr.splitlines())
