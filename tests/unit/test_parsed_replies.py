"""A free judge's replies parsed once per reply object (engine.runner.ParsedReplies): never another reply's result."""

from __future__ import annotations

import gc

from judgebias.backends.base import Backend
from judgebias.core.item import Item
from judgebias.core.prompt import shown
from judgebias.core.record import Reply, Request
from judgebias.engine.judging import ParsedReplies, Pending
from tests.reliability.helpers import config_of


class _Free(Backend):
    """A judge that sends nothing (as scripted and replay judges): its replies are whatever the test hands it."""

    def complete(self, request: Request, meter: object = None) -> Reply:
        raise AssertionError("not asked here")


def test_a_reply_made_anew_for_every_call_is_read_as_itself() -> None:
    """Replies built and dropped one after another in the same view (as a replay judge's are, their memory reused):
    each is read as its own text says, A or B as the test wrote it, never as the view's last reply."""
    parsed = ParsedReplies(config_of("judge=replay", "judge.name=x"))
    item = Item("i", "Q?", "one", "two")
    request = Request(item, shown(item, 1, "letters"), [])
    expected = ["A" if n % 3 else "B" for n in range(2000)]
    got = []
    for text in expected:
        got.append(parsed.result(_Free(), request, Pending(reply=Reply(text=text))).label)
        gc.collect(0)
    assert expected == got


def test_the_same_reply_object_is_parsed_once_and_its_result_shared() -> None:
    """A scripted judge's one reply object per label: the second call of it gets the very result of the first."""
    parsed = ParsedReplies(config_of())
    item = Item("i", "Q?", "one", "two")
    request = Request(item, shown(item, 1, "letters"), [])
    reply = Reply(text="A")
    first = parsed.result(_Free(), request, Pending(reply=reply))
    assert first is parsed.result(_Free(), request, Pending(reply=reply))
    assert "A" == first.label
