"""The part of a prompt two calls share from its first character: what a server's prompt cache can serve the second
call from the first (OpenAI, Anthropic, Gemini, vLLM and llama.cpp all cache prefixes). Pure logic.

An item's two orders share the rubric's system text, the context and the question when the answers come after them
(every shipped rubric's layout); a rubric that shows an answer first shares almost nothing, and pays for it twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from judgebias.core.item import Item
from judgebias.core.prompt import FENCE_OPEN, render_messages, shown

# OpenAI's rule, the strictest of the common ones: a prefix is cached from 1,024 tokens, in steps of 128.
CACHE_MIN_TOKENS = 1024
CACHE_STEP_TOKENS = 128


def prompt_text(messages: Sequence[Mapping[str, str]]) -> str:
    """A call's messages as the one text a prefix cache reads, in the order they are sent."""
    return "\n".join(f"{message['role']}\n{message['content']}" for message in messages)


def shared_prefix(first: str, second: str) -> int:
    """How many characters two prompts share from their start (prefixes compared whole, halving the range: a few
    comparisons in C, not a loop over every character)."""
    low, high = 0, min(len(first), len(second))
    while low < high:
        middle = (low + high + 1) // 2
        if first[:middle] == second[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def cacheable_tokens(tokens: int, share: float) -> int:
    """Of a prompt of `tokens` tokens whose first `share` is a prefix seen just before, the tokens a cache that
    follows OpenAI's rule serves: none under 1,024, else the shared tokens rounded down to a step of 128."""
    shared = int(tokens * min(max(share, 0.0), 1.0))
    return 0 if shared < CACHE_MIN_TOKENS else shared - shared % CACHE_STEP_TOKENS


def shared_share(order1: Sequence[Mapping[str, str]], order2: Sequence[Mapping[str, str]]) -> float:
    """The share of the second order's prompt (in characters) that the first order's prompt shares from its start."""
    first, second = prompt_text(order1), prompt_text(order2)
    return shared_prefix(first, second) / len(second) if second else 0.0


LOW_SHARE = 0.3  # a layout whose two orders share less than this of a typical prompt is said at the start
_TYPICAL = Item(  # a question and two answers of typical lengths (about 200, 150 and 150 words)
    id="layout", question=" ".join(["question"] * 200), a=" ".join(["alpha"] * 150), b=" ".join(["beta"] * 150)
)


def layout_share(system: str, user: str, labels: str, tie_label: str) -> float:
    """The share of a typical prompt an item's two orders share from its start under this rubric's templates."""
    order1, order2 = (
        render_messages(_TYPICAL, shown(_TYPICAL, order, labels), system, user, tie_label) for order in (1, 2)
    )
    return shared_share(order1, order2)


def layout_note(rubric: str, share: float) -> str | None:
    """What a paid run says of a rubric whose two orders share little: the prompt cache then serves little."""
    if share >= LOW_SHARE:
        return None
    return (
        f"rubric {rubric!r}: an item's two orders share only {100 * share:.0f}% of a typical prompt from its start "
        "(an answer, or a label that differs by order, comes before the question), so a server's prompt cache "
        "serves little of the second call: the shipped rubrics put the system text, {context} and {question} "
        "before {first} and {second} (docs/speed.md#shared-prefixes)"
    )


CACHE_MARK = {"type": "ephemeral"}  # Anthropic's cache breakpoint (cache_control), as gateways pass it on


def marked(messages: Sequence[Mapping[str, str]]) -> list[dict[str, object]]:
    """The messages with the part every call of an item shares marked for an explicit prompt cache (Anthropic's
    `cache_control`, through a gateway that passes it on): the system text, and the user text up to the first
    fenced answer, each a text part ending in a breakpoint. The text sent is the same, part by part."""
    out: list[dict[str, object]] = []
    for message in messages:
        role, content = message["role"], message["content"]
        at = content.find(FENCE_OPEN) if role == "user" else -1
        if role == "system" and content:
            out.append({"role": role, "content": [{"type": "text", "text": content, "cache_control": CACHE_MARK}]})
        elif at > 0:
            shared = {"type": "text", "text": content[:at], "cache_control": CACHE_MARK}
            out.append({"role": role, "content": [shared, {"type": "text", "text": content[at:]}]})
        else:
            out.append(dict(message))
    return out
