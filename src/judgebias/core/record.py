"""Calls and results: one judge call (Request, Reply), what one judge decided about one item (CallResult,
ItemResult), whose verdict line other tools read (core.verdict_lines; summary.json is core.summary).

Pure data. Backends answer Requests, the runner builds results, metrics read them; nothing here does I/O.
"""

from __future__ import annotations

import math
import operator
import re
import types
import typing
from dataclasses import dataclass, field, fields
from typing import Any, Literal, NamedTuple

from judgebias.core.frozen import replacer, slot_filler
from judgebias.core.item import Item
from judgebias.core.prompt import Shown
from judgebias.core.style import Style
from judgebias.core.verdict import Outcome, Positional


def key_input(request: dict[str, Any], sample: int) -> dict[str, Any]:
    """What one ask's cache key is computed from: the request, with the sample index from the second ask on
    (judge.samples), so the single-sample key (and every cache filled before samples existed) stays what it was."""
    return request if sample == 0 else {**request, "sample": sample}


class Request(NamedTuple):
    """One judge call: the item, what is shown in which order, and the rendered chat messages.

    A named tuple: immutable, and made two million times by a free judge's run of a million items (a frozen
    dataclass costs three times as much to make)."""

    item: Item
    view: Shown
    messages: list[dict[str, str]]
    sample: int = 0  # which of the judge.samples asks of this order (0 = the single-sample call)


# What a reply that carries no verdict was (Reply.outcome). Deterministic ones are cached as such (asking the same
# request again gives the same answer; `cache.reask` asks them again); transient-looking ones are retried as errors
# and never cached.
ReplyOutcome = Literal["refusal", "content_filter", "tool_calls", "truncated", "error_body", "no_choices", "not_json"]
DETERMINISTIC_OUTCOMES: tuple[ReplyOutcome, ...] = ("refusal", "content_filter", "tool_calls", "truncated")
TRANSIENT_OUTCOMES: tuple[ReplyOutcome, ...] = ("error_body", "no_choices", "not_json")
NO_VERDICT_OUTCOMES: tuple[ReplyOutcome, ...] = DETERMINISTIC_OUTCOMES + TRANSIENT_OUTCOMES


@dataclass(frozen=True)
class Reply:
    """What came back from one call: the reply, its token counts, and who answered it (as the server says).

    The one declaration of a stored reply: `to_json` is the cached form, `from_json` reads it back (a reply cached
    before a field existed reads as that field's default).
    """

    text: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str | None = None  # the model the reply names (a gateway may rewrite it to its alias)
    finish_reason: str | None = None
    probs: dict[str, float] | None = None  # label text -> probability, when log-probabilities were returned
    outcome: ReplyOutcome | None = None  # a reply that carries no verdict (NO_VERDICT_OUTCOMES); None for a reply
    reason: str | None = None  # why it carries no verdict, in words (a refusal's own text is kept in `text`)
    system_fingerprint: str | None = None  # the backend configuration the provider reports
    provider: str | None = None  # the upstream provider a router names in the body (OpenRouter's `provider`)
    deployment: str | None = None  # the deployment's model a gateway names (LiteLLM: x-litellm-model-name)
    deployment_id: str | None = None  # LiteLLM: x-litellm-model-id
    api_base: str | None = None  # LiteLLM: x-litellm-model-api-base
    fallbacks: int = 0  # fallbacks the gateway reports for this reply (LiteLLM: x-litellm-attempted-fallbacks)
    gateway_retries: int = 0  # upstream retries the gateway reports (LiteLLM: x-litellm-attempted-retries)
    reasoning_tokens: int = 0  # hidden reasoning tokens the reply reports (usage.completion_tokens_details)
    gateway_cache: str | None = None  # the gateway that served this reply from its own response cache (litellm, ...)
    prompt_tokens_cached: int = 0  # of prompt_tokens, those the server's prompt cache served (billed at its rate)

    def to_json(self) -> dict[str, Any]:
        """The cached form (JSON text in the cache, never pickle); origin fields only when known."""
        return {name: getattr(self, name) for name in _FIELD_ORDER if name not in _OPTIONAL or getattr(self, name)}

    @staticmethod
    def from_json(value: dict[str, Any]) -> Reply:
        """Rebuild a cached reply: counts read as ints (0 when absent), every other field as stored (or None)."""
        # Only the fields the value holds (a hit holds a few): an absent one takes its default, 0 or None.
        stored: dict[str, Any] = {
            name: int(field or 0) if name in _COUNT_FIELDS else field
            for name, field in value.items()
            if name in _FIELD_NAMES
        }
        return Reply(stored.pop("text", None), **stored)

    @property
    def answered_by(self) -> str | None:
        """Who answered: the deployment a gateway names, else the model the reply names (with a router's provider);
        for a reply a gateway served from its own cache, no deployment: the one it names is this request's pick,
        not the one that wrote the reply."""
        if self.gateway_cache:
            return GATEWAY_CACHED
        model = self.deployment or self.model
        if model is not None and self.provider:
            return f"{model} via {self.provider}"
        return model


