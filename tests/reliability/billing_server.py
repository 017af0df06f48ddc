"""An adversarial OpenAI-compatible server of the test suite's own that bills by its own count, not judgebias's:
one token per character of every message (as CJK text, or a tokenizer unlike any judgebias knows, counts it) and
every reply token it is allowed (judge.max_tokens, as hidden reasoning would spend it). It keeps its own bill of
every 200 it sent, and can leave usage out, answer a call's first attempt with no choices, or cut it off, or
answer only after `delay` seconds (billing the request whether or not anyone still waits for it)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tests.helpers import JsonHandler, serving

PRICE_PER_MTOK = 1000.0  # USD per million tokens, in and out: a call of 500 characters costs about $0.5


@dataclass
class Bill:
    """What the server sent and charged: every 200 is billed, by its own count."""

    requests: int = 0
    billed_usd: float = 0.0
    seen: dict[str, int] = field(default_factory=dict)  # attempts per distinct body
    lock: threading.Lock = field(default_factory=threading.Lock)


def _handler(bill: Bill, mode: str, delay: float) -> type[JsonHandler]:
    class Handler(JsonHandler):
        def do_POST(self) -> None:
            body = json.loads(self.request_body())
            time.sleep(delay)  # a slow upstream: a gateway in front may have given up, the bill stands
            messages = body.get("messages") or []
            prompt = sum(len(str(message.get("content", ""))) for message in messages)
            completion = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
            key = json.dumps(messages, sort_keys=True) + str(body.get("seed")) + str(body.get("temperature"))
            with bill.lock:
                bill.requests += 1
                attempt = bill.seen.get(key, 0)
                bill.seen[key] = attempt + 1
                bill.billed_usd += (prompt + completion) * PRICE_PER_MTOK / 1e6
            choice = {"index": 0, "message": {"role": "assistant", "content": "A"}, "finish_reason": "stop"}
            if mode == "no_choices_first" and attempt == 0:
                choices: list[dict[str, Any]] = []
            elif mode == "cut_first" and attempt == 0:
                cut = {"role": "assistant", "content": "Let me weigh both answers"}
                choices = [choice | {"message": cut, "finish_reason": "length"}]
            else:
                choices = [choice]
            reply: dict[str, Any] = {
                "id": "x",
                "object": "chat.completion",
                "model": body.get("model"),
                "choices": choices,
            }
            if mode != "no_usage":
                reply["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion}
            self.send_json(200, reply)

    return Handler


@contextmanager
def billing_server(mode: str = "usage", delay: float = 0.0) -> Iterator[tuple[str, Bill]]:
    """Serve on 127.0.0.1 in a thread: (base URL, its bill). Modes: usage, no_usage, no_choices_first, cut_first."""
    bill = Bill()
    with serving(_handler(bill, mode, delay)) as url:
        yield url, bill
