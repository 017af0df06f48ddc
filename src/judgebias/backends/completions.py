"""The completions endpoint's request and reply (`judge.api=completions`), for base models that continue text.

The live judge (judgebias.backends.openai) sends these bodies through the same client, retries and pacing as chat
calls; only the shape differs: one `prompt` (the rubric's messages joined, ending in its answer cue) instead of
`messages`, `logprobs` as a count instead of a flag, and the reply in `choices[0].text` with the first token's top
log-probabilities in `choices[0].logprobs.top_logprobs[0]`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgebias.backends.chat_reply import cached_prompt_tokens, usage_count
from judgebias.config.schema import EndpointSettings
from judgebias.core.completion import first_token_probs
from judgebias.core.record import Reply

API = "completions"  # the cache key's "api" value; chat keys carry no "api" (their keys stay as they were)


def completion_cache_request(config: EndpointSettings, endpoint: str, prompt: str) -> dict[str, Any]:
    """Everything that decides a completion, for the cache key: the api, the prompt and the sampling settings."""
    key: dict[str, Any] = {
        "api": API,
        "endpoint": endpoint.rstrip("/"),
        "model": config.model,
        "prompt": prompt,
        "temperature": config.temperature,
        "max_tokens": config.max_tokens,
        "seed": config.seed,
        "top_p": config.top_p,
        "logprobs": config.logprobs,
    }
    if config.extra_body:
        key["extra_body"] = dict(config.extra_body)
    return key


def completion_body(config: EndpointSettings, prompt: str, top_logprobs: int | None) -> dict[str, Any]:
    """The /v1/completions request body as sent; a null setting is not sent, `top_logprobs` None asks for none."""
    params: dict[str, Any] = {"model": config.model, "prompt": prompt}
    for name, value in (
        ("temperature", config.temperature),
        ("max_tokens", config.max_tokens),  # the completions endpoint knows only this name for the budget
        ("seed", config.seed),
        ("top_p", config.top_p),
        ("logprobs", top_logprobs),
    ):
        if value is not None:
            params[name] = value
    params.update(config.extra_body)
    return params


def completion_reply(body: Mapping[str, Any], labels: tuple[str, str, str]) -> Reply:
    """The Reply of one completion response: the generated text and the labels' first-token probabilities."""
    choices = body.get("choices") or []
    choice: Mapping[str, Any] = choices[0] if choices else {}
    logprobs = choice.get("logprobs")
    tops = logprobs.get("top_logprobs") if isinstance(logprobs, Mapping) else None
    first = tops[0] if isinstance(tops, list) and tops and isinstance(tops[0], Mapping) else None
    usage: Mapping[str, Any] = body["usage"] if isinstance(body.get("usage"), Mapping) else {}
    return Reply(
        text=choice.get("text"),
        prompt_tokens=usage_count(usage.get("prompt_tokens")),
        completion_tokens=usage_count(usage.get("completion_tokens")),
        model=body.get("model"),
        finish_reason=choice.get("finish_reason"),
        probs=first_token_probs(first, labels),
        prompt_tokens_cached=cached_prompt_tokens(usage),
    )