GATEWAY_CACHED = "unknown (gateway cache)"  # who answered a reply a gateway served from its response cache


# Stored only when set (a cached reply of an older release has none of them): outcome, reason and the origin.
REPLY_OPTIONAL_FIELDS: tuple[str, ...] = (
    "outcome",
    "reason",
    "system_fingerprint",
    "provider",
    "deployment",
    "deployment_id",
    "api_base",
    "fallbacks",
    "gateway_retries",
    "reasoning_tokens",
    "gateway_cache",
    "prompt_tokens_cached",
)


# Reply's fields, in declaration order: to_json and from_json follow them, so a field added to Reply is stored and
# read back without another edit.
_FIELD_ORDER: tuple[str, ...] = tuple(spec.name for spec in fields(Reply))
_FIELD_NAMES = frozenset(_FIELD_ORDER)
_COUNT_FIELDS = frozenset(spec.name for spec in fields(Reply) if spec.type == "int")
_OPTIONAL = frozenset(REPLY_OPTIONAL_FIELDS)
# from_json leaves an absent field to its default: every field but `text` must default to 0 (a count) or None.
assert all(spec.default == (0 if spec.type == "int" else None) for spec in fields(Reply) if spec.name != "text"), (
    "a Reply field's default is neither 0 nor None: from_json must then set it"
)


# What a stored reply's values may be, unless a field of Reply says otherwise in its metadata ({"range": (lo, hi)}):
# ints are counts, floats probabilities, text at most MAX_REPLY_TEXT characters.
COUNT_RANGE = (0, 10**9)
PROBABILITY_RANGE = (0.0, 1.0)
MAX_REPLY_TEXT = 16 * 1024 * 1024
STORED_AT = (
    "stored_at"  # stored beside the reply: the UTC time it was stored, ISO 8601 to the second (never in the key)
)
STORED_AT_PATTERN = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")
REPLY_EXTRAS = frozenset({"request", "bundle", STORED_AT})  # beside the reply: its key's input, its origin, its time


def reply_problem(value: dict[str, Any]) -> str | None:
    """Why `value` is not a stored Reply (unknown field, wrong type, out of bounds), or None when it is one.

    Derived from Reply's own fields and annotations, so a field added to Reply is checked without another edit.
    """
    declared = {spec.name: spec for spec in fields(Reply)}
    hints = typing.get_type_hints(Reply)
    for name in value:
        if name not in declared and name not in REPLY_EXTRAS:
            return f"unknown reply field {name!r}"
    if STORED_AT in value and not (isinstance(value[STORED_AT], str) and STORED_AT_PATTERN.fullmatch(value[STORED_AT])):
        return f"{STORED_AT!r} is not a UTC time (YYYY-MM-DDTHH:MM:SSZ)"
    for name, spec in declared.items():
        if name not in value:
            if spec.default is spec.default_factory:  # dataclasses.MISSING for both: a required field
                return f"reply field {name!r} is missing"
            continue
        problem = _type_problem(value[name], hints[name], spec.metadata.get("range"))
        if problem:
            return f"reply field {name!r} {problem}"
    return None


