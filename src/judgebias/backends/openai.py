"""The live judge: any OpenAI-compatible endpoint through the official `openai` SDK, with retries in one place.

The SDK is imported only when the first live call is made, so a run answered from the cache starts fast. The
SDK's own retries are off (max_retries=0): tenacity owns them, so attempts are bounded in one place and a
server's Retry-After is honoured (never retried sooner than asked), shared by all workers.
"""

from __future__ import annotations

import email.utils
import os
import random
import re
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from judgebias.backends.base import Backend
from judgebias.config import JudgeConfig, RubricConfig
from judgebias.errors import FatalJudgeError, UserError
from judgebias.ratelimit import Pacer
from judgebias.reading import read_reply
from judgebias.record import Reply, Request
from judgebias.redaction import replace_secrets
from judgebias.settings import check_judge
from judgebias.tokens import estimate_prompt_tokens

if TYPE_CHECKING:
    from tenacity import RetryCallState

OPENAI_ENDPOINT = "https://api.openai.com/v1"
TOP_LOGPROBS = 5


class TruncatedReply(Exception):
    """The reply hit max_tokens before a readable verdict (finish_reason "length"): worth one more try."""

    def __init__(self, reply: Reply) -> None:
        super().__init__("the reply was cut off (finish_reason=length) before a readable verdict")
        self.reply = reply


class CallFailed(Exception):
    """A call that still failed after its retries; the run records it as an explicit error and goes on."""


def _sdk() -> Any:
    """The openai SDK module: the one place it is imported, on first use (importing it costs about a second)."""
    import openai

    return openai


