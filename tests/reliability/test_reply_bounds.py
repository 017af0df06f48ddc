"""Memory and time go only where a judge's reply can need them: a reply far larger than judge.max_tokens allows is
not parsed (an outcome `truncated`, with its reason), a server's names are stored bounded, judge.samples is
bounded before anything is sent."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.helpers import InProcessCli, JsonHandler, serving

pytestmark = pytest.mark.reliability

HUGE = "A " + "x" * 4_400_000  # a 4.4 MB reply to a call allowed 16 tokens
LONG_NAME = "big-model-" + "m" * 60_000


class Hostile(JsonHandler):
    """Answers every chat completion with a 4.4 MB content and a 60 KB deployment header."""

    def do_POST(self) -> None:
        self.request_body()
        payload: dict[str, Any] = {
            "id": "x",
            "object": "chat.completion",
            "model": LONG_NAME,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": HUGE}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 16},
        }
        self.send_json_bytes(200, json.dumps(payload).encode(), {"x-litellm-model-name": LONG_NAME})


def test_a_huge_reply_is_truncated_unread_and_names_are_bounded(cli_here: InProcessCli) -> None:
    """Eight calls answered 4.4 MB each: done in seconds, each `truncated` with why; no stored name over 250 chars."""
    with serving(Hostile) as url:
        started = time.monotonic()
        result = cli_here("judge=local", f"judge.base_url={url}", "judge.api_key_env=null", "data.limit=4")
        elapsed = time.monotonic() - started

    assert 4 == result.code, result  # no reply is readable (exit 4): every file is written
    assert elapsed < 60
    summary = result.summary()
    assert {"truncated": 8} == summary["outcomes"]
    line = result.verdicts()[0]
    assert "more than the 1,048,576 a reply to judge.max_tokens=16 can hold" in line["reason1"]
    text = json.dumps(summary) + (result.run_dir / "verdicts.jsonl").read_text(encoding="utf-8")
    assert "m" * 300 not in text


def test_a_samples_count_out_of_bounds_is_refused_before_anything(cli_here: InProcessCli) -> None:
    """judge.samples=1000000 is one line at configuration (it once grew to 12.7 GB before a single request)."""
    result = cli_here("judge.samples=1000000", "data.limit=2")
    assert 2 == result.code and "judge.samples=1000000 must be from 1" in result.stderr


class HeaderFlood(JsonHandler):
    """Answers every request with a megabyte of response headers (5,000 of 200 bytes) before a normal body."""

    def do_POST(self) -> None:
        self.request_body()
        body = json.dumps({"choices": [{"index": 0, "message": {"content": "A"}}]}).encode()
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        head += "".join(f"X-Padding-{n}: {'v' * 200}\r\n" for n in range(5000)) + "\r\n"
        self.wfile.write(head.encode() + body)
        self.close_connection = True


def test_more_headers_than_the_client_reads_is_said_as_that(cli_here: InProcessCli) -> None:
    """A server that answers with a megabyte of headers is reported as sending what the HTTP client will not read,
    not as "could not connect (is the server running?)"."""
    with serving(HeaderFlood) as url:
        result = cli_here(
            "judge=local", f"judge.base_url={url}", "judge.api_key_env=null", "judge.max_retries=0", "data.limit=1"
        )

    assert result.code in (1, 2), result
    said = result.stderr + json.dumps(result.verdicts() if (result.run_dir / "verdicts.jsonl").exists() else [])
    assert "not in HTTP the client accepts" in said and "is the server running" not in said
