"""The devserver's Batch API: files and batches as OpenAI serves them, answered by the same judge as live calls.

A batch is processed lazily: its status and request counts follow the clock (``seconds`` from creation to
completion), and its output and error files are written when it ends (completed, expired or cancelled). Each
line is answered by the ``answer`` function the server gives, the one its live endpoint uses, so a batch
and a live run of the same requests get the same replies. Faults are switched on by ``BatchOptions``: lines
that fail the first time they are seen, batches that expire after a number of lines, and the validation the
provider does before it runs anything (unknown model, bad or duplicate lines).

Endpoints (under ``/v1``): ``POST /files`` (multipart, purpose=batch), ``GET /files/{id}``,
``GET /files/{id}/content``, ``POST /batches``, ``GET /batches``, ``GET /batches/{id}``,
``POST /batches/{id}/cancel``. Nothing here imports the server: it answers (status, JSON bytes) per request.
"""

from __future__ import annotations

import argparse
import email.parser
import email.policy
import hashlib
import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

Answer = Callable[[dict[str, Any], str], tuple[int, dict[str, Any]]]  # (request body, reply shape) -> status, body

ENDPOINTS: Final = ("/v1/chat/completions",)
MAX_FILE_BYTES: Final = 200 * 1024 * 1024
TERMINAL: Final = ("completed", "failed", "expired", "cancelled")
# The status-200 reply shapes a batch line's body can take; the live server's REPLY_SHAPES are these and an HTML page.
LINE_SHAPES: Final = (
    "normal",
    "refusal",
    "content_filter",
    "tool_calls",
    "no_choices",
    "empty_choices",
    "error_body",
    "content_parts",
)
_FILE = re.compile(r"^/v1/files/(?P<id>[A-Za-z0-9_-]+)(?P<content>/content)?$")
_BATCH = re.compile(r"^/v1/batches/(?P<id>[A-Za-z0-9_-]+)(?P<cancel>/cancel)?$")


@dataclass(frozen=True)
class BatchOptions:
    """How the Batch API behaves: processing time and the faults to inject (defaults: instant, no faults)."""

    seconds: float = 0.0  # from creation to completion; request counts grow evenly in between
    fail_fraction: float = 0.0  # lines answered 500 the first time their custom_id is seen (drawn on the body)
    expire_after_lines: int | None = None  # a batch expires once it has run this many lines
    max_lines: int = 50_000  # a larger input file fails validation, as OpenAI's limit does
    models: tuple[str, ...] = ()  # models batch lines may name (a provider's, behind a gateway whose live route
    # takes an alias); empty: the server's allowed_models
    reply_shape: str = "normal"  # a line's status-200 body the first time it runs (LINE_SHAPES), e.g. no_choices
    route_status: int | None = None  # every files/batches request answered with this status (a gateway's route
    # without a files backend: LiteLLM answers 500)

    def __post_init__(self) -> None:
        """Reject settings that would make the behaviour ill-defined."""
        if self.reply_shape not in LINE_SHAPES:
            raise ValueError(f"batch reply_shape must be one of {', '.join(LINE_SHAPES)}, got {self.reply_shape!r}")
        if self.route_status is not None and not 400 <= self.route_status <= 599:
            raise ValueError("batch route_status must be an HTTP error status (400-599), or None")
        if self.seconds < 0 or not 0.0 <= self.fail_fraction <= 1.0:
            raise ValueError("batch seconds must be >= 0 and fail_fraction within [0, 1]")
        if self.expire_after_lines is not None and self.expire_after_lines < 0:
            raise ValueError("expire_after_lines must be >= 0 (or None: never expire)")


@dataclass
class _Batch:
    """One batch and what is known of its lines."""

    id: str
    input_file_id: str
    endpoint: str
    created: float
    lines: list[dict[str, Any]]
    metadata: dict[str, str] | None
    errors: list[dict[str, Any]] = field(default_factory=list)  # validation errors (status failed)
    status: str = "validating"
    ended: float | None = None
    cancelled: float | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    completed: int = 0
    failed: int = 0


def add_batch_arguments(parser: argparse.ArgumentParser) -> None:
    """The --batch-* flags of `python -m judgebias.devserver`."""
    add, defaults = parser.add_argument, BatchOptions()
    add(
        "--batch-seconds",
        type=float,
        default=defaults.seconds,
        help="seconds a batch takes from creation to completion",
    )
    add(
        "--batch-fail-fraction",
        type=float,
        default=defaults.fail_fraction,
        help="batch lines answered 500 the first time",
    )
    add(
        "--batch-expire-after-lines",
        type=int,
        default=defaults.expire_after_lines,
        help="a batch expires after running this many lines",
    )
    add("--batch-max-lines", type=int, default=defaults.max_lines, help="larger input files fail validation")
    add("--batch-reply-shape", choices=LINE_SHAPES, default=defaults.reply_shape, help="a line's body the first time")
    add("--batch-route-status", type=int, default=None, help="answer every files/batches request with this status")


