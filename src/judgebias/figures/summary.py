"""The run's summary, built from its verdicts: pure (no files, no clock, no network), so writing takes it finished.

The ensemble's merged rows come from the runner (merged once per item) and serve both the figures and the ratings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from judgebias.config.pricing import call_cost
from judgebias.config.schema import Config, JudgeConfig, judges_of
from judgebias.core.record import ItemResult
from judgebias.core.summary import SUMMARY_SCHEMA_VERSION, Ensemble, Figures, Identity, RunRecord, Summary
from judgebias.core.verdict import Status
from judgebias.figures.clustering import Clustering
from judgebias.figures.corrected import Design, people_of, people_ratings
from judgebias.figures.headline import headline, names_of
from judgebias.figures.metrics import PeopleSettings, bradley_terry_ratings, summarize
from judgebias.figures.provenance import (
    judge_origin,
    merge_origins,
    mixed_judge_note,
    not_honoured_note,
    settings_not_honoured,
)
from judgebias.figures.rows import Rows

UNREADABLE_SHARE = 0.5  # above this share of answered calls without a readable verdict, the run is `unreadable`


def ratings_for(
    combined: Sequence[ItemResult], config: Config, clustering: Clustering | None = None, design: Design | None = None
) -> list[dict[str, Any]]:
    """Bradley–Terry ratings of the answering models from the run's (ensemble) verdicts, and beside them the ratings
    as people would give them where the data has labels (people_rating, people_low, people_high)."""
    ratings = bradley_terry_ratings(
        combined, resamples=config.bootstrap.resamples, seed=config.bootstrap.seed, clustering=clustering
    )
    rows = Rows.of(combined)
    if not ratings or not any(kind.human is not None or kind.human_votes for kind in rows.kinds):
        return ratings
    scored = rows.per_kind(lambda r: r.verdict != "error", np.uint8)
    people = people_of(rows, scored, design, str(config.calibration.prediction))
    corrected = people_ratings(people, rows)
    return [row | corrected.get(str(row["model"]), {}) for row in ratings]


def summarize_run(
    config: Config,
    per_judge: Mapping[str, Sequence[ItemResult]],
    combined: Sequence[ItemResult],
    clustering: Clustering | None = None,
    design: Design | None = None,
) -> tuple[Figures, Ensemble]:
    """The metrics of the run: the ensemble's figures with each judge's own beside them, or the one judge's."""
    calibration = config.calibration
    settings: dict[str, Any] = {
        "resamples": config.bootstrap.resamples,
        "seed": config.bootstrap.seed,
        "agreement_threshold": config.agreement_threshold,
        "clustering": clustering,
        "people": PeopleSettings(design, str(calibration.prediction), calibration.min_labels),
    }
    judges = judges_of(config)
    if len(per_judge) == 1:
        ((name, rows),) = per_judge.items()
        judge = judges[name]
        return summarize(rows, judge_family=judge.family, logprobs_requested=judge.logprobs, **settings), {}
    asked = any(judge.logprobs for judge in judges.values())
    merged = summarize(combined, logprobs_requested=asked, **settings)
    own = {
        name: summarize(rows, judge_family=judges[name].family, logprobs_requested=judges[name].logprobs, **settings)
        for name, rows in per_judge.items()
    }
    return merged, {"judges": own}


