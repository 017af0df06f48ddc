"""A cached reply read without its request: every other field as the stored text holds it.

The oracle is Python's json module on the text SQLite holds (read with sqlite3, not through the cache), or on the
text written by hand the way earlier versions stored it; the reader under test only slices that text.
"""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import diskcache

from judgebias.cache import ReplyCache
from judgebias.cache.values import decode_value

REQUEST = {
    "endpoint": "http://127.0.0.1:9/v1",
    "model": "judge",
    "messages": [{"role": "user", "content": 'Q: say "A" or "B"'}],
    "temperature": 0.0,
}
REPLY = {"text": "A", "prompt_tokens": 12, "completion_tokens": 1, "model": "m", "probs": None}


def _stored_texts(directory: Path) -> dict[str, str]:
    """Every reply's text as the database holds it."""
    with sqlite3.connect(directory / "cache.db") as connection:
        return dict(connection.execute("SELECT key, value FROM Cache WHERE raw = 1").fetchall())


def _without_request(value: dict[str, Any]) -> dict[str, Any]:
    return {name: field for name, field in value.items() if name != "request"}


def _agrees(text: str) -> None:
    """decode_value(text, request=False) holds every field of the text but the request as json reads it, and the
    request (when it keeps one) as json reads it too."""
    oracle = json.loads(text)
    read = decode_value(text, request=False)
    assert read is not None
    assert _without_request(oracle) == _without_request(read)
    if "request" in read:
        assert oracle["request"] == read["request"]


def test_a_run_lookup_leaves_the_request_out_and_a_bundle_lookup_keeps_it(tmp_path: Path) -> None:
    """What a run's lookup reads is the stored reply without its request; asked with requests, the whole value."""
    cache = ReplyCache(str(tmp_path), "use")
    cache.put("k", REPLY | {"request": REQUEST, "stored_at": "2026-12-04T05:00:00Z"})
    stored = json.loads(_stored_texts(tmp_path)["k"])

    assert "request" == list(stored)[-1]  # written last, whatever order it was given in
    assert _without_request(stored) == cache.get_many(["k"], requests=False)["k"]
    assert stored == cache.get_many(["k"])["k"] == cache.get("k")
    cache.close()


def test_values_stored_the_earlier_way_lose_no_field(tmp_path: Path) -> None:
    """Earlier versions wrote the time stored, and a bundle's origin, after the request: a run still reads both."""
    old = {
        "stamped": json.dumps(REPLY | {"request": REQUEST, "stored_at": "2026-11-30T10:00:00Z"}),
        "imported": json.dumps(REPLY | {"request": REQUEST, "bundle": {"file": "x.jsonl.gz", "sha256": "0" * 64}}),
    }
    with diskcache.Cache(str(tmp_path)) as raw:
        for key, text in old.items():
            raw.set(key, text)
    cache = ReplyCache(str(tmp_path), "use")

    found = cache.get_many(list(old), requests=False)

    assert "2026-11-30T10:00:00Z" == found["stamped"]["stored_at"]
    assert "x.jsonl.gz" == found["imported"]["bundle"]["file"]
    for key, text in old.items():
        assert _without_request(json.loads(text)) == _without_request(found[key])
    cache.close()


def test_texts_that_look_like_a_request_key_are_read_as_json_reads_them() -> None:
    """The key's spelling inside a string, inside a nested object, in a compact text, or no request at all."""
    marker = ', "request": {'
    texts = [
        json.dumps({"text": f'A{marker}"x": 1}}', "request": REQUEST}),  # in the reply's own text
        json.dumps({"text": "A", "probs": {"request": {"p": 0.5}, "A": 0.5}, "request": REQUEST}),  # nested, before
        json.dumps({"text": "A", "probs": {"A": 0.5, "request": 0.5}, "request": REQUEST}),
        json.dumps({"text": "A", "request": REQUEST | {"messages": [{"content": f'{marker} "stored_at": "x"'}]}}),
        json.dumps({"text": "A", "request": REQUEST | {"extra_body": {"request": {"stored_at": 1}}}}),
        json.dumps({"text": "A", "request": REQUEST}, separators=(",", ":")),
        json.dumps({"text": "A", "stored_at": "2026-12-04T05:00:00Z"}),
        json.dumps({"text": '\\", "request": {"a": 1}, "x": "', "request": {"b": "\\"}}),
    ]
    for text in texts:
        _agrees(text)


def test_generated_values_with_quotes_braces_and_the_key_in_them_are_read_as_json_reads_them() -> None:
    """Thousands of values whose strings mix the characters and words the reader slices on."""
    rng = random.Random(5)
    pieces = ['"', "\\", "{", "}", ",", ":", " ", "request", "stored_at", "bundle", ', "request": ', "é", "\n", "A"]

    def string() -> str:
        return "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))

    for _ in range(3000):
        value: dict[str, Any] = {"text": string(), "model": string()}
        if rng.random() < 0.5:
            value["probs"] = {string(): rng.random() for _ in range(rng.randint(0, 3))}
        if rng.random() < 0.8:
            value["request"] = {"messages": [{"content": string()}], string(): string()}
        for extra in ("stored_at", "bundle"):
            if rng.random() < 0.3:
                value[extra] = string()
        _agrees(json.dumps(value, ensure_ascii=rng.random() < 0.5))
