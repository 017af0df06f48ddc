"""Errors a user can fix: they are printed as one line, never as a traceback."""


class UserError(Exception):
    """A mistake in the input, the config or the environment; the message says what and how to fix it."""


class FatalJudgeError(UserError):
    """A permanent error from the judge endpoint (bad key, unknown model, quota): retrying cannot help."""