def build_summary(
    config: Config,
    per_judge: Mapping[str, Sequence[ItemResult]],
    combined: Sequence[ItemResult],
    notes: list[str],
    failures: int,
    elapsed: float,
    batches: Sequence[dict[str, Any]] = (),
    *,
    counted: Counted | None = None,
    clustering: Clustering | None = None,
    failed_by_kind: Mapping[str, int] | None = None,
    design: Design | None = None,
) -> Summary:
    """summary.json, whole: the run's identity, then every figure, then who answered, then cost and notes, then what
    the run counted beside its rows (`counted`); its status decided once (`status_of`)."""
    counted = counted or Counted()
    retries, timeouts = counted.retries, counted.timeouts
    judges = judges_of(config)
    name = next(iter(judges)) if len(judges) == 1 else "ensemble"
    identity: Identity = {
        "status": "ok",  # decided below, once every figure that decides it is known
        "judge": name,
        "rubric": config.rubric.name,
        "data": config.data.name,
        "schema_version": SUMMARY_SCHEMA_VERSION,
    }
    if len(judges) > 1:
        identity["ensemble"] = list(judges)
    figures, ensemble = summarize_run(config, per_judge, combined, clustering, design)
    names = names_of(Rows.of(combined), config.data.names.a, config.data.names.b)
    identity["headline"] = headline(figures, names, str(config.side))
    own = {
        judge_name: judge_origin(per_judge[judge_name], j.model, j.other_models()) for judge_name, j in judges.items()
    }
    origin = merge_origins(own)
    mixed_note = mixed_judge_note(origin, name, own)
    origin["mixed_judge"] = mixed_note is not None
    if mixed_note is not None:
        origin["mixed_judge_note"] = mixed_note
    not_honoured, per_setting = _not_honoured(judges, per_judge)
    origin["calls_settings_not_honoured"] = not_honoured
    origin["settings_not_honoured"] = per_setting
    configured = dataclasses.asdict(next(iter(judges.values())))
    honoured_note = not_honoured_note(not_honoured, per_setting, configured)
    unreadable = _unreadable_note(figures, failures)
    kappa_note = chance_note(figures)
    if kappa_note:
        figures["cohen_kappa_note"] = kappa_note
    if nothing_readable(figures) and figures.get("agreement_message"):
        # Agreement of verdicts that are all "no verdict" says nothing of the rubric: say what happened instead.
        figures["agreement_message"] = (
            "the judge answered nothing readable, so agreement with people is not measured: look at what it said "
            "(raw1/raw2 in verdicts.jsonl) before changing the rubric"
        )
    cost, saved, prompt_cache_saved, batched, models = _spent(judges, per_judge)
    gateway_note = _gateway_cache_note(origin.get("calls_gateway_cached", 0))
    consistency_note = figures.get("position_consistency_note")
    record: RunRecord = {"unreadable_note": unreadable} if unreadable is not None else {}
    record.update(
        {
            "calls_batched": batched,
            "batches": list(batches),
            "cost_usd": round(cost, 6),
            "saved_usd": round(saved, 6),
            "prompt_cache_saved_usd": round(prompt_cache_saved, 6),
            "models_reported": sorted(models),
            "normalization": dataclasses.asdict(config.data.normalize),
            "labels": str(config.rubric.labels),
            "failed_calls": failures,
            "failed_by_kind": dict(sorted((failed_by_kind or {}).items())),
            "retries": retries,
            "timeouts": timeouts,
            "judging_seconds": round(elapsed, 3),
            "notes": (
                ([unreadable] if unreadable else [])
                + ([gateway_note] if gateway_note else [])
                + _outcome_notes(figures)
                + ([honoured_note] if honoured_note else [])
                + notes
                + ([consistency_note] if consistency_note else [])
            ),
        }
    )
    summary: Summary = {**identity, **figures, **ensemble, **origin, **record}
    _add_counted(summary, counted)
    reached = bool((counted.budget or {}).get("reached"))
    summary["status"] = status_of(failures, unreadable is not None, mixed_note is not None, reached)
    return summary


@dataclasses.dataclass(frozen=True)
class Counted:
    """What a run counted beside its rows, for summary.json: its backends' retries (`timeouts`: those after a
    client-side timeout, which the endpoint may have answered and billed as well) and what a gateway reported, where
    a gateway routed the judge instead (asked of the gateway), attempts billed but not used, the spending cap's
    record, and the replies read from imported bundles."""

    retries: int = 0
    timeouts: int = 0
    gateway_retries_failed: int = 0  # retries a gateway reported on calls that failed in the end
    gateway_errors_unknown: int = 0
    routed_elsewhere: dict[str, Any] | None = None
    billed_unused: dict[str, Any] | None = None  # UnusedAttempts.record(), when any attempt was
    budget: dict[str, Any] | None = None  # Budget.record(), when a cap was set
    imported: dict[str, Any] | None = None  # ImportedReplies.record(), when a reply came from a bundle


