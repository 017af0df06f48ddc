"""Open-weight reasoning judges: the verdict is read after the thinking, never from inside it."""

from __future__ import annotations

import pytest

from judgebias.core.parsing import answer_part, parse_reply


@pytest.mark.parametrize(
    ("reply", "style", "verdict"),
    [
        ("<think>\nAnswer B looks better at first. Weighing again, A.\n</think>\n\nA", "label", "A"),
        ("<think>Output (a) is better? No.</think>\nOutput (b) is better.", "llmbar", "B"),
        ("B seems stronger, but it is wrong.</think>\n[[A]]", "brackets", "A"),
        (
            "<|channel|>analysis<|message|>B is better<|end|><|start|>assistant<|channel|>final<|message|>A<|return|>",
            "label",
            "A",
        ),
    ],
)
def test_the_label_is_read_from_the_answer_after_the_reasoning(reply: str, style: str, verdict: str) -> None:
    """A label named inside <think>...</think> (or gpt-oss's analysis channel) does not count."""
    assert verdict == parse_reply(reply, style=style)


@pytest.mark.parametrize(
    "reply", ["<think>Answer A is better, so A", "<|channel|>analysis<|message|>A is clearly better"]
)
def test_a_reply_that_never_stops_thinking_is_invalid(reply: str) -> None:
    """A reply cut off inside its reasoning has no answer: invalid, never the label the thinking leaned to."""
    assert "invalid" == parse_reply(reply, style="label")


def test_a_reply_without_thinking_is_unchanged() -> None:
    """Replies without reasoning markup are read as before."""
    assert "The answer is A." == answer_part("The answer is A.")
