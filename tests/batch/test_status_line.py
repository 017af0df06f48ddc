"""The batches' status line: redrawn on a terminal, one line per change of status in a log."""

from __future__ import annotations

import io

from judgebias.batch.prefill import StatusLine
from judgebias.config.schema import ProgressMode


def test_a_log_gets_a_line_per_change_of_status_not_per_count() -> None:
    """Without a terminal, a new line is written when a batch's status changes, not each time its counts move."""
    stream = io.StringIO()
    line = StatusLine(ProgressMode.auto, stream)
    for text in ("batches: b1 in_progress 0/10", "batches: b1 in_progress 4/10", "batches: b1 completed 10/10"):
        line.show(text)
    line.close()
    assert "batches: b1 in_progress 0/10\nbatches: b1 completed 10/10\n" == stream.getvalue()


def test_progress_on_redraws_one_line_with_every_count() -> None:
    """progress=on redraws the line in place with each batch's counts, and ends it with a newline."""
    stream = io.StringIO()
    line = StatusLine(ProgressMode.on, stream)
    line.show("batches: b1 in_progress 4/10 (1 failed)")
    line.show("batches: b1 completed 10/10 (1 failed)")
    line.close()
    assert "\rbatches: b1 in_progress 4/10 (1 failed) \rbatches: b1 completed 10/10 (1 failed) \n" == stream.getvalue()


def test_progress_off_shows_nothing() -> None:
    """progress=off keeps the batches' state off stderr."""
    stream = io.StringIO()
    line = StatusLine(ProgressMode.off, stream)
    line.show("batches: b1 in_progress 0/10")
    line.close()
    assert "" == stream.getvalue()