def status_of(failures: int, unreadable: bool, mixed_judge: bool, budget_reached: bool) -> Status:
    """summary.json's status: the cap reached first, then failed calls, replies without a verdict, then a judge that
    was not the one configured; "ok" otherwise."""
    if budget_reached:
        return "budget"
    if failures:
        return "errors"
    return "unreadable" if unreadable else "mixed_judge" if mixed_judge else "ok"


def _add_counted(summary: Summary, counted: Counted) -> None:
    """The members of what the run counted beside its rows, with their notes."""
    summary["gateway_retries"] = int(summary.get("gateway_retries") or 0) + counted.gateway_retries_failed
    summary["gateway_errors_retries_unknown"] = counted.gateway_errors_unknown
    summary["routed_elsewhere"] = counted.routed_elsewhere
    unused = counted.billed_unused
    if unused is not None:
        summary["billed_unused"] = unused
        summary["cost_usd"] = round(summary.get("cost_usd", 0.0) + unused["usd"], 6)
        at_bound = f", {unused['at_bound']} of them counted at their bound (no usage reported)"
        summary["notes"].append(
            f"{unused['attempts']} attempts were billed but not used (no choices, cut off and asked again, or timed "
            f"out): ${unused['usd']:.4f} of cost_usd" + (at_bound if unused["at_bound"] else "")
        )
    budget = counted.budget
    if budget is not None:
        summary["budget"] = budget
        if budget["replies_without_usage"]:
            summary["notes"].append(
                f"{budget['replies_without_usage']} replies reported no usage: the spending cap counted each at its "
                "bound (its prompt's bytes and a full judge.max_tokens), so budget.used_usd is an upper bound, and "
                "cost_usd (the usage servers reported) leaves them out"
            )
    if counted.imported is not None:
        summary["imported_replies"] = counted.imported


def _spent(
    judges: Mapping[str, JudgeConfig], per_judge: Mapping[str, Sequence[ItemResult]]
) -> tuple[float, float, float, int, set[str]]:
    """What the calls cost (sent now), what the cached ones saved, what the server's prompt cache took off the calls
    sent now, how many went by batch, and the models named."""
    cost, saved, discount, batched = 0.0, 0.0, 0.0, 0
    models: set[str] = set()
    for name, judge in judges.items():
        rows = Rows.of(per_judge[name])
        # Each kind's calls priced once; the amounts are then added in row order, as they always were (a float
        # sum's last digit depends on its order).
        amounts: list[list[tuple[float, float, bool]]] = []
        for kind, times in rows.counted():
            amounts.append([])
            for call in kind.calls:
                amount = call_cost(
                    judge, call.prompt_tokens, call.completion_tokens, cached=call.prompt_tokens_cached,
                    batched=call.batched,
                )  # fmt: skip
                full = call_cost(judge, call.prompt_tokens, call.completion_tokens, batched=call.batched)
                amounts[-1].append((amount, full - amount, call.cached))
                batched += times * call.batched
                if call.model:
                    models.add(call.model)
        if not any(amount for priced in amounts for amount, _, _ in priced):
            continue  # nothing priced (an offline judge, or no prices): 0.0 however many times it is added
        for code in rows.codes().tolist():
            for amount, off, cached in amounts[code]:
                if cached:
                    saved += amount
                else:
                    cost += amount
                    discount += off
    return cost, saved, discount, batched, models


