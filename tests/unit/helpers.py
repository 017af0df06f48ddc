"""Helpers of the unit tests: a judge's row from two positional calls, and an item judged in both orders."""

from __future__ import annotations

from typing import Any

from judgebias.backends.scripted import ScriptedJudge
from judgebias.config.schema import RubricConfig
from judgebias.core.item import Item
from judgebias.core.judged import item_result
from judgebias.core.parsing import parse_reply
from judgebias.core.prompt import shown
from judgebias.core.record import CallResult, ItemResult, Request
from judgebias.core.verdict import is_consistent, reconcile


def row(call1: str, call2: str | None, id: str = "x", **fields: Any) -> ItemResult:
    """One judge's row as the runner builds it: verdict and consistency from the two positional calls."""
    return ItemResult(
        id=id,
        verdict=reconcile(call1, call2),
        call1=call1,
        call2=call2,
        consistent=is_consistent(call1, call2),
        **fields,
    )


RUBRIC = RubricConfig(name="default", system="s", user="u")


def both_orders(judge: ScriptedJudge, item: Item) -> ItemResult:
    """The item's row as the runner builds it from the judge's replies in both orders (label parser)."""
    calls = []
    for order in (1, 2):
        reply = judge.complete(Request(item, shown(item, order, "letters"), []))
        calls.append(CallResult(parse_reply(reply.text, style="label"), reply.text, False))
    return item_result(item, calls)
