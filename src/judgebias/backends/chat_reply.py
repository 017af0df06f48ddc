"""A chat-completion response read into a Reply, whatever a server sends: never an exception, always a Reply.

A body that carries no verdict becomes a Reply with an `outcome` and a `reason` (docs/outputs.md): a refusal (its
text kept), a content filter, tool calls only, an error object sent with status 200, no choices, a body that is not
JSON. Content given as a list of parts is read as its text parts joined. Who answered is read from the body
(`model`, `system_fingerprint`, a router's `provider`) and, when a gateway names it, from the headers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from judgebias.core.record import COUNT_RANGE, Reply

LabelProbs = Callable[[Any], dict[str, float] | None]  # a choice's `logprobs` -> label probabilities

# LiteLLM's proxy names the deployment that answered, and the fallbacks and retries it made, in these headers.
DEPLOYMENT_HEADER = "x-litellm-model-name"
DEPLOYMENT_ID_HEADER = "x-litellm-model-id"
API_BASE_HEADER = "x-litellm-model-api-base"
FALLBACKS_HEADER = "x-litellm-attempted-fallbacks"
RETRIES_HEADER = "x-litellm-attempted-retries"
SNIPPET = 120  # characters of an unexpected body quoted in a reason


def reply_of_text(text: str, headers: Mapping[str, str] | None, label_probs: LabelProbs) -> Reply:
    """The Reply of a raw response body (its text) and headers."""
    try:
        body = json.loads(text)
    except ValueError:
        snippet = " ".join(text.split())[:SNIPPET]
        return _with_origin(Reply(None, outcome="not_json", reason=f"the body is not JSON: {snippet!r}"), headers)
    if not isinstance(body, Mapping):
        reason = f"the body is JSON but not an object: {type(body).__name__}"
        return _with_origin(Reply(None, outcome="not_json", reason=reason), headers)
    return reply_of_body(body, headers, label_probs)


def reply_of_body(body: Mapping[str, Any], headers: Mapping[str, str] | None, label_probs: LabelProbs) -> Reply:
    """The Reply of a parsed chat-completion body (a live response, or a batch output line's body)."""
    return _with_origin(_reply(body, label_probs), headers)


def _reply(body: Mapping[str, Any], label_probs: LabelProbs) -> Reply:
    usage = body.get("usage") if isinstance(body.get("usage"), Mapping) else {}
    assert isinstance(usage, Mapping)
    empty = Reply(
        None,
        prompt_tokens=usage_count(usage.get("prompt_tokens")),
        completion_tokens=usage_count(usage.get("completion_tokens")),
        model=_text_or_none(body.get("model")),
        system_fingerprint=_text_or_none(body.get("system_fingerprint")),
        provider=_text_or_none(body.get("provider")),
        reasoning_tokens=_reasoning_tokens(usage),
        prompt_tokens_cached=cached_prompt_tokens(usage),
    )
    error = body.get("error")
    if error:
        message = error.get("message") if isinstance(error, Mapping) else error
        return _replace(empty, outcome="error_body", reason=f"an error sent with status 200: {str(message)[:200]}")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        reason = "the reply has no choices" if not choices else "the reply's first choice is not an object"
        return _replace(empty, outcome="no_choices", reason=reason)
    choice: Mapping[str, Any] = choices[0]
    message = choice.get("message") if isinstance(choice.get("message"), Mapping) else {}
    assert isinstance(message, Mapping)
    finish_reason = _text_or_none(choice.get("finish_reason"))
    text = content_text(message.get("content"))
    base = _replace(empty, text=text, finish_reason=finish_reason, probs=label_probs(choice.get("logprobs")))
    refusal = message.get("refusal")
    if refusal and not (text or "").strip():
        return _replace(base, text=str(refusal), outcome="refusal", reason="the judge refused to answer")
    if finish_reason == "content_filter" and not (text or "").strip():
        return _replace(base, outcome="content_filter", reason="the provider's content filter withheld the reply")
    if message.get("tool_calls") and not (text or "").strip():
        return _replace(base, outcome="tool_calls", reason="the reply holds tool calls only, no text")
    return base


def content_text(content: object) -> str | None:
    """A message's content as text: a string as it is, a list of parts as its text parts joined, else None."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            str(part.get("text", ""))
            for part in content
            if isinstance(part, Mapping) and part.get("type") in ("text", "output_text") and part.get("text")
        ]
        return "".join(parts) if parts else None
    return None


# Headers by which gateways say they served a reply from their own response cache (the header, the values of a hit;
# None: present at all is a hit). LiteLLM sets x-litellm-cache-key on a cache hit only.
GATEWAY_CACHE_HEADERS = (
    ("litellm", "x-litellm-cache-key", None),
    ("portkey", "x-portkey-cache-status", ("hit", "semantic hit")),
    ("helicone", "helicone-cache", ("hit",)),
    ("cloudflare", "cf-aig-cache-status", ("hit",)),
)


def gateway_cache(headers: Mapping[str, str]) -> str | None:
    """The gateway whose response cache served a reply, from its headers; None for a reply the model wrote now."""
    for gateway, header, hits in GATEWAY_CACHE_HEADERS:
        value = headers.get(header)
        if value and (hits is None or value.strip().lower() in hits):
            return gateway
    return None


def _with_origin(reply: Reply, headers: Mapping[str, str] | None) -> Reply:
    """The reply with what a gateway's headers say of its origin (none: as it is)."""
    if not headers:
        return reply
    cached_by = gateway_cache(headers)
    if cached_by is not None:
        reply = _replace(reply, gateway_cache=cached_by)
    deployment = bounded(headers.get(DEPLOYMENT_HEADER) or None)
    deployment_id = bounded(headers.get(DEPLOYMENT_ID_HEADER) or None)
    api_base = bounded(headers.get(API_BASE_HEADER) or None)
    fallbacks = usage_count(headers.get(FALLBACKS_HEADER))
    retries = usage_count(headers.get(RETRIES_HEADER))
    if not (deployment or deployment_id or api_base or fallbacks or retries):
        return reply
    return _replace(
        reply,
        deployment=deployment,
        deployment_id=deployment_id,
        api_base=api_base,
        fallbacks=fallbacks,
        gateway_retries=retries,
    )


def _replace(reply: Reply, **changes: Any) -> Reply:
    import dataclasses

    return dataclasses.replace(reply, **changes)


def usage_count(value: object) -> int:
    """A count from a body or header value (usage tokens, a gateway's retries), read the same way on every path
    (chat, completions, batch output): anything unreadable is 0, a negative one 0, one beyond what a stored reply
    may hold (COUNT_RANGE) that bound, so a server's odd usage can neither make a cost negative nor break the cache."""
    try:
        number = int(float(str(value).strip())) if value is not None and not isinstance(value, bool) else 0
    except (ValueError, OverflowError):
        return 0
    return min(max(COUNT_RANGE[0], number), COUNT_RANGE[1])


# Where servers report the prompt tokens their prompt cache served, as a part of prompt_tokens: OpenAI, Azure, vLLM
# and LiteLLM in usage.prompt_tokens_details.cached_tokens; Anthropic's shape (and LiteLLM beside the first) in
# usage.cache_read_input_tokens; DeepSeek in usage.prompt_cache_hit_tokens.
CACHED_USAGE = (
    ("prompt_tokens_details", "cached_tokens"),
    (None, "cache_read_input_tokens"),
    (None, "prompt_cache_hit_tokens"),
)


def cached_prompt_tokens(usage: Mapping[str, Any]) -> int:
    """The prompt tokens a server's prompt cache served, in the first shape the usage reports (0: none said), never
    more than the prompt itself."""
    for parent, name in CACHED_USAGE:
        holder = usage.get(parent) if parent is not None else usage
        if isinstance(holder, Mapping) and holder.get(name) is not None:
            return min(usage_count(holder.get(name)), usage_count(usage.get("prompt_tokens")))
    return 0


def _reasoning_tokens(usage: Mapping[str, Any]) -> int:
    """usage.completion_tokens_details.reasoning_tokens: the hidden tokens a reasoning model spent (0: none said)."""
    details = usage.get("completion_tokens_details")
    return usage_count(details.get("reasoning_tokens")) if isinstance(details, Mapping) else 0


MAX_NAME = 200  # characters kept of a name a server reports (model, deployment, fingerprint): a name, not a payload


def bounded(value: str | None) -> str | None:
    """A server's name for something, kept to MAX_NAME characters (the rest said, not stored)."""
    if value is None or len(value) <= MAX_NAME:
        return value
    return f"{value[:MAX_NAME]}... ({len(value)} characters)"


def _text_or_none(value: object) -> str | None:
    return bounded(value) if isinstance(value, str) and value else None
