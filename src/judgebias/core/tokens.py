"""The one estimate of a prompt's size in tokens, used before a call exists (pacing, dry-run cost).

About four characters per token, or a named tokenizer's count when one is given (`data.normalize.tokenizer`),
plus a few tokens of chat framing per message; real counts come back in usage.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

CHARS_PER_TOKEN = 4
TOKENS_PER_MESSAGE = 4


def estimate_prompt_tokens(messages: Sequence[Mapping[str, str]], count: Callable[[str], int] | None = None) -> int:
    """Estimated prompt tokens of chat `messages`: counted by `count` (a tokenizer's), else from their length."""
    framing = TOKENS_PER_MESSAGE * len(messages)
    if count is not None:
        return sum(count(m["content"]) for m in messages) + framing
    return sum(len(m["content"]) for m in messages) // CHARS_PER_TOKEN + framing


def prompt_token_bound(messages: Sequence[Mapping[str, str]]) -> int:
    """An upper bound on the prompt tokens any server counts for chat `messages`, whatever its tokenizer: the UTF-8
    bytes of the messages as JSON (roles, framing and content). No byte-level tokenizer makes more tokens than
    bytes, and a chat template's own markers (a few tokens a message) are fewer than the JSON framing's bytes."""
    return sum(
        len(message["content"].encode("utf-8", "surrogatepass")) + len(message.get("role", "")) + BOUND_FRAMING
        for message in messages
    )


BOUND_FRAMING = 32  # bytes of a message's JSON framing beyond its role and content ({"role": "", "content": ""})
