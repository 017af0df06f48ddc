"""Chat conversations read as items: the last user turn is the question, the turns both conversations share the
context, each final assistant reply the answer. Expected values written by hand from the conversations."""

from __future__ import annotations

import pytest

from judgebias.core.conversation import ConversationError, as_item_fields, is_conversation

SYSTEM = {"role": "system", "content": "Be brief."}
ASK = {"role": "user", "content": "Name a fruit."}
APPLE = {"role": "assistant", "content": "Apple."}
PEAR = {"role": "assistant", "content": "Pear."}
WHY = {"role": "user", "content": "Why that one?"}


def test_answers_as_conversations_share_their_common_turns_once() -> None:
    record = {
        "id": "c1",
        "a": [SYSTEM, ASK, APPLE, WHY, {"role": "assistant", "content": "It is crisp."}],
        "b": [SYSTEM, ASK, APPLE, WHY, {"role": "assistant", "content": [{"type": "text", "text": "Sweet."}]}],
    }
    assert is_conversation(record)
    fields = as_item_fields(record)
    assert fields["question"] == "Why that one?"
    assert fields["a"] == "It is crisp." and fields["b"] == "Sweet."
    assert fields["context"] == ("### System:\nBe brief.\n\n### User:\nName a fruit.\n\n### Assistant:\nApple.")
    assert fields["id"] == "c1"


def test_turns_where_the_conversations_part_are_shown_with_each_answer() -> None:
    record = {
        "id": "c2",
        "a": [ASK, APPLE, WHY, {"role": "assistant", "content": "Crisp."}],
        "b": [ASK, PEAR, WHY, {"role": "assistant", "content": "Soft."}],
    }
    fields = as_item_fields(record)
    assert fields["context"] == "### User:\nName a fruit."
    assert fields["a"] == "### Assistant:\nApple.\n\n### User:\nWhy that one?\n\n### Assistant (final reply):\nCrisp."
    assert fields["b"] == "### Assistant:\nPear.\n\n### User:\nWhy that one?\n\n### Assistant (final reply):\nSoft."


def test_a_shared_history_with_two_final_replies() -> None:
    record = {"id": "c3", "messages": [ASK, APPLE, WHY], "a": "Crisp.", "b": "Soft.", "topic": "fruit"}
    fields = as_item_fields(record)
    assert "messages" not in fields and fields["topic"] == "fruit"
    assert (fields["question"], fields["a"], fields["b"]) == ("Why that one?", "Crisp.", "Soft.")
    assert fields["context"] == "### User:\nName a fruit.\n\n### Assistant:\nApple."


def test_a_one_turn_conversation_has_no_context() -> None:
    fields = as_item_fields({"id": "c4", "a": [ASK, APPLE], "b": [ASK, PEAR]})
    assert "context" not in fields and (fields["question"], fields["a"], fields["b"]) == (
        "Name a fruit.",
        "Apple.",
        "Pear.",
    )


@pytest.mark.parametrize(
    ("record", "field", "problem"),
    [
        ({"a": [ASK], "b": [ASK, PEAR]}, "a", "must end with a user turn and the assistant's reply"),
        ({"a": [ASK, APPLE], "b": [WHY, PEAR]}, "b", "its last user turn differs from a's"),
        ({"a": [ASK, {"role": "robot", "content": "x"}], "b": [ASK, PEAR]}, "a", "message 2: role must be one of"),
        ({"a": [ASK, {"role": "assistant", "content": 5}], "b": [ASK, PEAR]}, "a", "message 2: content must be text"),
        ({"messages": [ASK, APPLE], "a": "x", "b": "y"}, "messages", "must end with the user turn"),
        ({"messages": [ASK], "a": [ASK, APPLE], "b": "y"}, "a", "a and b are the two final replies"),
        ({"a": [], "b": [ASK, PEAR]}, "a", "must be a non-empty list of messages"),
    ],
)
def test_a_conversation_that_cannot_be_read_names_its_field(record: dict, field: str, problem: str) -> None:
    with pytest.raises(ConversationError) as raised:
        as_item_fields(record)
    assert raised.value.field == field and problem in raised.value.problem


def test_one_answer_a_conversation_and_the_other_text_names_the_text_side() -> None:
    with pytest.raises(ConversationError) as raised:
        as_item_fields({"a": "plain text", "b": [ASK, PEAR]})
    assert raised.value.field == "a" and "must be a conversation (a list of messages) too" in raised.value.problem
