"""The shared Pacer: its adaptive cap on requests in flight (AIMD after 429s)."""

from __future__ import annotations

import threading

import pytest

from judgebias.backends.pacing import DECREASE, Pacer


def take(pacer: Pacer, n: int) -> list[int]:
    """Start `n` requests; their tickets."""
    return [pacer.wait(100) for _ in range(n)]


def test_there_is_no_cap_until_the_server_pushes_back() -> None:
    """Successes and ordinary failures leave the pacer uncapped."""
    pacer = Pacer(None, None)
    first, second = take(pacer, 2)
    pacer.release(first)
    pacer.release(second, succeeded=False)
    assert pacer.limit is None


def test_a_429_cuts_the_cap_to_a_share_of_the_requests_in_flight() -> None:
    """The first 429 caps the requests in flight at DECREASE times those in flight when it came back."""
    pacer = Pacer(None, None)
    tickets = take(pacer, 10)
    pacer.release(tickets[0], succeeded=False, throttled=True)
    assert DECREASE * 10 == pytest.approx(pacer.limit)


def test_429s_of_requests_sent_before_a_cut_do_not_cut_again() -> None:
    """One cut per round: a 429 cuts again only if its request was sent after the last cut."""
    pacer = Pacer(None, None)
    tickets = take(pacer, 10)
    pacer.release(tickets[0], succeeded=False, throttled=True)
    pacer.release(tickets[1], succeeded=False, throttled=True)
    assert DECREASE * 10 == pytest.approx(pacer.limit)
    for ticket in tickets[2:]:
        pacer.release(ticket)
    later = pacer.wait(100)
    pacer.release(later, succeeded=False, throttled=True)
    assert max(1.0, DECREASE * 1) == pytest.approx(pacer.limit)


def test_successes_at_the_cap_raise_it_by_about_one_per_round() -> None:
    """Each success while the cap is reached raises it by 1/cap."""
    pacer = Pacer(None, None)
    first, second = take(pacer, 2)
    pacer.release(first, succeeded=False, throttled=True)  # cap: DECREASE * 2 = 1.4, one request in flight
    assert 1.4 == pytest.approx(pacer.limit)
    pacer.release(second)
    assert 1.4 + 1 / 1.4 == pytest.approx(pacer.limit)


def test_wait_blocks_while_the_cap_is_reached() -> None:
    """A request waits for a slot when the cap is reached, and goes as soon as one is released."""
    pacer = Pacer(None, None)
    pacer.release(pacer.wait(100), succeeded=False, throttled=True)  # cap 1: one request in flight
    busy = pacer.wait(100)
    started = threading.Event()

    def third() -> None:
        pacer.wait(100)
        started.set()

    thread = threading.Thread(target=third)
    thread.start()
    assert not started.wait(0.2)
    pacer.release(busy)
    assert started.wait(5)
    thread.join()


def test_a_fleet_window_holds_about_one_second_of_whole_requests() -> None:
    """The shared quota's window admits a whole number (or, spaced, one) at exactly the configured rate."""
    from judgebias.backends.pacing import window

    assert [(1000.0, 20), (2000.0, 1), (60_000 / 90, 1), (0.0, 0)] == [
        window(1200),
        window(30),
        window(90),
        window(None),
    ]
    assert (50.0, 1) == window(1200, spaced=True)
