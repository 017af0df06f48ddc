"""Calls and results: one judge call (Request, Reply), what one judge decided about one item (CallResult,
ItemResult), and the JSON contracts other tools read (VerdictLine, Summary).

Pure data. Backends answer Requests, the runner builds results, metrics read them; nothing here does I/O.
"""

from __future__ import annotations

import math
import re
import types
import typing
from dataclasses import dataclass, field, fields
from typing import Any, Literal, TypedDict

from judgebias.core.item import Item
from judgebias.core.prompt import Shown
from judgebias.core.style import Style
from judgebias.core.verdict import Outcome, Positional, Status


def key_input(request: dict[str, Any], sample: int) -> dict[str, Any]:
    """What one ask's cache key is computed from: the request, with the sample index from the second ask on
    (judge.samples), so the single-sample key (and every cache filled before samples existed) stays what it was."""
    return request if sample == 0 else {**request, "sample": sample}


@dataclass(frozen=True)
class Request:
    """One judge call: the item, what is shown in which order, and the rendered chat messages."""

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

    @property
    def labels(self) -> list[str | None] | None:
        """The labels shown for the first and second answer, when random tags were used (verdicts.jsonl `labels`)."""
        return [self.tag_first, self.tag_second] if self.tag_first else None

    def without_reply(self) -> CallResult:
        """This call without its reply text (written out already): what the metrics keep in memory.

        Built field by field: `dataclasses.replace` introspects the class on every call, twice the cost (a field
        added to the class must be added here too: tests/unit/test_record.py fails until it is).
        """
        return CallResult(
            label=self.label,
            raw=None,
            cached=self.cached,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            model=self.model,
            error=self.error,
            failure=self.failure,
            probs=self.probs,
            tag_first=self.tag_first,
            tag_second=self.tag_second,
            offline=self.offline,
            batched=self.batched,
            outcome=self.outcome,
            reason=self.reason,
            answered_by=self.answered_by,
            origin=self.origin,
            fallbacks=self.fallbacks,
            gateway_retries=self.gateway_retries,
            reasoning_tokens=self.reasoning_tokens,
            sample=self.sample,
        )


@dataclass(frozen=True, slots=True)
class ItemResult:
    """One item judged twice (or once, for one-order recordings): the row of verdicts.jsonl."""

    id: str
    verdict: Outcome
    call1: Positional  # the reply with a shown first
    call2: Positional | None  # with b shown first, NOT translated; None when that order does not exist
    consistent: bool | None  # both orders agree after translation; None when not measurable
    human: str | None = None  # "1" | "2" | "tie" | None
    human_votes: tuple[str, ...] = ()  # individual annotator votes in the item frame
    human_voters: tuple[str, ...] = ()  # who gave each vote (empty: anonymous votes)
    model_a: str | None = None
    model_b: str | None = None
    chars_a: int = 0
    chars_b: int = 0
    words_a: int = 0
    words_b: int = 0
    tokens_a: int | None = None  # lengths in tokens of data.normalize.tokenizer (None: the tokenizer is words)
    tokens_b: int | None = None
    soft: float | None = None  # P(a preferred), averaged over both orders, from logprobs
    style_a: Style | None = None  # markdown features of a as written (None: not recorded)
    style_b: Style | None = None
    calls: tuple[CallResult, ...] = field(default=(), compare=False)  # the calls behind call1/call2

    def without_replies(self) -> ItemResult:
        """The row with its calls' reply texts dropped (written out already): what the metrics keep in memory."""
        return ItemResult(
            id=self.id,
            verdict=self.verdict,
            call1=self.call1,
            call2=self.call2,
            consistent=self.consistent,
            human=self.human,
            human_votes=self.human_votes,
            human_voters=self.human_voters,
            model_a=self.model_a,
            model_b=self.model_b,
            chars_a=self.chars_a,
            chars_b=self.chars_b,
            words_a=self.words_a,
            words_b=self.words_b,
            tokens_a=self.tokens_a,
            tokens_b=self.tokens_b,
            soft=self.soft,
            style_a=self.style_a,
            style_b=self.style_b,
            calls=tuple(call.without_reply() for call in self.calls),
        )


# JSON contracts. Keys and their meaning are fixed (other tools read them): add keys, never rename them.
# total=False: a key is absent when its figure does not apply (no human labels, one order, no ensemble, ...).

