"""Every exception class of judgebias, in one place.

A UserError is a mistake the user can fix: printed as one line, never as a traceback. The others are how one call
fails or stops inside a run: each becomes an explicit error state of that call (never a crash), or ends the run
the way it says.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from judgebias.core.record import Reply


class FailureKind(StrEnum):
    """What went wrong with a call: the one classification retries, error messages and summary.json use."""

    rate_limit = "rate_limit"  # the server pushed back on the rate (a 429, or a wait it announced): retried, waited
    transient = "transient"  # a 5xx, a dropped connection, a reply that looks like a passing error: retried
    timeout = "timeout"  # no reply within judge.timeout: retried, and the server may have billed the attempt
    unreachable = "unreachable"  # nothing listens at the endpoint: retried only briefly before any reply
    permanent = "permanent"  # no call of this judge can succeed (bad key, unknown model): the judge stops
    failed = "failed"  # this call cannot succeed (a prompt over the context, a replayed failure): not retried
    not_sent = "not_sent"  # left unsent by the run itself (the spending cap, a full cache)
    batch = "batch"  # the batch (or the imported file) holds no reply for it


RETRIED = frozenset({FailureKind.rate_limit, FailureKind.transient, FailureKind.timeout, FailureKind.unreachable})


@dataclass(frozen=True)
class Failure:
    """A backend's decision about one error: its kind, the wait the server announced, and a one-line reason."""

    kind: FailureKind
    reason: str  # never holding a credential
    wait: float | None = None  # seconds the server asked to wait before another attempt

    @property
    def retried(self) -> bool:
        """Whether another attempt could succeed."""
        return self.kind in RETRIED


class UserError(Exception):
    """A mistake in the input, the config or the environment; the message says what and how to fix it."""

    run_written = False  # set when the run's summary.json was written before it (no failure record replaces it)


class SecretInConfig(UserError):
    """A config value that looks like a credential (a key typed where its env var's name belongs)."""

    def __init__(self, message: str, secret: str) -> None:
        super().__init__(message)
        self.secret = secret


EXIT_USER_ERROR = 2  # a mistake the user can fix, said in one line (run and cache commands)
EXIT_BATCH_PENDING = 75  # EX_TEMPFAIL: calls out as a batch (or an exported file), not collected; rerun to collect


class BatchPending(Exception):
    """The run's missing calls are out as a batch (submitted, or exported to a file) and not collected yet."""


class RunFilesUnwritable(UserError):
    """A file of the run folder could not be written (a full disk, a read-only folder): the run stops in one line,
    its verdicts kept as whole lines in verdicts.jsonl.part and every paid reply in the cache."""


class FatalJudgeError(UserError):
    """A permanent error from the judge endpoint (bad key, unknown model, quota): retrying cannot help."""


class CacheFull(UserError):
    """The cache could not store a paid reply (disk full, read-only, I/O error): the run sends nothing more.

    `kept` says whether the reply that failed was saved in the cache folder's outbox (stored by the next run).
    `run_written` is set once the run's files (summary with every paid reply counted) are written.
    """

    def __init__(self, message: str, *, kept: bool = True) -> None:
        super().__init__(message)
        self.kept = kept


class CacheUnavailable(UserError):
    """The shared cache (Redis) cannot be reached or was lost; the message names its host:port, never the URL."""


class CallFailed(Exception):
    """A call that still failed after its retries; the run records it as an explicit error and goes on."""

    def __init__(self, message: str, outcome: str | None = None, kind: FailureKind = FailureKind.failed) -> None:
        super().__init__(message)
        self.outcome = outcome  # the kind of the last reply when it came back without a verdict (TRANSIENT_OUTCOMES)
        self.kind = kind  # what its last attempt's error was


class TruncatedReply(Exception):
    """The reply of a sampled judge hit max_tokens before a readable verdict: another sample may fit the budget."""

    def __init__(self, reply: Reply) -> None:
        super().__init__("the reply was cut off (finish_reason=length) before a readable verdict")
        self.reply = reply


class UnusableReply(Exception):
    """A status-200 reply that looks transient (an error body, no choices, not JSON): retried as an error, not cached."""

    def __init__(self, reply: Reply) -> None:
        super().__init__(reply.reason or str(reply.outcome))
        self.reply = reply


class RecordedCallFailed(Exception):
    """The recorded call itself failed (its judgments row has `error1`/`error2`): replayed as a failed call."""


class SpendingCapReached(Exception):
    """Another attempt of a call was not sent: the spending cap could be passed by it (its worst case)."""


class NotSent(Exception):
    """A call the run did not send because the cache could not store replies any more."""


class RunStopped(Exception):
    """The run stopped while this call was being sent by another process sharing the cache."""


class Stopped(BaseException):
    """SLURM sent SIGTERM to this job (scancel, or its time limit) and no requeue is under way (a BaseException, like
    KeyboardInterrupt, so no `except Exception` in a run swallows it)."""