def batch_options(args: dict[str, Any]) -> BatchOptions:
    """BatchOptions from the parsed --batch-* flags (removed from `args`)."""
    return BatchOptions(
        seconds=args.pop("batch_seconds"),
        fail_fraction=args.pop("batch_fail_fraction"),
        expire_after_lines=args.pop("batch_expire_after_lines"),
        max_lines=args.pop("batch_max_lines"),
        reply_shape=args.pop("batch_reply_shape"),
        route_status=args.pop("batch_route_status"),
    )


class BatchApi:
    """Files and batches of one server, shared by its handler threads (one lock)."""

    def __init__(self, options: BatchOptions, answer: Answer, allowed_models: tuple[str, ...] = ()) -> None:
        self.options = options
        self.answer = answer
        self.allowed_models = allowed_models  # empty: any model
        self.lock = threading.Lock()
        self.files: dict[str, dict[str, Any]] = {}
        self.contents: dict[str, bytes] = {}
        self.batches: dict[str, _Batch] = {}
        self.seen: dict[str, int] = {}  # custom_id -> times run, for fail_fraction's "first time"
        self.counter = itertools.count(1)
        self.counts = {"uploads": 0, "batches_created": 0, "lines_answered": 0, "cancels": 0}

    def stats(self) -> dict[str, int]:
        """Uploads, batches created, lines answered and cancels so far."""
        with self.lock:
            return dict(self.counts)

    def handle(self, method: str, path: str, content_type: str, body: bytes) -> tuple[int, bytes] | None:
        """The response to a Batch API request, or None when the path is not part of it."""
        if self.options.route_status is not None and path.startswith(("/v1/files", "/v1/batches")):
            # What LiteLLM's proxy answers on these routes when no files/batches backend is configured.
            message = "files_settings is not set, set it on your config.yaml file."
            return _error(self.options.route_status, message, None, code=str(self.options.route_status))
        if method == "POST" and path == "/v1/files":
            return self._upload(content_type, body)
        if method == "POST" and path == "/v1/batches":
            return self._create(body)
        if method == "GET" and path == "/v1/batches":
            with self.lock:
                data = [self._view(batch) for batch in reversed(self.batches.values())]
            return _ok({"object": "list", "data": data, "has_more": False})
        matched = _FILE.match(path)
        if matched and method == "GET":
            return self._file(matched["id"], content=bool(matched["content"]))
        matched = _BATCH.match(path)
        if matched and (method == "GET") != bool(matched["cancel"]):
            return self._batch(matched["id"], cancel=bool(matched["cancel"]))
        return None

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}-dev{next(self.counter):06d}"

    def _upload(self, content_type: str, body: bytes) -> tuple[int, bytes]:
        fields = _multipart(content_type, body)
        if fields is None or "file" not in fields or "purpose" not in fields:
            return _error(400, "Expected multipart/form-data with the fields 'file' and 'purpose'.", "file")
        data, filename = fields["file"]
        purpose = fields["purpose"][0].decode("utf-8", "replace")
        if purpose not in ("batch", "fine-tune", "assistants", "user_data"):
            return _error(400, f"Invalid purpose {purpose!r}.", "purpose")
        if purpose == "batch" and len(data) > MAX_FILE_BYTES:
            return _error(400, f"File is {len(data)} bytes; the Batch API accepts up to {MAX_FILE_BYTES}.", "file")
        with self.lock:
            file_id = self._new_id("file")
            self.files[file_id] = _file_object(file_id, filename or "upload.jsonl", purpose, len(data))
            self.contents[file_id] = data
            self.counts["uploads"] += 1
            return _ok(self.files[file_id])

    def _file(self, file_id: str, *, content: bool) -> tuple[int, bytes]:
        with self.lock:
            if file_id not in self.files:
                return _error(404, f"No such File object: {file_id}", "id", code="not_found")
            return (200, self.contents[file_id]) if content else _ok(self.files[file_id])

    def _create(self, body: bytes) -> tuple[int, bytes]:
        try:
            request = json.loads(body)
        except ValueError:
            return _error(400, "The request body is not valid JSON.", None)
        if not isinstance(request, dict):
            return _error(400, "The request body must be a JSON object.", None)
        endpoint, window = request.get("endpoint"), request.get("completion_window")
        if endpoint not in ENDPOINTS:
            return _error(400, f"Unsupported endpoint {endpoint!r}: use one of {', '.join(ENDPOINTS)}.", "endpoint")
        if window != "24h":
            return _error(400, f"Invalid completion_window {window!r}: only '24h' is supported.", "completion_window")
        file_id = request.get("input_file_id")
        with self.lock:
            if file_id not in self.files:
                return _error(404, f"No such File object: {file_id}", "input_file_id", code="not_found")
            if self.files[file_id]["purpose"] != "batch":
                return _error(400, "The input file must be uploaded with purpose 'batch'.", "input_file_id")
            lines, errors = self._validate(self.contents[file_id], endpoint)
            batch = _Batch(self._new_id("batch"), file_id, endpoint, time.time(), lines, request.get("metadata"))
            batch.errors = errors
            self.batches[batch.id] = batch
            self.counts["batches_created"] += 1
            return _ok(self._view(batch))

    def _validate(self, content: bytes, endpoint: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The input file's lines and the provider's per-line validation errors (none: the batch may run)."""
        lines: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        ids: set[str] = set()

        def fail(number: int, code: str, message: str, param: str | None) -> None:
            errors.append({"code": code, "line": number, "message": message, "param": param})

        rows = [row for row in content.decode("utf-8", "replace").splitlines() if row.strip()]
        if len(rows) > self.options.max_lines:
            fail(0, "batch_too_large", f"The file has {len(rows)} requests; at most {self.options.max_lines}.", None)
        for number, row in enumerate(rows, start=1):
            try:
                line = json.loads(row)
            except ValueError:
                fail(number, "invalid_json_line", "This line is not parseable as valid JSON.", None)
                continue
            if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str):
                fail(number, "missing_required_parameter", "Missing required parameter: 'custom_id'.", "custom_id")
                continue
            if line["custom_id"] in ids:
                fail(number, "duplicate_custom_id", "The custom_id for this request is a duplicate.", "custom_id")
            ids.add(line["custom_id"])
            if line.get("method") != "POST":
                fail(number, "invalid_method", "Only the POST method is supported.", "method")
            if line.get("url") != endpoint:
                fail(number, "mismatched_endpoint", f"The url must match the batch's endpoint {endpoint}.", "url")
            request = line.get("body")
            if not isinstance(request, dict) or not isinstance(request.get("model"), str):
                fail(number, "missing_required_parameter", "Missing required parameter: 'body.model'.", "body.model")
                continue
            allowed = self.options.models or self.allowed_models
            if allowed and request["model"] not in allowed:
                message = f"The provided model '{request['model']}' is not supported by the Batch API."
                fail(number, "model_not_found", message, "body.model")
            lines.append(line)
        return lines, errors

    def _batch(self, batch_id: str, *, cancel: bool) -> tuple[int, bytes]:
        with self.lock:
            batch = self.batches.get(batch_id)
            if batch is None:
                return _error(404, f"No batch found with id '{batch_id}'.", "batch_id", code="not_found")
            if cancel:
                if batch.status in TERMINAL:
                    return _error(409, f"Cannot cancel a batch with status '{batch.status}'.", None)
                self._advance(batch)
                if batch.status not in TERMINAL:
                    batch.cancelled = time.time()
                    batch.status = "cancelling"
                    self.counts["cancels"] += 1
                return _ok(self._view(batch))
            return _ok(self._view(batch))

    def _view(self, batch: _Batch) -> dict[str, Any]:
        """The Batch object, after moving the batch along the clock (caller holds the lock)."""
        self._advance(batch)
        stamp = int(batch.created)
        ended = int(batch.ended) if batch.ended is not None else None
        return {
            "id": batch.id,
            "object": "batch",
            "endpoint": batch.endpoint,
            "errors": {"object": "list", "data": batch.errors} if batch.errors else None,
            "input_file_id": batch.input_file_id,
            "completion_window": "24h",
            "status": batch.status,
            "output_file_id": batch.output_file_id,
            "error_file_id": batch.error_file_id,
            "created_at": stamp,
            "in_progress_at": stamp if batch.status != "failed" else None,
            "expires_at": stamp + 24 * 3600,
            "completed_at": ended if batch.status == "completed" else None,
            "failed_at": ended if batch.status == "failed" else None,
            "expired_at": ended if batch.status == "expired" else None,
            "cancelling_at": int(batch.cancelled) if batch.cancelled is not None else None,
            "cancelled_at": ended if batch.status == "cancelled" else None,
            "request_counts": {"total": len(batch.lines), "completed": batch.completed, "failed": batch.failed},
            "metadata": batch.metadata,
        }

    def _advance(self, batch: _Batch) -> None:
        """Move a batch to the state the clock says it is in; run and write its lines when it ends."""
        if batch.status in TERMINAL:
            return
        if batch.errors:
            batch.status, batch.ended = "failed", time.time()
            return
        total = len(batch.lines)
        seconds = self.options.seconds
        now = batch.cancelled if batch.cancelled is not None else time.time()
        progress = 1.0 if seconds == 0 else min(1.0, (now - batch.created) / seconds)
        ran = int(total * progress)
        limit = self.options.expire_after_lines
        if batch.cancelled is not None:
            self._finish(batch, ran, "cancelled", "batch_cancelled", "The batch was cancelled before this request ran.")
        elif limit is not None and limit < total and ran >= limit:
            message = "This request could not be executed before the completion window expired."
            self._finish(batch, limit, "expired", "batch_expired", message)
        elif ran >= total:
            self._finish(batch, total, "completed", "", "")
        else:
            batch.status = "in_progress"
            batch.completed = ran  # an estimate while running, as a provider's counts are

    def _fails(self, body: Any) -> bool:
        """Whether a line is answered 500 the first time it runs: a draw on its request body, so the same calls fail
        whichever port the server listens on (the custom_id, a cache key, holds the endpoint URL)."""
        return unit(b"batch-fail", json.dumps(body, sort_keys=True).encode()) < self.options.fail_fraction

    def _finish(self, batch: _Batch, ran: int, status: str, code: str, message: str) -> None:
        """Answer the first `ran` lines; the rest end in the error file with `code` (caller holds the lock)."""
        outputs: list[bytes] = []
        errors: list[bytes] = []
        completed = failed = 0
        for index, line in enumerate(batch.lines):
            custom_id = line["custom_id"]
            record: dict[str, Any] = {"id": f"batch_req_{batch.id}_{index}", "custom_id": custom_id}
            if index >= ran:
                errors.append(_line(record | {"response": None, "error": {"code": code, "message": message}}))
                continue
            seen = self.seen.get(custom_id, 0)
            self.seen[custom_id] = seen + 1
            if seen == 0 and self._fails(line["body"]):
                status_code = 500
                reply = {"error": {"message": "The server had an error processing this request.", "code": None}}
            else:
                status_code, reply = self.answer(line["body"], self.options.reply_shape if seen == 0 else "normal")
            self.counts["lines_answered"] += 1
            response = {"status_code": status_code, "request_id": f"req_{batch.id}_{index}", "body": reply}
            (outputs if status_code == 200 else errors).append(_line(record | {"response": response, "error": None}))
            completed += status_code == 200
            failed += status_code != 200
        batch.output_file_id = self._store(f"{batch.id}_output.jsonl", b"".join(outputs)) if outputs else None
        batch.error_file_id = self._store(f"{batch.id}_error.jsonl", b"".join(errors)) if errors else None
        batch.completed, batch.failed = completed, failed + (len(batch.lines) - ran)
        batch.status, batch.ended = status, time.time()

    def _store(self, filename: str, data: bytes) -> str:
        file_id = self._new_id("file")
        self.files[file_id] = _file_object(file_id, filename, "batch_output", len(data))
        self.contents[file_id] = data
        return file_id


def _file_object(file_id: str, filename: str, purpose: str, size: int) -> dict[str, Any]:
    return {
        "id": file_id,
        "object": "file",
        "bytes": size,
        "created_at": int(time.time()),
        "filename": filename,
        "purpose": purpose,
        "status": "processed",
    }


def _multipart(content_type: str, body: bytes) -> dict[str, tuple[bytes, str | None]] | None:
    """The fields of a multipart/form-data body: name -> (bytes, filename)."""
    if not content_type.startswith("multipart/form-data"):
        return None
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode("latin-1")
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
    if not message.is_multipart():
        return None
    fields: dict[str, tuple[bytes, str | None]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if isinstance(name, str) and isinstance(payload, bytes):
            fields[name] = (payload, part.get_filename())
    return fields


def unit(*parts: bytes) -> float:
    """A deterministic number in [0, 1) from the given bytes (the server's seeded draws, batch and chat alike)."""
    digest = hashlib.sha256(b"\x00".join(parts)).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def dumps(payload: object) -> bytes:
    """Compact JSON, as the server sends every body."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _line(record: dict[str, Any]) -> bytes:
    return dumps(record) + b"\n"


def _ok(payload: object) -> tuple[int, bytes]:
    return 200, dumps(payload)


def _error(status: int, message: str, param: str | None, *, code: str | None = None) -> tuple[int, bytes]:
    error = {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}
    return status, json.dumps(error, separators=(",", ":")).encode("utf-8")
