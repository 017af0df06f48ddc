"""Chat conversations as items: each answer an OpenAI-style `messages` list, or one shared `messages` history with
two final replies. Pure logic.

The judge compares the assistants' final replies to the last user turn. The turns both conversations share are
shown once, as the item's context (before the question: every call of the item starts with them, so a provider's
prompt cache reads them once); turns where the two conversations part (earlier replies of each assistant) are
shown with each answer, so the judge sees what each assistant was answering.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

ROLES = ("system", "user", "assistant")


class ConversationError(ValueError):
    """What is wrong with a conversation: the field it is in, and the problem."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(problem)
        self.field = field
        self.problem = problem


def is_conversation(record: Mapping[str, Any]) -> bool:
    """Whether the record holds its answers as conversations (a or b a list, or a shared `messages` history)."""
    return isinstance(record.get("a"), list) or isinstance(record.get("b"), list) or "messages" in record


def as_item_fields(record: Mapping[str, Any]) -> dict[str, Any]:
    """The record with question, context, a and b as text read from its conversations (`messages` dropped): the
    last user turn is the question, the turns both share before it the context, each final assistant turn the answer
    (with the turns where the conversations differ before it). ConversationError names the field and the problem."""
    shared = record.get("messages")
    if shared is not None:
        history = _turns(shared, "messages")
        a, b = record.get("a"), record.get("b")
        if not isinstance(a, str) or not isinstance(b, str):
            problem = "with a shared messages history, a and b are the two final replies (strings)"
            raise ConversationError("a" if not isinstance(a, str) else "b", problem)
        if not history or history[-1][0] != "user":
            raise ConversationError("messages", "the history must end with the user turn the replies answer")
        before, question = history[:-1], history[-1][1]
        return _fields(record, question, before, ([], a), ([], b))
    sides = {field: _turns(record[field], field) for field in ("a", "b") if isinstance(record.get(field), list)}
    if len(sides) < 2:
        missing = "b" if "a" in sides else "a"
        raise ConversationError(
            missing,
            "must be a conversation (a list of messages) too, as the other answer is one; or give one shared "
            "`messages` history, with a and b the two final replies",
        )
    side_a, side_b = sides["a"], sides["b"]
    (history_a, final_a), (history_b, final_b) = _split(side_a, "a"), _split(side_b, "b")
    question = history_a[-1][1]
    if history_b[-1][1] != question:
        raise ConversationError("b", "its last user turn differs from a's: the two replies must answer the same turn")
    common = _common_length(history_a[:-1], history_b[:-1])
    shared_turns = history_a[:common]
    return _fields(record, question, shared_turns, (history_a[common:-1], final_a), (history_b[common:-1], final_b))


Turn = tuple[str, str]  # (role, text)


def _fields(
    record: Mapping[str, Any],
    question: str,
    shared: Sequence[Turn],
    side_a: tuple[Sequence[Turn], str],
    side_b: tuple[Sequence[Turn], str],
) -> dict[str, Any]:
    fields = {key: value for key, value in record.items() if key != "messages"}
    fields["question"] = question
    fields["a"] = _answer(*side_a, question)
    fields["b"] = _answer(*side_b, question)
    if shared:
        context = transcript(shared)
        given = record.get("context")
        fields["context"] = f"{given}\n\n{context}" if isinstance(given, str) and given.strip() else context
    return fields


def _answer(earlier: Sequence[Turn], final: str, question: str) -> str:
    """A final reply, after the turns of its own conversation that the other does not share and the last user turn
    (none: the reply alone)."""
    if not earlier:
        return final
    return f"{transcript([*earlier, ('user', question)])}\n\n### Assistant (final reply):\n{final}"


def transcript(turns: Sequence[Turn]) -> str:
    """Turns as text, one block per turn: "### User:" and the text."""
    return "\n\n".join(f"### {role.capitalize()}:\n{text}" for role, text in turns)


def _split(turns: list[Turn], field: str) -> tuple[list[Turn], str]:
    """(the turns up to the last user turn, the final assistant reply)."""
    if len(turns) < 2 or turns[-1][0] != "assistant" or turns[-2][0] != "user":
        raise ConversationError(field, "the conversation must end with a user turn and the assistant's reply to it")
    return turns[:-1], turns[-1][1]


def _common_length(first: Sequence[Turn], second: Sequence[Turn]) -> int:
    length = 0
    for one, other in zip(first, second, strict=False):
        if one != other:
            break
        length += 1
    return length


def _turns(value: object, field: str) -> list[Turn]:
    """An OpenAI-style messages list as (role, text) turns; the content as text (a list of text parts joined)."""
    if not isinstance(value, list) or not value:
        raise ConversationError(field, 'must be a non-empty list of messages ({"role": ..., "content": ...})')
    turns = []
    for number, message in enumerate(value, start=1):
        if not isinstance(message, Mapping):
            raise ConversationError(field, f"message {number} is not an object with role and content")
        role = message.get("role")
        if role not in ROLES:
            raise ConversationError(field, f"message {number}: role must be one of {', '.join(ROLES)}, got {role!r}")
        turns.append((str(role), _content(message.get("content"), field, number)))
    return turns


def _content(content: object, field: str, number: int) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # parts: [{"type": "text", "text": "..."}]
        texts = [part.get("text") for part in content if isinstance(part, Mapping) and part.get("type") == "text"]
        if texts and all(isinstance(text, str) for text in texts) and len(texts) == len(content):
            return "\n".join(str(text) for text in texts)
    raise ConversationError(field, f"message {number}: content must be text (or a list of text parts)")
