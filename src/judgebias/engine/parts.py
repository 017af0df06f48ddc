"""A free judge's items judged on every core: the run's later parts each in a forked process of its own.

An offline judge (scripted, replayed) costs nothing and waits on nothing, so a large run is bound by this
process's CPU alone. The items are cut into parts at places the check marked in the data file; each later part is
judged in a process forked from this one (it inherits the settings, judges and items: nothing is sent to it), which
writes its verdict lines to a file of its own and its rows to another. This process judges the first part, then
joins the others in order: the same lines and the same rows as one process would make.

A part's process ignores Ctrl-C (this process stops it) and dies with this process (Linux), and any error it meets
is raised here as it was raised there.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import os
import pickle
import signal
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

from judgebias.figures.rows import Rows
from judgebias.io.files import unwritable

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

PART_MIN_ITEMS = 50_000  # items below which a part is not worth its process (a fork and a summary's rows sent back)
MAX_PARTS = 8
_PR_SET_PDEATHSIG = 1  # prctl(2): the signal this process gets when its parent dies


@dataclasses.dataclass
class PartJudged:
    """What a part's process sends back: its rows (by judge, and the ensemble's), failed calls, lines written, its
    calls (of them answered without a request), and what its reading of the file found."""

    per_judge: dict[str, Rows]
    combined: Rows | None  # the ensemble's rows; None for one judge (its rows are the combined ones)
    failures: collections.Counter[str]
    lines: int
    calls: int
    cached: int
    read: Any = None  # what its reading found, when the items are checked as they are judged (engine.items)


JudgePart = Callable[[Path, Any], PartJudged]  # (its lines' file, a shared count of its items done) -> what it judged


def parts_wanted(amount: int, per_part: int | None = None) -> int:
    """How many parts work of this `amount` (a free judge's items, or a data file's bytes to check) is cut into: one
    per core this process may use, each of at least `per_part` (PART_MIN_ITEMS items when not given), at most
    MAX_PARTS; one but on Linux (forking a process that has loaded system frameworks is not safe on macOS, and Windows
    cannot fork)."""
    per_part = PART_MIN_ITEMS if per_part is None else per_part
    if amount < 2 * per_part or not sys.platform.startswith("linux"):
        return 1
    return max(1, min(_cores(), amount // per_part, MAX_PARTS))


def _cores(quota: Path = Path("/sys/fs/cgroup/cpu.max")) -> int:
    """The cores this process may run on: those it is pinned to, fewer when its container's CPU quota (cgroup v2
    `cpu.max`: quota and period in microseconds) allows less time than that."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        allowed, period = quota.read_text(encoding="ascii").split()[:2]
        if allowed != "max":
            cores = min(cores, max(1, -(-int(allowed) // int(period))))  # a quota of 1.5 cores: 2 processes
    except (OSError, ValueError):
        pass  # no quota known: the pinned cores
    return cores


T = TypeVar("T")
P = TypeVar("P")


class Forked(Generic[T]):
    """A function run in a process forked from this one, until its value is taken or it is stopped: it ignores
    Ctrl-C (this process stops it) and dies with this process; its value, or its error, comes back through a pipe."""

    def __init__(self, work: Callable[[], T]) -> None:
        import multiprocessing

        context = multiprocessing.get_context("fork")
        self._receiving, sending = context.Pipe(duplex=False)
        sys.stdout.flush()  # what is buffered here would be written again by the fork when it ends
        sys.stderr.flush()
        self._process = context.Process(target=_run_forked, args=(work, sending, os.getpid()), daemon=True)
        self._process.start()
        sending.close()

    def result(self) -> T:
        """The function's value once it returned; its own error if it raised one."""
        try:
            outcome, value = self._receiving.recv()
        except EOFError:
            self._process.join()
            raise RuntimeError(
                f"the process working on a part of the items ended without a result (exit code "
                f"{self._process.exitcode}); rerun the same command"
            ) from None
        self._process.join()
        if outcome == "error":
            raise value
        return cast(T, value)

    def stop(self) -> None:
        """End the process now (the run stopped, or its value is taken)."""
        if self._process.is_alive():
            self._process.kill()
        self._process.join()
        self._receiving.close()


class _Stoppable(Protocol):
    def stop(self) -> None: ...


S = TypeVar("S", bound=_Stoppable)


def started(start: Callable[[P], S], parts: Iterable[P]) -> list[S]:
    """A forked process started for each part; none when a process cannot be made now (a limit on processes,
    memory or files): then this process does every part itself."""
    forked: list[S] = []
    try:
        for part in parts:
            forked.append(start(part))
    except OSError:
        for process in forked:
            process.stop()
        return []
    return forked


class PartProcess:
    """One part of the run judged in a forked process, until its result is taken or it is stopped."""

    def __init__(self, judge: JudgePart, lines: Path) -> None:
        import multiprocessing

        self.lines = lines
        self._done = multiprocessing.get_context("fork").RawValue("q", 0)
        self._forked = Forked(functools.partial(_judged_into, judge, lines, self._done))

    @property
    def done(self) -> int:
        """The items the part has finalised so far."""
        return int(self._done.value)

    def result(self) -> PartJudged:
        """What the part judged, once it is done; the part's own error if it met one."""
        self._forked.result()
        with self.rows.open("rb") as rows:  # read as a stream: no copy of the whole in bytes beside the rows
            judged = pickle.load(rows)
        assert isinstance(judged, PartJudged)
        return judged

    @property
    def rows(self) -> Path:
        """The file the part's rows come back in (a million rows of their own are too many for a pipe's bytes)."""
        return rows_of(self.lines)

    def stop(self) -> None:
        """End the part's process now (the run stopped, or it is joined) and remove its files."""
        self._forked.stop()
        self.lines.unlink(missing_ok=True)
        self.rows.unlink(missing_ok=True)


def rows_of(lines: Path) -> Path:
    """Where the part whose verdict lines are `lines` leaves its rows."""
    return lines.with_name(lines.name + ".rows")


def _judged_into(judge: JudgePart, lines: Path, done: Any) -> None:
    """A part's process: judge its items into `lines`, its rows pickled beside them."""
    judged = judge(lines, done)
    try:
        with rows_of(lines).open("wb") as rows:
            pickle.dump(judged, rows, protocol=pickle.HIGHEST_PROTOCOL)
    except OSError as error:
        raise unwritable(rows_of(lines), error) from None


def _run_forked(work: Callable[[], Any], sending: Connection, parent: int) -> None:
    """The forked process: do the work, send its value (or its error) back."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole terminal's group: the parent stops it
    _die_with(parent)
    try:
        value = work()
    except BaseException as error:  # sent back whole when it can be, as a line of text when it cannot
        try:
            sending.send(("error", error))
        except Exception:
            sending.send(("error", RuntimeError(f"{type(error).__name__}: {error}")))
        return
    try:
        sending.send(("done", value))
    except Exception as error:  # a value that cannot be sent: its error instead
        sending.send(
            ("error", RuntimeError(f"a part's result could not be sent back: {type(error).__name__}: {error}"))
        )


def _die_with(parent: int) -> None:
    """Have the kernel kill this process when its parent dies (Linux), so a killed run leaves no part running."""
    import ctypes
    import ctypes.util

    found = ctypes.util.find_library("c")
    if found is not None:
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(found, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the kernel was told
        os._exit(1)
