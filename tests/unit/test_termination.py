"""SIGTERM inside a SLURM job: the job stops like Ctrl-C stops a run, except while submitit requeues it."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from types import FrameType

import pytest

from judgebias.cli.termination import stop_on_sigterm
from judgebias.core.errors import Stopped


@pytest.fixture
def slurm_job(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process as a SLURM job would see itself; the SIGTERM and SIGUSR2 handlers restored afterwards."""
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    monkeypatch.delenv("SUBMITIT_PREEMPT_SIGNAL", raising=False)
    saved = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGUSR2)
    yield
    signal.signal(signal.SIGTERM, saved[0])
    signal.signal(signal.SIGUSR2, saved[1])


def deliver(signum: int) -> None:
    """Send a signal to this process and give the main thread the moment it needs to run the handler."""
    os.kill(os.getpid(), signum)
    time.sleep(1)


def test_the_first_sigterm_stops_the_job_and_a_second_is_ignored(slurm_job: None) -> None:
    """The first SIGTERM raises Stopped; a second one (SLURM repeats itself) no longer interrupts the clean-up."""
    before = signal.getsignal(signal.SIGTERM)
    with stop_on_sigterm():
        with pytest.raises(Stopped):
            deliver(signal.SIGTERM)
        deliver(signal.SIGTERM)

    assert before == signal.getsignal(signal.SIGTERM)


def test_sigterm_during_a_requeue_is_left_to_submitit(slurm_job: None) -> None:
    """While submitit's USR2 handler requeues the job, the SIGTERM that the requeue causes does not raise Stopped."""

    def requeue(signum: int, frame: FrameType | None) -> None:  # as submitit: `scontrol requeue`, then exit
        deliver(signal.SIGTERM)
        sys.exit(-1)

    signal.signal(signal.SIGUSR2, requeue)
    with pytest.raises(SystemExit), stop_on_sigterm():
        deliver(signal.SIGUSR2)

    assert requeue == signal.getsignal(signal.SIGUSR2)


def test_sigterm_after_a_refused_requeue_stops_the_job(slurm_job: None) -> None:
    """When submitit declines to requeue (timed out too often), the SIGTERM of the time limit still stops the job."""

    def refuse(signum: int, frame: FrameType | None) -> None:
        raise RuntimeError("Job not requeued because: timed-out too many times.")

    signal.signal(signal.SIGUSR2, refuse)
    with stop_on_sigterm():
        with pytest.raises(RuntimeError):
            deliver(signal.SIGUSR2)
        with pytest.raises(Stopped):
            deliver(signal.SIGTERM)


def test_outside_slurm_nothing_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without SLURM_JOB_ID the SIGTERM handler is left as it was (a plain run is killed as before)."""
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    before = signal.getsignal(signal.SIGTERM)

    with stop_on_sigterm():
        assert before == signal.getsignal(signal.SIGTERM)
