"""The dev server behaves as a reasoning model, a thinking model, a rate limiter and a gateway (over real HTTP)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest

from judgebias.devserver.server import REASONING_TOKENS, RunningServer

StartServer = Callable[..., RunningServer]
PROMPT = (
    "Which is better?\n\n[The Start of Answer A · 1a2b3c4d]\nshort\n[The End of Answer A · 1a2b3c4d]\n\n"
    "[The Start of Answer B · 5e6f7a8b]\na much longer answer\n[The End of Answer B · 5e6f7a8b]"
)


def post(server: RunningServer, **body: Any) -> tuple[int, dict[str, str], dict[str, Any]]:
    """POST a chat completion; (status, lower-cased headers, JSON body)."""
    payload = json.dumps({"model": "m", "messages": [{"role": "user", "content": PROMPT}], **body}).encode()
    request = urllib.request.Request(
        f"{server.url}/chat/completions", payload, {"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, json.load(error)


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"temperature": 0}, "unsupported_value"),
        ({"top_p": 0.5}, "unsupported_value"),
        ({"max_tokens": 100}, "unsupported_parameter"),
        ({"logprobs": True, "top_logprobs": 5}, "unsupported_parameter"),
        ({"reasoning_effort": "extreme"}, "unsupported_value"),
    ],
)
def test_a_reasoning_model_refuses_what_openais_refuse(body: dict[str, Any], code: str, server: StartServer) -> None:
    """temperature/top_p other than 1, max_tokens, logprobs and an unknown effort are answered 400."""
    status, _, reply = post(server(reasoning_models=("m",)), **body)
    assert (400, code) == (status, reply["error"]["code"])


def test_a_reasoning_model_bills_its_hidden_tokens_and_can_run_out_of_budget(server: StartServer) -> None:
    """Reasoning tokens come out of max_completion_tokens and are counted; too small a budget leaves nothing."""
    judge = server(reasoning_models=("m",))
    _, _, enough = post(judge, max_completion_tokens=1000, reasoning_effort="low")
    _, _, short = post(judge, max_completion_tokens=100, reasoning_effort="medium")
    usage = enough["usage"]
    assert ("B", REASONING_TOKENS["low"] + 1, REASONING_TOKENS["low"]) == (
        enough["choices"][0]["message"]["content"],
        usage["completion_tokens"],
        usage["completion_tokens_details"]["reasoning_tokens"],
    )
    assert ("", "length", 100) == (
        short["choices"][0]["message"]["content"],
        short["choices"][0]["finish_reason"],
        short["usage"]["completion_tokens"],
    )


@pytest.mark.parametrize("think", ["inline", "field"])
def test_a_thinking_model_names_the_other_answer_before_its_verdict(think: str, server: StartServer) -> None:
    """Inline: <think>...</think> then the verdict; field: the thinking in reasoning_content, the verdict alone."""
    _, _, reply = post(server(think=think))
    message = reply["choices"][0]["message"]
    thinking = "Answer A looks better at first sight. Weighing both again, my verdict is B."
    expected = (f"<think>\n{thinking}\n</think>\n\nB", None) if think == "inline" else ("B", thinking)
    assert expected == (message["content"], message.get("reasoning_content"))


@pytest.mark.parametrize(
    ("style", "names"),
    [
        ("openai", {"retry-after", "retry-after-ms"}),
        ("litellm", {"llm_provider-retry-after", "llm_provider-retry-after-ms"}),
        ("reset", {"x-ratelimit-remaining-requests", "x-ratelimit-reset-requests"}),
    ],
)
def test_a_rate_limit_announces_its_wait_in_the_chosen_style(style: str, names: set[str], server: StartServer) -> None:
    """A 429 carries OpenAI's, LiteLLM's or the rate limiter's wait headers, and only those."""
    judge = server(rate_limit=0.5, wait_style=style)
    post(judge)
    status, headers, _ = post(judge)
    wait_headers = {name for name in headers if "retry-after" in name or name.startswith("x-ratelimit")}
    assert (429, names) == (status, wait_headers)


def test_a_gateway_error_puts_the_status_in_the_body(server: StartServer) -> None:
    """In gateway style a wrong key is LiteLLM's 400 "No connected db." with "code": "400"."""
    judge = server(api_key="right", error_style="gateway")
    status, _, reply = post(judge)
    assert (400, "No connected db.", "400") == (status, reply["error"]["message"], reply["error"]["code"])
