"""The collector around a run: off during start-up, on for the run, start-up's objects frozen only for a single run."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from judgebias.cli import collector


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    """Each test leaves this process's collector as it found it (on, nothing frozen)."""
    yield
    gc.unfreeze()
    gc.enable()


def test_paused_turns_the_collector_off_and_back_on() -> None:
    """Start-up runs without collector passes; afterwards the process collects again."""
    with collector.paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_paused_restores_the_collector_when_start_up_fails() -> None:
    """A bad override ends start-up early: the collector still comes back on."""
    with pytest.raises(SystemExit), collector.paused():
        raise SystemExit(2)  # a bad override: Hydra exits during composition
    assert gc.isenabled()


def test_paused_leaves_a_collector_that_was_off_off() -> None:
    """A caller that turned the collector off keeps it off."""
    gc.disable()
    with collector.paused():
        pass
    assert not gc.isenabled()


def test_a_single_run_collects_as_usual_with_start_up_frozen() -> None:
    """A single run freezes start-up's objects, and the garbage it makes itself is still collected."""
    with collector.paused():
        collector.resume(freeze=True)
        assert gc.isenabled()  # a long run's own garbage is still collected
        assert gc.get_freeze_count() > 0
        garbage: list[object] = []
        garbage.append(garbage)  # a cycle made during the run
        del garbage
        assert gc.collect() >= 1
    assert gc.isenabled()


def test_a_sweep_job_freezes_nothing() -> None:
    """A sweep's jobs share one process: nothing is frozen, so a finished job's config can be freed."""
    with collector.paused():
        collector.resume(freeze=False)
        assert gc.isenabled()
        assert gc.get_freeze_count() == 0
