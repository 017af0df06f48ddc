"""Errors a user can fix: they are printed as one line, never as a traceback."""


class UserError(Exception):
    """A mistake in the input, the config or the environment; the message says what and how to fix it."""


class SecretInConfig(UserError):
    """A config value that looks like a credential (a key typed where its env var's name belongs)."""

    def __init__(self, message: str, secret: str) -> None:
        super().__init__(message)
        self.secret = secret


EXIT_USER_ERROR = 2  # a mistake the user can fix, said in one line (run and cache commands)
EXIT_BATCH_PENDING = 75  # EX_TEMPFAIL: calls out as a batch (or an exported file), not collected; rerun to collect


class BatchPending(Exception):
    """The run's missing calls are out as a batch (submitted, or exported to a file) and not collected yet."""


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
        self.run_written = False


class CacheUnavailable(UserError):
    """The shared cache (Redis) cannot be reached or was lost; the message names its host:port, never the URL."""
