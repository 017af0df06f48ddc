"""A batch provider of the tests' own, unlike OpenAI's, and its transport: proof that batch/ is provider-neutral.

Its protocol: no files; a batch is created by POSTing its requests inline (`{"requests": [{"custom_id", "params"}]}`,
the params a messages call would send), labelled by the client; it is polled by id until `processing_status` is
"ended"; its results are one JSON line per request at the batch's `results_url`, each `{"custom_id", "result":
{"type": "succeeded", "message": {...}}}` or `{"type": "errored", "error": {...}}`. Unknown ids are a 404. The
server answers every request itself and keeps what it answered and what it was asked, the tests' oracle.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from judgebias.backends.base import Backend, BatchForgotten, BatchLine, BatchState, BatchTransport
from judgebias.core.record import Reply, Request

PATH = "/v1/messages/batches"


@dataclass
class ProviderLog:
    """What the provider was asked and answered, by its own count."""

    created: int = 0  # batches created
    requests: int = 0  # requests received in them (each billed)
    answers: dict[str, str] = field(default_factory=dict)  # custom_id -> the text answered
    batches: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> {"label", "requests", "ends_at"}


class InlineProvider:
    """The provider on 127.0.0.1 (a thread), answering each request 'A' or 'B' by a hash of its params."""

    def __init__(self, *, seconds: float = 0.0, errored_every: int = 0, port: int = 0) -> None:
        self.seconds = seconds  # how long a batch runs before it ends
        self.errored_every = errored_every  # every n-th request of a batch ends with an error (0: none)
        self.log = ProviderLog()
        self.lock = threading.Lock()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                self._answer(*provider.create(self.path, body))

            def do_GET(self) -> None:
                self._answer(*provider.get(self.path))

            def _answer(self, status: int, payload: bytes, kind: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> InlineProvider:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def create(self, path: str, body: Mapping[str, Any]) -> tuple[int, bytes]:
        """POST /v1/messages/batches: every request must carry params.max_tokens, else the batch is refused."""
        if path != PATH:
            return 404, b'{"error": {"type": "not_found_error"}}'
        requests = body.get("requests") or []
        if not all(isinstance(r.get("params", {}).get("max_tokens"), int) for r in requests):
            return 400, b'{"error": {"type": "invalid_request_error", "message": "params.max_tokens: Field required"}}'
        with self.lock:
            self.log.created += 1
            self.log.requests += len(requests)
            batch_id = f"msgbatch_{self.log.created:04d}"
            ends_at = time.monotonic() + self.seconds
            self.log.batches[batch_id] = {"label": body.get("label"), "requests": requests, "ends_at": ends_at}
        return 200, json.dumps(self._view(batch_id)).encode()

    def get(self, path: str) -> tuple[int, bytes]:
        """A batch (`/<id>`), its results (`/<id>/results`), or the list of batches (newest first)."""
        if path.startswith(PATH + "?") or path == PATH:
            listed = [self._view(batch_id) for batch_id in reversed(self.log.batches)]
            return 200, json.dumps({"data": listed}).encode()
        parts = path[len(PATH) + 1 :].split("/")
        if not path.startswith(PATH + "/") or parts[0] not in self.log.batches:
            return 404, b'{"error": {"type": "not_found_error", "message": "no such batch"}}'
        if parts[1:] == ["results"]:
            lines = [
                json.dumps(self._result(index, r)) for index, r in enumerate(self.log.batches[parts[0]]["requests"])
            ]
            return 200, ("\n".join(lines) + "\n").encode()
        return 200, json.dumps(self._view(parts[0])).encode()

    def _view(self, batch_id: str) -> dict[str, Any]:
        batch = self.log.batches[batch_id]
        ended = time.monotonic() >= batch["ends_at"]
        count = len(batch["requests"])
        errored = sum(1 for index in range(count) if self._errored(index)) if ended else 0
        return {
            "id": batch_id,
            "type": "message_batch",
            "label": batch["label"],
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": {
                "processing": 0 if ended else count,
                "succeeded": count - errored if ended else 0,
                "errored": errored,
            },
            "results_url": f"{self.url}{PATH}/{batch_id}/results" if ended else None,
        }

    def _errored(self, index: int) -> bool:
        return bool(self.errored_every) and index % self.errored_every == self.errored_every - 1

    def _result(self, index: int, request: Mapping[str, Any]) -> dict[str, Any]:
        custom_id = request["custom_id"]
        if self._errored(index):
            error = {"type": "overloaded_error", "message": "try again later"}
            return {"custom_id": custom_id, "result": {"type": "errored", "error": error}}
        text = "A" if hashlib.sha256(json.dumps(request["params"]).encode()).digest()[0] % 2 else "B"
        with self.lock:
            self.log.answers[custom_id] = text
        message = {"content": [{"type": "text", "text": text}], "usage": {"input_tokens": 20, "output_tokens": 1}}
        return {"custom_id": custom_id, "result": {"type": "succeeded", "message": message}}


class Refused(Exception):
    """An error status from the provider, with its message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class InlineBatches:
    """The transport of that provider, over real HTTP (urllib): nothing staged, batches labelled by ledger name."""

    max_bytes = 1 << 20

    def __init__(self, url: str, model: str = "test-model") -> None:
        self.endpoint = url
        self.model = model

    def _http(self, path: str, body: Mapping[str, Any] | None = None) -> bytes:
        """GET `path` (or POST `body` as JSON) under the endpoint; an error status raises Refused."""
        data = json.dumps(body).encode() if body is not None else None
        url = path if path.startswith("http") else self.endpoint + path
        request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                payload: bytes = response.read()
                return payload
        except urllib.error.HTTPError as error:
            message = json.loads(error.read() or b"{}").get("error", {}).get("message", "")
            raise Refused(error.code, message) from None

    def batch_body(self, messages: list[dict[str, str]], sample: int = 0) -> dict[str, Any]:
        """The params of a messages call: the system prompt apart, max_tokens always."""
        system = "\n".join(m["content"] for m in messages if m["role"] == "system")
        turns = [m for m in messages if m["role"] != "system"]
        return {"model": self.model, "max_tokens": 8, "system": system, "messages": turns}

    def reply_from_json(self, body: Mapping[str, Any], request: Request) -> Reply:
        """The text of a message and its token counts."""
        text = "".join(part["text"] for part in body["content"] if part.get("type") == "text")
        usage = body.get("usage") or {}
        return Reply(text, int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0)), self.model, "stop")

    def encode(self, line_id: str, body: Mapping[str, Any]) -> bytes:
        """One request of the inline list, a line of its own."""
        return json.dumps({"custom_id": line_id, "params": body}).encode() + b"\n"

    def stage(self, name: str, lines: list[bytes]) -> str | None:
        """Nothing is staged: the requests go with the batch."""
        return None

    def create(self, name: str, staged: str | None, lines: list[bytes]) -> BatchState:
        """POST the requests; refused ones raise (control_failure reads them)."""
        requests = [json.loads(line) for line in lines]
        return _state(json.loads(self._http(PATH, {"requests": requests, "label": name})))

    def adopt(self, name: str, staged: str | None) -> BatchState | None:
        """The batch labelled `name`, if the provider lists one."""
        listed = json.loads(self._http(f"{PATH}?limit=100"))["data"]
        return next((_state(batch) for batch in listed if batch.get("label") == name), None)

    def retrieve(self, batch_id: str) -> BatchState:
        """The batch now; a 404 is a batch the provider forgot."""
        try:
            return _state(json.loads(self._http(f"{PATH}/{batch_id}")))
        except Refused as refused:
            if refused.status == 404:
                raise BatchForgotten(batch_id) from None
            raise

    def results(self, state: BatchState) -> Iterable[BatchLine]:
        """Each result line: a message, or the provider's error type and message."""
        for url in state.results:
            for text in self._http(url).decode().splitlines():
                yield _result_line(json.loads(text))

    def read_output(self, text: str, source: str) -> list[BatchLine]:
        """A results file the user saved from the provider's results URL (one JSON object a line)."""
        return [
            _result_line(json.loads(line), number)
            for number, line in enumerate(text.splitlines(), start=1)
            if line.strip()
        ]

    def control_failure(self, error: BaseException) -> str | None:
        """An HTTP error status: its code and the provider's message."""
        return str(error) if isinstance(error, Refused) else None


