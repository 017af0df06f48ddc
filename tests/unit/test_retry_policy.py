"""The retry policy is the provider's to inform: it asks the backend what an error means, and knows no SDK."""

from __future__ import annotations

import pytest

from judgebias.backends.base import Backend
from judgebias.backends.pacing import Pacer
from judgebias.backends.retry import call_with_retries
from judgebias.config.schema import JudgeConfig
from judgebias.core.errors import Failure, FailureKind, FatalJudgeError
from judgebias.core.record import Reply, Request

CONFIG = JudgeConfig(backend="openai", name="p", model="m", max_retries=3, retry_backoff=0.0, retry_backoff_max=0.0)  # type: ignore[arg-type]


class Busy(Exception):
    """This provider's own transient error."""


class Revoked(Exception):
    """This provider's own permanent error."""


class Provider(Backend):
    """A provider of its own, not the OpenAI one: it classifies its own errors for the shared policy."""

    def __init__(self, failures: list[Exception]) -> None:
        self.failures = failures
        self.attempts = 0

    def complete(self, request: Request) -> Reply:
        raise NotImplementedError  # the policy under test calls `attempt`, never this

    def attempt(self) -> Reply:
        """One request: the next scripted failure, or a reply once they are used up."""
        self.attempts += 1
        if self.failures:
            raise self.failures.pop(0)
        return Reply(text="A")

    def classify(self, error: BaseException) -> Failure:
        kind = (
            FailureKind.transient
            if isinstance(error, Busy)
            else FailureKind.permanent
            if isinstance(error, Revoked)
            else FailureKind.failed
        )
        return Failure(kind, f"provider said {error}")

    def describe(self) -> str:
        return "judge 'p'"


def run(provider: Provider) -> Reply:
    """The policy around the provider's attempts, with no real sleeping."""
    retried: list[float] = []
    return call_with_retries(
        provider.attempt,
        provider,
        CONFIG,
        Pacer(None, None),
        on_retry=lambda e, f, s: retried.append(s),
        sleep=lambda s: None,
    )


def test_errors_the_provider_calls_transient_are_retried_until_a_reply() -> None:
    """Two of the provider's transient errors, then a reply: three attempts and the reply."""
    provider = Provider([Busy("try later"), Busy("try later")])
    assert "A" == run(provider).text
    assert 3 == provider.attempts


def test_the_retry_budget_is_the_judges() -> None:
    """A provider that stays busy is tried 1 + judge.max_retries times, then its error is raised."""
    provider = Provider([Busy(str(i)) for i in range(10)])
    with pytest.raises(Busy):
        run(provider)
    assert 1 + CONFIG.max_retries == provider.attempts


def test_an_error_the_provider_does_not_retry_is_raised_at_once() -> None:
    """An error the provider does not call worth another attempt is not retried."""
    provider = Provider([ValueError("bad reply")])
    with pytest.raises(ValueError):
        run(provider)
    assert 1 == provider.attempts


def test_a_permanent_error_stops_the_judge_with_the_providers_explanation() -> None:
    """A permanent error becomes FatalJudgeError naming the judge, in the provider's own words."""
    provider = Provider([Revoked("key revoked")])
    with pytest.raises(FatalJudgeError, match=r"^judge 'p': provider said key revoked$"):
        run(provider)
