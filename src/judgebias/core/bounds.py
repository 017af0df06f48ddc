"""The bounds of every number a command takes in, from the command line or from a file another run wrote.

One table, so `run`, `compare`, `check` and the readers of summary.json and verdicts.jsonl refuse the same values
in the same words: a negative seed (numpy refuses it with a traceback), a resample count that would run for hours,
a length of 10**400 characters (no column holds it). Pure: numbers in, a reason out.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Bound:
    """The whole numbers a setting may take, what they are, and what to use instead."""

    low: int
    high: int
    what: str  # "a bootstrap seed": said in the reason
    hint: str = ""  # the usual value, e.g. "(default 0)"

    def problem(self, value: object) -> str | None:
        """Why `value` is not one of these numbers (a whole number from low to high), or None."""
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{shown(value)} is not {self.what} (a whole number from {self.low:,} to {self.high:,})"
        if not self.low <= value <= self.high:
            return f"{shown(value)} is not {self.what}: it must be from {self.low:,} to {self.high:,}" + (
                f" {self.hint}" if self.hint else ""
            )
        return None


SEED = Bound(0, 2**63 - 1, "a bootstrap seed", "(default 0)")
RESAMPLES = Bound(
    0,
    100_000,
    "a number of bootstrap resamples",
    "(1000, the default, or 10000 for a paper: beyond 100,000 no reported digit changes while it takes hours)",
)
GATE_RESAMPLES = Bound(
    1000,
    RESAMPLES.high,
    "a number of resamples for a gate",
    "(a gate's interval from fewer than 1000 draws would pass or fail by chance)",
)
LENGTH = Bound(0, 2**31 - 1, "a length (characters, words or tokens)")  # what a row's 4-byte columns hold
INTEGER = Bound(-(2**63), 2**63 - 1, "a count judgebias writes")  # any integer read from a file: a 64-bit one
LISTED = Bound(0, 1_000_000, "a number of items to list")


def shown(value: object) -> str:
    """A value as an error shows it: short, however many digits it has."""
    text = repr(value) if not isinstance(value, int) or isinstance(value, bool) else _digits(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _digits(value: int) -> str:
    """An integer's text, or its digit count when it is longer than Python converts without limit."""
    try:
        return str(value)
    except ValueError:  # more than 4300 digits
        return f"an integer of more than {4300:,} digits"
