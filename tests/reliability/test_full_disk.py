"""A full disk: the spending stops at the first reply that cannot be stored, and no paid reply is lost or paid twice.

The disk is real: a tmpfs of a fixed size mounted for the test (root only; skipped elsewhere), filled with a file.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from judgebias.cache import ReplyCache
from judgebias.cache.disk import RESERVE_BYTES
from judgebias.core.errors import CacheFull, UserError
from judgebias.devserver.server import RunningServer
from tests.helpers import write_items
from tests.reliability.helpers import KEY, local, pairs, run_here

pytestmark = pytest.mark.reliability

StartServer = Callable[..., RunningServer]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 8 MB filesystem (tmpfs), unmounted afterwards."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small filesystem here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path, leave: int) -> Path:
    """Fill `disk` with one file, leaving about `leave` bytes free; the file, to delete when space is freed."""
    filler = disk / "filler"
    filler.write_bytes(bytes(max(shutil.disk_usage(disk).free - leave, 0)))
    return filler


def test_a_full_disk_stops_sending_keeps_every_paid_reply_and_a_rerun_pays_only_the_rest(
    small_disk: Path, server: StartServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first unstorable reply stops new calls; every paid reply is counted and kept; the rerun sends the rest."""
    monkeypatch.setenv(*next(iter(KEY.items())))
    judge = server(latency=0.01)
    data = write_items(tmp_path / "items.jsonl", pairs(48))
    cache_dir = small_disk / "cache"
    warm = ReplyCache(str(cache_dir), "use")
    warm.put("0" * 64, {"text": "a reply of another run"})
    warm.close()
    filler = fill(small_disk, 256 * 1024)
    overrides = (*local(judge.url), f"data.path={data}", f"cache.dir={cache_dir}", "max_concurrency=4")

    first = tmp_path / "first"
    first.mkdir()
    with pytest.raises(CacheFull) as stopped:
        run_here(first, *overrides)

    paid = judge.stats()["completions_ok"]
    summary = (first / "summary.json").read_text(encoding="utf-8")
    assert 0 < paid < 96 // 2, "sending did not stop soon after the disk filled"
    assert f'"calls_live": {paid},' in summary
    assert str(cache_dir) in str(stopped.value) and "free" in str(stopped.value)
    assert "\n" not in str(stopped.value)
    assert stopped.value.run_written

    filler.unlink()
    second = tmp_path / "second"
    second.mkdir()
    again = run_here(second, *overrides)

    stats = judge.stats()
    assert (96, 1) == (stats["distinct_bodies"], stats["max_per_body"]), "a paid reply was lost and paid again"
    assert (96 - paid, paid, 0) == (again["calls_live"], again["calls_cached"], again["failed_calls"])


def test_opening_a_cache_on_a_full_disk_is_one_line_before_any_call(
    small_disk: Path, server: StartServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new cache on a disk without room for its reserve is refused in one line naming the folder; nothing is sent."""
    monkeypatch.setenv(*next(iter(KEY.items())))
    judge = server()
    data = write_items(tmp_path / "items.jsonl", pairs(2))
    fill(small_disk, RESERVE_BYTES // 2)
    with pytest.raises(UserError) as refused:
        run_here(tmp_path, *local(judge.url), f"data.path={data}", f"cache.dir={small_disk / 'cache'}")
    assert str(small_disk / "cache") in str(refused.value) and "\n" not in str(refused.value)
    assert 0 == judge.stats()["requests"]


def test_a_corrupt_cache_db_is_one_line(tmp_path: Path) -> None:
    """A cache.db that is not SQLite is refused in one line naming the file, not an sqlite3 traceback."""
    (tmp_path / "cache.db").write_bytes(b"this is not a database" * 100)
    cache = ReplyCache(str(tmp_path), "use")
    with pytest.raises(UserError, match=r"cache\.db") as refused:
        cache.get_many(["0" * 64])
    assert not isinstance(refused.value.__cause__, sqlite3.Error)
    assert "\n" not in str(refused.value)


def test_after_the_first_refused_reply_every_later_one_goes_to_the_outbox(small_disk: Path) -> None:
    """Once the disk refused a reply, later replies go to the outbox even when the database would take them again:
    the room the reserve freed stays theirs, so no reply that lands after the disk filled is lost."""
    cache_dir = small_disk / "cache"
    cache = ReplyCache(str(cache_dir), "use")
    cache.put("0" * 64, {"text": "stored before the disk filled"})
    filler = fill(small_disk, 0)
    with pytest.raises(CacheFull) as refused:
        cache.put("1" * 64, {"text": "x" * 50_000})
    filler.unlink()  # room again: the database itself would now store the next reply
    with pytest.raises(CacheFull) as after:
        cache.put("2" * 64, {"text": "landed after the disk filled"})
    cache.close()

    assert (True, True) == (refused.value.kept, after.value.kept)
    (outbox,) = cache_dir.glob("outbox-*.jsonl")
    assert ["1" * 64, "2" * 64] == [line.split('"key": "')[1][:64] for line in outbox.read_text().splitlines()]
    reopened = ReplyCache(str(cache_dir), "use")  # the next open stores the outbox
    assert {"text": "landed after the disk filled"} == reopened.get("2" * 64)
    assert not list(cache_dir.glob("outbox-*.jsonl"))
    reopened.close()
