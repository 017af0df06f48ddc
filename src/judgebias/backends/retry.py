"""The one retry policy, for every provider: transient errors retried with backoff, permanent ones not, every wait a
server announces honoured.

The policy knows no SDK: it asks the backend what an error means, once per error (`classify`: its kind, the wait
the server announced, the reason in one line), as a provider's own transport is the only thing that can tell. A
wait the server announced (judgebias.backends.waits) is waited out by every worker; a long one (a second or more,
e.g. a per-minute window) does not spend the retry budget (judge.max_retries) as long as one call's long waits add
up to at most judge.max_wait seconds; a short one (a burst limit) counts as a retry. While no call has been answered
yet (`starting`), an unreachable endpoint is retried only briefly: nothing is listening, and it is not coming back.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from judgebias.backends.pacing import Pacer
from judgebias.backends.waits import format_seconds
from judgebias.config.schema import EndpointSettings
from judgebias.core.errors import CallFailed, Failure, FailureKind, FatalJudgeError
from judgebias.core.record import Reply

if TYPE_CHECKING:
    from tenacity import RetryCallState

    from judgebias.backends.base import Backend

STARTUP_CONNECT_ATTEMPTS = 3  # nothing listening before any reply: give up after this many quick attempts
STARTUP_CONNECT_BACKOFF = 0.5  # seconds between those attempts (at most)
LONG_WAIT = 1.0  # an announced wait this long or longer does not spend a retry (bounded by judge.max_wait)


def call_with_retries(
    attempt: Callable[[], Reply],
    backend: Backend,
    config: EndpointSettings,
    pacer: Pacer,
    *,
    on_retry: Callable[[BaseException, Failure, float], None],
    sleep: Callable[[float], None] = time.sleep,
    starting: Callable[[], bool] = lambda: False,
) -> Reply:
    """`attempt()` until it returns, the backend says an error is not worth another try, or the budget is spent."""
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

    from tenacity import Retrying, retry_if_exception, wait_random_exponential

    backoff = wait_random_exponential(multiplier=config.retry_backoff, max=config.retry_backoff_max)
    spent = {"plain": 0, "announced": 0.0}  # failures that spend the retry budget; seconds of announced waits
    decided: dict[int, tuple[BaseException, Failure]] = {}  # each error classified once (the error kept alive)

    def decision(error: BaseException) -> Failure:
        known = decided.get(id(error))
        if known is None or known[0] is not error:
            known = decided[id(error)] = (error, backend.classify(error))
        return known[1]

    def last(state: RetryCallState) -> Failure:
        error = state.outcome.exception() if state.outcome else None
        assert error is not None, "tenacity asks only after a failed attempt"
        return decision(error)

    def stop(state: RetryCallState) -> bool:
        failure = last(state)
        if failure.wait is not None and failure.wait >= LONG_WAIT:
            spent["announced"] += failure.wait
            return spent["announced"] > config.max_wait
        spent["plain"] += 1
        if starting() and failure.kind == FailureKind.unreachable:
            return spent["plain"] >= STARTUP_CONNECT_ATTEMPTS
        return spent["plain"] > config.max_retries

    def wait(state: RetryCallState) -> float:
        failure = last(state)
        if failure.wait is not None:
            if failure.wait <= config.max_wait:
                pacer.pause_all(failure.wait)  # every worker waits, not just this one
            return failure.wait + random.uniform(0, 0.05 + 0.1 * failure.wait)  # never sooner; spread the retries
        if starting() and failure.kind == FailureKind.unreachable:
            return min(STARTUP_CONNECT_BACKOFF, float(backoff(state)))
        return float(backoff(state))

    def before_sleep(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        if error is not None:
            on_retry(error, decision(error), state.upcoming_sleep)

    retrying = Retrying(
        retry=retry_if_exception(lambda error: decision(error).retried),
        wait=wait,
        stop=stop,
        before_sleep=before_sleep,
        reraise=True,
        sleep=sleep,
    )
    try:
        return retrying(attempts)
    except Exception as error:
        failure = decision(error)
        if failure.kind == FailureKind.permanent:
            raise FatalJudgeError(f"{backend.describe()}: {failure.reason}") from None
        if failure.wait is not None and failure.wait > config.max_wait:
            raise CallFailed(
                f"{failure.reason}: the server asked to wait {format_seconds(failure.wait)}, longer than "
                f"judge.max_wait={config.max_wait:g}s (raise judge.max_wait, or rerun later: replies so far are cached)",
                kind=failure.kind,
            ) from None
        raise
