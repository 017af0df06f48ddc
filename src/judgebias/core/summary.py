"""summary.json's contract: the sections a run's summary is assembled from, and a checked reader for the file.

Each section is what one function computes (figures.metrics: counts, position, length, ...; figures.summary and
the runner: identity, origin, spending, notes); Summary is their union, so a key a writer sets or a reader asks for
is declared once, with its type. Keys and their meaning are fixed (other tools read them): add keys, never rename
them. total=False: a key is absent when its figure does not apply (no human labels, one order, no ensemble, ...).
"""

from __future__ import annotations

import functools
import math
import types
import typing
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypedDict, TypeGuard

from judgebias.core.bounds import INTEGER, RESAMPLES, SEED, Bound, shown
from judgebias.core.verdict import Status


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


class Headline(TypedDict, total=False):
    """The run's win rate as the headline says it: from one side (`side=a|b`), with both models' names."""

    side: str  # "a" or "b": whose win rate this is
    name: str  # that side's model (data.names, else the model_a/model_b every item names, else the letter)
    other: str  # the other side's
    win_rate: float | None
    ci: list[float] | None
    corrected_win_rate: float  # the people's number, when labels corrected the figure
    corrected_ci: list[float] | None
    text: str  # "bot-v2 vs bot-v1: bot-v2 wins 61.7% [46.7, 76.7]"


class Identity(TypedDict, total=False):
    """Which run this is: its status, the judge, rubric and data, the writer's schema version, its headline."""

    status: Status  # docs/outputs.md
    schema_version: int  # SUMMARY_SCHEMA_VERSION of the writer
    error: str  # a failed job's reason
    judge: str | None  # the judge's name, or "ensemble"
    rubric: str | None
    data: str | None
    ensemble: list[str]
    headline: Headline


class Counts(TypedDict, total=False):
    """How many items were judged and scored, and in how many orders."""

    n_items: int
    n_scored: int
    orders: int
    scored_note: str


class CallCounts(TypedDict, total=False):
    """Every call: failed, unreadable, without a verdict, cached, live, offline, and the tokens."""

    n_errors: int
    errors_call1: int
    errors_call2: int
    n_invalid: int  # verdict-shaped replies the parser could not read (not the outcomes below)
    n_no_verdict: int  # replies that carry no verdict at all (refusals, filters, truncated, ...): `outcomes`
    outcomes: dict[str, int]  # outcome -> calls (cached ones, and failed calls' last reply kinds, included)
    no_verdict_share: float | None  # (n_invalid + n_no_verdict) / calls answered
    calls_total: int
    calls_cached: int
    calls_live: int  # requests answered by an endpoint in this run (not cached, not failed)
    calls_offline: int  # calls answered by a judge that sends no request (scripted, replay)
    prompt_tokens: int
    completion_tokens: int
    prompt_tokens_cached: int  # of prompt_tokens, those the server's prompt cache served (usage's cached tokens)


class WinRates(TypedDict, total=False):
    """The verdicts' tally and the debiased win rate of a over b, with ties and on decisive verdicts only."""

    wins: int
    losses: int
    ties: int
    win_rate: float | None
    decisive_win_rate: float | None


class Position(TypedDict, total=False):
    """Position bias: consistency over the two orders, flips, the sign test on first-position wins."""

    position_consistency: float | None
    position_consistency_n: int | None  # null (like the other _n and the sign test) when one order was recorded
    position_consistency_note: str
    flip_rate: float | None
    residual_flip_rate: float | None
    biased_first: float | None
    biased_second: float | None
    preference_score: float | None
    preference_score_n: int | None
    win_rate_consistent: float | None
    win_rate_consistent_n: int | None
    first_position_n: int | None
    first_position_k: int | None
    first_position_p: float | None


class Pooled(TypedDict, total=False):
    """Both orders taken as separate judgments."""

    win_rate_pooled: float | None
    win_rate_pooled_n: int


class Length(TypedDict, total=False):
    """Length bias and the length-controlled win rate."""

    longer_wins: float | None
    longer_wins_n: int
    length_verdict_corr: float | None
    length_controlled_win_rate: float | None
    length_controlled_n: int
    length_controlled_note: str
    length_controlled_identifiable: bool  # False: the data cannot identify it (the note says why); absent: not fitted
    length_note: str


