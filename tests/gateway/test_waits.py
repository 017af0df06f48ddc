"""Announced waits: every header a server or gateway uses to say how long to wait is read (pure function)."""

from __future__ import annotations

import email.utils

import pytest

from judgebias.backends.waits import announced_wait, parse_duration, window_exhausted

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1s", 1.0), ("6m0s", 360.0), ("250ms", 0.25), ("1h2m3.5s", 3723.5), ("2", 2.0), ("0.5", 0.5), ("20us", 2e-5)],
)
def test_durations_in_go_notation_are_read(text: str, seconds: float) -> None:
    """x-ratelimit-reset-* durations such as "6m0s" and "250ms" are read as seconds."""
    assert seconds == pytest.approx(parse_duration(text))


@pytest.mark.parametrize("text", ["", "soon", "5 minutes", "1x", "m5"])
def test_unreadable_durations_are_none(text: str) -> None:
    """A duration that is not one is not turned into a wait."""
    assert None is parse_duration(text)


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"llm_provider-retry-after": "60"}, 60.0),
        ({"llm_provider-retry-after-ms": "250"}, 0.25),
        ({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s"}, 360.0),
        ({"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "250ms"}, 0.25),
        ({"retry-after": "1", "x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "20s"}, 20.0),
        ({"retry-after-ms": "250", "retry-after": "1"}, 0.25),
        ({"llm_provider-retry-after-ms": "2500", "llm_provider-retry-after": "3", "retry-after": "1"}, 2.5),
    ],
)
def test_each_announced_wait_is_read_and_the_longest_wins(headers: dict[str, str], seconds: float) -> None:
    """Each header family announces a wait (a -ms header in place of its rounded twin); the longest family wins."""
    assert seconds == pytest.approx(announced_wait(headers, NOW))


def test_retry_after_as_an_http_date_counts_from_now() -> None:
    """A Retry-After given as an HTTP date is the seconds from now until then."""
    date = email.utils.formatdate(NOW + 30, usegmt=True)
    assert 30.0 == pytest.approx(announced_wait({"retry-after": date}, NOW))


def test_a_reset_with_requests_left_is_no_wait() -> None:
    """x-ratelimit-reset-* is only a wait while the matching remaining count is 0."""
    headers = {"x-ratelimit-remaining-requests": "12", "x-ratelimit-reset-requests": "1s"}
    assert (None, False) == (announced_wait(headers, NOW), window_exhausted(headers))


def test_headers_without_a_wait_announce_none() -> None:
    """Ordinary headers (and unreadable values) announce no wait."""
    assert None is announced_wait({"content-type": "application/json", "retry-after": "later"}, NOW)