def _result_line(record: Mapping[str, Any], number: int = 0) -> BatchLine:
    """One result line: a message, or the provider's error type and message."""
    result = record["result"]
    if result["type"] == "succeeded":
        return BatchLine(record["custom_id"], result["message"], None, number)
    error = result.get("error") or {}
    return BatchLine(record["custom_id"], None, f"{error.get('type')}: {error.get('message')}", number)


def _state(batch: Mapping[str, Any]) -> BatchState:
    counts = batch["request_counts"]
    ended = batch["processing_status"] == "ended"
    return BatchState(
        id=batch["id"],
        status=batch["processing_status"],
        ended=ended,
        completed=int(counts["succeeded"]),
        failed=int(counts["errored"]),
        results=(batch["results_url"],) if ended else (),
    )


class InlineJudge(Backend):
    """A paid judge whose calls go only by that provider's batches (a live call is a test failure)."""

    paid = True

    def __init__(self, transport: InlineBatches) -> None:
        self.transport = transport

    def complete(self, request: Request, meter: object = None) -> Reply:
        raise AssertionError("a batch-mode call was sent live")

    def cache_request(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        return {"endpoint": self.transport.endpoint, **self.transport.batch_body(messages)}

    def batch_transport(self) -> BatchTransport:
        return self.transport