Interval = list[float | None]  # [low, high] of a bootstrap interval; [None, None] when not measurable


class CallFields(TypedDict, total=False):
    """One judge's calls on one item, as a verdicts.jsonl line (or an ensemble line's `judges` entry) holds them."""

    call1: Positional  # the reply with a shown first
    call2: Positional | None  # with b shown first, NOT translated; null when that order does not exist
    consistent: bool | None
    pick1: str | None  # call1 read in the item's frame: "a" | "b" | "tie" | "invalid" | "error"
    pick2: str | None  # call2 read in the item's frame (translated back): "a" | "b" | ...; null when absent
    raw1: str | None
    raw2: str | None
    cached1: bool | None
    cached2: bool | None
    error1: str
    error2: str
    failure1: str  # the kind of that failure: rate_limit | transient | timeout | unreachable | permanent | failed | ...
    failure2: str
    probs1: dict[str, float]
    probs2: dict[str, float]
    labels1: list[str | None]  # the random tags shown (rubric.labels=tags)
    labels2: list[str | None]
    outcome1: str  # a reply without a verdict: refusal | content_filter | tool_calls | truncated | error_body | ...
    outcome2: str
    reason1: str  # why that reply carries no verdict
    reason2: str
    model1: str  # the model the reply names
    model2: str
    answered_by1: str  # the deployment (or model) that answered
    answered_by2: str
    origin1: dict[str, Any]  # what the server reported of the reply's origin: deployment, provider, fingerprint, ...
    origin2: dict[str, Any]
    verdict: Outcome  # in an ensemble line's `judges` entries: that judge's own verdict


class VerdictLine(CallFields, total=False):
    """One line of verdicts.jsonl: one item's verdict and the calls behind it."""

    id: str  # (`verdict`, "1" | "2" | "tie" | "error", and the call fields come from CallFields)
    winner: str  # the verdict read in the item's frame: "a" | "b" | "tie" | "error"
    human: str
    human_votes: list[str]
    human_voters: list[str]
    model_a: str | None
    model_b: str | None
    chars_a: int
    chars_b: int
    words_a: int
    words_b: int
    tokens_a: int  # lengths in tokens of data.normalize.tokenizer (absent when it is words)
    tokens_b: int
    style_a: dict[str, int]  # markdown feature counts of a as written (style.FEATURES)
    style_b: dict[str, int]
    soft: float
    samples: list[dict[str, Any]]  # judge.samples > 1: every ask (order, sample, call, pick, raw, cached)
    majority: str  # judge.samples > 1: the verdict of each order's majority of samples ("1" | "2" | "tie" | "error")
    judges: dict[str, CallFields]  # ensemble runs: every judge's calls and verdict
    cluster: Any  # the item's value of bootstrap.cluster's field, when the run's intervals resampled clusters


class SelfPreference(TypedDict):
    """How often the judge prefers answers of its own model family, where one answer is its family's."""

    family: str
    n: int
    own_win_rate: float | None


class Agreement(TypedDict, total=False):
    """How often two sources of labels agree, with ties and on decisive labels only, with intervals."""

    annotator: str  # per_annotator entries: whose labels
    method: str  # ceiling: "cohen_kappa" (two named annotators) or "krippendorff_alpha"
    agreement: float | None  # with ties: a tie matches a tie
    agreement_ci: list[float] | None
    agreement_n: int
    decisive_agreement: float | None  # decisive human labels only (a judge tie there is a miss)
    decisive_agreement_ci: list[float] | None
    decisive_agreement_n: int
    ties_left_out: int  # labelled items left out of decisive_agreement because the label is a tie
    split_left_out: int  # majority: items whose votes have no strict plurality
    kappa: float | None  # chance-corrected (Cohen's kappa, or Krippendorff's alpha for the ceiling)
    kappa_ci: list[float] | None
    kappa_n: int


class Calibration(TypedDict):
    """The judge against people: the human ceiling, the majority, each annotator (from human_votes)."""

    annotators: list[str]
    labels_n: int
    labelled_items_n: int
    ceiling: Agreement
    majority: Agreement
    per_annotator: list[Agreement]


# summary.json's schema_version. The change rule (docs/outputs.md): a field added leaves it as it is (readers
# ignore fields they do not know); a field renamed, removed, or read differently (another unit, another meaning)
# raises it by one, and the change is listed in docs/outputs.md.
SUMMARY_SCHEMA_VERSION = 1


