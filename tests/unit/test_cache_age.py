"""The stored time written with each cached reply, and the note of a run answered wholly from the cache."""

from __future__ import annotations

import datetime

from judgebias.cache.age import STORED_AT, StoredTimes, stamped

NOW = datetime.datetime(2026, 12, 1, 12, 0, 0, tzinfo=datetime.UTC)


def test_a_reply_is_stored_with_the_time_it_was_stored() -> None:
    """The value written to the cache is the reply plus the UTC time, to the second."""
    assert {"text": "A", STORED_AT: "2026-12-01T12:00:00Z"} == stamped({"text": "A"}, NOW)


def test_a_value_that_has_a_stored_time_keeps_it() -> None:
    """A reply brought in from a bundle keeps the time it was first stored."""
    assert "2026-01-01T00:00:00Z" == stamped({"text": "A", STORED_AT: "2026-01-01T00:00:00Z"}, NOW)[STORED_AT]


def test_note_names_oldest_and_newest_and_the_refresh_option() -> None:
    """The note spans the oldest to the newest stored time, says how old the oldest is, and names cache.mode=refresh."""
    times = StoredTimes()
    for moment in ("2026-12-01T09:00:00Z", "2026-12-01T08:30:00Z", "2026-12-01T09:10:00Z"):
        times.add({STORED_AT: moment})

    note = times.note(96, NOW)

    assert note.startswith("all 96 judge calls came from the cache, nothing was sent: ")
    assert "replies stored 2026-12-01 08:30:00 UTC to 2026-12-01 09:10:00 UTC (the oldest 3 h 30 min ago)" in note
    assert note.endswith("rerun with cache.mode=refresh to ask it again")


def test_replies_stored_without_a_time_are_said_to_be_of_unknown_age() -> None:
    """Replies cached before times were recorded make the note say so instead of guessing an age."""
    times = StoredTimes()
    times.add({"text": "A"})

    assert "replies stored before their time was recorded" in times.note(2, NOW)
