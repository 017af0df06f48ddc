"""OpenAI's Batch API behind batch mode's transport: input files uploaded, batches created, polled and read back.

Also OpenAI's batch file format (an input line, an output or error line read back), which `judge.mode=export` and
`import` use for any machine that runs such files (vLLM's `run-batch` writes the same). The ledger, the splitting
and the polling are batch/'s, and know nothing of this API.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from judgebias.backends.base import BatchForgotten, BatchLine, BatchState
from judgebias.core.errors import UserError
from judgebias.core.record import Reply, Request
from judgebias.io.jsonl import json_lines, text_lines

ENDPOINT = "/v1/chat/completions"
MAX_FILE_BYTES = 200 * 1024 * 1024  # OpenAI's limit on one batch input file
ENDED = ("completed", "failed", "expired", "cancelled")
CONTROL_RETRIES = 4  # a few control calls per batch (upload, create, poll, download): the SDK's retries suffice
# A 5xx that outlasts the SDK's retries on a files/batches route: most often a gateway with no batch backend
# behind it (LiteLLM's proxy answers 500 when its config has no files_settings), not an outage.
ROUTE_HINT = (
    "the endpoint's files/batches routes fail: a gateway needs a files and batches backend configured (LiteLLM: "
    "files_settings in its config.yaml), or run judge.mode=live"
)


def input_line(line_id: str, body: Mapping[str, Any]) -> bytes:
    """One input line: the call's custom_id, POST to the chat endpoint, and the body a live call sends."""
    line = {"custom_id": line_id, "method": "POST", "url": ENDPOINT, "body": body}
    return json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def read_results(text: str, source: str) -> list[BatchLine]:
    """Every line of an output or error file (OpenAI's format; vLLM's run-batch writes the same)."""
    results = []
    for number, record in json_lines(text_lines(text), source):
        line_id = record.get("custom_id") if isinstance(record, dict) else None
        if not isinstance(line_id, str):
            raise UserError(f"{source}:{number}: custom_id is missing (not a batch output line)")
        body, error = _outcome(record)
        results.append(BatchLine(line_id, body, error, number))
    return results


