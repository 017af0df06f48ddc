"""The live backend's retry policy: which SDK errors are retried, which stop the run, how long a server asks to wait.

The errors are the SDK's own exception classes built from real HTTP responses, as the SDK builds them.
"""

from __future__ import annotations

import email.utils
import time
from typing import Any

import httpx2
import openai
import pytest

from judgebias.backends.openai import (
    OpenAIJudge,
    classify,
    explain,
    is_permanent,
    is_throttled,
    is_transient,
    retry_after,
)
from judgebias.config.schema import JudgeConfig, RubricConfig
from judgebias.core.errors import TruncatedReply
from judgebias.core.record import Reply

URL = "http://127.0.0.1:9/v1/chat/completions"


def status_error(status: int, body: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> Exception:
    """The exception the SDK raises for an HTTP error response with this status, JSON body and headers."""
    request = httpx2.Request("POST", URL, headers={"authorization": "Bearer sk-test-secret-value-1234"})
    response = httpx2.Response(status, json=body or {}, headers=headers or {}, request=request)
    client = openai.OpenAI(api_key="sk-test-secret-value-1234", base_url="http://127.0.0.1:9/v1", max_retries=0)
    return client._make_status_error_from_response(response)


def connection_error() -> Exception:
    """The SDK's error for a refused connection."""
    return openai.APIConnectionError(request=httpx2.Request("POST", URL))


@pytest.mark.parametrize("status", [408, 409, 425, 429, 500, 502, 503, 529])
def test_rate_limits_and_server_errors_are_retried(status: int) -> None:
    """Rate limits, conflicts, timeouts and 5xx are transient: worth another attempt, and never permanent."""
    error = status_error(status, {"error": {"message": "busy"}})

    assert (True, False) == (is_transient(error), is_permanent(error))


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
def test_client_errors_are_permanent(status: int) -> None:
    """A bad request, key, permission, model or size fails at once: retrying cannot help."""
    error = status_error(status, {"error": {"message": "no"}})

    assert (False, True) == (is_transient(error), is_permanent(error))


def test_an_exhausted_quota_is_permanent_although_it_is_a_429() -> None:
    """A 429 whose code is insufficient_quota stops the run; an ordinary 429 is retried."""
    quota = status_error(429, {"error": {"message": "out of credit", "code": "insufficient_quota"}})
    limited = status_error(429, {"error": {"message": "slow down", "code": "rate_limit_exceeded"}})

    assert [(False, True), (True, False)] == [(is_transient(e), is_permanent(e)) for e in (quota, limited)]


def test_connection_errors_timeouts_and_cut_off_replies_are_retried() -> None:
    """A dropped connection, a timeout and a reply cut off before its verdict are all transient."""
    errors = [
        connection_error(),
        openai.APITimeoutError(request=httpx2.Request("POST", URL)),
        TruncatedReply(Reply(text="Let me think", finish_reason="length")),
    ]

    assert [True, True, True] == [is_transient(error) for error in errors]


def test_other_exceptions_are_neither_retried_nor_permanent() -> None:
    """A bug in our own code is not taken for a network problem."""
    assert (False, False) == (is_transient(ValueError("x")), is_permanent(ValueError("x")))


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        pytest.param({"retry-after-ms": "1500"}, 1.5, id="milliseconds"),
        pytest.param({"retry-after": "2"}, 2.0, id="seconds"),
        pytest.param({"retry-after-ms": "250", "retry-after": "9"}, 0.25, id="milliseconds-first"),
        pytest.param({"retry-after": "-3"}, 0.0, id="never-negative"),
        pytest.param({}, None, id="not-said"),
    ],
)
def test_retry_after_reads_the_wait_the_server_asked_for(headers: dict[str, str], expected: float | None) -> None:
    """The server's wait is read from retry-after-ms, else retry-after, in seconds."""
    assert expected == retry_after(status_error(429, {}, headers))


def test_retry_after_as_an_http_date_is_the_time_until_then() -> None:
    """A Retry-After given as a date means the seconds from now until that moment."""
    when = email.utils.formatdate(time.time() + 30, usegmt=True)

    assert 25 < (retry_after(status_error(503, {}, {"retry-after": when})) or 0) <= 30


def test_an_error_without_a_response_asks_for_no_wait() -> None:
    """A connection error carries no headers, so the ordinary backoff applies."""
    assert None is retry_after(connection_error())