class StyleBias(TypedDict, total=False):
    """Style bias and the style-controlled win rate."""

    styled_wins: float | None
    styled_wins_n: int
    style_controlled_win_rate: float | None
    style_controlled_n: int
    style_controlled_note: str
    style_controlled_identifiable: bool  # as length_controlled_identifiable
    style_coefficients: dict[str, float]  # covariate ("length", a style feature) -> log-odds per SD
    style_note: str


class Soft(TypedDict, total=False):
    """The win rate from the labels' log-probabilities."""

    soft_win_rate: float | None
    soft_n: int
    soft_note: str


class HumanLabels(TypedDict, total=False):
    """The judge against the data's human label (present when the data has one)."""

    human_agreement: float | None
    human_agreement_n: int
    human_agreement_decisive: float | None
    human_agreement_decisive_n: int
    cohen_kappa: float | None
    cohen_kappa_n: int
    cohen_kappa_note: str  # why kappa is near 0 beside a high agreement (one answer nearly always)
    agreement_threshold: float
    agreement_warning: bool
    agreement_message: str | None  # the warning, or why a judge below the threshold was not warned
    agreement_ceiling: float | None  # how often two people agree (human_human_agreement), when known
    human_agreement_ties_left_out: int  # tie labels, not counted in human_agreement


# One figure as people would give it (figures.corrected): the estimate and its prediction-powered interval, the
# judge's own and the labels' own beside it, PPI++'s λ (0: the labels alone; 1: plain PPI), and what the labels are
# worth with the judge's help. Declared by a mapping: "lambda" is a keyword of Python, and the key summary.json writes.
CorrectedFigure = TypedDict(
    "CorrectedFigure",
    {
        "estimate": float,
        "ci": list[float],  # at the section's level
        "se": float,
        "lambda": float,
        "judge_only": float | None,  # the judge's own figure (the run's uncorrected one)
        "judge_only_ci": list[float] | None,
        "labels_only": float,  # the classical estimate from the labelled items alone
        "labels_only_ci": list[float],
        "effective_labels": float,  # labels alone would need this many to be as precise
        "judge_error": float,  # every item labelled: the judge's figure minus the people's
    },
    total=False,
)


class CorrectedSection(TypedDict, total=False):
    """How the corrected figures were made: the method, the judge's prediction, the design, the labels, the plan."""

    method: str
    prediction: str  # "verdict" (its win score) or "soft" (its log-probabilities' preference)
    design: dict[str, Any]  # kind (uniform | random | stratified | uncertain), source, note, left_out, skipped
    labelled: int  # n: labelled items in the population
    unlabelled: int  # N: items of the population without a label
    level: float  # the intervals' coverage (0.95)
    interval: str  # how the intervals were made: prediction-powered (CLT), or the cluster bootstrap of a clustered run
    figures: dict[str, CorrectedFigure]  # win_rate, decisive_win_rate
    refused: str  # why there is no correction (too few labels)
    plan: dict[str, Any]  # labels a uniform sample needs for an interval of `width`


class Corrected(TypedDict, total=False):
    """The run's figures as people would give them, where the data has labels (docs/calibration.md)."""

    corrected_win_rate: float | None
    corrected_win_rate_note: str
    corrected_decisive_win_rate: float | None
    corrected_decisive_win_rate_note: str
    corrected_length_controlled_win_rate: float | None
    corrected: CorrectedSection


class HumanVotes(TypedDict, total=False):
    """The judge against every person's vote, and people against each other (data with human_votes)."""

    calibration: Calibration  # present when the data has human_votes
    human_vote_agreement: float | None
    human_vote_agreement_n: int
    human_vote_agreement_no_ties: float | None
    human_vote_agreement_no_ties_n: int
    human_human_agreement: float | None
    human_human_agreement_n: int


class Repetition(TypedDict, total=False):
    """judge.samples > 1: how stable a judge is when asked again, and the majority's figures."""

    samples: int  # judge.samples > 1: the asks per order
    repetition_stability_order1: float | None  # share of an order's samples giving its most frequent reply
    repetition_stability_order2: float | None
    repetition_stability_n: int
    repetition_stability_note: str  # why a stability figure is missing
    majority_win_rate: float | None  # win rate of the verdicts of each order's majority of samples
    majority_position_consistency: float | None
    majority_n: int
    soft_win_rate_mean: float | None  # soft win rate averaged over the samples


class OwnFamily(TypedDict, total=False):
    """Self-preference, where the judge's model family wrote one of the answers."""

    self_preference: SelfPreference