def _type_problem(value: Any, hint: Any, bounds: tuple[float, float] | None) -> str | None:
    """Why `value` does not fit the annotation `hint` (str, int, float, None, unions, dict[K, V], list[T])."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(hint)
        problems = [_type_problem(value, option, bounds) for option in options]
        return None if None in problems else next(p for p in problems if p)
    if hint is type(None):
        return None if value is None else "is not null"
    if origin is Literal:
        allowed = typing.get_args(hint)
        return None if value in allowed else f"is not one of {', '.join(map(str, allowed))}"
    if origin is dict:
        key_hint, value_hint = typing.get_args(hint)
        if not isinstance(value, dict):
            return "is not an object"
        for inner_key, inner in value.items():
            problem = _type_problem(inner_key, key_hint, None) or _type_problem(inner, value_hint, bounds)
            if problem:
                return f"[{str(inner_key)[:40]!r}] {problem}"
        return None
    if origin in (list, tuple):
        (item_hint, *_) = typing.get_args(hint)
        if not isinstance(value, list):
            return "is not a list"
        return next((p for p in (_type_problem(inner, item_hint, bounds) for inner in value) if p), None)
    if hint is str:
        if not isinstance(value, str):
            return "is not text"
        return None if len(value) <= MAX_REPLY_TEXT else f"is longer than {MAX_REPLY_TEXT} characters"
    if hint is bool:
        return None if isinstance(value, bool) else "is not true or false"
    if hint is int:
        low, high = bounds or COUNT_RANGE
        if not isinstance(value, int) or isinstance(value, bool):
            return "is not an integer"
        return None if low <= value <= high else f"{value} is outside [{low}, {high}]"
    if hint is float:
        low, high = bounds or PROBABILITY_RANGE
        if not isinstance(value, int | float) or isinstance(value, bool):
            return "is not a number"
        return None if math.isfinite(value) and low <= value <= high else f"{value} is outside [{low}, {high}]"
    return f"has a type ({hint}) the reply check does not know"


@dataclass(frozen=True, slots=True)
class CallResult:
    """One judge call in one order, after parsing."""

    label: Positional
    raw: str | None  # the reply text (None when the call failed)
    cached: bool  # answered from the disk cache, no request sent
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str | None = None  # the model id the server reported
    error: str | None = None  # why the call failed after its retries ("error" label only)
    failure: str | None = None  # what kind of failure that was (core.errors.FailureKind), with `error`
    probs: dict[str, float] | None = None  # positional label -> probability, when logprobs were returned
    tag_first: str | None = None  # the label shown for the first answer (recorded for random tags)
    tag_second: str | None = None
    offline: bool = False  # answered by a judge that sends no request (scripted, replay)
    batched: bool = False  # answered by a batch collected in this run (priced at judge.batch_discount)
    outcome: str | None = (
        None  # a reply without a verdict (NO_VERDICT_OUTCOMES), or the kind of a failed call's last reply
    )
    reason: str | None = None  # why the reply carries no verdict
    answered_by: str | None = None  # Reply.answered_by: the deployment or model that answered
    origin: dict[str, Any] | None = None  # the reply's origin fields as the server reported them (verdicts.jsonl)
    fallbacks: int = 0  # fallbacks the gateway reported for this call
    gateway_retries: int = 0  # upstream retries the gateway reported for this call
    reasoning_tokens: int = 0  # hidden reasoning tokens the reply reported (proof of a reasoning model)
    sample: int = 0  # which ask of its order (judge.samples); 0 is the call behind call1/call2
    prompt_tokens_cached: int = 0  # of prompt_tokens, those the server's prompt cache served

    @property
    def labels(self) -> list[str | None] | None:
        """The labels shown for the first and second answer, when random tags were used (verdicts.jsonl `labels`)."""
        return [self.tag_first, self.tag_second] if self.tag_first else None

    def without_reply(self) -> CallResult:
        """This call without its reply text (written out already): what the metrics keep in memory.

        Equal slim calls are one object (they are frozen): an offline or cached run's calls differ in a few values
        only, and a million items kept two call objects each. Copied by a function made from the class's fields
        (core.frozen.replacer): `dataclasses.replace` introspects the class on every call, twice the cost.
        """
        key = None if self.probs is not None or self.origin is not None else _slim_key(self)  # dicts: no key
        if key is not None and (shared := _SLIM_CALLS.get(key)) is not None:
            return shared
        slim = _without_raw(self, None)
        if key is not None and len(_SLIM_CALLS) < _SLIM_CALLS_KEPT:
            _SLIM_CALLS[key] = slim
        return slim


_without_raw = replacer(CallResult, "raw")
# Every field of a slim call (the reply text aside), which tells two slim calls apart.
_slim_key = operator.attrgetter(*(spec.name for spec in fields(CallResult) if spec.name != "raw"))


# The slim calls shared so far (see CallResult.without_reply); bounded, since a live run's token counts vary.
_SLIM_CALLS: dict[tuple[Any, ...], CallResult] = {}
_SLIM_CALLS_KEPT = 4096


@dataclass(frozen=True, slots=True, kw_only=True)
class ItemKind:
    """What an item's row shares with the rows of many others: its verdict and calls, its human label and votes, the
    models compared, the answers' formatting. figures/rows.py keeps one of each a run has and a number per row, so a
    field added here is kept, and read back, with no other edit there."""

    verdict: Outcome
    call1: Positional  # the reply with a shown first
    call2: Positional | None  # with b shown first, NOT translated; None when that order does not exist
    consistent: bool | None  # both orders agree after translation; None when not measurable
    human: str | None = None  # "1" | "2" | "tie" | None
    human_votes: tuple[str, ...] = ()  # individual annotator votes in the item frame
    human_voters: tuple[str, ...] = ()  # who gave each vote (empty: anonymous votes)
    model_a: str | None = None
    model_b: str | None = None
    style_a: Style | None = None  # markdown features of a as written (None: not recorded)
    style_b: Style | None = None
    calls: tuple[CallResult, ...] = field(default=(), compare=False)  # the calls behind call1/call2 (kept last)


@dataclass(frozen=True, slots=True, kw_only=True)
class ItemResult(ItemKind):
    """One item judged twice (or once, for one-order recordings): the row of verdicts.jsonl. Its own fields, past
    its kind's, are each row's alone (figures/rows.py keeps them as columns)."""

    id: str
    chars_a: int = 0
    chars_b: int = 0
    words_a: int = 0
    words_b: int = 0
    tokens_a: int | None = None  # lengths in tokens of data.normalize.tokenizer (None: the tokenizer is words)
    tokens_b: int | None = None
    soft: float | None = None  # P(a preferred), averaged over both orders, from logprobs

    def without_replies(self) -> ItemResult:
        """The row with its calls' reply texts dropped (written out already): what the metrics keep in memory."""
        return _with_calls(self, slim_calls(self.calls))


