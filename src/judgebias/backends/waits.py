"""How long a server asked us to wait, read from the headers of its reply (pure: no I/O, no clock of its own).

Servers and gateways announce waits in several ways, and a client that reads only one of them retries too early
and spends its retries on refusals:

- ``retry-after``: seconds, or an HTTP date (RFC 9110); ``retry-after-ms``: milliseconds (OpenAI, Azure).
- ``llm_provider-retry-after`` / ``llm_provider-retry-after-ms``: LiteLLM's proxy passes its own wait this way.
- ``x-ratelimit-reset-requests`` / ``x-ratelimit-reset-tokens``: when the window refills, as a duration such as
  ``"1s"``, ``"6m0s"`` or ``"250ms"``; it is a wait only while the matching ``x-ratelimit-remaining-*`` is 0
  (a successful reply can say so too: then the next request would be refused).

A ``-ms`` header is the precise form of its whole-second twin (which is rounded up) and is read in its place;
across the families the longest announced wait wins, so the client is never back sooner than any of them asked.
"""

from __future__ import annotations

import contextlib
import email.utils
import re
from collections.abc import Mapping

WAIT_HEADERS = (
    "retry-after-ms",
    "retry-after",
    "llm_provider-retry-after-ms",
    "llm_provider-retry-after",
    "x-ratelimit-reset-requests",
    "x-ratelimit-reset-tokens",
)
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|m|s|us|µs|ns)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def parse_duration(text: str) -> float | None:
    """Seconds in a Go-style duration ("1s", "6m0s", "250ms", "1h2m3.5s") or a bare number of seconds; else None."""
    text = text.strip().lower()
    if not text:
        return None
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    total, at = 0.0, 0
    for match in _DURATION_PART.finditer(text):
        if match.start() != at:
            return None
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        at = match.end()
    return total if at == len(text) else None


def parse_retry_after(text: str, now: float) -> float | None:
    """Seconds in a Retry-After value: a number of seconds, or an HTTP date (seconds from `now`, a Unix time)."""
    text = text.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        date = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, date.timestamp() - now) if date is not None else None


def announced_wait(headers: Mapping[str, str], now: float) -> float | None:
    """The longest wait the reply's headers announce, in seconds (None: they announce none).

    `headers` may be any mapping (an HTTP client's case-insensitive headers, or a plain dict); `now` is the
    current Unix time, for a Retry-After given as a date.
    """
    lower = {name.lower(): value for name, value in headers.items() if name.lower() in _WANTED}
    waits: list[float] = []
    for prefix in ("", "llm_provider-"):
        millis = lower.get(prefix + "retry-after-ms")
        if millis is not None:
            with contextlib.suppress(ValueError):
                waits.append(max(0.0, float(millis) / 1000.0))
                continue  # the precise form of the same wait: its whole-second twin is rounded up
        seconds = lower.get(prefix + "retry-after")
        if seconds is not None:
            wait = parse_retry_after(seconds, now)
            if wait is not None:
                waits.append(wait)
    for kind in ("requests", "tokens"):
        if _is_zero(lower.get(f"x-ratelimit-remaining-{kind}")):
            reset = lower.get(f"x-ratelimit-reset-{kind}")
            wait = parse_duration(reset) if reset is not None else None
            if wait is not None:
                waits.append(wait)
    return max(waits) if waits else None


def window_exhausted(headers: Mapping[str, str]) -> bool:
    """Whether a reply says a rate-limit window is used up (x-ratelimit-remaining-requests or -tokens is 0)."""
    return _is_zero(headers.get("x-ratelimit-remaining-requests")) or _is_zero(
        headers.get("x-ratelimit-remaining-tokens")
    )


def format_seconds(seconds: float) -> str:
    """A wait for people: "250ms", "12s", "6m0s"."""
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.0f}s" if seconds >= 10 else f"{seconds:.1f}s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest}s"


def _is_zero(value: str | None) -> bool:
    if value is None:
        return False
    try:
        return float(value) <= 0
    except ValueError:
        return False


_WANTED = frozenset((*WAIT_HEADERS, "x-ratelimit-remaining-requests", "x-ratelimit-remaining-tokens"))