class Intervals(TypedDict, total=False):
    """Every figure's bootstrap interval, and what was resampled."""

    ci: dict[str, list[float] | None]  # figure name -> its bootstrap interval [low, high]; null: none could be drawn
    ci_degenerate: dict[str, str]  # figure name -> why its interval has zero width (the data cannot vary it)
    bootstrap_resamples: Annotated[int, RESAMPLES]
    bootstrap_seed: Annotated[int, SEED]
    bootstrap_cluster: str | None  # the item field the intervals resampled by (bootstrap.cluster); null = by item
    bootstrap_clusters: int | None  # how many clusters that field formed; null = by item


class Ensemble(TypedDict, total=False):
    """An ensemble's judges, each with its own figures."""

    judges: dict[str, Figures]  # ensemble runs: each judge's own figures


class Origin(TypedDict, total=False):
    """Who answered the calls: the models and deployments the replies name, and how the judge was not one."""

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


class RunRecord(TypedDict, total=False):
    """What the run spent, saved and retried, how the answers were shown and measured, and the run's notes."""

    unreadable_note: str
    calls_batched: int  # of calls_live: answered by a batch collected in this run
    batches: list[dict[str, Any]]  # each batch this run submitted or collected: id, status, total, completed, failed
    cost_usd: float
    saved_usd: float
    prompt_cache_saved_usd: float  # what the server's prompt cache took off cost_usd (its cached tokens' discount)
    models_reported: list[str]  # the models the replies name
    normalization: dict[str, Any]
    labels: str
    failed_calls: int
    failed_by_kind: dict[str, int]  # failed_calls by the kind of failure (core.errors.FailureKind)
    retries: int  # requests retried (live judges)
    timeouts: int  # of those, retried after a client-side timeout: possibly billed twice
    judging_seconds: float
    notes: list[str]
    budget: dict[str, Any]  # max_cost_usd / max_tokens_total: the caps, what the replies came to, calls not sent
    billed_unused: dict[str, Any]  # attempts billed but not used (no choices, asked again, timed out): count, usd
    imported_replies: dict[str, Any]  # replies this run read from imported bundles: count, and each bundle's
    # file, sha256 (of the file) and manifest judges. Absent when every reply was received by a run.


# summary.json's schema_version. The change rule (docs/outputs.md): a field added leaves it as it is (readers
# ignore fields they do not know); a field renamed, removed, or read differently (another unit, another meaning)
# raises it by one, and the change is listed in docs/outputs.md.
SUMMARY_SCHEMA_VERSION = 1


class MeasuredFigures(
    Counts,
    CallCounts,
    WinRates,
    Position,
    Pooled,
    Length,
    StyleBias,
    Soft,
    HumanLabels,
    HumanVotes,
    Corrected,
    Repetition,
    OwnFamily,
    total=False,
):
    """Every figure's point value, as figures.metrics.measure computes them from one judge's (or the ensemble's) rows."""


class Figures(MeasuredFigures, Intervals, total=False):
    """One judge's figures with their intervals: what figures.metrics.summarize returns."""


class Summary(Identity, Figures, Ensemble, Origin, RunRecord, total=False):
    """summary.json: the run's identity, every figure (with `ci` intervals), who answered, cost and notes."""


class DryRunEstimate(TypedDict):
    """dry_run.json: what a run would send (cache misses), its estimated prompt tokens and cost; nothing is sent."""

    dry_run: bool
    judge: str
    rubric: str | None
    data: str | None
    n_items: int
    tokenizer: str  # what counted prompt_tokens_est: data.normalize.tokenizer, or "chars/4"
    calls_total: int
    calls_live: int
    calls_cached: int
    calls_offline: int
    prompt_tokens_est: int
    prompt_tokens_shared_est: int  # of those, shared with the call sent just before (OpenAI's rule: core.prefix)
    cost_usd_est: float
    cost_usd_est_cached: float  # the same with the shared tokens at judge.price_cached_input_per_mtok
    cost_usd_est_batch: float
    judges: dict[str, dict[str, Any]]  # each judge's own counts and estimates, under the same names


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


class SummaryError(ValueError):
    """A summary.json that is not one: not a JSON object, or a field it declares holds a value of another type."""


