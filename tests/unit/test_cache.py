"""The disk cache of replies, on a real diskcache folder: keys, modes, reopening, and what it refuses to load."""

from __future__ import annotations

import threading
from pathlib import Path

import diskcache
import pytest

from judgebias.cache import ReplyCache, call_key
from judgebias.core.errors import UserError
from tests.helpers import in_threads

REPLY = {"text": "A", "prompt_tokens": 12, "completion_tokens": 1, "model": "m", "finish_reason": "stop"}


def test_a_stored_reply_is_found_after_the_cache_is_reopened(tmp_path: Path) -> None:
    """A reply put in one run is read back by the next one, from the same folder."""
    first = ReplyCache(str(tmp_path), "use")
    first.put("k", REPLY)
    first.close()

    again = ReplyCache(str(tmp_path), "use")
    assert REPLY == again.get("k")
    again.close()


def test_get_many_returns_only_the_hits(tmp_path: Path) -> None:
    """A batched lookup answers the keys it holds and leaves the misses out."""
    cache = ReplyCache(str(tmp_path), "use")
    cache.put("hit", REPLY)

    assert {"hit": REPLY} == cache.get_many(["hit", "miss"])
    cache.close()


@pytest.mark.parametrize("mode", ["refresh", "off"])
def test_refresh_and_off_never_answer_from_the_cache(tmp_path: Path, mode: str) -> None:
    """In modes refresh and off every lookup is a miss, so the call is made again."""
    ReplyCache(str(tmp_path), "use").put("k", REPLY)
    cache = ReplyCache(str(tmp_path), mode)

    assert (None, {}) == (cache.get("k"), cache.get_many(["k"]))


def test_off_writes_nothing(tmp_path: Path) -> None:
    """With the cache off a reply is not stored, so a later run with the cache on still misses."""
    ReplyCache(str(tmp_path), "off").put("k", REPLY)

    assert None is ReplyCache(str(tmp_path), "use").get("k")


def test_refresh_overwrites_the_stored_reply(tmp_path: Path) -> None:
    """A refreshed call replaces the old reply, which later runs then read."""
    ReplyCache(str(tmp_path), "use").put("k", REPLY)
    ReplyCache(str(tmp_path), "refresh").put("k", REPLY | {"text": "B"})

    assert "B" == ReplyCache(str(tmp_path), "use").get("k")["text"]  # type: ignore[index]


def test_a_value_judgebias_did_not_write_is_a_miss(tmp_path: Path) -> None:
    """Text that is not a JSON object (another tool's entry) is not taken for a reply."""
    raw = diskcache.Cache(str(tmp_path))
    raw.set("not-json", "plain text")
    raw.set("a-list", "[1, 2]")
    raw.close()
    cache = ReplyCache(str(tmp_path), "use")

    assert (None, None, {}) == (cache.get("not-json"), cache.get("a-list"), cache.get_many(["not-json", "a-list"]))


def test_a_pickled_value_is_refused_not_loaded(tmp_path: Path) -> None:
    """Reading a cache never unpickles: a pickled entry stops the run with a clear error."""
    raw = diskcache.Cache(str(tmp_path))
    raw.set("k", {"text": "A"})  # a dict is stored pickled by diskcache's default Disk
    raw.close()

    with pytest.raises(UserError, match="pickled value"):
        ReplyCache(str(tmp_path), "use").get("k")


def test_an_unknown_mode_is_refused_with_the_choices(tmp_path: Path) -> None:
    """A misspelt mode names the allowed ones instead of silently meaning one of them."""
    with pytest.raises(UserError, match="use one of use, refresh, off, only"):
        ReplyCache(str(tmp_path), "usee")


def test_a_folder_that_cannot_be_created_is_a_user_error(tmp_path: Path) -> None:
    """A cache.dir under a file names the folder and the setting to change."""
    (tmp_path / "file").write_text("x")

    with pytest.raises(UserError, match=r"set cache\.dir"):
        ReplyCache(str(tmp_path / "file" / "cache"), "use").get("k")


def test_the_key_ignores_dict_order_and_follows_every_value() -> None:
    """The same request in another key order hits the same entry; a changed message does not."""
    request = {"model": "m", "messages": [{"role": "user", "content": "q"}], "temperature": 0.0}
    reordered = {"temperature": 0.0, "messages": [{"role": "user", "content": "q"}], "model": "m"}
    changed = request | {"messages": [{"role": "user", "content": "q2"}]}

    assert (call_key(request), True) == (call_key(reordered), call_key(changed) != call_key(request))


def test_threads_that_store_the_first_replies_at_once_all_store_them(tmp_path: Path) -> None:
    """A cache first opened by many threads at the same moment (the Redis outbox opens mid-run) keeps every reply."""
    cache = ReplyCache(str(tmp_path / "fresh"), "use")
    start = threading.Barrier(8)

    def store(index: int) -> None:
        start.wait()
        cache.put(f"{index:064x}", {"text": "A"})

    assert [] == in_threads(store, 8)
    assert 8 == len(cache.get_many([f"{i:064x}" for i in range(8)]))
    cache.close()
