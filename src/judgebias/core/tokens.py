"""The one estimate of a prompt's size in tokens, used before a call exists (pacing, dry-run cost).

About four characters per token, plus a few tokens of chat framing per message; real counts come back in usage.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

CHARS_PER_TOKEN = 4
TOKENS_PER_MESSAGE = 4


def estimate_prompt_tokens(messages: Sequence[Mapping[str, str]]) -> int:
    """Estimated prompt tokens of chat `messages`."""
    return sum(len(m["content"]) for m in messages) // CHARS_PER_TOKEN + TOKENS_PER_MESSAGE * len(messages)