def _not_honoured(
    judges: Mapping[str, JudgeConfig], per_judge: Mapping[str, Sequence[ItemResult]]
) -> tuple[int, dict[str, int]]:
    """Calls whose reply shows a setting was not honoured, and how often each setting, over every judge."""
    calls_total = 0
    per_setting: dict[str, int] = {}
    for name, judge in judges.items():
        calls, found = settings_not_honoured(per_judge[name], judge.temperature, judge.top_p, judge.logprobs)
        calls_total += calls
        for setting, n in found.items():
            per_setting[setting] = per_setting.get(setting, 0) + n
    return calls_total, per_setting


def _gateway_cache_note(gateway_cached: int) -> str | None:
    """What replies a gateway served from its own cache mean for the figures, when there were any."""
    if not gateway_cached:
        return None
    return (
        f"{gateway_cached} replies were served from a gateway's response cache, not by a model asked now: who wrote "
        "them is unknown (answered_by: unknown (gateway cache)); turn the gateway's cache off for a judge you measure "
        "(LiteLLM: +judge.extra_body.cache={no-cache:true})"
    )


KAPPA_NEAR_ZERO = 0.05  # |kappa| below this beside agreement of at least HIGH_AGREEMENT is explained
HIGH_AGREEMENT = 0.6


def chance_note(summary: Mapping[str, Any]) -> str | None:
    """Why kappa is about 0 though the judge agrees with people often: kappa discounts the agreement chance alone
    gives, and when the judge (or people) give nearly one answer, chance alone agrees that often."""
    kappa, agreement = summary.get("cohen_kappa"), summary.get("human_agreement")
    if kappa is None or agreement is None or abs(kappa) >= KAPPA_NEAR_ZERO or agreement < HIGH_AGREEMENT:
        return None
    return (
        f"kappa is {kappa:.2f} beside {100 * agreement:.0f}% agreement: kappa discounts the agreement chance alone "
        "gives, and the judge's verdicts or people's labels are nearly all one answer, so chance alone agrees that "
        "often; the judge tells the answers apart no better than always giving that answer would"
    )


def nothing_readable(summary: Mapping[str, Any]) -> bool:
    """Whether no reply the judge gave carried a readable verdict (every answered call: invalid or no verdict)."""
    share = summary.get("no_verdict_share")
    return share is not None and share >= 1.0


def _unreadable_note(summary: Figures, failures: int) -> str | None:
    """The line that says most replies carried no verdict (before any advice about the rubric), or None."""
    share = summary.get("no_verdict_share")
    if share is None or share <= UNREADABLE_SHARE:
        return None
    answered = summary["calls_total"] - failures
    unread = summary.get("n_invalid", 0) + summary.get("n_no_verdict", 0)
    kinds = ", ".join(f"{name} {n}" for name, n in (summary.get("outcomes") or {}).items())
    return (
        f"{unread} of {answered} replies ({100 * share:.0f}%) carry no readable verdict "
        f"(invalid {summary.get('n_invalid', 0)}" + (f", {kinds}" if kinds else "") + "): the figures describe "
        "the parser, not the judge; check that the judge answers in the rubric's format (raw1/raw2 in verdicts.jsonl)"
    )


def _outcome_notes(summary: Figures) -> list[str]:
    """What to do about the replies without a verdict: a larger budget for cut-off ones, re-asking refusals."""
    outcomes = summary.get("outcomes") or {}
    notes = []
    if outcomes.get("truncated"):
        notes.append(
            f"{outcomes['truncated']} replies were cut off at judge.max_tokens before a verdict (not retried at "
            "temperature 0: the same request gives the same reply): raise judge.max_tokens and rerun (a new budget "
            "is a new cache key: every call of the run is asked again)"
        )
    deterministic = {k: n for k, n in outcomes.items() if k in ("refusal", "content_filter", "tool_calls")}
    if deterministic:
        kinds = ", ".join(f"{n} {k}" for k, n in deterministic.items())
        notes.append(
            f"replies without a verdict: {kinds} (reasons in verdicts.jsonl); they are cached as they are: "
            f"cache.reask=[{','.join(deterministic)}] asks them again"
        )
    return notes
