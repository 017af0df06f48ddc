"""Per-item results: what one judge decided about one item, as written to verdicts.jsonl.

Pure data. Metrics read these; the runner builds them; nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class CallResult:
    """One judge call in one order, after parsing."""

    label: str  # positional: "A" | "B" | "tie" | "invalid" | "error"
    raw: str | None  # the reply text (None when the call failed)
    cached: bool  # answered from the disk cache, no request sent
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str | None = None  # the model id the server reported
    error: str | None = None  # why the call failed after its retries ("error" label only)
    probs: dict[str, float] | None = None  # positional label -> probability, when logprobs were returned
    tag_first: str | None = None  # the label shown for the first answer (recorded for random tags)
    tag_second: str | None = None


@dataclass(frozen=True, slots=True)
class ItemResult:
    """One item judged twice (or once, for one-order recordings): the row of verdicts.jsonl."""

    id: str
    verdict: str  # "1" | "2" | "tie" | "error"
    call1: str  # positional reply with a shown first
    call2: str | None  # positional reply with b shown first, NOT translated; None when that order does not exist
    consistent: bool | None  # both orders agree after translation; None when not measurable
    human: str | None = None  # "1" | "2" | "tie" | None
    human_votes: tuple[str, ...] = ()  # individual annotator votes in the item frame
    model_a: str | None = None
    model_b: str | None = None
    chars_a: int = 0
    chars_b: int = 0
    words_a: int = 0
    words_b: int = 0
    soft: float | None = None  # P(a preferred), averaged over both orders, from logprobs
    calls: tuple[CallResult, ...] = field(default=(), compare=False)  # the calls behind call1/call2