def _outcome(record: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """(body, None) for a 200 response with a body; (None, reason) for anything else."""
    response = record.get("response")
    error = record.get("error")
    if isinstance(response, Mapping):
        status = response.get("status_code")
        body = response.get("body")
        if status == 200 and isinstance(body, dict) and not error:
            return body, None
        reason = _error_text(body.get("error") if isinstance(body, Mapping) else None) or _error_text(error)
        return None, f"HTTP {status}" + (f" {reason}" if reason else "")
    return None, _error_text(error) or "no response and no error in the line"


def _error_text(error: Any) -> str:
    """`code: message` of an error object, or the text of an error string (vLLM writes a string)."""
    if isinstance(error, str):
        return error.strip().splitlines()[0][:300] if error.strip() else ""
    if isinstance(error, Mapping):
        code, message = error.get("code"), str(error.get("message") or "").strip()
        first = message.splitlines()[0][:300] if message else ""
        return ": ".join(str(part) for part in (code, first) if part)
    return ""


class BatchingJudge(Protocol):
    """What the transport uses of the live judge (backends.openai.OpenAIJudge)."""

    endpoint: str

    def client(self) -> Any:
        """The SDK client for the endpoint, with the judge's headers."""

    def batch_body(self, messages: list[dict[str, str]], sample: int = 0) -> dict[str, Any]:
        """The body of one call."""

    def reply_from_json(self, body: Mapping[str, Any], request: Request) -> Reply:
        """A chat-completion body read as a reply."""

    def is_api_error(self, error: BaseException) -> bool:
        """Whether `error` is one of the SDK's API errors."""

    def explain(self, error: BaseException) -> str:
        """Its one-line reason, credentials redacted."""


class OpenAIBatches:
    """The Files and Batches APIs of the judge's endpoint, with the judge's own client, bodies and reply reading."""

    max_bytes = MAX_FILE_BYTES

    def __init__(self, judge: BatchingJudge) -> None:
        self.judge = judge
        self.endpoint = judge.endpoint
        self._client: Any = None

    @property
    def client(self) -> Any:
        """The judge's SDK client (its headers included) with a few retries of its own, made on first use."""
        if self._client is None:
            self._client = self.judge.client().with_options(max_retries=CONTROL_RETRIES)
        return self._client

    def batch_body(self, messages: list[dict[str, str]], sample: int = 0) -> dict[str, Any]:
        """A live call's body, naming judge.batch_model when set."""
        return self.judge.batch_body(messages, sample)

    def reply_from_json(self, body: Mapping[str, Any], request: Request) -> Reply:
        """A chat-completion body read as a live reply is."""
        return self.judge.reply_from_json(body, request)

    def encode(self, line_id: str, body: Mapping[str, Any]) -> bytes:
        """One line of the input file."""
        return input_line(line_id, body)

    def read_output(self, text: str, source: str) -> list[BatchLine]:
        """An output or error file downloaded by hand (OpenAI's format; vLLM's run-batch writes the same)."""
        return read_results(text, source)

    def stage(self, name: str, lines: list[bytes]) -> str | None:
        """Upload the input file; its file id."""
        uploaded = self.client.files.create(file=(f"judgebias-{name}.jsonl", b"".join(lines)), purpose="batch")
        return str(uploaded.id)

    def create(self, name: str, staged: str | None, lines: list[bytes]) -> BatchState:
        """Create the batch of an uploaded file, labelled with the ledger's name."""
        assert staged is not None, "an OpenAI batch is always created from an uploaded file"
        try:
            batch = self.client.batches.create(
                input_file_id=staged,
                endpoint=ENDPOINT,
                completion_window="24h",
                metadata={"source": "judgebias", "ledger": name},
            )
        except Exception as error:
            raise _forgotten(error) from None
        return _state(batch)

    def adopt(self, name: str, staged: str | None) -> BatchState | None:
        """A batch among the endpoint's recent ones (the first page) made from the uploaded file."""
        try:
            listed = list(self.client.batches.list(limit=100).data)
        except Exception:  # an endpoint without a batch list: create anew
            return None
        return next((_state(batch) for batch in listed if batch.input_file_id == staged), None)

    def retrieve(self, batch_id: str) -> BatchState:
        """The batch's status and request counts."""
        try:
            return _state(self.client.batches.retrieve(batch_id))
        except Exception as error:
            raise _forgotten(error) from None

    def results(self, state: BatchState) -> Iterable[BatchLine]:
        """The lines of its output file, then of its error file."""
        for file_id in state.results:
            text = self.client.files.content(file_id).text
            yield from read_results(text, f"batch {state.id} file {file_id}")

    def control_failure(self, error: BaseException) -> str | None:
        """An SDK error's one-line reason, with the route hint after a 5xx."""
        if not self.judge.is_api_error(error):
            return None
        status = getattr(error, "status_code", None)
        hint = f"; {ROUTE_HINT}" if isinstance(status, int) and status >= 500 else ""
        return self.judge.explain(error) + hint


def _forgotten(error: Exception) -> Exception:
    """BatchForgotten for a 404 (the endpoint has no such batch or file), else the error itself."""
    return BatchForgotten(str(error)) if getattr(error, "status_code", None) == 404 else error


def _state(batch: Any) -> BatchState:
    """An SDK Batch object in the transport's terms."""
    counts = batch.request_counts
    rejected = None
    if batch.status == "failed":
        rejected = tuple(e.model_dump() for e in (batch.errors.data if batch.errors and batch.errors.data else []))
    return BatchState(
        id=str(batch.id),
        status=str(batch.status),
        ended=batch.status in ENDED,
        completed=int(counts.completed) if counts else 0,
        failed=int(counts.failed) if counts else 0,
        rejected=rejected,
        results=tuple(str(f) for f in (batch.output_file_id, batch.error_file_id) if f),
    )
