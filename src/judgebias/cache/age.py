"""When cached replies were stored: a time stamp written with each reply (never part of its key), and the note a
run answered wholly from the cache prints, so replies older than a server's restart do not pass unnoticed."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from judgebias.core.record import STORED_AT, STORED_AT_PATTERN


def stamped(value: dict[str, Any], now: datetime.datetime | None = None) -> dict[str, Any]:
    """The value to store: the reply with the time it is stored (a value that has one, from a bundle, keeps it)."""
    if value.get(STORED_AT):
        return value
    moment = (now or datetime.datetime.now(datetime.UTC)).astimezone(datetime.UTC)
    return value | {STORED_AT: moment.strftime("%Y-%m-%dT%H:%M:%SZ")}


@dataclass
class StoredTimes:
    """The oldest and newest stored time of the cached replies a run used, and how many had none recorded.

    The times are ISO 8601 UTC text, which sorts as the times do: a hit costs a pattern match and two comparisons,
    and only the oldest and newest are turned into datetimes.
    """

    earliest: str | None = None
    latest: str | None = None
    unknown: int = 0

    def add(self, value: dict[str, Any]) -> None:
        """Count one cached reply's stored time."""
        stamp = value.get(STORED_AT)
        if not (isinstance(stamp, str) and STORED_AT_PATTERN.fullmatch(stamp)):
            self.unknown += 1
            return
        if self.earliest is None or stamp < self.earliest:
            self.earliest = stamp
        if self.latest is None or stamp > self.latest:
            self.latest = stamp

    @property
    def oldest(self) -> datetime.datetime | None:
        """The oldest stored time seen."""
        return _moment(self.earliest)

    @property
    def newest(self) -> datetime.datetime | None:
        """The newest stored time seen."""
        return _moment(self.latest)

    def note(self, calls: int, now: datetime.datetime | None = None) -> str:
        """The one line for a run whose `calls` live calls all came from the cache: the replies' age, how to refresh."""
        head = f"all {calls} judge calls came from the cache, nothing was sent: "
        refresh = "if the judge or its server changed since, rerun with cache.mode=refresh to ask it again"
        if self.oldest is None or self.newest is None:
            return head + f"replies stored before their time was recorded (an older judgebias); {refresh}"
        span = _utc(self.oldest) if self.oldest == self.newest else f"{_utc(self.oldest)} to {_utc(self.newest)}"
        elapsed = (now or datetime.datetime.now(datetime.UTC)) - self.oldest
        unknown = f", {self.unknown} more from before times were recorded" if self.unknown else ""
        return head + f"replies stored {span} (the oldest {_duration(elapsed)} ago{unknown}); {refresh}"


def _moment(stamp: str | None) -> datetime.datetime | None:
    return (
        None if stamp is None else datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    )


def _utc(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _duration(elapsed: datetime.timedelta) -> str:
    """A rounded age: 40 s, 12 min, 3 h 5 min, 2 days."""
    seconds = max(0, int(elapsed.total_seconds()))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min"
    if seconds < 2 * 86400:
        return f"{seconds // 3600} h {seconds % 3600 // 60} min"
    return f"{seconds // 86400} days"
