"""A local stand-in for an OpenAI-compatible judge: a chat-completions server with no dependencies.

It exists so that the tests, the benchmarks and anyone trying judgebias without an API key can run the
real client (the official ``openai`` SDK, over real HTTP) against a judge whose decisions are known in
advance. The judge reads the two fenced answers of the prompt and decides by a fixed policy; latency,
rate limits and faults (429, 500, hangs, reset connections, truncated replies, exhausted quota) can be
switched on, deterministically, to exercise the client's retries and error handling. It can also behave as
the judges and gateways people put in front of it: a reasoning model that refuses what OpenAI's refuse and spends
hidden reasoning tokens out of the budget, replies that think aloud (``<think>``) or in a separate field, the
wait headers of a gateway or of OpenAI's rate limiter, and a gateway's errors (the status in the body). With
``--prefix-cache`` it caches prompt prefixes as OpenAI does and reports the cached tokens in a provider's usage shape
(:mod:`judgebias.devserver.prompt_cache`), and every answered request is billed at ``--price-*`` in its own bill.

Endpoints: ``POST /v1/chat/completions``, ``POST /v1/completions`` (a base model continuing a prompt that ends
in an answer cue: a label token with a leading space, then a sentence that names the other label, with the first
token's top log-probabilities spelled as a real tokenizer spells them), ``GET /v1/models``, ``GET /v1/models/{id}``, ``GET /stats``
(counters, as JSON) and ``POST /reset`` (zero the counters); the Batch API's files and batches are in
:mod:`judgebias.devserver.batch`.

Use it in-process with :func:`start_server`, or from a shell::

    python -m judgebias.devserver --port 8000 --policy longer --latency 0.1 --rate-limit 100
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import re
import signal
import socket
import socketserver
import struct
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType, TracebackType
from typing import Any, Final, cast

from judgebias.devserver.batch import (
    LINE_SHAPES,
    BatchApi,
    BatchOptions,
    add_batch_arguments,
    batch_options,
    dumps,
    unit,
)
from judgebias.devserver.prompt_cache import NOTHING, USAGE_SHAPES, Prices, PromptCache, report
from judgebias.process import startup
from judgebias.process.command import prog

__all__ = [
    "POLICIES",
    "RunningServer",
    "ServerOptions",
    "find_answers",
    "main",
    "options_from_args",
    "start_server",
]

POLICIES: Final = ("longer", "first", "second", "hash", "tie")
THINK_STYLES: Final = ("none", "inline", "field")  # no thinking; <think>...</think> in the reply; reasoning_content
WAIT_STYLES: Final = ("openai", "litellm", "reset")  # how a 429 announces its wait (see _wait_headers)
# Status-200 replies that carry no verdict, as servers send them (see _shaped); "normal" is an ordinary reply.
# A batch line's body (JSON) can take each of them but an HTML page.
REPLY_SHAPES: Final = (*LINE_SHAPES[:-1], "html", LINE_SHAPES[-1])
ERROR_STYLES: Final = ("openai", "gateway")  # gateway: the status in the body's code, LiteLLM's auth errors
ANSWERED_FAULTS = frozenset({"fail_first_n", "p429", "p500"})  # injected faults sent in place of an answer
REASONING_TOKENS: Final = {"minimal": 16, "low": 128, "medium": 512, "high": 2048}  # hidden tokens spent per effort
DEFAULT_MODEL: Final = "judgebias-dev"
NO_ANSWERS_REPLY: Final = "I cannot find two answers."
MAX_BODY_BYTES: Final = 16 * 1024 * 1024

_BLOCK = re.compile(
    r"\[The Start of Answer (?P<label>[^\[\]\n]+?) *\u00b7 *(?P<nonce>[0-9a-fA-F]{8})\]\n?"
    r"(?P<text>.*?)"
    r"\n?\[The End of Answer (?P=label) *\u00b7 *(?P=nonce)\]",
    re.DOTALL,
)
_WORD = re.compile(r"\s*\S+")
_P_CHOSEN: Final = math.log(0.8)
_P_OTHER: Final = math.log(0.15)
_P_TIE: Final = math.log(0.05)
_P_TIED_LABEL: Final = math.log(0.1)
_P_PLAIN_TOKEN: Final = -0.01
_FAULTS: Final = ("p429", "p500", "phang", "preset", "ptruncate")
_FAULT_COUNTERS: Final = (*_FAULTS, "fail_first_n", "quota_exhausted", "rate_limit", "reply_shape")


@dataclass(frozen=True)
class ServerOptions:
    """How the stand-in judge decides and misbehaves; every field has a safe, fast default."""

    policy: str = "longer"
    first_bias: float = 0.0
    suggestible: float = 0.0  # P(follow the slot a prompt names as the better one, `ORDER_CUE`): a rubric leaking
    # an order cue (or an answer injecting one) makes this judge position-biased, as real judges are
    latency: float = 0.0
    rate_limit: float | None = None
    api_key: str | None = None
    required_header: tuple[str, str] | None = None  # (name, value) every /v1 request must carry, as a gateway that
    # authenticates or routes by header wants; a request without it is answered 401
    served_model: str | None = None
    allowed_models: tuple[str, ...] = ()
    p429: float = 0.0
    p500: float = 0.0
    phang: float = 0.0
    preset: float = 0.0
    ptruncate: float = 0.0
    fail_first_n: int = 0
    quota_exhausted: bool = False
    fault_seed: int = 0
    hang_seconds: float = 30.0
    fault_retry_after: float = 0.05
    reasoning_models: tuple[str, ...] = ()  # model ids that behave as OpenAI's reasoning models
    drop_params: bool = False  # a reasoning model's refused settings are dropped silently instead (temperature,
    # top_p, logprobs; max_tokens renamed), as a gateway with LiteLLM's drop_params does before it forwards
    think: str = "none"
    wait_style: str = "openai"
    error_style: str = "openai"
    upstream_key_refused: bool = False  # every completion fails as a gateway's upstream credential would
    reply_shape: str = "normal"  # a status-200 reply without a verdict (REPLY_SHAPES)
    reply_shape_first_n: int = 0  # only the first N requests per distinct body get reply_shape (0: every request)
    echo_headers: bool = False  # a careless server: each 200 reply quotes the request's headers (key and all)
    n_ctx: int | None = None  # a context of this many tokens (words here): a longer prompt is refused as llama.cpp does
    prefix_cache: bool = False  # serve prompt prefixes from a cache as OpenAI does, and report the cached tokens
    cached_usage: str = "openai"  # the usage shape the cached tokens are reported in (prompt_cache.USAGE_SHAPES)
    price_input: float = 0.0  # USD per million prompt tokens, for the server's own bill (GET /stats `billing`)
    price_cached: float = 0.0  # USD per million cached prompt tokens
    price_output: float = 0.0  # USD per million completion tokens
    bill_cached_in_full: bool = False  # report cached tokens but bill them at the input price
    batch: BatchOptions = field(default_factory=BatchOptions)  # the Batch API's timing and faults
    host: str = "127.0.0.1"
    port: int = 0

    def __post_init__(self) -> None:
        """Reject settings that would make the server's behaviour ill-defined."""
        if self.policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {self.policy!r}")
        choices = (
            ("think", THINK_STYLES),
            ("wait_style", WAIT_STYLES),
            ("error_style", ERROR_STYLES),
            ("reply_shape", REPLY_SHAPES),
            ("cached_usage", USAGE_SHAPES),
        )
        for name, allowed in choices:
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}")
        for name in ("first_bias", "suggestible", *_FAULTS):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be a fraction in [0, 1], got {value!r}")
        if sum(getattr(self, name) for name in _FAULTS) > 1.0 + 1e-9:
            raise ValueError("the fault fractions p429 + p500 + phang + preset + ptruncate must not exceed 1")
        if self.rate_limit is not None and not self.rate_limit > 0:
            raise ValueError(f"rate_limit must be positive (or None for no limit), got {self.rate_limit!r}")
        for name in ("latency", "hang_seconds", "fault_retry_after"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        for name in ("fail_first_n", "reply_shape_first_n"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be in [0, 65535], got {self.port!r}")

    @property
    def model_ids(self) -> tuple[str, ...]:
        """The model ids listed by /v1/models."""
        if self.served_model is not None:
            return (self.served_model,)
        return self.allowed_models or (DEFAULT_MODEL,)


@dataclass(frozen=True)
class _Reply:
    """A decided reply: the tokens it is made of, and which token carries the verdict."""

    tokens: tuple[str, ...]
    verdict_index: int | None = None
    verdict_top: tuple[tuple[str, float], ...] = ()
    thinking: str = ""  # the reasoning a thinking model writes first (it names both labels before deciding)


class _TokenBucket:
    """Admits `rate` requests per second with bursts of about rate/10 (at least 1)."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.capacity = max(1.0, rate / 10.0)
        self.tokens = self.capacity
        self.stamp = time.monotonic()

    def take(self) -> float:
        """Take a slot: 0.0 when admitted, else the seconds until a slot is free (caller holds the lock)."""
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.rate

    def window(self) -> tuple[int, float]:
        """Requests left now, and the seconds until the next one is admitted (caller holds the lock)."""
        return int(self.tokens), max(0.0, (1.0 - self.tokens) / self.rate)


class _State:
    """Counters and admission state shared by all handler threads, guarded by one lock."""

    def __init__(self, options: ServerOptions) -> None:
        self.options = options
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.started = int(time.time())
        self.batch = BatchApi(options.batch, self.answer, options.allowed_models)
        self._zero()

    def _zero(self) -> None:
        self.requests = 0
        self.other_requests = 0
        self.completions_ok = 0
        self.by_status: dict[int, int] = {}
        self.faults = dict.fromkeys(_FAULT_COUNTERS, 0)
        self.per_body: dict[bytes, int] = {}
        self.admitted_per_body: dict[bytes, int] = {}
        self.with_auth = 0
        self.without_auth = 0
        self.auth_seen: set[bytes] = set()
        self.in_flight = 0
        self.max_in_flight = 0
        self.serial = 0
        self.timeline: list[dict[str, Any]] = []
        options = self.options
        prices = Prices(options.price_input, options.price_cached, options.price_output, options.bill_cached_in_full)
        self.prompt_cache = PromptCache(prices)
        rate = self.options.rate_limit
        self.bucket = _TokenBucket(rate) if rate is not None else None

    def reset(self) -> None:
        """Zero every counter, forget the bodies seen (so fail_first_n starts over) and refill the bucket."""
        with self.lock:
            in_flight = self.in_flight
            self._zero()
            self.in_flight = in_flight

    def answer(self, request: dict[str, Any], shape: str = "normal") -> tuple[int, dict[str, Any]]:
        """A batch line's status and body: what the live endpoint answers the same request, without faults (its
        body in `shape`, one of the batch's LINE_SHAPES)."""
        model = request.get("model")
        if not isinstance(request.get("messages"), list) or not isinstance(model, str) or not model:
            return 400, {"error": {"message": "The body needs 'model' and a 'messages' list.", "code": None}}
        allowed = self.options.batch.models or self.options.allowed_models
        if allowed and model not in allowed:
            message = f"The model `{model}` does not exist or you do not have access to it."
            return 404, {"error": {"message": message, "type": "invalid_request_error", "code": "model_not_found"}}
        with self.lock:
            self.serial += 1
            serial = self.serial
        payload = _completion(request, _decide(request, self.options), self.options, serial, truncate=False)
        return 200, json.loads(_shaped(payload, shape)) if shape != "normal" else payload

    def snapshot(self) -> dict[str, Any]:
        """The counters as JSON-ready data (the same dict GET /stats returns)."""
        with self.lock:
            return {
                "requests": self.requests,
                "completions_ok": self.completions_ok,
                "by_status": {str(code): n for code, n in sorted(self.by_status.items())},
                "faults": dict(self.faults),
                "per_body": {digest.hex()[:16]: n for digest, n in self.per_body.items()},
                "distinct_bodies": len(self.per_body),
                "max_per_body": max(self.per_body.values(), default=0),
                "with_auth": self.with_auth,
                "without_auth": self.without_auth,
                "distinct_auth": len(self.auth_seen),
                "in_flight": self.in_flight,
                "max_in_flight": self.max_in_flight,
                "other_requests": self.other_requests,
                "batch": self.batch.stats(),
                "billing": self.prompt_cache.stats(),
            }


class _Server(ThreadingHTTPServer):
    """A threading HTTP/1.1 server that knows its state and can drop its open connections on stop."""

    daemon_threads = True
    request_queue_size = 256

    def __init__(self, options: ServerOptions) -> None:
        self.state = _State(options)
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__((options.host, options.port), _Handler)

    def server_bind(self) -> None:
        """Bind without the reverse DNS lookup HTTPServer does (it can stall on some machines)."""
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet about clients that went away; report anything else."""
        error = sys.exc_info()[1]
        if isinstance(error, OSError | ValueError):
            return
        super().handle_error(request, client_address)

    def drop_connections(self) -> None:
        """Shut down every open connection so that idle keep-alive handler threads end."""
        with self.connections_lock:
            connections = list(self.connections)
            self.connections.clear()
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    """One keep-alive connection: routes requests and writes whole responses in one send."""

    protocol_version = "HTTP/1.1"
    server_version = "judgebias-devserver"
    _status = 0  # the status of the last whole response sent on this connection (0: none)
    _retry_after: float | None = None  # the retry-after-ms it carried, in seconds
    _sent_at: float | None = None  # when its response began to be written: the earliest a client can hold it

    @property
    def _server(self) -> _Server:
        return cast(_Server, self.server)

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._server.connections_lock:
            self._server.connections.add(self.connection)

    def finish(self) -> None:
        with self._server.connections_lock:
            self._server.connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """No per-request logging: the benchmarks send hundreds of requests per second."""

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/stats":
            self._send_json(200, self._server.state.snapshot())
        elif path.startswith("/v1/"):
            self._v1_other(path, "GET", b"")
        else:
            self._send_error(404, f"Unknown path {path!r}.", "invalid_request_error", "not_found")

    def do_POST(self) -> None:
        body = self._read_body()
        if body is None:
            return
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/v1/chat/completions":
            self._chat_completions(body)
        elif path == "/v1/completions":
            self._chat_completions(body, text=True)
        elif path == "/reset":
            self._server.state.reset()
            self._send_json(200, {"reset": True})
        elif path.startswith("/v1/"):
            self._v1_other(path, "POST", body)
        else:
            self._send_error(404, f"Unknown path {path!r}.", "invalid_request_error", "not_found")

    def _read_body(self) -> bytes | None:
        """Read the whole request body (always, so the connection stays in step); None if one was sent."""
        length_header = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding") is not None or length_header is None:
            self.close_connection = True
            self._send_error(411, "A Content-Length header is required.", "invalid_request_error", None)
            return None
        try:
            length = int(length_header)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY_BYTES:
            self.close_connection = True
            self._send_error(413, "Bad or too large Content-Length.", "invalid_request_error", None)
            return None
        return self.rfile.read(length)

    def _v1_other(self, path: str, method: str, body: bytes) -> None:
        state = self._server.state
        with state.lock:
            state.other_requests += 1
        if not self._authorized(count=False):
            return
        batch = state.batch.handle(method, path, self.headers.get("Content-Type", ""), body)
        if batch is not None:
            self._send_bytes(*batch)
            return
        ids = state.options.model_ids
        if method == "GET" and path == "/v1/models":
            data = [{"id": m, "object": "model", "created": state.started, "owned_by": "judgebias"} for m in ids]
            self._send_json(200, {"object": "list", "data": data})
        elif method == "GET" and path.startswith("/v1/models/"):
            model = path[len("/v1/models/") :]
            if self._model_allowed(model):
                self._send_json(
                    200, {"id": model, "object": "model", "created": state.started, "owned_by": "judgebias"}
                )
            else:
                self._model_not_found(model)
        else:
            self._send_error(404, f"Unknown path {path!r}.", "invalid_request_error", "not_found")

    def _authorized(self, *, count: bool) -> bool:
        """Check the bearer key (when one is configured); on failure a 401 has been sent."""
        state = self._server.state
        header = self.headers.get("Authorization")
        if count:
            with state.lock:
                if header is None:
                    state.without_auth += 1
                else:
                    state.with_auth += 1
                    state.auth_seen.add(hashlib.sha256(header.encode("utf-8", "replace")).digest())
        required = state.options.required_header
        if required is not None and self.headers.get(required[0]) != required[1]:
            message = f"The header {required[0]!r} is missing or wrong (judgebias devserver)."
            self._send_error(401, message, "invalid_request_error", "missing_header", count=count)
            return False
        key = state.options.api_key
        if key is None or header == f"Bearer {key}":
            return True
        if state.options.error_style == "gateway":  # LiteLLM without a database cannot look a wrong key up
            self._send_error(400, "No connected db.", "no_db_connection", None, count=count)
            return False
        message = (
            "You didn't provide an API key." if header is None else "Incorrect API key provided."
        ) + " (judgebias devserver)"
        self._send_error(401, message, "invalid_request_error", "invalid_api_key", count=count)
        return False

    def _model_allowed(self, model: str) -> bool:
        allowed = self._server.state.options.allowed_models
        return not allowed or model in allowed

    def _model_not_found(self, model: str, *, count: bool = False) -> None:
        message = f"The model `{model}` does not exist or you do not have access to it."
        self._send_error(404, message, "invalid_request_error", "model_not_found", count=count)

    def _chat_completions(self, body: bytes, *, text: bool = False) -> None:
        """A chat completion, or with `text` a (legacy) completion of a prompt; both counted as requests."""
        state = self._server.state
        options = state.options
        digest = hashlib.sha256(body).digest()
        with state.lock:
            state.requests += 1
            state.serial += 1
            serial = state.serial
            state.per_body[digest] = state.per_body.get(digest, 0) + 1
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
        arrived = time.monotonic()
        self._status, self._retry_after, self._sent_at = 0, None, None
        try:
            if self._authorized(count=True):
                self._admit_and_answer(body, digest, serial, options, text=text)
        finally:
            event = {
                "body": digest.hex()[:16],
                "arrived": arrived,
                "done": time.monotonic(),
                "sent": self._sent_at,
                "status": self._status,
                "retry_after": self._retry_after,
            }
            with state.lock:
                state.in_flight -= 1
                state.timeline.append(event)

    def _admit_and_answer(
        self, body: bytes, digest: bytes, serial: int, options: ServerOptions, *, text: bool = False
    ) -> None:
        """Refuse the request as the server configured would (quota, rate limit, a bad or refused body, injected
        faults), or answer it."""
        state = self._server.state
        if self._throttled(options):
            return
        request = self._admitted_request(body, options, text=text)
        if request is None:
            return
        with state.lock:
            attempt = state.admitted_per_body.get(digest, 0)
            state.admitted_per_body[digest] = attempt + 1
        fault = self._injected_fault(options, digest, attempt)
        if fault in ANSWERED_FAULTS:
            return
        cache = state.prompt_cache
        lookup = cache.look_up(_prompt_word_list(request)) if options.prefix_cache else NOTHING
        if options.latency > 0 and state.stopping.wait(options.latency):
            return
        if fault == "phang" and state.stopping.wait(options.hang_seconds):
            return
        cache.remember(lookup)  # read by now: a later prompt with its prefix is served from the cache
        self._answer(request, options, serial, attempt, fault, text=text, cached=lookup.cached)

    def _throttled(self, options: ServerOptions) -> bool:
        """A spent quota or an empty token bucket: the 429 sent (True), else False."""
        state = self._server.state
        if options.quota_exhausted:
            self._fault("quota_exhausted")
            message = "You exceeded your current quota, please check your plan and billing details."
            self._send_error(429, message, "insufficient_quota", "insufficient_quota", count=True)
            return True
        if state.bucket is not None:
            with state.lock:
                wait = state.bucket.take()
            if wait > 0:
                self._fault("rate_limit")
                headers = _wait_headers(wait, options.wait_style)
                message = f"Rate limit reached for requests. Please try again in {math.ceil(wait * 1000)}ms."
                self._send_error(429, message, "requests", "rate_limit_exceeded", headers=headers, count=True)
                return True
        return False

    def _admitted_request(self, body: bytes, options: ServerOptions, *, text: bool) -> dict[str, Any] | None:
        """The request as the server reads it (a reasoning model's dropped settings gone), or None when it was
        refused with the error a real server sends (bad JSON, no messages, model, streaming, context, key)."""
        try:
            request = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            self._send_error(400, "The request body is not valid JSON.", "invalid_request_error", None, count=True)
            return None
        field_, kind = ("prompt", str) if text else ("messages", list)
        if not isinstance(request, dict) or not isinstance(request.get(field_), kind):
            message = f"The request body must be a JSON object with a {'prompt string' if text else 'messages list'}."
            self._send_error(400, message, "invalid_request_error", None, count=True)
            return None
        model = request.get("model")
        if not isinstance(model, str) or not model:
            self._send_error(400, "You must provide a model parameter.", "invalid_request_error", None, count=True)
            return None
        if not self._model_allowed(model):
            self._model_not_found(model, count=True)
            return None
        if request.get("stream"):
            message = "Streaming is not supported by the judgebias devserver."
            self._send_error(400, message, "invalid_request_error", None, count=True)
            return None
        reasoning = model in options.reasoning_models
        if reasoning and options.drop_params:
            request = _dropped(request)
        refused = _reasoning_refusal(request) if reasoning else None
        if refused is not None:
            self._send_error(400, refused[0], "invalid_request_error", refused[1], count=True)
            return None
        asked = _prompt_words(request) + _budget(request)
        if options.n_ctx is not None and asked > options.n_ctx:
            message = (  # llama-cpp-python's words and code
                f"This model's maximum context length is {options.n_ctx} tokens, however you requested {asked} "
                f"tokens ({asked - _budget(request)} in your prompt; {_budget(request)} for the completion). "
                "Please reduce your prompt; or completion length."
            )
            self._send_error(400, message, "invalid_request_error", "context_length_exceeded", count=True)
            return None
        if options.upstream_key_refused:
            message = (
                "litellm.AuthenticationError: AuthenticationError: OpenAIException - Incorrect API key provided. "
                "(judgebias devserver)"
            )
            self._send_error(401, message, "authentication_error", None, count=True)
            return None
        admitted: dict[str, Any] = request
        return admitted

    def _injected_fault(self, options: ServerOptions, digest: bytes, attempt: int) -> str | None:
        """The fault drawn for this attempt of a body (fail_first_n, then the configured chances); the faults in
        ANSWERED_FAULTS are sent here."""
        if attempt < options.fail_first_n:
            self._fault("fail_first_n")
            self._server_error()
            return "fail_first_n"
        fault = _draw_fault(options, digest, attempt)
        if fault is not None:
            self._fault(fault)
        if fault == "p429":
            message = "Rate limit reached for requests (injected fault)."
            headers = _retry_after_headers(options.fault_retry_after)
            self._send_error(429, message, "requests", "rate_limit_exceeded", headers=headers, count=True)
        elif fault == "p500":
            self._server_error()
        return fault

    def _answer(
        self,
        request: dict[str, Any],
        options: ServerOptions,
        serial: int,
        attempt: int,
        fault: str | None,
        *,
        text: bool,
        cached: int = 0,
    ) -> None:
        """The completion, shaped as configured; cut off or reset mid-body when that fault was drawn; `cached`: the
        prompt tokens its prompt cache served."""
        state = self._server.state
        if text:
            payload = _text_completion(request, options, serial)
        else:
            reply = _decide(request, options)
            reasoning = request.get("model") in options.reasoning_models
            spent = REASONING_TOKENS[request.get("reasoning_effort") or "medium"] if reasoning else 0
            truncate = fault == "ptruncate"
            payload = _completion(request, reply, options, serial, truncate=truncate, reasoning_tokens=spent)
        self._bill(payload, options, cached, marked=_marked(request))
        if options.echo_headers:
            _echo_headers(payload, dict(self.headers))
        shaped = options.reply_shape != "normal" and (
            options.reply_shape_first_n == 0 or attempt < options.reply_shape_first_n
        )
        if shaped:
            self._fault("reply_shape")
        data = _shaped(payload, options.reply_shape) if shaped else dumps(payload)
        if fault == "preset":
            self._send_partial_and_abort(data)
            return
        with state.lock:
            state.completions_ok += 1
            state.by_status[200] = state.by_status.get(200, 0) + 1
            window = state.bucket.window() if state.bucket is not None and options.wait_style == "reset" else None
        self._send_bytes(200, data, _window_headers(*window) if window is not None else ())

    def _bill(self, payload: dict[str, Any], options: ServerOptions, cached: int, *, marked: bool) -> None:
        """Say in the usage what the prompt cache served (when it is on); bill the request."""
        usage = payload.get("usage")
        if not isinstance(usage, dict):
            return
        if options.prefix_cache:
            report(usage, cached, options.cached_usage)
        self._server.state.prompt_cache.bill(usage["prompt_tokens"], cached, usage["completion_tokens"], marked=marked)

    def _fault(self, name: str) -> None:
        state = self._server.state
        with state.lock:
            state.faults[name] += 1

    def _server_error(self) -> None:
        message = "The server had an error while processing your request (injected fault)."
        self._send_error(500, message, "server_error", "server_error", count=True)

    def _send_error(
        self,
        status: int,
        message: str,
        type_: str,
        code: str | None,
        *,
        headers: Iterable[tuple[str, str]] = (),
        count: bool = False,
    ) -> None:
        """An OpenAI-style error body; with `count` (a completion's answer) its status is counted for /stats."""
        if count:
            state = self._server.state
            with state.lock:
                state.by_status[status] = state.by_status.get(status, 0) + 1
        if self._server.state.options.error_style == "gateway":
            code = str(status)  # LiteLLM puts the HTTP status in the body's code
        error = {"error": {"message": message, "type": type_, "param": None, "code": code}}
        self._send_bytes(status, dumps(error), headers)

    def _send_json(self, status: int, payload: object) -> None:
        self._send_bytes(status, dumps(payload))

    def _head(self, status: int, length: int, headers: Iterable[tuple[str, str]] = ()) -> bytes:
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = ""
        lines = [
            f"{self.protocol_version} {status} {phrase}",
            "Content-Type: application/json",
            f"Content-Length: {length}",
        ]
        lines.extend(f"{name}: {value}" for name, value in headers)
        if self.close_connection:
            lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def _send_bytes(self, status: int, data: bytes, headers: Iterable[tuple[str, str]] = ()) -> None:
        headers = tuple(headers)
        self._status = status
        self._retry_after = next(
            (int(value.removesuffix("ms")) / 1000 for name, value in headers if name in _WAIT_MS_HEADERS), None
        )
        self._sent_at = time.monotonic()
        self.wfile.write(self._head(status, len(data), headers) + data)

    def _send_partial_and_abort(self, data: bytes) -> None:
        """Promise the whole body, send half of it, then drop the connection (a reset mid-response)."""
        self.close_connection = True
        self.wfile.write(self._head(200, len(data)) + data[: len(data) // 2])
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


_WAIT_MS_HEADERS: Final = ("retry-after-ms", "llm_provider-retry-after-ms", "x-ratelimit-reset-requests")


def _echo_headers(payload: dict[str, Any], headers: dict[str, str]) -> None:
    """Append the request's headers to the reply's text, as a careless server or gateway debug mode would."""
    choice = payload["choices"][0]
    echoed = f" (request headers: {headers})"
    if "text" in choice:
        choice["text"] = (choice["text"] or "") + echoed
    elif isinstance(choice.get("message", {}).get("content"), str):
        choice["message"]["content"] += echoed


def _wait_headers(wait: float, style: str) -> tuple[tuple[str, str], ...]:
    """How a 429 announces its wait: OpenAI's retry-after(-ms), LiteLLM's llm_provider-retry-after(-ms), or
    OpenAI's rate-limiter headers (no Retry-After: the requests window is used up and refills in a duration)."""
    if style == "litellm":
        return tuple((f"llm_provider-{name}", value) for name, value in _retry_after_headers(wait))
    if style == "reset":
        return _window_headers(0, wait)
    return _retry_after_headers(wait)


def _window_headers(remaining: int, reset: float) -> tuple[tuple[str, str], ...]:
    """x-ratelimit-* headers of the requests window: requests left, and when it refills (a duration, e.g. "250ms")."""
    return (
        ("x-ratelimit-remaining-requests", str(remaining)),
        ("x-ratelimit-reset-requests", f"{max(1, math.ceil(reset * 1000))}ms"),
    )


def _dropped(request: dict[str, Any]) -> dict[str, Any]:
    """The request without what a reasoning model refuses, max_tokens renamed: what LiteLLM's drop_params forwards."""
    kept = {k: v for k, v in request.items() if k not in ("temperature", "top_p", "logprobs", "top_logprobs")}
    if "max_tokens" in kept:
        kept["max_completion_tokens"] = kept.pop("max_tokens")
    return kept


def _reasoning_refusal(request: dict[str, Any]) -> tuple[str, str] | None:
    """What OpenAI's reasoning models answer 400 to (message, code), or None when the request is acceptable."""
    if "max_tokens" in request:
        return (
            "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
            "unsupported_parameter",
        )
    for name in ("temperature", "top_p"):
        if name in request and request[name] != 1:
            return (
                f"Unsupported value: '{name}' does not support {request[name]} with this model. "
                "Only the default (1) value is supported.",
                "unsupported_value",
            )
    if request.get("logprobs") or "top_logprobs" in request:
        return "Unsupported parameter: 'logprobs' is not supported with this model.", "unsupported_parameter"
    effort = request.get("reasoning_effort")
    if effort is not None and effort not in REASONING_TOKENS:
        return (
            f"Unsupported value: 'reasoning_effort' does not support {effort!r}; use one of "
            f"{', '.join(REASONING_TOKENS)}.",
            "unsupported_value",
        )
    return None


def _shaped(payload: dict[str, Any], shape: str) -> bytes:
    """A decided reply's body reshaped as a server that sends no verdict with status 200 would send it."""
    if shape == "html":
        return b"<!DOCTYPE html><html><head><title>Sign in</title></head><body>Please sign in.</body></html>"
    body = json.loads(dumps(payload))  # a copy
    choice = body["choices"][0]
    message = choice["message"]
    if shape == "refusal":
        message.update(content=None, refusal="I'm sorry, I can't help with comparing these answers.")
    elif shape == "content_filter":
        message["content"] = None
        choice["finish_reason"] = "content_filter"
    elif shape == "tool_calls":
        message["content"] = None
        message["tool_calls"] = [
            {"id": "call_dev", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
        ]
        choice["finish_reason"] = "tool_calls"
    elif shape == "no_choices":
        del body["choices"]
    elif shape == "empty_choices":
        body["choices"] = []
    elif shape == "error_body":
        body = {"error": {"message": "upstream overloaded (injected fault)", "type": "server_error", "code": None}}
    elif shape == "content_parts":
        message["content"] = [{"type": "text", "text": message["content"]}]
    return dumps(body)


def _retry_after_headers(wait: float) -> tuple[tuple[str, str], ...]:
    """retry-after in whole seconds (rounded up) and retry-after-ms, never 0 so clients honour it."""
    millis = max(1, math.ceil(wait * 1000))
    return (("retry-after", str(max(1, math.ceil(wait)))), ("retry-after-ms", str(millis)))


def _marked(request: dict[str, Any]) -> bool:
    """Whether a message of the request carries an explicit cache breakpoint (a content part's `cache_control`)."""
    return any(
        isinstance(part, dict) and "cache_control" in part
        for message in request.get("messages", ())
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        for part in message["content"]
    )


def _prompt_words(request: dict[str, Any]) -> int:
    """The prompt's size in words (the dev server's tokens): a completion's prompt, or every message's text."""
    return len(_prompt_word_list(request))


def _prompt_word_list(request: dict[str, Any]) -> list[str]:
    """The prompt's words in the order sent: a completion's prompt, or every message's text."""
    prompt = request.get("prompt")
    if isinstance(prompt, str):
        return prompt.split()
    return [
        word for m in request.get("messages", ()) if isinstance(m, dict) for word in _text(m.get("content")).split()
    ]


def _budget(request: dict[str, Any]) -> int:
    """The completion's token budget as asked (0 when none is)."""
    limit = request.get("max_completion_tokens") or request.get("max_tokens")
    return limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else 0


def _draw_fault(options: ServerOptions, digest: bytes, attempt: int) -> str | None:
    """The injected fault for the `attempt`-th admitted request with this body (same seed, same faults)."""
    fractions = [(name, float(getattr(options, name))) for name in _FAULTS]
    if not any(p > 0 for _, p in fractions):
        return None
    u = unit(b"fault", str(options.fault_seed).encode(), digest, str(attempt).encode())
    edge = 0.0
    for name, p in fractions:
        edge += p
        if u < edge:
            return name
    return None


def _text(content: object) -> str:
    """The text of a message's content, whether a string or a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", "")) for part in content if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def find_answers(prompt: str) -> tuple[tuple[str, str], tuple[str, str]] | None:
    """The two fenced answers of a prompt, in the order shown, as (label, text); None unless exactly two.

    A block closes only at the end marker with its own label and nonce, so an answer that quotes a
    marker with another nonce stays whole.
    """
    blocks = [(m["label"], m["text"]) for m in _BLOCK.finditer(prompt)]
    if len(blocks) != 2:
        return None
    return blocks[0], blocks[1]


# A prompt that names a slot as usually the better one ("the first answer is usually better"): an order cue.
ORDER_CUE: Final = re.compile(
    r"\b(first|second)\s+(?:answer|response|one)(?:\s+shown)?\s+is\s+(?:usually|often|generally|typically)\s+"
    r"(?:the\s+)?(?:better|best|right|correct|preferred)",
    re.IGNORECASE,
)


def _choose(options: ServerOptions, first: str, second: str, prompt: str = "") -> int | None:
    """0 for the first-shown answer, 1 for the second, None for a tie, by the configured policy (and, with
    `suggestible`, the slot an order cue in `prompt` names)."""
    cue = ORDER_CUE.search(prompt) if options.suggestible > 0 else None
    if cue is not None and unit(b"suggested", first.encode(), second.encode()) < options.suggestible:
        return 0 if cue.group(1).lower() == "first" else 1
    policy = options.policy
    if policy == "first":
        return 0
    if policy == "second":
        return 1
    if policy == "tie":
        return None
    if policy == "longer":
        return 1 if len(second) > len(first) else 0
    # Drawn from what is shown, not the request's bytes: a live call and a batch line get the same answer.
    if options.first_bias > 0 and unit(b"first_bias", first.encode(), second.encode()) < options.first_bias:
        return 0
    low, high = sorted((first, second))
    preferred = low if unit(b"true", low.encode(), high.encode()) < 0.5 else high
    return 0 if preferred == first else 1


# A base model's first token after the answer cue: the chosen label mostly with a leading space, sometimes without.
_P_CHOSEN_SPACED: Final = math.log(0.72)
_P_CHOSEN_BARE: Final = math.log(0.08)
_RAMBLE: Final = "\n\nThe other answer, Answer {other}, is shorter."


def _text_completion(request: dict[str, Any], options: ServerOptions, serial: int) -> dict[str, Any]:
    """A base model continuing a prompt that ends in an answer cue: " A" (the label the policy picks), then a
    sentence that names the other label, cut at max_tokens; the first token's top log-probabilities when asked."""
    prompt = str(request["prompt"])
    answers = find_answers(prompt)
    if answers is None:
        tokens = _WORD.findall(NO_ANSWERS_REPLY)
        top: dict[str, float] = {tokens[0]: _P_PLAIN_TOKEN}
    else:
        (label_1, text_1), (label_2, text_2) = answers
        choice = _choose(options, text_1, text_2, prompt)
        chosen, other = (label_1, label_2) if choice in (None, 0) else (label_2, label_1)
        tokens = [f" {chosen}", *_WORD.findall(_RAMBLE.format(other=other))]
        top = {f" {chosen}": _P_CHOSEN_SPACED, f" {other}": _P_OTHER, chosen: _P_CHOSEN_BARE, " tie": _P_TIE}
        if choice is None:  # the policy "tie": the tie word first
            tokens[0] = " tie"
            top = {" tie": _P_CHOSEN, f" {label_1}": _P_TIED_LABEL, f" {label_2}": _P_TIED_LABEL}
    finish_reason = "stop"
    limit = request.get("max_tokens")
    if isinstance(limit, int) and not isinstance(limit, bool) and 0 < limit < len(tokens):
        tokens, finish_reason = tokens[:limit], "length"
    logprobs = None
    wanted = request.get("logprobs")
    if isinstance(wanted, int) and not isinstance(wanted, bool) and wanted > 0:
        first_top = dict(sorted(top.items(), key=lambda pair: -pair[1])[:wanted])
        rest = [{token: _P_PLAIN_TOKEN} for token in tokens[1:]]
        logprobs = {
            "tokens": tokens,
            "token_logprobs": [top.get(tokens[0], _P_PLAIN_TOKEN)] + [_P_PLAIN_TOKEN] * (len(tokens) - 1),
            "top_logprobs": [first_top, *rest],
            "text_offset": [len(prompt) + sum(len(t) for t in tokens[:i]) for i in range(len(tokens))],
        }
    prompt_tokens = _prompt_words(request)
    return {
        "id": f"cmpl-dev{serial:010d}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": options.served_model or request.get("model") or DEFAULT_MODEL,
        "choices": [{"index": 0, "text": "".join(tokens), "logprobs": logprobs, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": len(tokens),
            "total_tokens": prompt_tokens + len(tokens),
        },
    }


def _decide(request: dict[str, Any], options: ServerOptions) -> _Reply:
    """The judge's reply to a chat-completions request body under `options` (pure, deterministic)."""
    messages = [m for m in request.get("messages", ()) if isinstance(m, dict)]
    system = "\n".join(_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
    users = [_text(m.get("content")) for m in messages if m.get("role") == "user"]
    answers = find_answers(users[-1]) if users else None
    if answers is None:
        return _Reply(tuple(_WORD.findall(NO_ANSWERS_REPLY)))
    (label_1, text_1), (label_2, text_2) = answers
    labels = (label_1, label_2)
    choice = _choose(options, text_1, text_2, "\n".join([system, *users]))
    brackets = "[[A]]" in system
    tie_token = "C" if brackets else "tie"
    if choice is None:
        verdict = tie_token
        top = ((tie_token, _P_CHOSEN), (label_1, _P_TIED_LABEL), (label_2, _P_TIED_LABEL))
        sentence = "Both answers are equally good."
    else:
        verdict = labels[choice]
        other = labels[1 - choice]
        top = ((verdict, _P_CHOSEN), (other, _P_OTHER), (tie_token, _P_TIE))
        sentence = f"Answer {verdict} addresses the question better than answer {other}."
    thinking = (
        f"Answer {label_2 if verdict == label_1 else label_1} looks better at first sight. "
        f"Weighing both again, my verdict is {verdict}."
    )
    if not brackets:
        return _Reply((verdict,), 0, top, thinking)
    tokens = (*_WORD.findall(sentence), "\n", "[[", verdict, "]]")
    return _Reply(tokens, len(tokens) - 2, top, thinking)


def _completion(
    request: dict[str, Any],
    reply: _Reply,
    options: ServerOptions,
    serial: int,
    *,
    truncate: bool,
    reasoning_tokens: int = 0,
) -> dict[str, Any]:
    """The ChatCompletion body for a decided reply (cut to its first 3 characters when `truncate`).

    A reasoning model spends `reasoning_tokens` hidden tokens out of the budget first, and a thinking model the
    words of its thinking: a budget they use up leaves no verdict, with finish_reason "length" (an empty reply, or
    one cut off inside <think>); every token spent is counted in completion_tokens, as billed.
    """
    tokens = list(reply.tokens)
    thought = reply.thinking.split() if options.think != "none" else []
    finish_reason = "stop"
    limit = request.get("max_completion_tokens") or request.get("max_tokens")
    if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
        reasoning_tokens = min(reasoning_tokens, limit)
        thought = thought[: limit - reasoning_tokens]
        room = limit - reasoning_tokens - len(thought)
        if room < len(tokens):
            tokens = tokens[:room]
            finish_reason = "length"
    if truncate:
        kept: list[str] = []
        room = 3
        for token in tokens:
            if room <= 0:
                break
            kept.append(token[:room])
            room -= len(kept[-1])
        tokens = kept
        finish_reason = "length"
    content = "".join(tokens)
    thinking = " ".join(thought)
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if thinking and options.think == "inline":
        cut_off = finish_reason == "length" and not tokens
        message["content"] = f"<think>\n{thinking}" + ("" if cut_off else f"\n</think>\n\n{content}")
    elif thinking:
        message["reasoning_content"] = thinking
    logprobs: dict[str, Any] | None = None
    if request.get("logprobs"):
        requested = request.get("top_logprobs")
        n = requested if isinstance(requested, int) and not isinstance(requested, bool) else 0
        entries = []
        for i, token in enumerate(tokens):
            top: list[dict[str, Any]]
            if i == reply.verdict_index and token == reply.tokens[i]:
                logprob = reply.verdict_top[0][1]
                top = [{"token": t, "logprob": lp, "bytes": None} for t, lp in reply.verdict_top[:n]]
            else:
                logprob = _P_PLAIN_TOKEN
                top = [{"token": token, "logprob": _P_PLAIN_TOKEN, "bytes": None}][:n]
            entries.append({"token": token, "logprob": logprob, "bytes": None, "top_logprobs": top})
        logprobs = {"content": entries, "refusal": None}
    prompt_tokens = _prompt_words(request)
    completion_tokens = len(content.split()) + len(thought) + reasoning_tokens
    return {
        "id": f"chatcmpl-dev{serial:010d}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": options.served_model or request.get("model") or DEFAULT_MODEL,
        "system_fingerprint": "fp_judgebias_devserver",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": logprobs,
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "completion_tokens_details": {"reasoning_tokens": reasoning_tokens},
        },
    }


@dataclass
class RunningServer:
    """A devserver serving in a background thread; stop it (or leave the `with` block) to free the port."""

    options: ServerOptions
    host: str
    port: int
    _server: _Server = field(repr=False)
    _thread: threading.Thread = field(repr=False)

    @property
    def url(self) -> str:
        """The base URL to give an OpenAI client, e.g. http://127.0.0.1:PORT/v1."""
        return f"http://{self.host}:{self.port}/v1"

    def stats(self) -> dict[str, Any]:
        """The counters, as GET /stats returns them."""
        return self._server.state.snapshot()

    def timeline(self) -> list[dict[str, Any]]:
        """Every chat-completions request (body; monotonic arrival, start of the response, end; status or 0;
        retry_after), by arrival."""
        with self._server.state.lock:
            return sorted(self._server.state.timeline, key=lambda event: event["arrived"])

    def reset(self) -> None:
        """Zero the counters and forget the request bodies seen, as POST /reset does."""
        self._server.state.reset()

    def reconfigure(self, **changes: Any) -> None:
        """Answer differently from the next request on (e.g. latency=0 once a test saw what it waited for)."""
        state = self._server.state
        with state.lock:
            state.options = self.options = replace(state.options, **changes)
            if "rate_limit" in changes:
                state.bucket = _TokenBucket(state.options.rate_limit) if state.options.rate_limit is not None else None

    def stop(self) -> None:
        """Stop serving, wake sleeping (latency, hang) requests and close every open connection."""
        self._server.state.stopping.set()
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join()
        self._server.drop_connections()
        self._server.server_close()

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def start_server(options: ServerOptions | None = None) -> RunningServer:
    """Bind (port 0 picks a free port) and serve in a daemon thread, so a test or benchmark can use it."""
    options = options or ServerOptions()
    server = _Server(options)
    host, port = server.server_address[:2]
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="judgebias-devserver", daemon=True
    )
    thread.start()
    return RunningServer(options, str(host), int(port), server, thread)


def _parser() -> argparse.ArgumentParser:
    defaults = ServerOptions()
    parser = argparse.ArgumentParser(
        prog=prog("devserver"),
        description="A local OpenAI-compatible stand-in judge for tests, benchmarks and trying judgebias.",
    )
    add = parser.add_argument
    add("--host", default=defaults.host, help="address to bind (default: %(default)s)")
    add("--port", type=int, default=8000, help="port; 0 picks a free one (default: %(default)s)")
    add("--policy", choices=POLICIES, default=defaults.policy, help="how the judge decides")
    add("--first-bias", type=float, default=defaults.first_bias, help="hash policy: P(pick the first shown)")
    add("--suggestible", type=float, default=0.0, help="P(follow the slot an order cue in the prompt names better)")
    add("--latency", type=float, default=defaults.latency, help="seconds slept per request")
    add("--rate-limit", type=float, default=None, help="requests per second admitted (default: no limit)")
    add("--api-key", default=None, help="require 'Authorization: Bearer KEY'")
    add("--served-model", default=None, help="model id reported in every response")
    add("--allowed-model", action="append", default=[], help="accepted model id (repeatable; default: any)")
    add("--p429", type=float, default=0.0, help="fraction of requests answered 429 with Retry-After")
    add("--p500", type=float, default=0.0, help="fraction of requests answered 500")
    add("--phang", type=float, default=0.0, help="fraction of requests that hang for --hang-seconds")
    add("--preset", type=float, default=0.0, help="fraction of connections reset mid-response")
    add("--ptruncate", type=float, default=0.0, help="fraction answered with finish_reason 'length'")
    add("--fail-first-n", type=int, default=0, help="first N requests per distinct body answer 500")
    add("--quota-exhausted", action="store_true", help="answer every request 429 insufficient_quota")
    add("--fault-seed", type=int, default=0, help="seed of the deterministic fault draws")
    add("--hang-seconds", type=float, default=defaults.hang_seconds, help="how long a hang lasts")
    add("--fault-retry-after", type=float, default=defaults.fault_retry_after, help="Retry-After of p429")
    add("--reasoning-model", action="append", default=[], help="model id that behaves as OpenAI's reasoning models")
    add("--think", choices=THINK_STYLES, default=defaults.think, help="replies think aloud (inline) or in a field")
    add("--wait-style", choices=WAIT_STYLES, default=defaults.wait_style, help="how a 429 announces its wait")
    add("--error-style", choices=ERROR_STYLES, default=defaults.error_style, help="errors as OpenAI or a gateway")
    add("--upstream-key-refused", action="store_true", help="fail every call as a gateway's upstream key would")
    add(
        "--reply-shape", choices=REPLY_SHAPES, default=defaults.reply_shape, help="a status-200 reply without a verdict"
    )
    add("--reply-shape-first-n", type=int, default=0, help="only the first N requests per body get --reply-shape")
    add("--echo-headers", action="store_true", help="quote the request's headers in every 200 reply")
    add("--n-ctx", type=int, default=None, help="refuse prompts longer than this many words, as llama.cpp does")
    add("--drop-params", action="store_true", help="reasoning models drop refused settings silently (a gateway's)")
    add("--prefix-cache", action="store_true", help="cache prompt prefixes as OpenAI does; report cached tokens")
    add("--cached-usage", choices=USAGE_SHAPES, default=defaults.cached_usage, help="usage shape of cached tokens")
    add("--price-input", type=float, default=0.0, help="USD per million prompt tokens on the server's own bill")
    add("--price-cached", type=float, default=0.0, help="USD per million cached prompt tokens on its bill")
    add("--price-output", type=float, default=0.0, help="USD per million completion tokens on its bill")
    add("--bill-cached-in-full", action="store_true", help="report cached tokens, bill them at the input price")
    add("--required-header", default=None, help="'Name: value' every /v1 request must carry (else 401)")
    add_batch_arguments(parser)
    return parser


def options_from_args(argv: Sequence[str] | None = None) -> ServerOptions:
    """ServerOptions from command-line flags (one flag per field)."""
    args = vars(_parser().parse_args(argv))
    args["allowed_models"] = tuple(args.pop("allowed_model"))
    args["reasoning_models"] = tuple(args.pop("reasoning_model"))
    args["batch"] = batch_options(args)
    header = args.pop("required_header")
    if header is not None:
        name, _, value = header.partition(":")
        if not name.strip() or not value.strip():
            raise ValueError(f"--required-header must be 'Name: value', got {header!r}")
        args["required_header"] = (name.strip(), value.strip())
    known = {f.name for f in fields(ServerOptions)}
    return ServerOptions(**{k: v for k, v in args.items() if k in known})


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until SIGINT or SIGTERM; print 'serving on URL' first so a parent process can read the port."""
    startup.run_begins()  # started: from here on Ctrl-C is this command's to handle
    try:
        options = options_from_args(argv)
    except ValueError as error:
        print(f"devserver: {error}", file=sys.stderr)
        return 2
    done = threading.Event()

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        done.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    try:
        server = start_server(options)
    except OSError as error:
        print(
            f"devserver: cannot listen on {options.host}:{options.port}: {error.strerror or error} (another server "
            "there? choose another --port, or --port 0 for a free one)",
            file=sys.stderr,
        )
        return 2
    with server as running:
        print(f"serving on {running.url}", flush=True)
        while not done.wait(0.5):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