class Summary(TypedDict, total=False):
    """summary.json: the run's identity, every figure (with `ci` intervals), cost and notes."""

    # identity
    status: Status  # docs/outputs.md
    schema_version: int  # SUMMARY_SCHEMA_VERSION of the writer
    error: str  # a failed job's reason
    judge: str | None  # the judge's name, or "ensemble"
    rubric: str | None
    data: str | None
    ensemble: list[str]
    # counts
    n_items: int
    n_scored: int
    orders: int
    scored_note: str
    n_errors: int
    errors_call1: int
    errors_call2: int
    n_invalid: int  # verdict-shaped replies the parser could not read (not the outcomes below)
    n_no_verdict: int  # replies that carry no verdict at all (refusals, filters, truncated, ...): `outcomes`
    outcomes: dict[str, int]  # outcome -> calls (cached ones, and failed calls' last reply kinds, included)
    no_verdict_share: float | None  # (n_invalid + n_no_verdict) / calls answered
    unreadable_note: str
    calls_total: int
    calls_cached: int
    calls_live: int  # requests answered by an endpoint in this run (not cached, not failed)
    calls_offline: int  # calls answered by a judge that sends no request (scripted, replay)
    calls_batched: int  # of calls_live: answered by a batch collected in this run
    batches: list[dict[str, Any]]  # each batch this run submitted or collected: id, status, total, completed, failed
    prompt_tokens: int
    completion_tokens: int
    wins: int
    losses: int
    ties: int
    # rates
    win_rate: float | None
    decisive_win_rate: float | None
    position_consistency: float | None
    position_consistency_n: int
    position_consistency_note: str
    flip_rate: float | None
    residual_flip_rate: float | None
    biased_first: float | None
    biased_second: float | None
    preference_score: float | None
    preference_score_n: int
    win_rate_consistent: float | None
    win_rate_consistent_n: int
    first_position_n: int
    first_position_k: int
    first_position_p: float | None
    win_rate_pooled: float | None
    win_rate_pooled_n: int
    longer_wins: float | None
    longer_wins_n: int
    length_verdict_corr: float | None
    length_controlled_win_rate: float | None
    length_controlled_n: int
    length_controlled_note: str
    length_controlled_identifiable: bool  # False: the data cannot identify it (the note says why); absent: not fitted
    length_note: str
    styled_wins: float | None
    styled_wins_n: int
    style_controlled_win_rate: float | None
    style_controlled_n: int
    style_controlled_note: str
    style_controlled_identifiable: bool  # as length_controlled_identifiable
    style_coefficients: dict[str, float]  # covariate ("length", a style feature) -> log-odds per SD
    style_note: str
    soft_win_rate: float | None
    soft_n: int
    soft_note: str
    human_agreement: float | None
    human_agreement_n: int
    human_agreement_decisive: float | None
    human_agreement_decisive_n: int
    cohen_kappa: float | None
    cohen_kappa_n: int
    agreement_threshold: float
    agreement_warning: bool
    agreement_message: str | None  # the warning, or why a judge below the threshold was not warned
    agreement_ceiling: float | None  # how often two people agree (human_human_agreement), when known
    human_agreement_ties_left_out: int  # tie labels, not counted in human_agreement
    calibration: Calibration  # present when the data has human_votes
    human_vote_agreement: float | None
    human_vote_agreement_n: int
    human_vote_agreement_no_ties: float | None
    human_vote_agreement_no_ties_n: int
    human_human_agreement: float | None
    human_human_agreement_n: int
    self_preference: SelfPreference
    ci: dict[str, Interval]  # figure name -> its bootstrap interval
    ci_degenerate: dict[str, str]  # figure name -> why its interval has zero width (the data cannot vary it)
    bootstrap_resamples: int
    bootstrap_seed: int
    samples: int  # judge.samples > 1: the asks per order
    repetition_stability_order1: float | None  # share of an order's samples giving its most frequent reply
    repetition_stability_order2: float | None
    repetition_stability_n: int
    majority_win_rate: float | None  # win rate of the verdicts of each order's majority of samples
    majority_position_consistency: float | None
    majority_n: int
    soft_win_rate_mean: float | None  # soft win rate averaged over the samples
    bootstrap_cluster: str | None  # the item field the intervals resampled by (bootstrap.cluster); null = by item
    bootstrap_clusters: int | None  # how many clusters that field formed; null = by item
    judges: dict[str, Summary]  # ensemble runs: each judge's own figures
    # cost and provenance of the figures
    cost_usd: float
    saved_usd: float
    budget: dict[str, Any]  # max_cost_usd / max_tokens_total: the caps, what the replies came to, calls not sent
    billed_unused: dict[str, Any]  # attempts billed but not used (no choices, asked again, timed out): count, usd
    models_reported: list[str]
    answered_by: dict[str, int]  # deployment (or model) -> calls it answered (ensembles: "judge: deployment")
    models_answering: int  # the models those names stand for (judge.expect_models and dated snapshots map names)
    answered_unexpected: list[str]  # answering names judge.model and judge.expect_models do not accept
    # judge.model is a model the gateway serves, yet undeclared deployments answered: {model, gateway_deployments,
    # answered_by} (an ensemble: one such object per judge); null otherwise
    routed_elsewhere: dict[str, Any] | None
    calls_gateway_cached: int  # replies a gateway served from its own response cache (who wrote them: unknown)
    calls_foreign: int  # calls answered by a model other than the configured one (or judge.expect_models)
    items_mixed_judge: int  # items whose two orders were answered by different deployments or models
    items_mixed_judge_ids: list[str]
    cached_foreign: int  # cache hits answered by another deployment than this run's fresh replies
    gateway_fallbacks: int  # calls the gateway reports it answered from a fallback
    gateway_retries: int  # upstream retries the gateway reports (on top of `retries`, ours), failed calls included
    gateway_errors_retries_unknown: int  # a gateway's error responses that did not say how often it retried
    mixed_judge: bool
    calls_settings_not_honoured: int  # calls whose reply shows a setting sent was not honoured (reasoning tokens
    # at a temperature other than 1, no logprobs from a reasoning model)
    settings_not_honoured: dict[str, int]  # setting (judge.temperature, ...) -> calls whose reply shows it ignored
    mixed_judge_note: str  # the one line that says how the judge was not one judge
    normalization: dict[str, Any]
    labels: str
    failed_calls: int
    failed_by_kind: dict[str, int]  # failed_calls by the kind of failure (core.errors.FailureKind)
    retries: int  # requests retried (live judges)
    timeouts: int  # of those, retried after a client-side timeout: possibly billed twice
    judging_seconds: float
    notes: list[str]
    imported_replies: dict[str, Any]  # replies this run read from imported bundles: count, and each bundle's
    # file, sha256 (of the file) and manifest judges. Absent when every reply was received by a run.


