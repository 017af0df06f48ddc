"""Batch mode's I/O: submit the calls a run lacks as batches, wait, and put every reply in the cache.

Provider-neutral: what a provider's batch API does (upload, create, poll, read back) is its BatchTransport's
(backends.base); this module keeps the ledger, splits the calls and polls.

Never pay twice: every submitted batch is written to a ledger beside the cache (`<cache.dir>/batches/`, one JSON
file per batch, written atomically) before the run waits on it. A later run that needs any of its calls
re-attaches to it instead of uploading again, whether the first run finished, was stopped by Ctrl-C, crashed or
was killed. A batch is forgotten only once every line of it is in the cache or recorded as failed.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from judgebias.backends.base import BatchForgotten, BatchState, BatchTransport
from judgebias.batch import files as batchfile
from judgebias.core.errors import FatalJudgeError, UnusableReply, UserError
from judgebias.io.files import write_json

# (response body, cache key) -> cached reply JSON; raises UnusableReply for a body that must not be cached
ReplyOf = Callable[[Mapping[str, Any], str], dict[str, Any]]


@dataclass
class BatchRecord:
    """One submitted batch as the ledger keeps it: where it went and which of its lines are still to collect."""

    name: str  # the ledger file's stem: a hash of the batch's custom_ids
    endpoint: str  # the base URL it was submitted to (a batch id means nothing at another endpoint)
    pending: list[str]  # custom_ids not yet collected
    total: int
    file_id: str | None = None  # the staged input (an uploaded file), where the provider keeps one
    batch_id: str | None = None
    status: str = "uploaded"
    completed: int = 0
    failed: int = 0

    def counts(self) -> dict[str, Any]:
        """id, status and request counts, as summary.json lists each batch."""
        return {
            "id": self.batch_id,
            "status": self.status,
            "total": self.total,
            "completed": self.completed,
            "failed": self.failed,
        }


class Ledger:
    """The batches submitted to each endpoint and not yet collected, one JSON file each (written atomically)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def open(self, endpoint: str) -> list[BatchRecord]:
        """Every batch of `endpoint` that still has lines to collect."""
        records = []
        for path in sorted(self.directory.glob("*.json")) if self.directory.is_dir() else []:
            try:
                record = BatchRecord(**json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError, TypeError) as error:
                raise UserError(f"{path}: not a batch record judgebias wrote ({error}); move it away") from None
            if record.endpoint == endpoint and record.pending:
                records.append(record)
        return records

    def save(self, record: BatchRecord) -> None:
        """Write the record (before any wait, so an interrupted run finds it)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        write_json(self.directory / f"{record.name}.json", asdict(record))

    def forget(self, record: BatchRecord) -> None:
        """Drop a batch whose every line is collected."""
        (self.directory / f"{record.name}.json").unlink(missing_ok=True)


@dataclass
class Outcome:
    """What the batches of one run gave: replies cached, lines failed, and the batches' states."""

    filled: set[str] = field(default_factory=set)  # cache keys whose replies arrived by batch in this run
    errors: dict[str, str] = field(default_factory=dict)  # cache key -> the provider's reason the line failed
    batches: list[BatchRecord] = field(default_factory=list)  # every batch this run submitted or collected
    running: list[str] = field(default_factory=list)  # batch ids not finished (judge.batch_wait=false)


