"""Batch mode's I/O: upload the calls a run lacks, submit them as batches, wait, and put every reply in the cache.

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

from judgebias.batch import files as batchfile
from judgebias.core.errors import FatalJudgeError, UnusableReply, UserError
from judgebias.io.files import write_json

TERMINAL = ("completed", "failed", "expired", "cancelled")
# A 5xx that outlasts the SDK's retries on a files/batches route: most often a gateway with no batch backend
# behind it (LiteLLM's proxy answers 500 when its config has no files_settings), not an outage.
ROUTE_HINT = (
    "the endpoint's files/batches routes fail: a gateway needs a files and batches backend configured (LiteLLM: "
    "files_settings in its config.yaml), or run judge.mode=live"
)
# (response body, cache key) -> cached reply JSON; raises UnusableReply for a body that must not be cached
ReplyOf = Callable[[Mapping[str, Any], str], dict[str, Any]]


@dataclass
class BatchRecord:
    """One submitted batch as the ledger keeps it: where it went and which of its lines are still to collect."""

    name: str  # the ledger file's stem: a hash of the batch's custom_ids
    endpoint: str  # the base URL it was submitted to (a batch id means nothing at another endpoint)
    pending: list[str]  # custom_ids not yet collected
    total: int
    file_id: str | None = None
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
    """Submits and collects the batches of one judge at one endpoint."""

    client: Any  # an openai.OpenAI client for the endpoint
    endpoint: str
    ledger: Ledger
    put: Callable[[str, dict[str, Any]], None]  # stores a reply in the cache under its key
    reply_of: ReplyOf
    batch_size: int = 50_000
    max_bytes: int = batchfile.MAX_FILE_BYTES
    poll_seconds: float = 30.0
    show: Callable[[str], None] = lambda _: None
    sleep: Callable[[float], None] = time.sleep

    def __post_init__(self) -> None:
        # A few control calls per batch (upload, create, poll, download), not judge calls: the SDK's own
        # retries suffice for them; one that still fails stops the run, and the ledger keeps the batch for a rerun.
        self.client = self.client.with_options(max_retries=4)

    def run(self, calls: Iterable[tuple[str, Mapping[str, Any]]], *, wait: bool = True) -> Outcome:
        """Fill the cache for `calls` (cache key, request body): re-attach, submit what is missing, wait, collect.

        `calls` are the run's cache misses, each once. Lines already in a recorded batch are not sent again.
        """
        from judgebias.backends.openai import api_error, explain

        try:
            return self._run(calls, wait=wait)
        except api_error() as error:
            status = getattr(error, "status_code", None)
            hint = f"; {ROUTE_HINT}" if isinstance(status, int) and status >= 500 else ""
            raise FatalJudgeError(f"the Batch API at {self.endpoint}: {explain(error)}{hint}") from None

    def _run(self, calls: Iterable[tuple[str, Mapping[str, Any]]], *, wait: bool) -> Outcome:
        outcome = Outcome()
        records = [record for record in self.ledger.open(self.endpoint) if self._known(record)]
        wanted: set[str] = set()
        covered = {line_id for record in records for line_id in record.pending}
        fresh: list[BatchRecord] = []

        def lines() -> Iterator[bytes]:
            for key, body in calls:
                line_id = batchfile.custom_id(key)
                wanted.add(line_id)
                if line_id not in covered:
                    yield batchfile.input_line(key, body)

        for chunk in batchfile.split(lines(), self.batch_size, self.max_bytes):
            fresh.append(self._submit(chunk))
        mine = [r for r in records if wanted.intersection(r.pending)] + fresh
        outcome.batches = mine
        self._wait(mine, wanted, outcome, wait=wait)
        return outcome

    def _submit(self, chunk: list[bytes]) -> BatchRecord:
        """Upload one input file and create its batch; the ledger knows the file before the batch exists."""
        ids = [json.loads(line)["custom_id"] for line in chunk]
        name = hashlib.sha256("\n".join(ids).encode()).hexdigest()[:24]
        uploaded = self.client.files.create(file=(f"judgebias-{name}.jsonl", b"".join(chunk)), purpose="batch")
        record = BatchRecord(name, self.endpoint, ids, len(ids), file_id=uploaded.id)
        self.ledger.save(record)
        self._create(record)
        return record

    def _known(self, record: BatchRecord) -> bool:
        """Whether the endpoint still has a recorded batch (or its uploaded file, which then gets its batch).

        One the endpoint has forgotten (deleted, or a server that was reset) is dropped, so its lines go again.
        """
        try:
            if record.batch_id is None:
                self._create(record, adopt=True)  # uploaded by a run stopped before its batch was recorded
            else:
                self.client.batches.retrieve(record.batch_id)
        except Exception as error:
            if getattr(error, "status_code", None) != 404:
                raise
            self.ledger.forget(record)
            return False
        return True

    def _create(self, record: BatchRecord, *, adopt: bool = False) -> None:
        """Create the batch of an uploaded file (or adopt the one an interrupted run created), then record it."""
        assert record.file_id is not None
        adopted = next((b for b in self._listed() if b.input_file_id == record.file_id), None) if adopt else None
        batch = adopted or self.client.batches.create(
            input_file_id=record.file_id,
            endpoint=batchfile.ENDPOINT,
            completion_window="24h",
            metadata={"source": "judgebias", "ledger": record.name},
        )
        record.batch_id, record.status = batch.id, batch.status
        self.ledger.save(record)

    def _listed(self) -> list[Any]:
        """Recent batches at the endpoint (the first page), to find one created just before an interruption."""
        try:
            return list(self.client.batches.list(limit=100).data)
        except Exception:  # an endpoint without a batch list: create anew
            return []

    def _wait(self, records: list[BatchRecord], wanted: set[str], outcome: Outcome, *, wait: bool) -> None:
        """Poll every batch until it ends (or once, without waiting), collecting each as it ends."""
        running = list(records)
        while running:
            still = []
            for record in running:
                assert record.batch_id is not None
                batch = self.client.batches.retrieve(record.batch_id)
                record.status = batch.status
                counts = batch.request_counts
                record.completed = int(counts.completed) if counts else 0
                record.failed = int(counts.failed) if counts else 0
                if batch.status in TERMINAL:
                    self._collect(record, batch, wanted, outcome)
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

    def _collect(self, record: BatchRecord, batch: Any, wanted: set[str], outcome: Outcome) -> None:
        """Cache every reply of an ended batch; record its failed lines; forget it once nothing is left."""
        assert record.batch_id is not None
        if batch.status == "failed":
            errors = [e.model_dump() for e in (batch.errors.data if batch.errors and batch.errors.data else [])]
            self.ledger.forget(record)
            raise UserError(
                batchfile.validation_report(record.batch_id, errors)
                + "\nfix the cause, then rerun the same command to submit again"
            )
        answered: set[str] = set()
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            text = self.client.files.content(file_id).text
            for line in batchfile.read_results(text, f"batch {record.batch_id} file {file_id}"):
                key = batchfile.key_of(line.custom_id)
                if key is None or line.custom_id not in wanted:
                    continue  # another run's line: left pending for it
                answered.add(line.custom_id)
                if line.body is None:
                    outcome.errors[key] = f"batch {record.batch_id}: {line.error}"
                    continue
                try:
                    stored = self.reply_of(line.body, key)
                except UnusableReply as unusable:  # an error body or no choices: asked again by the next run
                    outcome.errors[key] = f"batch {record.batch_id}: {unusable} (not cached)"
                    continue
                self.put(key, stored)
                outcome.filled.add(key)
        for line_id in wanted.intersection(record.pending) - answered:
            key = batchfile.key_of(line_id)
            if key is not None:
                outcome.errors[key] = f"batch {record.batch_id} ended {batch.status} without this request"
                answered.add(line_id)
        record.pending = [line_id for line_id in record.pending if line_id not in answered]
        if record.pending:
            self.ledger.save(record)
        else:
            self.ledger.forget(record)
