"""The live judge: any OpenAI-compatible endpoint through the official `openai` SDK.

The SDK is imported only when the first live call is made, so a run answered from the cache starts fast. The
SDK's own retries are off (max_retries=0): tenacity owns them, so attempts are bounded in one place and every
wait a server announces (judgebias.backends.waits) is honoured, never retried sooner than asked, shared by all workers.
A long announced wait (a per-minute window) is waited out instead of spending the retry budget, up to
judge.max_wait seconds per call. The reply is read as JSON from the raw response (with its headers, so a reply
saying its rate-limit window is used up pauses the next requests), which also skips the SDK's typed objects.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from judgebias.backends.base import AttemptMeter, Backend, BatchTransport, FleetSource
from judgebias.backends.chat_reply import DEPLOYMENT_ID_HEADER, RETRIES_HEADER, reply_of_body, reply_of_text
from judgebias.backends.completions import completion_body, completion_cache_request, completion_reply
from judgebias.backends.openai_batch import OpenAIBatches
from judgebias.backends.pacing import Pacer
from judgebias.backends.retry import LONG_WAIT, call_with_retries
from judgebias.backends.waits import announced_wait, format_seconds, window_exhausted
from judgebias.config.checks import check_judge
from judgebias.config.schema import BatchSettings, JudgeApi, RubricConfig, TokenBudgetParam
from judgebias.core.completion import bare_token, probability_of, render_completion_prompt
from judgebias.core.errors import (
    CacheUnavailable,
    CallFailed,
    Failure,
    FailureKind,
    FatalJudgeError,
    SpendingCapReached,
    TruncatedReply,
    UnusableReply,
    UserError,
)
from judgebias.core.parsing import answer_part
from judgebias.core.prefix import marked
from judgebias.core.prompt import fold_system
from judgebias.core.reading import read_reply
from judgebias.core.record import TRANSIENT_OUTCOMES, Reply, Request
from judgebias.core.redaction import (
    DEFAULT_KEY_ENVS,
    Redactor,
    public_endpoint,
    redact_tree,
    replace_secrets,
    url_secrets,
)
from judgebias.core.terminal import escape_controls
from judgebias.core.tokens import estimate_prompt_tokens

OPENAI_ENDPOINT = "https://api.openai.com/v1"
TOP_LOGPROBS = 5
NOTICE_EVERY = 10.0  # seconds between two retry notices on the terminal for the same reason
# Everything of the body but the model goes to the SDK as extra_body, the messages included: `create` would walk each
# message through its typed-dict transform (about 0.45 ms of client CPU per call here, a fifth of the call's), which
# leaves plain text messages as they are. The JSON sent is the same; `messages` itself is then passed empty.
SENT_SEPARATELY = ("model",)


TRUNCATED_RETRIES = 2  # a sampled judge's cut-off reply is asked again at most this often (a temperature-0 one never)


def _sdk() -> Any:
    """The openai SDK module: the one place it is imported, on first use (importing it costs about a second)."""
    import openai

    return openai


def api_error() -> type[Exception]:
    """The SDK's base class of every API error (status, connection, timeout), to catch them without importing it."""
    error: type[Exception] = _sdk().APIError
    return error


@dataclasses.dataclass
class _Call:
    """One call's request and what its attempts have seen so far (a call may take several requests)."""

    create: Callable[..., Any]
    body: dict[str, Any]
    separately: tuple[str, ...]
    estimate: int  # prompt and reply tokens, for the pacer
    headers: dict[str, str] | None
    sent: int = 0  # requests actually sent (for messages)
    cut_off: int = 0  # of those, replies cut off at max_tokens before a verdict


