"""The progress line of a run judged in parts: the items the other processes finalised are shown with this one's,
and once joined, counted once."""

from __future__ import annotations

import io

from judgebias.engine.progress import Progress


def test_items_finalised_elsewhere_show_in_the_line_and_count_once_when_joined() -> None:
    stream = io.StringIO()
    elsewhere = [30]
    progress = Progress(100, "on", [], stream, elsewhere=lambda: elsewhere[0])
    for _ in range(39):
        progress.advance(calls=2, cached=0)
    progress.drawn = 0.0  # the line is redrawn at most five times a second: due now
    progress.advance(calls=2, cached=0)
    assert "70/100 items" in stream.getvalue().split("\r")[-1]
    elsewhere[0] = 0  # the part is joined: its items are now this process's
    progress.absorb(60, calls=120, cached=20)
    last = stream.getvalue().split("\r")[-1]
    assert "100/100 items" in last and "calls live 180 cached 20" in last


def test_a_part_keeps_its_count_in_the_shared_value() -> None:
    class Shared:
        value = 0

    shared = Shared()
    progress = Progress(10, "off", [], io.StringIO(), shared=shared)
    for _ in range(7):
        progress.advance(calls=2, cached=1)
    assert shared.value == 7
