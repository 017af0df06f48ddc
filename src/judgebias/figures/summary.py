"""The run's summary, built from its verdicts: pure (no files, no clock, no network), so writing takes it finished.

The ensemble's merged rows come from the runner (merged once per item) and serve both the figures and the ratings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, cast

from judgebias.config.schema import Config, judges_of
from judgebias.core.record import ItemResult, Summary
from judgebias.figures.metrics import bradley_terry_ratings, summarize


def ratings_for(combined: list[ItemResult], config: Config) -> list[dict[str, Any]]:
    """Bradley–Terry ratings of the answering models from the run's (ensemble) verdicts."""
    return bradley_terry_ratings(combined, resamples=config.bootstrap.resamples, seed=config.bootstrap.seed)


def summarize_run(config: Config, per_judge: dict[str, list[ItemResult]], combined: list[ItemResult]) -> Summary:
    """The metrics of the run: the ensemble's figures with each judge's own beside them, or the one judge's."""
    settings: dict[str, Any] = {
        "resamples": config.bootstrap.resamples,
        "seed": config.bootstrap.seed,
        "agreement_threshold": config.agreement_threshold,
    }
    judges = judges_of(config)
    if len(per_judge) == 1:
        ((name, rows),) = per_judge.items()
        judge = judges[name]
        return cast(Summary, summarize(rows, judge_family=judge.family, logprobs_requested=judge.logprobs, **settings))
    asked = any(judge.logprobs for judge in judges.values())
    merged = cast(Summary, summarize(combined, logprobs_requested=asked, **settings))
    merged["judges"] = {
        name: cast(
            Summary,
            summarize(rows, judge_family=judges[name].family, logprobs_requested=judges[name].logprobs, **settings),
        )
        for name, rows in per_judge.items()
    }
    return merged


def build_summary(
    config: Config,
    per_judge: dict[str, list[ItemResult]],
    combined: list[ItemResult],
    notes: list[str],
    failures: int,
    elapsed: float,
    batches: Sequence[dict[str, Any]] = (),
    *,
    retries: int = 0,
    timeouts: int = 0,
) -> Summary:
    """summary.json: the run's identity, then every figure, then cost and notes.

    `retries` counts every retried request of the live judges; `timeouts` those retried after a client-side
    timeout, which the endpoint may have answered and billed as well.
    """
    judges = judges_of(config)
    identity: dict[str, Any] = {
        "status": "errors" if failures else "ok",
        "judge": next(iter(judges)) if len(judges) == 1 else "ensemble",
        "rubric": config.rubric.name,
        "data": config.data.name,
    }
    if len(judges) > 1:
        identity["ensemble"] = list(judges)
    summary = cast(Summary, identity | summarize_run(config, per_judge, combined))
    cost, saved = 0.0, 0.0
    models: set[str] = set()
    batched = 0
    for name, judge in judges.items():
        price_in = judge.price_input_per_mtok / 1e6
        price_out = judge.price_output_per_mtok / 1e6
        for row in per_judge[name]:
            for call in row.calls:
                amount = call.prompt_tokens * price_in + call.completion_tokens * price_out
                if call.batched:
                    amount *= judge.batch_discount
                    batched += 1
                if call.cached:
                    saved += amount
                else:
                    cost += amount
                if call.model:
                    models.add(call.model)
    consistency_note = summary.get("position_consistency_note")
    summary["calls_batched"] = batched
    summary["batches"] = list(batches)
    summary["cost_usd"] = round(cost, 6)
    summary["saved_usd"] = round(saved, 6)
    summary["models_reported"] = sorted(models)
    summary["normalization"] = dataclasses.asdict(config.data.normalize)
    summary["labels"] = str(config.rubric.labels)
    summary["failed_calls"] = failures
    summary["retries"] = retries
    summary["timeouts"] = timeouts
    summary["judging_seconds"] = round(elapsed, 3)
    summary["notes"] = notes + ([consistency_note] if consistency_note else [])
    return summary