def read_summary(value: object, source: str) -> Summary:
    """`value` (a parsed summary.json) as a Summary, once every field it declares has its declared type.

    Fields this version does not declare are kept: a newer writer adds fields without raising schema_version, and
    a reader ignores what it does not know (a reader that must know of a newer schema_version says so itself).
    """
    if not isinstance(value, dict):
        raise SummaryError(f"{source}: not a JSON object")
    if is_summary(value):
        return value
    raise SummaryError(f"{source}: {summary_problem(value)}")


def is_summary(value: dict[str, Any]) -> TypeGuard[Summary]:
    """Whether every declared field of `value` has its declared type (the fields it does not declare: any)."""
    return summary_problem(value) is None


def summary_problem(value: dict[str, Any]) -> str | None:
    """The first declared field of `value` whose value does not have its declared type, said in a line; or None."""
    hints = _hints(Summary)
    for name, field_value in value.items():
        if name in hints and (problem := _shape_problem(field_value, hints[name])):
            return f"field {name!r} {problem}"
    return None


def undeclared_fields(value: dict[str, Any]) -> list[str]:
    """Fields of `value` Summary does not declare (a writer must declare every field it writes)."""
    hints = _hints(Summary)
    return [name for name in value if name not in hints]


@functools.cache
def _hints(typed: type) -> dict[str, Any]:
    """A TypedDict's fields and their annotations (with their bounds), resolved once."""
    return typing.get_type_hints(typed, include_extras=True)


def figure_value(figures: Mapping[str, object], name: str) -> float | None:
    """Figure `name` of a summary (or one judge's figures) as a number, for readers that name figures at run time
    (a gate's threshold, a comparison's list); None when absent, null or not a number. self_preference's value is
    its own_win_rate."""
    value = figures.get(name)
    if name == "self_preference" and isinstance(value, dict):
        value = value.get("own_win_rate")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _shape_problem(value: Any, hint: Any) -> str | None:
    """Why a JSON value does not have the type `hint` says (None: it has), in words for a one-line error."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return None
    if origin is Annotated:  # a number with its own bounds (core.bounds): a seed, a resample count
        inner, *extras = typing.get_args(hint)
        problem = _shape_problem(value, inner)
        bounds = [extra for extra in extras if isinstance(extra, Bound)]
        return problem or next((f"is out of bounds: {p}" for bound in bounds if (p := bound.problem(value))), None)
    if origin in (typing.Union, types.UnionType):
        problems = [_shape_problem(value, option) for option in typing.get_args(hint)]
        return None if None in problems else next(p for p in problems if p)
    if hint is type(None):
        return None if value is None else f"is {_shown(value)}, not null"
    if origin is Literal:
        allowed = typing.get_args(hint)
        return None if value in allowed else f"is {_shown(value)}, not one of {', '.join(map(str, allowed))}"
    if isinstance(hint, type) and typing.is_typeddict(hint):
        if not isinstance(value, dict):
            return f"is {_shown(value)}, not an object"
        inner = _hints(hint)
        return next(
            (f"[{key!r}] {p}" for key, v in value.items() if key in inner and (p := _shape_problem(v, inner[key]))),
            None,
        )
    if origin is dict:
        _, value_hint = typing.get_args(hint)
        if not isinstance(value, dict):
            return f"is {_shown(value)}, not an object"
        return next((f"[{key[:40]!r}] {p}" for key, v in value.items() if (p := _shape_problem(v, value_hint))), None)
    if origin is list:
        (item_hint,) = typing.get_args(hint)
        if not isinstance(value, list):
            return f"is {_shown(value)}, not a list"
        return next((f"[{i}] {p}" for i, v in enumerate(value) if (p := _shape_problem(v, item_hint))), None)
    if hint is str:
        return None if isinstance(value, str) else f"is {_shown(value)}, not text"
    if hint is bool:
        return None if isinstance(value, bool) else f"is {_shown(value)}, not true or false"
    if hint is int:
        if not isinstance(value, int) or isinstance(value, bool):
            return f"is {_shown(value)}, not an integer"
        return None if (problem := INTEGER.problem(value)) is None else f"is out of bounds: {problem}"  # 64 bits
    if hint is float:
        number = isinstance(value, int | float) and not isinstance(value, bool)
        return None if number and math.isfinite(value) else f"is {_shown(value)}, not a finite number"
    raise TypeError(f"summary field annotation {hint!r} has no JSON check")  # a declaration this check must learn


def _shown(value: Any) -> str:
    """A JSON value as an error shows it: short (an integer of any length too)."""
    return shown(value)