class OpenAIJudge(Backend):
    """A judge behind an OpenAI-compatible chat-completions endpoint."""

    paid = True

    def __init__(self, config: JudgeConfig, rubric: RubricConfig) -> None:
        check_judge(config)  # judge.model and the retry, quota and key-name settings, also when built outside a run
        self.config = config
        self.rubric = rubric
        self.endpoint = config.base_url or OPENAI_ENDPOINT
        self.pacer = Pacer(config.requests_per_minute, config.tokens_per_minute)
        self.retries = 0  # retries made so far, for the progress line
        self.reached = False  # some call has been answered: a later connection error is not "endpoint down"
        self.stopped: str | None = None  # once set, every call and retry fails at once with this reason, unsent
        self._stopping = threading.Event()  # wakes the workers sleeping between retries when the run stops
        self._client: Any = None
        self._lock = threading.Lock()

    def cache_request(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        """Everything that decides the reply, for the cache key: never the key, timeouts or retry counts."""
        return {
            "endpoint": self.endpoint.rstrip("/"),
            "model": self.config.model,
            "messages": messages,
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
            "seed": self.config.seed,
            "top_p": self.config.top_p,
            "logprobs": self.config.logprobs,
        }

    def check_key(self) -> None:
        """Stop before any call when the key's env var is unset."""
        name = self.config.api_key_env
        if name and not os.environ.get(name):
            raise UserError(
                f"judge {self.config.name!r} needs {name} in the environment (or run judge=longer offline, "
                f"or rerun from a warm cache)"
            )

    def _openai(self) -> Any:
        with self._lock:
            if self._client is None:
                openai = _sdk()
                name = self.config.api_key_env
                self._client = openai.OpenAI(
                    base_url=self.endpoint,
                    api_key=(lambda: os.environ.get(name, "")) if name else "no-key",
                    timeout=self.config.timeout,
                    max_retries=0,
                )
            return self._client

    def request_body(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        """The chat-completions request body exactly as sent: by a live call, or as one line of a batch."""
        params: dict[str, Any] = {
            "model": self.config.model,
            "messages": messages,
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
        }
        if self.config.seed is not None:
            params["seed"] = self.config.seed
        if self.config.top_p is not None:
            params["top_p"] = self.config.top_p
        if self.config.logprobs:
            params.update(logprobs=True, top_logprobs=TOP_LOGPROBS)
        return params

    def reply_from_json(self, body: Mapping[str, Any], request: Request) -> Reply:
        """The Reply of one chat-completion response body (a live call's JSON, or a batch output line's body)."""
        labels = request.view.labels(self.rubric.tie_label)
        choices = body.get("choices") or []
        choice: Mapping[str, Any] = choices[0] if choices else {}
        message = choice.get("message") or {}
        usage = body.get("usage") or {}
        return Reply(
            text=message.get("content"),
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            model=body.get("model"),
            finish_reason=choice.get("finish_reason"),
            probs=_label_probs_json(choice.get("logprobs"), labels),
        )

    def complete(self, request: Request) -> Reply:
        """One call with bounded retries; a permanent error raises FatalJudgeError at once."""
        client = self._openai()
        params = self.request_body(request.messages)
        labels = request.view.labels(self.rubric.tie_label)
        estimate = estimate_prompt_tokens(request.messages) + self.config.max_tokens

        def attempt() -> Reply:
            self._raise_if_stopped()
            ticket = self.pacer.wait(estimate)
            try:
                self._raise_if_stopped()
                response = client.chat.completions.create(**params)
            except Exception as error:
                self.pacer.release(ticket, succeeded=False, throttled=is_throttled(error))
                raise
            self.pacer.release(ticket)
            reply = _reply(response, labels)
            if reply.finish_reason == "length" and self._unreadable(reply, request):
                raise TruncatedReply(reply)
            return reply

        try:
            reply = call_with_retries(
                attempt, self.config, self.pacer, self._count_retry, self.describe, sleep=self._sleep
            )
        except TruncatedReply as truncated:
            return truncated.reply
        except FatalJudgeError as fatal:
            self.stop(str(fatal))  # the calls queued behind this one would fail the same way: send none of them
            raise
        except Exception as error:
            openai = _sdk()
            attempts = self.config.max_retries + 1
            if type(error) is openai.APIConnectionError and not self.reached:  # refused or unresolvable, not a timeout
                # Nothing has ever come back: the endpoint is down or wrong, and every other call would fail too.
                raise FatalJudgeError(f"{self.describe()}: {explain(error)}, {attempts} attempts") from None
            raise CallFailed(f"{explain(error)} (after {attempts} attempts)") from None
        self.reached = True
        return reply

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
        return read_reply(reply, request.view, self.rubric) == "invalid"

    def _count_retry(self) -> None:
        with self._lock:
            self.retries += 1

    def describe(self) -> str:
        """The judge and endpoint, for error messages (never the key)."""
        return f"judge {self.config.name!r} ({self.config.model} at {self.endpoint})"


def call_with_retries(
    attempt: Callable[[], Reply],
    config: JudgeConfig,
    pacer: Pacer,
    on_retry: Callable[[], None],
    describe: Callable[[], str],
    sleep: Callable[[float], None] = time.sleep,
) -> Reply:
    """The one retry policy: transient errors retried with backoff (or the server's Retry-After), permanent ones not."""
    try:
        return attempt()  # most calls succeed at once: the retry machinery is built only for those that fail
    except Exception as error:
        failed: Exception | None = error

    def attempts() -> Reply:
        """The failed first attempt's error again (tenacity's first attempt), then fresh attempts."""
        nonlocal failed
        if failed is not None:
            error, failed = failed, None
            raise error
        return attempt()

    from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_random_exponential

    backoff = wait_random_exponential(multiplier=config.retry_backoff, max=config.retry_backoff_max)

    def wait(state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        asked = retry_after(error)
        if asked is not None:
            pacer.pause_all(asked)  # every worker waits, not just this one
            return asked + random.uniform(0, 0.05 + 0.1 * asked)  # never sooner than asked; spread the retries
        return float(backoff(state))

    def before_sleep(state: RetryCallState) -> None:
        on_retry()

    retrying = Retrying(
        retry=retry_if_exception(is_transient),
        wait=wait,
        stop=stop_after_attempt(config.max_retries + 1),
        before_sleep=before_sleep,
        reraise=True,
        sleep=sleep,
    )
    try:
        return retrying(attempts)
    except Exception as error:
        if is_permanent(error):
            raise FatalJudgeError(f"{describe()}: {explain(error)}") from None
        raise


def is_transient(error: BaseException) -> bool:
    """Worth retrying: rate limits (not an exhausted quota), 5xx, timeouts, dropped connections, a cut-off reply."""
    openai = _sdk()

    if isinstance(error, TruncatedReply | openai.APIConnectionError):  # includes APITimeoutError
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
    return error.status_code in (400, 401, 403, 404, 413, 422)


def explain(error: BaseException) -> str:
    """A one-line reason from an SDK error: never the request, and never the key even if the server echoed it."""
    request = getattr(error, "request", None)
    authorization = str(getattr(request, "headers", {}).get("authorization") or "")
    secret = authorization.partition(" ")[2] or authorization

    def redact(text: str) -> str:
        """The text without the credential the request carried (before any cut, so no part of it survives)."""
        return replace_secrets(text, (secret,))

    return _reason(error, redact)


def _reason(error: BaseException, redact: Callable[[str], str]) -> str:
    openai = _sdk()

    if isinstance(error, openai.APIStatusError):
        code = _error_code(error)
        message = redact(re.sub(r"^Error code: \d+ - ", "", getattr(error, "message", "") or ""))
        hint = {
            401: "the API key was refused: check the key in the judge's api_key_env variable",
            403: "the key has no permission for this model",
            404: "unknown model or endpoint: check judge.model and judge.base_url",
            413: "the request is too large: lower data.normalize.truncate_words or use a larger-context model",
            429: "the account's quota is exhausted: add credit or use another key"
            if code == "insufficient_quota"
            else "rate limited: lower max_concurrency or set judge.requests_per_minute",
        }.get(error.status_code, "")
        first_line = message.splitlines()[0][:200] if message.strip() else ""
        parts = [f"HTTP {error.status_code}"] + ([code] if code else []) + [first_line]
        return " ".join(p for p in parts if p) + (f" ({hint})" if hint else "")
    if isinstance(error, openai.APITimeoutError):
        return "timed out (raise judge.timeout or lower max_concurrency)"
    if isinstance(error, openai.APIConnectionError):
        return "could not connect (is the server running? check judge.base_url)"
    text = redact(str(error))
    return f"{type(error).__name__}: {text.splitlines()[0][:200] if text.strip() else ''}"


def retry_after(error: BaseException | None) -> float | None:
    """Seconds the server asked us to wait (retry-after-ms or retry-after), if it said."""
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    milliseconds = headers.get("retry-after-ms")
    if milliseconds:
        try:
            return max(0.0, float(milliseconds) / 1000.0)
        except ValueError:
            pass
    seconds = headers.get("retry-after")
    if not seconds:
        return None
    try:
        return max(0.0, float(seconds))
    except ValueError:
        date = email.utils.parsedate_to_datetime(seconds)
        return max(0.0, date.timestamp() - time.time()) if date else None


def _error_code(error: Any) -> str | None:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("code"), str):
            return str(inner["code"])
    code = getattr(error, "code", None)
    return code if isinstance(code, str) else None


def _reply(response: Any, labels: tuple[str, str, str]) -> Reply:
    """The reply text, usage, reported model and label probabilities of one ChatCompletion."""
    choice = response.choices[0] if response.choices else None
    usage = getattr(response, "usage", None)
    return Reply(
        text=choice.message.content if choice is not None else None,
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        model=getattr(response, "model", None),
        finish_reason=getattr(choice, "finish_reason", None),
        probs=_label_probs(getattr(choice, "logprobs", None), labels),
    )


def _label_probs(logprobs: Any, labels: tuple[str, str, str]) -> dict[str, float] | None:
    """Probability of each label at the first reply token that is a label, from top_logprobs (None if absent)."""
    import math

    content = getattr(logprobs, "content", None)
    if not content:
        return None
    wanted = {label.lower(): label for label in labels}
    for token in content:
        if _bare(token.token) not in wanted:
            continue
        probs: dict[str, float] = {}
        for alternative in token.top_logprobs or []:
            label = wanted.get(_bare(alternative.token))
            if label is not None:
                probs[label] = probs.get(label, 0.0) + math.exp(alternative.logprob)
        return probs or None
    return None


def _bare(token: str) -> str:
    return token.strip().strip("[]()*.:\"'").lower()


def _label_probs_json(logprobs: Any, labels: tuple[str, str, str]) -> dict[str, float] | None:
    """_label_probs for a response body read as JSON (dicts instead of the SDK's typed objects)."""
    import math

    content = logprobs.get("content") if isinstance(logprobs, Mapping) else None
    if not content:
        return None
    wanted = {label.lower(): label for label in labels}
    for token in content:
        if _bare(str(token.get("token", ""))) not in wanted:
            continue
        probs: dict[str, float] = {}
        for alternative in token.get("top_logprobs") or []:
            label = wanted.get(_bare(str(alternative.get("token", ""))))
            if label is not None:
                probs[label] = probs.get(label, 0.0) + math.exp(float(alternative.get("logprob", 0.0)))
        return probs or None
    return None
