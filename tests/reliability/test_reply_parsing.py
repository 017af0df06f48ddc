"""Odd judge replies, read by the parser to a verdict or to "invalid" (never a guess), in bounded time."""

from __future__ import annotations

import time
from typing import Any

import pytest

from judgebias.core.item import Item
from judgebias.core.parsing import parse_reply
from judgebias.core.prompt import render_messages, shown
from tests.reliability.helpers import shipped_rubric

pytestmark = pytest.mark.reliability


def prompt(rubric: str) -> tuple[str, str]:
    """The (system, user) messages of a shipped rubric for one item, as a judge that echoes them would copy them."""
    spec = shipped_rubric(rubric)
    one = Item(id="copy", question="What is 2 + 2?", a="4", b="Four, since 2 + 2 = 4.")
    messages = render_messages(one, shown(one, 1, "letters"), spec.system, spec.user, spec.tie_label)
    return messages[0]["content"], messages[1]["content"]


SYSTEM, USER = prompt("default")
B_SYSTEM, B_USER = prompt("brackets")

# (style, reply, verdict); labels A/B, tie word "tie" ("C" for brackets)
REPLIES: list[Any] = [
    # empty
    pytest.param("label", None, "invalid", id="none"),
    pytest.param("label", "", "invalid", id="empty"),
    pytest.param("label", " \n\t\u3000", "invalid", id="only-whitespace"),
    pytest.param("brackets", "", "invalid", id="brackets-empty"),
    pytest.param("pandalm", "", "invalid", id="pandalm-empty"),
    # very long
    pytest.param("label", "x " * 50_000 + "\nB", "B", id="100kb-then-label-line"),
    pytest.param("label", "." * 100_000, "invalid", id="100kb-of-dots"),
    pytest.param("label", "are equally good " * 3_000, "tie", id="50kb-repeated-tie-claim"),
    pytest.param("label", "A is better than B. " * 3_000, "A", id="60kb-repeated-claim"),
    pytest.param("brackets", "Reasoning. " * 10_000 + "[[B]]", "B", id="brackets-100kb-then-verdict"),
    # both labels
    pytest.param("label", "A B", "invalid", id="both-bare"),
    pytest.param("label", "A and B are both good.", "invalid", id="both-good"),
    pytest.param("label", "Answer A is better. Answer B is better.", "invalid", id="both-better"),
    pytest.param("brackets", "[[A]] [[B]]", "invalid", id="brackets-both"),
    pytest.param("pandalm", "1\nResponse 2 is better.", "invalid", id="pandalm-contradiction"),
    # neither label
    pytest.param("label", "Both answers are wrong.", "invalid", id="neither-wrong"),
    pytest.param("label", "I cannot decide.", "invalid", id="cannot-decide"),
    pytest.param("label", "C", "invalid", id="a-label-not-offered"),
    pytest.param("brackets", "The answers are similar.", "invalid", id="brackets-no-token"),
    # labels in another language: the translated noun and the label alone on a line are read, nothing else
    pytest.param("label", "Respuesta B", "B", id="spanish-noun-and-label"),
    pytest.param("label", "Réponse A", "A", id="french-noun-and-label"),
    pytest.param("label", "Antwort: B", "B", id="german-noun-colon-label"),
    pytest.param("label", "答案：A", "A", id="chinese-noun-and-label"),
    pytest.param("label", "Ответ B", "B", id="russian-noun-and-label"),
    pytest.param("label", "La respuesta A es mejor.", "invalid", id="spanish-sentence"),
    pytest.param("label", "Antwort B ist besser.", "invalid", id="german-sentence"),
    pytest.param("label", "empate", "invalid", id="spanish-tie-word"),
    pytest.param("label", "Ａ", "invalid", id="fullwidth-letter"),
    pytest.param("label", "A\u0301", "invalid", id="a-with-combining-accent"),
    pytest.param("label", "\u202eA", "invalid", id="bidi-control-then-label"),
    pytest.param("label", "A\u0000", "invalid", id="label-then-nul"),
    # a reply that copies the prompt
    pytest.param("label", USER, "invalid", id="copies-the-user-prompt"),
    pytest.param("label", SYSTEM + "\n" + USER, "invalid", id="copies-the-whole-prompt"),
    pytest.param("label", SYSTEM, "invalid", id="copies-the-instructions"),
    pytest.param("label", USER + "\n\nB", "B", id="copies-the-prompt-then-answers"),
    pytest.param("brackets", B_SYSTEM, "invalid", id="brackets-copies-the-format"),
    pytest.param("brackets", B_SYSTEM + "\n" + B_USER, "invalid", id="brackets-copies-the-prompt"),
    pytest.param("brackets", B_USER + "\n\nB is better. [[B]]", "B", id="brackets-copy-then-verdict"),
]


@pytest.mark.parametrize(("style", "reply", "verdict"), REPLIES)
def test_an_odd_reply_is_read_or_refused_never_guessed(style: str, reply: str | None, verdict: str) -> None:
    """Empty, very long, both labels, neither, other languages, prompt copies: a verdict or "invalid", in bounded time."""
    started = time.perf_counter()
    got = parse_reply(reply, style=style, tie_label="C" if style == "brackets" else "tie")
    assert verdict == got
    assert time.perf_counter() - started < 5.0


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [("K7", "A"), ("Q2", "B"), ("K7 Q2", "invalid"), ("A", "invalid"), ("B", "invalid"), ("tie", "tie")],
)
def test_with_random_tags_only_the_tags_shown_count(reply: str, verdict: str) -> None:
    """With tags K7 / Q2 shown, a reply naming "A" or "B" is invalid: labels the judge was not shown are not guessed."""
    assert verdict == parse_reply(reply, style="label", labels=("K7", "Q2"), tie_label="tie")
