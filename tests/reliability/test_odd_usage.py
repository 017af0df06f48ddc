"""A server that reports negative or absurd usage: every path reads it the same way (chat, completions), so a cost
is never negative and a count is never beyond what the cache may store. The server is the test's own, over real
HTTP through the openai SDK; what it reported is its own record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import JsonHandler, serving, write_items
from tests.reliability.helpers import pairs, run_here

pytestmark = pytest.mark.reliability

USAGE = {"prompt_tokens": -5, "completion_tokens": -38_000_000, "total_tokens": 10**15}


class OddUsage(JsonHandler):
    """A judge that answers A, on both endpoints, reporting negative prompt and completion tokens."""

    def do_POST(self) -> None:
        self.request_body()
        if self.path.endswith("/completions") and "/chat/" not in self.path:
            choice = {"index": 0, "text": " A", "logprobs": None, "finish_reason": "stop"}
            body = {"id": "x", "object": "text_completion", "model": "m", "choices": [choice], "usage": USAGE}
        else:
            message = {"role": "assistant", "content": "A"}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            body = {"id": "x", "object": "chat.completion", "model": "m", "choices": [choice], "usage": USAGE}
        self.send_json_bytes(200, json.dumps(body).encode())


@pytest.mark.parametrize("api", ["chat", "completions"])
def test_negative_usage_is_counted_as_none_on_every_path(tmp_path: Path, api: str) -> None:
    """prompt_tokens -5 and completion_tokens -38,000,000 on every reply, at a price of $1,000 per million: the
    run's tokens and cost are 0, not a cost of minus $38,000 (the chat path and the completions path alike)."""
    data = write_items(tmp_path / "items.jsonl", pairs(3))
    with serving(OddUsage) as url:
        summary = run_here(
            tmp_path / "run",
            "judge=local", f"judge.base_url={url}", "judge.api_key_env=null", f"judge.api={api}",
            "judge.price_input_per_mtok=1000", "judge.price_output_per_mtok=1000", "judge.retry_backoff=0.01",
            "data=jsonl", f"data.path={data}", f"cache.dir={tmp_path / 'cache'}", "bootstrap.resamples=0",
            "report=false", "progress=off",
        )  # fmt: skip
    assert 6 == summary["calls_live"]
    assert (0, 0) == (summary["prompt_tokens"], summary["completion_tokens"])
    assert 0.0 == summary["cost_usd"]