def test_a_429_or_a_stated_wait_counts_as_throttling() -> None:
    """The pacer slows down on a 429, or on any error that says when to retry; not on a 500 without one."""
    cases = [status_error(429), status_error(503, {}, {"retry-after": "1"}), status_error(500)]

    assert [True, True, False] == [is_throttled(error) for error in cases]


def judge_sending(monkeypatch: pytest.MonkeyPatch, **settings: Any) -> OpenAIJudge:
    """A live judge whose key (JB_TEST_KEY) and extra headers' values are set in the environment, as a user sets
    them; nothing is sent."""
    monkeypatch.setenv("JB_TEST_KEY", "sk-test-secret-value-1234")
    config = JudgeConfig(backend="openai", name="j", model="m", base_url="http://127.0.0.1:9/v1", **settings)  # type: ignore[arg-type]
    return OpenAIJudge(config, RubricConfig())


def test_explain_names_the_status_and_the_fix_without_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-line reason names the HTTP status and what to change, and never the key the judge sent, which
    the server echoed (the SDK's error no longer carries the request's Authorization header from openai 3.60)."""
    judge = judge_sending(monkeypatch, api_key_env="JB_TEST_KEY")
    error = status_error(401, {"error": {"message": "Incorrect API key provided: sk-test-secret-value-1234"}})

    reason = judge.explain(error)
    assert (True, True, False) == (
        reason.startswith("HTTP 401"),
        "check the key in $JB_TEST_KEY (read from judge.api_key_env=JB_TEST_KEY" in reason,
        "sk-test-secret-value-1234" in reason,
    )
    assert reason == judge.classify(error).reason


def test_explain_never_repeats_a_credential_sent_in_an_extra_header(monkeypatch: pytest.MonkeyPatch) -> None:
    """A gateway echoing a header the judge sent (judge.extra_headers, e.g. api-key) gets it redacted too."""
    secret = "azure-key-0123456789abcdef"
    monkeypatch.setenv("JB_AZURE_KEY", secret)
    judge = judge_sending(monkeypatch, api_key_env="JB_TEST_KEY", extra_headers={"api-key": "JB_AZURE_KEY"})
    request = httpx2.Request("POST", URL, headers={"api-key": secret, "content-type": "application/json"})
    response = httpx2.Response(401, json={"error": {"message": f"key {secret} is not valid"}}, request=request)
    client = openai.OpenAI(api_key="unused-key-123456789", base_url="http://127.0.0.1:9/v1", max_retries=0)

    reason = judge.explain(client._make_status_error_from_response(response))

    assert secret not in reason and "[redacted]" in reason


@pytest.mark.parametrize(
    ("error", "kind", "wait"),
    [
        pytest.param(
            status_error(429, {"error": {"message": "slow"}}, {"retry-after": "2"}), "rate_limit", 2.0, id="429"
        ),
        pytest.param(status_error(503, {}, {"retry-after-ms": "500"}), "rate_limit", 0.5, id="503-with-a-wait"),
        pytest.param(status_error(500, {"error": {"message": "boom"}}), "transient", None, id="500"),
        pytest.param(openai.APITimeoutError(request=httpx2.Request("POST", URL)), "timeout", None, id="timeout"),
        pytest.param(connection_error(), "unreachable", None, id="refused"),
        pytest.param(status_error(401, {"error": {"message": "bad key"}}), "permanent", None, id="401"),
        pytest.param(
            status_error(429, {"error": {"message": "no credit", "code": "insufficient_quota"}}),
            "permanent",
            None,
            id="quota",
        ),
        pytest.param(
            status_error(400, {"error": {"message": "context length exceeded", "code": "context_length_exceeded"}}),
            "failed",
            None,
            id="context-overflow",
        ),
        pytest.param(ValueError("ours"), "failed", None, id="not-the-sdks"),
    ],
)
def test_one_decision_per_error_names_its_kind_wait_and_reason(error: Exception, kind: str, wait: float | None) -> None:
    """What the retries, the call's error and summary.json's failed_by_kind all read: one decision per error."""
    failure = classify(error)
    assert (kind, wait) == (failure.kind, failure.wait)
    assert failure.retried == (kind in ("rate_limit", "transient", "timeout", "unreachable"))
    assert explain(error) == failure.reason and "sk-test-secret" not in failure.reason
