"""A live call sends exactly request_body(): the messages travel as extra_body, the server sees the same JSON."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from judgebias.backends.openai import OpenAIJudge
from judgebias.config.schema import JudgeConfig, RubricConfig
from judgebias.core.item import Item
from judgebias.core.prompt import render_messages, shown
from judgebias.core.record import Request
from tests.helpers import JsonHandler, serving

RUBRIC = RubricConfig(
    name="t", system="Judge {question}", user="{first} or {second}? Say {label_first} or {label_second}"
)
COMPLETION = {
    "id": "c",
    "object": "chat.completion",
    "created": 0,
    "model": "served-model",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "A"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 12, "completion_tokens": 1, "total_tokens": 13},
}


class Recorder(JsonHandler):
    """Keeps each request's JSON body and answers with one fixed completion."""

    bodies: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        self.bodies.append(json.loads(self.request_body()))
        self.send_json(200, COMPLETION)


@pytest.fixture
def endpoint() -> Iterator[str]:
    """A recording HTTP server on a free port of 127.0.0.1."""
    Recorder.bodies.clear()
    with serving(Recorder) as url:
        yield url


@pytest.mark.parametrize("logprobs", [False, True])
def test_the_body_on_the_wire_is_request_body(endpoint: str, logprobs: bool) -> None:
    """Through the real SDK and HTTP, the server receives request_body(messages), messages and settings included."""
    config = JudgeConfig(
        backend="openai", name="j", model="m", base_url=endpoint, api_key_env=None, top_p=0.9, logprobs=logprobs
    )
    judge = OpenAIJudge(config, RUBRIC)
    item = Item(id="i1", question="Q ü?", a="first answer", b="second answer")
    view = shown(item, 1, RUBRIC.labels)
    messages = render_messages(item, view, RUBRIC.system, RUBRIC.user, RUBRIC.tie_label)
    reply = judge.complete(Request(item, view, messages))
    assert [judge.request_body(messages)] == Recorder.bodies
    assert ("A", "served-model", 12) == (reply.text, reply.model, reply.prompt_tokens)
