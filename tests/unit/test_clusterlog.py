"""submitit's sacct failures in the submitting process: one explained notice instead of three lines per poll."""

from __future__ import annotations

import importlib
import logging

import pytest

from judgebias.cli.clusterlog import NOTICE, summarise_sacct_warnings

FAILURE = (
    "Call #{n} - Bypassing sacct error Command '['sacct', '-o', 'JobID,State,NodeList', '--parsable2', '-j', '7']' "
    "returned non-zero exit status 1., status may be inaccurate."
)


def test_repeated_sacct_failures_become_one_notice(capsys: pytest.CaptureFixture[str]) -> None:
    """Installed before submitit configures its logger, the filter turns three sacct failures into one notice."""
    logger_module = pytest.importorskip("submitit.core.logger")
    installed = summarise_sacct_warnings()
    try:
        importlib.reload(logger_module)  # submitit's own logging set-up, as when the launcher first imports it
        logger = logging.getLogger("submitit")
        for n in (1, 2, 3):
            logger.warning(FAILURE.format(n=n))
        logger.warning("Bypassing signal SIGCONT")
    finally:
        logging.getLogger("submitit").removeFilter(installed)
    out, err = capsys.readouterr()

    assert (1, 0) == (err.count(NOTICE), out.count(NOTICE))
    assert "status may be inaccurate." not in out + err
    assert "Bypassing signal SIGCONT" in err  # other warnings pass unchanged
    assert 3 == installed.count


def test_the_filter_is_installed_once() -> None:
    """Installing twice (a second entry into main in one process) keeps a single filter."""
    first = summarise_sacct_warnings()
    try:
        assert first is summarise_sacct_warnings()
        assert 1 == sum(f is first for f in logging.getLogger("submitit").filters)
    finally:
        logging.getLogger("submitit").removeFilter(first)