# ItemResult(...) without the frozen class's per-field object.__setattr__ calls (every field by keyword): a row is made
# for every item and judge (core.frozen).
new_item_result = slot_filler(ItemResult)
_with_calls = replacer(ItemResult, "calls")


# The tuples of slim calls shared so far, by the identities of the calls they hold (which they keep alive, so an
# identity is never reused while its entry exists); bounded like _SLIM_CALLS.
_SLIM_TUPLES: dict[tuple[int, ...], tuple[CallResult, ...]] = {}


# The slim tuple of each tuple of an offline judge's calls, by the identities of those calls (which the entry keeps
# alive, with replies a judge holds anyway): a scripted judge's calls are a few shared objects.
_SLIM_OF_OFFLINE: dict[tuple[int, ...], tuple[tuple[CallResult, ...], tuple[CallResult, ...]]] = {}


def slim_calls(calls: tuple[CallResult, ...]) -> tuple[CallResult, ...]:
    """An item's calls without their replies, as one tuple shared by every row whose slim calls are the same
    objects (an offline or cached run has a few such pairs: a million rows kept a tuple each)."""
    offline = all(call.offline for call in calls)
    if offline:
        known = _SLIM_OF_OFFLINE.get(tuple(map(id, calls)))
        if known is not None:
            return known[1]
    slim = _slim_tuple(calls)
    if offline and len(_SLIM_OF_OFFLINE) < _SLIM_CALLS_KEPT:
        _SLIM_OF_OFFLINE[tuple(map(id, calls))] = (calls, slim)
    return slim


def _slim_tuple(calls: tuple[CallResult, ...]) -> tuple[CallResult, ...]:
    slim = tuple(call.without_reply() for call in calls)
    key = tuple(map(id, slim))
    shared = _SLIM_TUPLES.get(key)
    if shared is not None:
        return shared
    if len(_SLIM_TUPLES) < _SLIM_CALLS_KEPT:
        _SLIM_TUPLES[key] = slim
    return slim
