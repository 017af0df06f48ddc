"""The rows the metrics keep and the replies the cache keeps: every field survives dropping the reply texts, and
every field of a reply survives the cache."""

from __future__ import annotations

import dataclasses

from judgebias.core.record import REPLY_OPTIONAL_FIELDS, CallResult, ItemResult, Reply, reply_problem
from tests.helpers import filled


def test_a_call_without_its_reply_keeps_every_other_field() -> None:
    """without_reply() is the call with raw=None and nothing else changed, whatever fields CallResult has."""
    call = filled(CallResult)
    assert dataclasses.replace(call, raw=None) == call.without_reply()


def test_shared_slim_calls_are_told_apart_by_every_field() -> None:
    """Equal slim calls are one object, and two calls that differ in any one field (but the reply text) never
    share one, whatever fields CallResult has: each slim call equals its own call with raw=None."""
    base = filled(CallResult, probs=None, origin=None)
    assert base.without_reply() is dataclasses.replace(base, raw="another text").without_reply()
    for spec in dataclasses.fields(CallResult):
        if spec.name in ("raw", "probs", "origin"):
            continue
        other = dataclasses.replace(base, **{spec.name: f"other-{spec.name}"})
        base.without_reply()  # the shared one, kept first
        assert dataclasses.replace(other, raw=None) == other.without_reply(), spec.name
        assert getattr(other.without_reply(), spec.name) == f"other-{spec.name}"


def test_rows_with_the_same_calls_share_one_tuple_of_them_and_other_rows_do_not() -> None:
    """Two rows whose calls differ only in their reply texts keep one tuple of slim calls; a row whose second call
    has another label keeps its own, holding that label."""
    first, second = filled(CallResult, probs=None, origin=None), filled(CallResult, probs=None, origin=None, label="B")
    row = filled(ItemResult, calls=(first, second))
    again = filled(
        ItemResult, id="other", calls=(dataclasses.replace(first, raw="x"), dataclasses.replace(second, raw="y"))
    )
    assert row.without_replies().calls is again.without_replies().calls
    changed = filled(ItemResult, calls=(first, dataclasses.replace(second, label="tie")))
    assert changed.without_replies().calls is not row.without_replies().calls
    assert (first.label, "tie") == tuple(call.label for call in changed.without_replies().calls)


def test_a_row_without_replies_keeps_every_other_field() -> None:
    """without_replies() is the row with each call's raw=None and nothing else changed."""
    row = filled(ItemResult, calls=(filled(CallResult), filled(CallResult, raw="other")))
    expected = dataclasses.replace(row, calls=tuple(dataclasses.replace(c, raw=None) for c in row.calls))
    actual = row.without_replies()
    assert (expected, expected.calls) == (actual, actual.calls)  # `calls` is left out of ItemResult's equality


def test_every_field_of_a_reply_survives_the_cache() -> None:
    """A reply with every field set reads back equal from its cached form, and that form passes the stored-reply check."""
    counts = {spec.name: 7 + number for number, spec in enumerate(dataclasses.fields(Reply)) if spec.type == "int"}
    reply = filled(Reply, probs={"A": 0.5}, outcome="refusal", **counts)
    stored = reply.to_json()
    assert reply == Reply.from_json(stored)
    assert reply_problem(stored) is None


def test_a_reply_stores_its_origin_only_when_known() -> None:
    """Unset origin fields are left out of the cached form (older caches have none) and read back as their defaults."""
    reply = Reply("A")
    assert not set(REPLY_OPTIONAL_FIELDS) & set(reply.to_json())
    assert reply == Reply.from_json({"text": "A"})