@dataclass
class Batcher:
    """Submits and collects the batches of one judge at one endpoint, through the provider's transport."""

    transport: BatchTransport
    ledger: Ledger
    put: Callable[[str, dict[str, Any]], None]  # stores a reply in the cache under its key
    reply_of: ReplyOf
    batch_size: int = 50_000
    max_bytes: int | None = None  # the transport's own limit unless told
    poll_seconds: float = 30.0
    show: Callable[[str], None] = lambda _: None
    sleep: Callable[[float], None] = time.sleep

    @property
    def endpoint(self) -> str:
        """Where the batches go."""
        return self.transport.endpoint

    def run(self, calls: Iterable[tuple[str, Mapping[str, Any]]], *, wait: bool = True) -> Outcome:
        """Fill the cache for `calls` (cache key, request body): re-attach, submit what is missing, wait, collect.

        `calls` are the run's cache misses, each once. Lines already in a recorded batch are not sent again. A
        control call the provider refuses stops the judge (one line); the ledger keeps its batches for a rerun.
        """
        try:
            return self._run(calls, wait=wait)
        except Exception as error:
            reason = self.transport.control_failure(error)
            if reason is None:
                raise
            raise FatalJudgeError(f"the Batch API at {self.endpoint}: {reason}") from None

    def _run(self, calls: Iterable[tuple[str, Mapping[str, Any]]], *, wait: bool) -> Outcome:
        outcome = Outcome()
        records = [record for record in self.ledger.open(self.endpoint) if self._known(record)]
        wanted: set[str] = set()
        covered = {line_id for record in records for line_id in record.pending}
        fresh: list[BatchRecord] = []

        def lines() -> Iterator[tuple[str, bytes]]:
            for key, body in calls:
                line_id = batchfile.custom_id(key)
                wanted.add(line_id)
                if line_id not in covered:
                    yield line_id, self.transport.encode(line_id, body)

        limit = self.max_bytes if self.max_bytes is not None else self.transport.max_bytes
        for chunk in batchfile.split(lines(), self.batch_size, limit):
            fresh.append(self._submit(chunk))
        mine = [r for r in records if wanted.intersection(r.pending)] + fresh
        outcome.batches = mine
        self._wait(mine, wanted, outcome, wait=wait)
        return outcome

    def _submit(self, chunk: list[tuple[str, bytes]]) -> BatchRecord:
        """Stage one batch's input and create the batch; the ledger knows the input before the batch exists."""
        ids = [line_id for line_id, _ in chunk]
        lines = [line for _, line in chunk]
        name = hashlib.sha256("\n".join(ids).encode()).hexdigest()[:24]
        record = BatchRecord(name, self.endpoint, ids, len(ids), file_id=self.transport.stage(name, lines))
        self.ledger.save(record)
        self._record(record, self.transport.create(name, record.file_id, lines))
        return record

    def _record(self, record: BatchRecord, state: BatchState) -> None:
        """Keep a batch's id and state in its ledger record."""
        record.batch_id, record.status = state.id, state.status
        record.completed, record.failed = state.completed, state.failed
        self.ledger.save(record)

    def _known(self, record: BatchRecord) -> bool:
        """Whether the provider still has a recorded batch (or its staged input, which then gets its batch).

        One the provider has forgotten (deleted, or a server that was reset) is dropped, so its lines go again; so
        is a record stopped before its batch was created when nothing of it was staged.
        """
        try:
            if record.batch_id is not None:
                self.transport.retrieve(record.batch_id)
                return True
            state = self.transport.adopt(record.name, record.file_id)  # created just before an interruption?
            if state is None and record.file_id is None:
                raise BatchForgotten(f"batch {record.name} was never created")
            self._record(record, state or self.transport.create(record.name, record.file_id, []))
        except BatchForgotten:
            self.ledger.forget(record)
            return False
        return True

    def _wait(self, records: list[BatchRecord], wanted: set[str], outcome: Outcome, *, wait: bool) -> None:
        """Poll every batch until it ends (or once, without waiting), collecting each as it ends."""
        running = list(records)
        while running:
            still = []
            for record in running:
                assert record.batch_id is not None
                state = self.transport.retrieve(record.batch_id)
                record.status, record.completed, record.failed = state.status, state.completed, state.failed
                if state.ended:
                    self._collect(record, state, wanted, outcome)
                else:
                    still.append(record)
            self.show(
                batchfile.status_text((r.batch_id or "?", r.status, r.completed, r.failed, r.total) for r in records)
            )
            running = still
            if running and not wait:
                outcome.running = [r.batch_id for r in running if r.batch_id]
                return
            if running:
                self.sleep(self.poll_seconds)

    def _collect(self, record: BatchRecord, state: BatchState, wanted: set[str], outcome: Outcome) -> None:
        """Cache every reply of an ended batch; record its failed lines; forget it once nothing is left."""
        if state.rejected is not None:
            self.ledger.forget(record)
            raise UserError(
                batchfile.validation_report(state.id, state.rejected)
                + "\nfix the cause, then rerun the same command to submit again"
            )
        answered: set[str] = set()
        for line in self.transport.results(state):
            key = batchfile.key_of(line.custom_id)
            if key is None or line.custom_id not in wanted:
                continue  # another run's line: left pending for it
            answered.add(line.custom_id)
            if line.body is None:
                outcome.errors[key] = f"batch {state.id}: {line.error}"
                continue
            try:
                stored = self.reply_of(line.body, key)
            except UnusableReply as unusable:  # an error body or no choices: asked again by the next run
                outcome.errors[key] = f"batch {state.id}: {unusable} (not cached)"
                continue
            self.put(key, stored)
            outcome.filled.add(key)
        for line_id in wanted.intersection(record.pending) - answered:
            key = batchfile.key_of(line_id)
            if key is not None:
                outcome.errors[key] = f"batch {state.id} ended {state.status} without this request"
                answered.add(line_id)
        record.pending = [line_id for line_id in record.pending if line_id not in answered]
        if record.pending:
            self.ledger.save(record)
        else:
            self.ledger.forget(record)