# What each status means when a summary carries no note of its own (docs/outputs.md has the same words).
STATUS_MEANINGS: dict[str, str] = {
    "ok": "finished",
    "errors": "finished, but calls failed after their retries (reasons in its verdicts.jsonl); rerun to retry them",
    "unreadable": "finished, but most replies carry no readable verdict: the figures describe the parser",
    "mixed_judge": "finished, but more than one model answered the calls",
    "budget": "stopped at its spending cap: a higher cap continues from the cache",
    "pending": "its calls are out as a batch: run the same command again to collect them",
    "dry-run": "a dry run: an estimate, no figures",
    "failed": "failed before it finished (see its log)",
    "missing": "left no summary.json: interrupted or killed before it finished (see its log)",
}
FINISHED_STATUSES = ("ok", "errors", "unreadable", "mixed_judge")  # a run that judged every item it could


def status_reason(summary: Summary) -> str:
    """Why a run has the status it has, in one line: its own note where it wrote one, else what the status means."""
    status = summary.get("status", "ok")
    if summary.get("error"):
        return str(summary["error"])
    if status == "unreadable" and summary.get("unreadable_note"):
        return summary["unreadable_note"]
    if status == "mixed_judge" and summary.get("mixed_judge_note"):
        return summary["mixed_judge_note"]
    if status == "errors" and summary.get("failed_calls"):
        return f"{summary['failed_calls']} calls failed after their retries (reasons in its verdicts.jsonl)"
    if status == "budget":
        not_sent = (summary.get("budget") or {}).get("calls_not_sent")
        if not_sent is not None:
            return f"stopped at its spending cap with {not_sent} calls not sent (a higher cap continues from the cache)"
    return STATUS_MEANINGS.get(status, status)
