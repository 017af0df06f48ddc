"""The one retry policy, for every provider: transient errors retried with backoff, permanent ones not, every wait a
server announces honoured.

The policy knows no SDK: it asks the backend what an error means (`should_retry`, `is_permanent`, `is_unreachable`,
`explain`), as a provider's own transport is the only thing that can tell. A wait the server announced
(judgebias.backends.waits) is waited out by every worker; a long one (a second or more, e.g. a per-minute window)
does not spend the retry budget (judge.max_retries) as long as one call's long waits add up to at most
judge.max_wait seconds; a short one (a burst limit) counts as a retry. While no call has been answered yet
(`starting`), an unreachable endpoint is retried only briefly: nothing is listening, and it is not coming back.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from judgebias.backends.pacing import Pacer
from judgebias.backends.waits import announced_wait, format_seconds
from judgebias.config.schema import JudgeConfig
from judgebias.core.errors import CallFailed, FatalJudgeError
from judgebias.core.record import Reply

if TYPE_CHECKING:
    from tenacity import RetryCallState

    from judgebias.backends.base import Backend

STARTUP_CONNECT_ATTEMPTS = 3  # nothing listening before any reply: give up after this many quick attempts
STARTUP_CONNECT_BACKOFF = 0.5  # seconds between those attempts (at most)
LONG_WAIT = 1.0  # an announced wait this long or longer does not spend a retry (bounded by judge.max_wait)


def retry_after(error: BaseException | None) -> float | None:
    """Seconds the server asked us to wait before retrying, from any header of the error's HTTP response."""
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    return announced_wait(headers, time.time())


def call_with_retries(
    attempt: Callable[[], Reply],
    backend: Backend,
    config: JudgeConfig,
    pacer: Pacer,
    *,
    on_retry: Callable[[BaseException, float], None],
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

    def stop(state: RetryCallState) -> bool:
        error = state.outcome.exception() if state.outcome else None
        asked = retry_after(error)
        if asked is not None and asked >= LONG_WAIT:
            spent["announced"] += asked
            return spent["announced"] > config.max_wait
        spent["plain"] += 1
        if starting() and error is not None and backend.is_unreachable(error):
            return spent["plain"] >= STARTUP_CONNECT_ATTEMPTS
        return spent["plain"] > config.max_retries

    def wait(state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        asked = retry_after(error)
        if asked is not None:
            if asked <= config.max_wait:
                pacer.pause_all(asked)  # every worker waits, not just this one
            return asked + random.uniform(0, 0.05 + 0.1 * asked)  # never sooner than asked; spread the retries
        if starting() and error is not None and backend.is_unreachable(error):
            return min(STARTUP_CONNECT_BACKOFF, float(backoff(state)))
        return float(backoff(state))

    def before_sleep(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        if error is not None:
            on_retry(error, state.upcoming_sleep)

    retrying = Retrying(
        retry=retry_if_exception(backend.should_retry),
        wait=wait,
        stop=stop,
        before_sleep=before_sleep,
        reraise=True,
        sleep=sleep,
    )
    try:
        return retrying(attempts)
    except Exception as error:
        if backend.is_permanent(error):
            raise FatalJudgeError(f"{backend.describe()}: {backend.explain(error)}") from None
        asked = retry_after(error)
        if asked is not None and asked > config.max_wait:
            raise CallFailed(
                f"{backend.explain(error)}: the server asked to wait {format_seconds(asked)}, longer than "
                f"judge.max_wait={config.max_wait:g}s (raise judge.max_wait, or rerun later: replies so far are cached)"
            ) from None
        raise
