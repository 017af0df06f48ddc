"""The completions endpoint's pure parts: the prompt a base model continues, its first-token verdict and probabilities."""

from __future__ import annotations

import math

import pytest

from judgebias.core.completion import first_token_probs, first_token_verdict, render_completion_prompt
from judgebias.core.prompt import fold_system

LABELS = ("A", "B", "tie")


def test_the_prompt_joins_the_messages_and_ends_in_the_cue() -> None:
    """The system text comes first, then the user text, and the prompt ends exactly in the answer cue."""
    messages = [{"role": "system", "content": "Judge.\n"}, {"role": "user", "content": "Which is better?"}]
    assert "Judge.\n\nWhich is better?\n\nThe better answer is Answer" == render_completion_prompt(
        messages, "The better answer is Answer"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (" A", "A"),
        (" B\n\nThe other answer, Answer A, is shorter.", "B"),
        ("A.", "A"),
        (" tie", "tie"),
        (" b", "B"),
        (" C", "invalid"),
        ("", "invalid"),
        (None, "invalid"),
        (" Answer A", "invalid"),
    ],
)
def test_the_verdict_is_the_first_word_only(text: str | None, expected: str) -> None:
    """Only the first word counts: a continuation naming the other label afterwards keeps the first one's verdict."""
    assert expected == first_token_verdict(text, LABELS)


def test_every_spelling_of_a_label_adds_to_its_probability() -> None:
    """ " A", "A" and " a" are one label: their probabilities are summed; other tokens are left out."""
    top = {" A": math.log(0.5), "A": math.log(0.1), " a": math.log(0.05), " B": math.log(0.2), " (": math.log(0.1)}
    probs = first_token_probs(top, LABELS)
    assert probs is not None
    assert {"A", "B"} == set(probs)
    assert 0.65 == pytest.approx(probs["A"])
    assert 0.2 == pytest.approx(probs["B"])


def test_no_label_among_the_top_tokens_is_no_soft_verdict() -> None:
    """A first token whose top alternatives hold no label gives no probabilities (not zeros)."""
    assert first_token_probs({" ": -0.5, ":": -1.0}, LABELS) is None
    assert first_token_probs(None, LABELS) is None


def test_folding_the_system_role_keeps_its_text_first() -> None:
    """With the system role folded, one user message opens with the system text (templates that drop it, Gemma)."""
    messages = [{"role": "system", "content": "Rules."}, {"role": "user", "content": "Question?"}]
    assert [{"role": "user", "content": "Rules.\n\nQuestion?"}] == fold_system(messages)
    assert messages[1]["content"] == "Question?"  # the rendered messages themselves are left as they were
