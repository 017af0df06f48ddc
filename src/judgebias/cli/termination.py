"""SIGTERM inside a SLURM job (scancel, the time limit) ends the job the way Ctrl-C ends a run, not like a kill.

SLURM stops a job with SIGTERM, then SIGKILL after KillWait seconds. submitit's own SIGTERM handler only logs the
signal, so the job used to die without writing its result file: on a cluster without accounting the submitting
process then waited for it forever, and with accounting the launcher raised and the sweep table was never written.
Raising `Stopped` in the job instead lets the runner keep every reply received (calls in flight land in the cache),
the job record its failure in summary.json and return, so the sweep table lists it and a rerun resumes it.

A requeue after a timeout is told apart: submitit's preemption handler (SIGUSR2 unless SUBMITIT_PREEMPT_SIGNAL says
otherwise) runs `scontrol requeue`, which makes SLURM send SIGTERM too; while that handler is at work, SIGTERM is
left to it (it exits the job, which SLURM then starts again).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from judgebias.core.errors import Stopped


def preempt_signal() -> signal.Signals:
    """The signal submitit requeues on: SUBMITIT_PREEMPT_SIGNAL (e.g. USR2), as submitit itself reads it."""
    name = os.environ.get("SUBMITIT_PREEMPT_SIGNAL", "USR2").upper()
    return signal.Signals[name if name.startswith("SIG") else f"SIG{name}"]


@contextmanager
def stop_on_sigterm() -> Iterator[None]:
    """Inside a SLURM job, turn the first SIGTERM into `Stopped` in the main thread; elsewhere change nothing."""
    if "SLURM_JOB_ID" not in os.environ or threading.current_thread() is not threading.main_thread():
        yield
        return
    requeue_signal = preempt_signal()
    previous_term, previous_requeue = signal.getsignal(signal.SIGTERM), signal.getsignal(requeue_signal)
    state = {"requeueing": False, "stopped": False}

    def on_requeue(signum: int, frame: FrameType | None) -> None:
        state["requeueing"] = True
        try:
            if callable(previous_requeue):
                previous_requeue(signum, frame)
        except SystemExit:
            raise  # requeued: the job exits and SLURM starts it again
        except BaseException:
            state["requeueing"] = False  # not requeued (e.g. timed out too often): a later SIGTERM stops the job
            raise

    def on_term(signum: int, frame: FrameType | None) -> None:
        if state["requeueing"] or state["stopped"]:
            return
        state["stopped"] = True
        raise Stopped()

    signal.signal(signal.SIGTERM, on_term)
    if callable(previous_requeue):
        signal.signal(requeue_signal, on_requeue)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous_term if previous_term is not None else signal.SIG_DFL)
        if callable(previous_requeue):
            signal.signal(requeue_signal, previous_requeue)
