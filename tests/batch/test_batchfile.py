"""Batch files in OpenAI's format: input lines, splitting, and reading output and error lines back."""

from __future__ import annotations

import json

import pytest

from judgebias.backends import openai_batch
from judgebias.batch import files as batchfile
from judgebias.core.errors import UserError

KEY = "ab" * 32


def test_custom_id_is_derived_from_the_cache_key_and_read_back() -> None:
    """A line's custom_id names its call's cache key, and only ids judgebias wrote map back to a key."""
    assert KEY == batchfile.key_of(batchfile.custom_id(KEY))
    assert [None, None, None] == [batchfile.key_of(x) for x in ("request-1", "jb-" + "x" * 64, "jb-abc")]


def test_input_line_is_a_post_to_the_chat_endpoint_with_the_live_body() -> None:
    """An input line carries the body exactly as given, POSTed to /v1/chat/completions, on one line."""
    body = {"model": "m", "messages": [{"role": "user", "content": "é\nx"}], "max_tokens": 4}
    line = openai_batch.input_line(batchfile.custom_id(KEY), body)
    assert line.endswith(b"\n") and 1 == line.count(b"\n")
    assert {"custom_id": "jb-" + KEY, "method": "POST", "url": "/v1/chat/completions", "body": body} == json.loads(line)


def test_split_respects_the_line_count_and_the_byte_limit() -> None:
    """No file holds more than max_lines lines or max_bytes bytes; the order of lines is kept."""
    lines = [(f"id-{i}", b"x" * 10 + b"\n") for i in range(7)]
    assert [3, 3, 1] == [len(f) for f in batchfile.split(lines, 3, 10_000)]
    assert [2, 2, 2, 1] == [len(f) for f in batchfile.split(lines, 50_000, max_bytes=22)]
    assert lines == [line for f in batchfile.split(lines, 2, 10_000) for line in f]


def test_split_refuses_a_line_larger_than_a_file_and_a_zero_batch_size() -> None:
    """A single line over the byte limit, or batch_size 0, is a user error, not an endless loop."""
    with pytest.raises(UserError, match="more than a batch may hold"):
        list(batchfile.split([("a", b"x" * 100)], 10, max_bytes=50))
    with pytest.raises(UserError, match=r"judge\.batch_size=0"):
        list(batchfile.split([("a", b"x")], 0, 10_000))


def test_read_results_gives_bodies_and_the_providers_reasons() -> None:
    """200 lines give their body; error lines (OpenAI's error file, expiry, vLLM's string) give the reason."""
    reply = {"choices": [{"message": {"content": "A"}}]}
    rows = [
        {
            "id": "1",
            "custom_id": "ok",
            "response": {"status_code": 200, "request_id": "r", "body": reply},
            "error": None,
        },
        {
            "id": "2",
            "custom_id": "bad",
            "response": {"status_code": 500, "body": {"error": {"message": "server error", "code": None}}},
            "error": None,
        },
        {"id": "3", "custom_id": "late", "response": None, "error": {"code": "batch_expired", "message": "too late"}},
        {"id": "4", "custom_id": "vllm", "response": {"status_code": 400, "request_id": "r"}, "error": "bad prompt"},
    ]
    text = "\n".join(json.dumps(row) for row in rows) + "\n"
    results = openai_batch.read_results(text, "out.jsonl")
    assert [("ok", 1, reply, None)] == [(r.custom_id, r.line, r.body, r.error) for r in results[:1]]
    assert ["HTTP 500 server error", "batch_expired: too late", "HTTP 400 bad prompt"] == [r.error for r in results[1:]]


def test_read_results_names_the_file_and_line_of_a_broken_line() -> None:
    """A line that is not JSON, or has no custom_id, is refused with the file and line number."""
    with pytest.raises(UserError, match=r"^out.jsonl:2: not valid JSON"):
        openai_batch.read_results('{"custom_id": "a", "response": null, "error": "x"}\n{oops\n', "out.jsonl")
    with pytest.raises(UserError, match=r"^out.jsonl:1: custom_id is missing"):
        openai_batch.read_results('{"id": "a"}\n', "out.jsonl")


def test_validation_report_names_the_batch_and_each_line() -> None:
    """A failed validation is reported with the batch id and each error's line, code and message."""
    errors = [{"code": "model_not_found", "line": 3, "message": "no such model", "param": "body.model"}]
    report = batchfile.validation_report("batch_1", errors)
    assert "batch batch_1 failed validation" in report
    assert "line 3: model_not_found: no such model (body.model)" in report