class OpenAIJudge(Backend):
    """A judge behind an OpenAI-compatible endpoint: chat completions, or completions (`judge.api`)."""

    paid = True

    def __init__(self, config: BatchSettings, rubric: RubricConfig) -> None:
        check_judge(config)  # judge.model and the retry, quota and key-name settings, also when built outside a run
        self.config = config
        self.rubric = rubric
        self.endpoint = public_endpoint(config.base_url) or OPENAI_ENDPOINT  # shown, keyed and filed: no password
        names = {config.api_key_env, *config.extra_headers.values(), *DEFAULT_KEY_ENVS} - {None, ""}
        # The credentials this judge sends, taken out of every reply before it is read, cached or written: a server
        # may echo the request's headers (Authorization, extra headers) or the URL in a 200 reply.
        self.redact = Redactor(frozenset(str(n) for n in names), frozenset(url_secrets(config.base_url or "")))
        self.pacer = Pacer(config.requests_per_minute, config.tokens_per_minute)
        self.retries = 0  # retries made so far, for the progress line
        self.timeouts = 0  # requests retried after a client-side timeout (the server may have billed them)
        self.budget_spent = 0  # replies that came back empty at finish_reason "length": the budget went to reasoning
        self.gateway_retries_failed = 0  # retries a gateway reported on its error responses (x-litellm-attempted-*)
        self.gateway_errors_unknown = 0  # a gateway's error responses that do not say how often it retried
        self.logprobs_refused = False  # the endpoint refused logprobs once: later calls are sent without them
        self.reached = False  # some call has been answered: a later connection error is not "endpoint down"
        self.stopped: str | None = None  # once set, every call and retry fails at once with this reason, unsent
        self._stopping = threading.Event()  # wakes the workers sleeping between retries when the run stops
        self._client: Any = None
        self._lock = threading.Lock()
        self._noticed: dict[str, float] = {}  # retry reason -> when it was last shown on the terminal
        self.completions = config.api == JudgeApi.completions  # a prompt continued, the verdict its first token
        per_token = REPLY_BYTES_PER_TOKEN_LOGPROBS if config.logprobs else REPLY_BYTES_PER_TOKEN
        self.reply_bound = max(MIN_REPLY_BOUND, per_token * (config.max_tokens or 0))  # longer: not read
        self.first_token = self.completions

    def chat_messages(self, messages: list[dict[str, str]]) -> list[dict[str, str]]:
        """The messages as sent: with judge.system_role=false the system text opens the user message instead."""
        return messages if self.config.system_role else fold_system(messages)

    def prompt(self, messages: list[dict[str, str]]) -> str:
        """The completions endpoint's prompt for a call's messages (judge.api=completions)."""
        return render_completion_prompt(messages, self.rubric.answer_cue)

    def cache_request(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        """Everything that decides the reply, for the cache key: never the key, headers, timeouts or retry counts.

        The keys of today's settings are fixed (users' caches stay warm); a newer setting enters only when set.
        """
        config = self.config
        if self.completions:
            return completion_cache_request(config, self.endpoint, self.prompt(messages))
        messages = self.chat_messages(messages)
        key: dict[str, Any] = {
            "endpoint": self.endpoint.rstrip("/"),
            "model": config.model,
            "messages": messages,
            "temperature": config.temperature,
            "max_tokens": config.max_tokens,
            "seed": config.seed,
            "top_p": config.top_p,
            "logprobs": config.logprobs,
        }
        if config.max_tokens_param != TokenBudgetParam.max_tokens:
            key["max_tokens_param"] = str(config.max_tokens_param)
        if config.reasoning_effort is not None:
            key["reasoning_effort"] = str(config.reasoning_effort)
        if config.extra_body:
            key["extra_body"] = dict(config.extra_body)
        return key

    def check_key(self) -> None:
        """Stop before any call when the key's env var (or a header's) is unset."""
        name = self.config.api_key_env
        if name and not os.environ.get(name):
            raise UserError(
                f"judge {self.config.name!r} needs {name} in the environment (or run judge=longer offline, "
                f"or rerun from a warm cache)"
            )
        for header, variable in self.config.extra_headers.items():
            if not os.environ.get(variable):
                raise UserError(
                    f"judge {self.config.name!r}: header {header!r} takes its value from {variable}, which is not "
                    f"set in the environment (set it, or drop judge.extra_headers.{header})"
                )

    def client(self) -> Any:
        """The SDK client for this endpoint (made on first use) for the Batch API, sending judge.extra_headers
        (read from the environment now): a gateway that routes or authenticates by header sees them on every batch
        request too."""
        client = self._openai()
        return client.with_options(default_headers=self._headers()) if self.config.extra_headers else client

    def _openai(self) -> Any:
        if self._client is not None:  # built once; every call after the first skips the lock
            return self._client
        with self._lock:
            if self._client is None:
                openai = _sdk()
                name = self.config.api_key_env
                self._client = openai.OpenAI(
                    base_url=self.config.base_url or OPENAI_ENDPOINT,
                    api_key=(lambda: os.environ.get(name, "")) if name else "no-key",
                    timeout=self.config.timeout,
                    max_retries=0,
                )
            return self._client

    def gateway_routes(self) -> dict[str, list[str]] | None:
        """A LiteLLM proxy's deployments by model group (`GET /v1/model/info`: model_name -> litellm_params.model),
        with the judge's own key; None when the endpoint has no such list (OpenAI itself, most servers), refuses it,
        or answers anything else. One short request, never retried; what goes wrong is not said (nothing depends
        on it but the routed_elsewhere check)."""
        try:
            body = (
                self._openai()
                .with_options(timeout=ROUTES_TIMEOUT, max_retries=0)
                .get(ROUTES_PATH, cast_to=object, options={"headers": self._headers()})
            )
        except Exception:  # the endpoint lists no deployments: no claim is made
            return None
        return deployments_by_group(body)

    def request_body(self, messages: list[dict[str, str]], sample: int = 0) -> dict[str, Any]:
        """The chat-completions request body exactly as sent: by a live call, or as one line of a batch.

        A sampling setting that is null is not sent at all (reasoning models refuse temperature, top_p and
        logprobs); the token budget goes under the name the endpoint wants (judge.max_tokens_param).
        """
        config = self.config
        if self.completions:
            wanted = TOP_LOGPROBS if config.logprobs and not self.logprobs_refused else None
            return completion_body(config, self.prompt(messages), wanted)
        params: dict[str, Any] = {"model": config.model, "messages": self.chat_messages(messages)}
        if config.temperature is not None:
            params["temperature"] = config.temperature
        if config.max_tokens is not None:
            params[str(config.max_tokens_param)] = config.max_tokens
        if config.seed is not None:
            params["seed"] = config.seed + sample  # judge.samples: each ask its own seed, so they can differ
        if config.top_p is not None:
            params["top_p"] = config.top_p
        if config.logprobs and not self.logprobs_refused:
            params.update(logprobs=True, top_logprobs=TOP_LOGPROBS)
        if config.reasoning_effort is not None:
            params["reasoning_effort"] = str(config.reasoning_effort)
        params.update(config.extra_body)
        return params

    def batch_body(self, messages: list[dict[str, str]], sample: int = 0) -> dict[str, Any]:
        """The body one batch line carries: a live call's, naming judge.batch_model when set (a gateway's batch
        route passes the file to the provider, which knows its own model names, not the gateway's alias)."""
        body = self.request_body(messages, sample)
        return body | {"model": self.config.batch_model} if self.config.batch_model else body

    def reply_from_json(self, body: Mapping[str, Any], request: Request) -> Reply:
        """The Reply of one chat-completion response body (a batch output line's body; backends.chat_reply).

        Only `message.content` is the reply: a separate `reasoning_content` / `reasoning` field is the model's
        thinking, not its verdict. Hidden reasoning tokens are part of `completion_tokens` (billed as output).
        """
        labels = request.view.labels(self.rubric.tie_label)
        body = redact_tree(body, self.redact.known)
        if self.completions:
            return completion_reply(body, labels)
        return reply_of_body(body, None, lambda logprobs: _label_probs_json(logprobs, labels))

    def _marked(self, body: dict[str, Any]) -> dict[str, Any]:
        """The body with its shared start marked for an explicit prompt cache (judge.cache_marker), else as it is."""
        if not self.config.cache_marker or self.completions:
            return body
        return {**body, "messages": marked(body["messages"])}

    def _sampled(self) -> bool:
        """Whether the same request can give another reply (temperature unset or above 0)."""
        return self.config.temperature is None or self.config.temperature > 0

    def _headers(self) -> dict[str, str]:
        """Extra HTTP headers, their values read from the environment at call time (never cached or written)."""
        return {header: os.environ.get(variable, "") for header, variable in self.config.extra_headers.items()}

    def complete(self, request: Request, meter: AttemptMeter | None = None) -> Reply:
        """One call with bounded retries; a permanent error raises FatalJudgeError at once. Every attempt the server
        billed and the call does not use (no choices, cut off and asked again, timed out) goes to `meter`, and no
        attempt after one of them is sent unless `meter` admits it."""
        client = self._openai()
        endpoint = client.completions if self.completions else client.chat.completions
        call = _Call(
            create=endpoint.with_raw_response.create,  # the SDK loads its parts before a slot
            body=self._marked(self.request_body(request.messages, request.sample)),
            # The model (and a completion's prompt, which the SDK requires) go as arguments, the rest as extra_body.
            separately=("model", "prompt") if self.completions else SENT_SEPARATELY,
            estimate=estimate_prompt_tokens(request.messages) + (self.config.max_tokens or 0),
            headers=self._headers() if self.config.extra_headers else None,
        )

        def attempt() -> Reply:
            self._raise_if_stopped()
            if meter is not None and not meter.before_attempt():
                raise SpendingCapReached("not sent: another attempt of this call could pass the spending cap")
            raw = self._send(call, meter)
            return attempt() if raw is None else self._reply_of(raw, call, request, meter)

        try:
            reply = call_with_retries(
                attempt,
                self,
                self.config,
                self.pacer,
                on_retry=self._on_retry,
                sleep=self._sleep,
                starting=lambda: not self.reached,
            )
        except TruncatedReply as truncated:  # the retry budget ran out first
            return _truncated(truncated.reply, "the reply was cut off at judge.max_tokens before a readable verdict")
        except FatalJudgeError as fatal:
            self.stop(str(fatal))  # the calls queued behind this one would fail the same way: send none of them
            raise
        except CacheUnavailable:
            raise  # the shared quota's Redis is gone: the run stops, this call was not sent
        except Exception as error:
            raise self._failed(error, call.sent) from None
        self.reached = True
        return reply

    def _send(self, call: _Call, meter: AttemptMeter | None) -> Any:
        """One request of the call through the pacer: the SDK's raw response, or None when the server refused
        log-probabilities (dropped from here on: ask again without them)."""
        ticket = self.pacer.wait(call.estimate)
        try:
            self._raise_if_stopped()
            call.sent += 1
            arguments = {k: call.body[k] for k in call.separately}
            if not self.completions:
                arguments["messages"] = ()  # sent in extra_body (see SENT_SEPARATELY)
            raw = call.create(
                **arguments,
                extra_body={k: v for k, v in call.body.items() if k not in call.separately},
                extra_headers=call.headers,
            )
        except Exception as error:
            self.pacer.release(ticket, succeeded=False, throttled=is_throttled(error))
            self._count_gateway_retries(error)
            if meter is not None and may_have_been_billed(error):
                meter.billed(None)  # the server may have finished the request, and billed it
            if "logprobs" in call.body and _refuses_logprobs(error):
                # Degrade to hard verdicts rather than fail the run: this and every later call go without.
                self.logprobs_refused = True
                call.body = {k: v for k, v in call.body.items() if k not in ("logprobs", "top_logprobs")}
                return None
            raise
        self.pacer.release(ticket)
        if window_exhausted(raw.headers):  # the next request would be refused: everyone waits
            wait = announced_wait(raw.headers, time.time())
            if wait:
                self.pacer.pause_all(min(wait, self.config.max_wait))
        return raw

    def _reply_of(self, raw: Any, call: _Call, request: Request, meter: AttemptMeter | None) -> Reply:
        """The attempt's reply; raises UnusableReply or TruncatedReply for a billed reply worth asking again."""
        text = raw.text
        if len(text) > self.reply_bound:  # a reply no budget of judge.max_tokens could hold: not parsed
            return _truncated(
                Reply(None),
                f"the reply was {len(text):,} characters, more than the {self.reply_bound:,} a reply to "
                f"judge.max_tokens={self.config.max_tokens} can hold: not read",
            )
        reply = self._read(self.redact.known(text), raw.headers, request.view.labels(self.rubric.tie_label))
        if reply.outcome in TRANSIENT_OUTCOMES:
            if meter is not None:
                meter.billed(reply)  # a 200 is billed, whatever it holds
            raise UnusableReply(reply)
        if reply.finish_reason == "length" and reply.outcome is None and not self.completions:
            if not answer_part(reply.text or "").strip():
                with self._lock:  # the whole budget went to reasoning (hidden, or an unclosed <think>)
                    self.budget_spent += 1
                return _truncated(reply, "the judge spent its whole budget before answering")
            if self._unreadable(reply, request):
                call.cut_off += 1
                if self._sampled() and call.cut_off <= TRUNCATED_RETRIES:
                    if meter is not None:
                        meter.billed(reply)
                    raise TruncatedReply(reply)  # another sample may fit; at temperature 0 it would not
                return _truncated(reply, "the reply was cut off at judge.max_tokens before a readable verdict")
        return reply

    def _failed(self, error: Exception, sent: int) -> Exception:
        """The error a call that failed for good raises: FatalJudgeError when nothing has ever come back from an
        endpoint that cannot be reached (every other call would fail too), else CallFailed with its kind."""
        failure = self.classify(error)
        if failure.kind == FailureKind.unreachable and not self.reached:
            return FatalJudgeError(f"{self.describe()}: {failure.reason}")
        outcome = error.reply.outcome if isinstance(error, UnusableReply) else None
        return CallFailed(f"{failure.reason} (after {_attempts_text(error, sent)})", outcome, failure.kind)

    def _read(self, text: str, headers: Any, labels: tuple[str, str, str]) -> Reply:
        """The reply in a response body: a completion's first token, or a chat reply (backends.chat_reply), never
        raising on what a server sends."""
        if self.completions:
            try:
                body = json.loads(text)
            except ValueError:
                body = None
            if isinstance(body, dict) and body.get("choices"):
                return completion_reply(body, labels)
        reply = reply_of_text(text, headers, lambda logprobs: _label_probs_json(logprobs, labels))
        # The body was redacted before it was read; what a gateway's headers say of the origin is redacted here.
        known = self.redact.known

        def clean(value: str | None) -> str | None:
            return None if value is None else known(value)

        deployment, deployment_id, api_base = clean(reply.deployment), clean(reply.deployment_id), clean(reply.api_base)
        if (deployment, deployment_id, api_base) == (reply.deployment, reply.deployment_id, reply.api_base):
            return reply
        return dataclasses.replace(reply, deployment=deployment, deployment_id=deployment_id, api_base=api_base)

    def _count_gateway_retries(self, error: BaseException) -> None:
        """What a gateway's error response says of its own retries: their count (LiteLLM's attempted-retries header),
        or that it does not say (a gateway that names itself in its headers but not its retries)."""
        response = getattr(error, "response", None)
        headers = getattr(response, "headers", None)
        if headers is None:
            return
        retried = headers.get(RETRIES_HEADER)
        with self._lock:
            if retried is not None and str(retried).strip().isdigit():
                self.gateway_retries_failed += int(str(retried).strip())
            elif any(name in headers for name in GATEWAY_HEADERS):
                self.gateway_errors_unknown += 1

    def notes(self) -> list[str]:
        """What the summary should say about this judge's calls (timeouts, budgets spent reasoning, logprobs,
        retries made by both this client and a gateway)."""
        notes = []
        if self.gateway_errors_unknown or self.gateway_retries_failed:
            unknown = (
                f"; {self.gateway_errors_unknown} error responses did not say how often it retried, so its retries "
                "on failed calls are unknown"
                if self.gateway_errors_unknown
                else ""
            )
            both = (
                f"; judgebias retried too (judge.max_retries={self.config.max_retries}): a failing call can cost "
                f"({self.config.max_retries} + 1) x (the gateway's retries + 1) upstream requests, so keep one of the "
                "two budgets at 0"
                if self.retries
                else ""
            )
            notes.append(
                f"judge {self.config.name!r}: the gateway reported {self.gateway_retries_failed} retries of its own on "
                f"failed calls{unknown}{both}"
            )
        if self.timeouts:
            notes.append(
                f"judge {self.config.name!r}: {self.timeouts} requests were retried after a timeout (the client's, "
                f"judge.timeout={self.config.timeout:g}s, or a gateway's 408/504); the endpoint may have answered and "
                "billed them too, so they may have been billed twice: raise judge.timeout (or the gateway's) to make "
                "this rare"
            )
        if self.budget_spent:
            notes.append(
                f"judge {self.config.name!r}: {self.budget_spent} replies came back empty with finish_reason "
                f"'length': the judge spent its whole budget (judge.max_tokens={self.config.max_tokens}) reasoning "
                "before answering; raise judge.max_tokens (or lower judge.reasoning_effort) and rerun: "
                "a new budget is a new cache key, so those calls are asked again"
            )
        if self.logprobs_refused:
            notes.append(
                f"judge {self.config.name!r}: the endpoint refuses logprobs, so the calls were sent without them "
                "and there are no soft verdicts (set judge.logprobs=false)"
            )
        return notes

    def stop(self, reason: str) -> None:
        """Fail every later call and retry at once, without a request (a permanent error, or the run stopping)."""
        with self._lock:
            if self.stopped is None:
                self.stopped = reason
        self._stopping.set()

    def _sleep(self, seconds: float) -> None:
        """Wait between retries, but no longer once the run stops (the next attempt then fails unsent)."""
        self._stopping.wait(seconds)

    def _raise_if_stopped(self) -> None:
        if self.stopped is not None:
            raise FatalJudgeError(self.stopped)

    def _unreadable(self, reply: Reply, request: Request) -> bool:
        return read_reply(reply, request.view, self.rubric, first_token=self.first_token) == "invalid"

    def _on_retry(self, error: BaseException, failure: Failure, seconds: float) -> None:
        """Count the retry (and a timeout's possible double bill); say on the terminal what is retried and why."""
        timeout = may_have_been_billed(error)
        now = time.monotonic()
        with self._lock:
            self.retries += 1
            self.timeouts += timeout
            kind = f"{type(error).__name__} {getattr(error, 'status_code', '')}"  # not the text: it holds numbers
            show = now - self._noticed.get(kind, -NOTICE_EVERY) >= NOTICE_EVERY
            if show:
                self._noticed[kind] = now
        if show:
            reason = failure.reason
            sys.stderr.write(f"judgebias: {self.describe()}: {reason}; retrying in {format_seconds(seconds)}\n")
            sys.stderr.flush()

    def share_pacing(self, fleet_for: FleetSource) -> None:
        """Hold this judge's quota and announced pauses with every process sending to the same endpoint and model."""
        fleet = fleet_for(
            f"{self.endpoint.rstrip('/')}|{self.config.model}",
            self.config.requests_per_minute,
            self.config.tokens_per_minute,
        )
        if fleet is not None:
            self.pacer.fleet = fleet

    def classify(self, error: BaseException) -> Failure:
        """What an SDK error (or a reply refused as transient) means: see `classify` below."""
        return classify(error, self.redact.secrets(), self.config.api_key_env)

    def explain(self, error: BaseException) -> str:
        """The one-line reason of an SDK error, with the credentials this judge sends redacted."""
        return explain(error, self.redact.secrets(), self.config.api_key_env)

    def is_api_error(self, error: BaseException) -> bool:
        """Whether `error` is one of the SDK's API errors (status, connection, timeout)."""
        return isinstance(error, api_error())

    def batch_transport(self) -> BatchTransport:
        """OpenAI's Batch API at the judge's endpoint: the same client, bodies and reply reading as a live call."""
        return OpenAIBatches(self)

    def describe(self) -> str:
        """The judge and endpoint, for error messages (never the key)."""
        return f"judge {self.config.name!r} ({self.config.model} at {self.endpoint})"


REPLY_BYTES_PER_TOKEN = 64  # a response body holds at most this many characters per reply token
REPLY_BYTES_PER_TOKEN_LOGPROBS = 4096  # ... or this many with each token's top log-probabilities
MIN_REPLY_BOUND = 1 << 20  # ... and is never refused below 1 MB


ROUTES_PATH = "/model/info"  # under the judge's base_url (…/v1): LiteLLM's list of deployments by model group
ROUTES_TIMEOUT = 10.0


def deployments_by_group(body: Any) -> dict[str, list[str]] | None:
    """{"data": [{"model_name", "litellm_params": {"model"}, "model_info": {"id"}}, ...]} read as each model group's
    own deployments; None for a body of any other shape. LiteLLM also lists, under an alias's name, the deployment
    the alias points to (model_group_alias), with that deployment's id: an id listed under several names is the
    alias's target, not a deployment of its own, and stays with the group that is not the alias."""
    entries = body.get("data") if isinstance(body, dict) else None
    if not isinstance(entries, list):
        return None
    listed: list[tuple[str, str, object]] = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        params, info = entry.get("litellm_params"), entry.get("model_info")
        group, model = entry.get("model_name"), params.get("model") if isinstance(params, dict) else None
        if isinstance(group, str) and isinstance(model, str):
            listed.append((group, model, info.get("id") if isinstance(info, dict) else None))
    names_of: dict[object, set[str]] = {}
    for group, _, deployment in listed:
        if deployment is not None:
            names_of.setdefault(deployment, set()).add(group)
    groups: dict[str, list[str]] = {}
    for group, model, deployment in listed:
        if deployment is None or len(names_of[deployment]) == 1:
            groups.setdefault(group, []).append(model)
    return groups or None


GATEWAY_HEADERS = ("x-litellm-call-id", DEPLOYMENT_ID_HEADER, "x-portkey-trace-id", "helicone-id", "cf-aig-log-id")
GATEWAY_TIMEOUTS = (408, 504)  # a gateway's timeout (LiteLLM's own is 408): the upstream request may finish


def may_have_been_billed(error: BaseException) -> bool:
    """A timeout, ours or a gateway's (LiteLLM answers 408; a proxy 504): the upstream request was left running and
    may have been answered and billed, so the spending cap counts it and the summary counts it as a timeout."""
    openai = _sdk()
    return isinstance(error, openai.APITimeoutError) or (
        isinstance(error, openai.APIStatusError) and error.status_code in GATEWAY_TIMEOUTS
    )


def protocol_problem(error: BaseException) -> str | None:
    """The HTTP client's complaint about what the server sent (oversized headers, a malformed response), when a
    connection error is that and not a refused connection; None otherwise."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if "ProtocolError" in type(cause).__name__:
            inner = cause.args[0] if cause.args else cause
            return str(inner) or type(cause).__name__
        cause = cause.__cause__ or cause.__context__
    return None


def _truncated(reply: Reply, reason: str) -> Reply:
    """A cut-off reply as an outcome: no verdict, and the fix (a larger budget is a new cache key, asked again)."""
    import dataclasses

    return dataclasses.replace(reply, outcome="truncated", reason=f"{reason}: raise judge.max_tokens")


def _attempts_text(error: BaseException, sent: int) -> str:
    """How many requests this call sent, and whether it waited out an announced wait (or why it was sent once)."""
    if sent == 1 and not is_transient(error):
        return "1 attempt, not retried: the same request fails the same way"
    asked = retry_after(error)
    requests = f"{sent} attempt{'s' if sent != 1 else ''}"  # requests actually sent
    return f"{requests}, waiting out the announced waits" if asked is not None and asked >= LONG_WAIT else requests


def classify(error: BaseException, known: Iterable[str] = (), key_env: str | None = None) -> Failure:
    """The one decision about an error: permanent (the judge stops), or one call's failure that another attempt may
    cure (a timeout, nothing listening, the server pushing back on the rate, a passing error), or not; with the wait
    the server announced and the reason, credentials redacted (`known`: see `explain`)."""
    reason = explain(error, known, key_env)
    wait = retry_after(error)
    if is_permanent(error):
        return Failure(FailureKind.permanent, reason, wait)
    if not is_transient(error):
        return Failure(FailureKind.failed, reason, wait)
    openai = _sdk()
    if isinstance(error, openai.APITimeoutError):
        return Failure(FailureKind.timeout, reason, wait)
    if type(error) is openai.APIConnectionError and protocol_problem(error) is None:
        return Failure(FailureKind.unreachable, reason, wait)  # refused or unresolvable: nothing listens
    if is_throttled(error):
        return Failure(FailureKind.rate_limit, reason, wait)
    return Failure(FailureKind.transient, reason, wait)


def retry_after(error: BaseException | None) -> float | None:
    """Seconds the server asked us to wait before retrying, from any header of the error's HTTP response."""
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    return announced_wait(headers, time.time())


def is_transient(error: BaseException) -> bool:
    """Worth retrying: rate limits (not an exhausted quota), 5xx, timeouts, dropped connections, a sampled judge's
    cut-off reply, a status-200 reply that looks like a transient error."""
    openai = _sdk()

    if isinstance(error, TruncatedReply | UnusableReply | openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(error, openai.APIStatusError):
        if is_permanent(error):
            return False
        return error.status_code in (408, 409, 425, 429) or error.status_code >= 500
    return False


def is_throttled(error: BaseException) -> bool:
    """The server pushed back on the request rate: a 429, or any error that says when to retry."""
    return getattr(error, "status_code", None) == 429 or retry_after(error) is not None


def is_permanent(error: BaseException) -> bool:
    """Retrying cannot help: bad key, no permission, unknown model, bad or too large request, exhausted quota."""
    openai = _sdk()

    if not isinstance(error, openai.APIStatusError):
        return False
    if error.status_code == 429:
        return _error_code(error) == "insufficient_quota"
    if is_context_overflow(error):  # this prompt only (a long answer): the call fails, the other calls go on
        return False
    if _LOGPROBS_UNSERVED.search(str(getattr(error, "message", "") or "")):  # every call would fail alike
        return True
    return error.status_code in (400, 401, 403, 404, 413, 422)


# llama-cpp-python's server started with --logits_all false answers a request for log-probabilities with a 500
# saying so, for every call: a setting to change, not an error to retry.
_LOGPROBS_UNSERVED = re.compile(r"logprobs is not supported for models created with logits_all=False", re.IGNORECASE)


_OVERFLOW = re.compile(r"context (?:length|size|window)|exceeds? the available context", re.IGNORECASE)


def is_context_overflow(error: BaseException) -> bool:
    """The prompt is longer than the model's context (llama.cpp's n_ctx, vLLM's max_model_len): a 400 for one call."""
    if getattr(error, "status_code", None) not in (400, 413):
        return False
    body = getattr(error, "body", None)
    inner = body.get("error", body) if isinstance(body, dict) else None
    kind = str(inner.get("type") or "") if isinstance(inner, dict) else ""
    code = _error_code(error) or ""
    message = str(getattr(error, "message", "") or "")
    return code == "context_length_exceeded" or kind == "exceed_context_size_error" or bool(_OVERFLOW.search(message))


PLAIN_HEADERS = frozenset(
    ("accept", "accept-encoding", "connection", "content-length", "content-type", "host", "user-agent", "authorization")
)


def explain(error: BaseException, known: Iterable[str] = (), key_env: str | None = None) -> str:
    """A one-line reason from an SDK error: never the request, and never the key even if the server echoed it.

    `known` are the credentials the caller sent (the judge's key and extra headers, read from the environment):
    the SDK may strip them from the request the error carries (openai >= 3.60 drops Authorization and api-key
    there), so what the error's request still holds is only a second source."""
    request = getattr(error, "request", None)
    headers = getattr(request, "headers", {})
    authorization = str(headers.get("authorization") or "")
    # The key, and every value of a header the SDK does not set itself (judge.extra_headers may carry credentials).
    secrets = [*known, authorization.partition(" ")[2] or authorization] + [
        str(value)
        for name, value in headers.items()
        if name.lower() not in PLAIN_HEADERS and not name.lower().startswith("x-stainless")
    ]

    def redact(text: str) -> str:
        """The text without the credentials the request carried (before any cut, so no part of it survives)."""
        return replace_secrets(text, secrets)

    return escape_controls(_reason(error, redact, key_env))  # a server's text: shown escaped, never acted on


_AUTH_WORDS = re.compile(
    r"api[ _-]?key|auth|credential|token passed|no connected db|unauthori[sz]ed|permission|forbidden", re.IGNORECASE
)
# A gateway relaying its provider's refusal of the gateway's own credential (LiteLLM: "litellm.AuthenticationError:
# AuthenticationError: OpenAIException - Incorrect API key provided"): the user's key was accepted.
_UPSTREAM_AUTH = re.compile(r"litellm\.(?:AuthenticationError|PermissionDeniedError)|\w+Exception - ", re.IGNORECASE)


def _reason(error: BaseException, redact: Callable[[str], str], key_env: str | None = None) -> str:
    openai = _sdk()

    if isinstance(error, UnusableReply):
        return redact(str(error))
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        code = _error_code(error)
        if code == str(status):  # a gateway's body repeats the status (LiteLLM: "code": "400")
            code = None
        message = redact(re.sub(r"^Error code: \d+ - ", "", getattr(error, "message", "") or ""))
        first_line = message.splitlines()[0][:200] if message.strip() else ""
        hint = _hint(status, code, message, key_env)
        parts = [f"HTTP {status}"] + ([code] if code else []) + [first_line]
        return " ".join(p for p in parts if p) + (f" ({hint})" if hint else "")
    if isinstance(error, openai.APITimeoutError):
        return "timed out (raise judge.timeout or lower max_concurrency)"
    if isinstance(error, openai.APIConnectionError):
        broken = protocol_problem(error)
        if broken is not None:
            return (
                f"the server answered, but not in HTTP the client accepts ({broken}): e.g. more or larger response "
                "headers than it reads (a gateway or proxy adding them?)"
            )
        return "could not connect (is the server running? check judge.base_url)"
    text = redact(str(error))
    return f"{type(error).__name__}: {text.splitlines()[0][:200] if text.strip() else ''}"


def _hint(status: int, code: str | None, message: str, key_env: str | None = None) -> str:
    """What the user can do about an HTTP error: the key (named by the variable it was read from), the gateway's
    credential, the model, the request."""
    if status in (400, 413) and _OVERFLOW.search(message):
        return (
            "the prompt is longer than the model's context: cut the answers with data.normalize.truncate_tokens "
            "(or serve the model with a larger context, e.g. llama.cpp's --n_ctx)"
        )
    about_auth = status in (401, 403) or (status == 400 and bool(_AUTH_WORDS.search(message)))
    if about_auth and _UPSTREAM_AUTH.search(message):
        return (
            "the gateway accepted your key, but its provider refused the gateway's own credential: "
            "the gateway's configuration needs fixing, not judge.api_key_env"
        )
    if about_auth and status == 403 and "permission" in message.lower():
        return "the key has no permission for this model"
    if about_auth and key_env:
        return (
            f"the API key was refused: check the key in ${key_env} (read from judge.api_key_env={key_env}; "
            "export the right key, or point judge.api_key_env at the variable that holds it)"
        )
    if about_auth:
        return "the server wants a key and judge.api_key_env is null: set it to the variable that holds the key"
    if status == 400 and "logprobs" in message.lower():
        return "this model refuses logprobs: set judge.logprobs=false"
    if _LOGPROBS_UNSERVED.search(message):
        return (
            "the server was started without the logits log-probabilities need (llama-cpp-python's --logits_all "
            "false): restart it without that flag, or set judge.logprobs=false"
        )
    if status == 400 and re.search(r"max_tokens|max_completion_tokens", message):
        return "set judge.max_tokens_param to the field this model accepts"
    if status == 400 and re.search(r"temperature|top_p", message):
        return "this model refuses the setting: set it to null (judge.temperature=null, judge.top_p=null)"
    return {
        404: "unknown model or endpoint: check judge.model and judge.base_url",
        413: "the request is too large: lower data.normalize.truncate_words or use a larger-context model",
        429: "the account's quota is exhausted: add credit or use another key"
        if code == "insufficient_quota"
        else "rate limited: lower max_concurrency or set judge.requests_per_minute",
    }.get(status, "")


def _refuses_logprobs(error: BaseException) -> bool:
    """A 400 saying the model does not support logprobs (reasoning models): worth one try without them."""
    message = str(getattr(error, "message", "") or "")
    return getattr(error, "status_code", None) == 400 and "logprobs" in message.lower()


def _error_code(error: Any) -> str | None:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("code"), str):
            return str(inner["code"])
    code = getattr(error, "code", None)
    return code if isinstance(code, str) else None


def _label_probs_json(logprobs: Any, labels: tuple[str, str, str]) -> dict[str, float] | None:
    """_label_probs for a response body read as JSON (dicts instead of the SDK's typed objects)."""

    content = logprobs.get("content") if isinstance(logprobs, Mapping) else None
    if not content:
        return None
    wanted = {label.lower(): label for label in labels}
    for token in content:
        if bare_token(str(token.get("token", ""))) not in wanted:
            continue
        probs: dict[str, float] = {}
        for alternative in token.get("top_logprobs") or []:
            label = wanted.get(bare_token(str(alternative.get("token", ""))))
            chance = probability_of(alternative.get("logprob", 0.0))
            if label is not None and chance is not None:
                probs[label] = probs.get(label, 0.0) + chance
        return probs or None
    return None
