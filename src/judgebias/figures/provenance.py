"""Who answered a run's calls, and whether that was one judge: the figures behind status `mixed_judge`.

Pure. A call's `answered_by` is the deployment a gateway names, else the model the reply names. A judge is one
judge when every call was answered by one model as the user declares it: the names the configured model and
`judge.expect_models` accept (with or without a provider prefix, or as a dated snapshot) are one model, and so are
other names that differ only in prefix or snapshot date; none by a model other than the configured one, and no
gateway fallback. A gateway alias answered throughout by one deployment is one judge: its deployment is recorded.
One model served under two deployment names is one judge once both are named in judge.expect_models.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np

from judgebias.core.models import is_reasoning_model
from judgebias.core.record import GATEWAY_CACHED, CallResult, ItemResult
from judgebias.core.summary import Origin
from judgebias.figures.rows import Rows

_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{4}|\d{8}|latest)$")  # gpt-4o-2024-08-06, o1-mini-0912, ...-20241022
MIXED_IDS_LISTED = 50  # item ids listed in the printed line (summary.json lists every one)


def _bare(name: str) -> str:
    """A model name without a provider prefix ("openai/gpt-4o" -> "gpt-4o"), for comparisons."""
    return name.rsplit("/", 1)[-1].lower()


def same_model(name: str, accepted: Iterable[str]) -> bool:
    """Whether `name` is one of `accepted`, with or without a provider prefix, or a dated snapshot of one."""
    bare = _bare(name)
    for model in accepted:
        wanted = _bare(model)
        if bare == wanted or (bare.startswith(wanted) and _SNAPSHOT.fullmatch(bare[len(wanted) :])):
            return True
    return False


def foreign_reason(
    model: str | None,
    deployment: str | None,
    fallbacks: int,
    configured: str | None,
    expected: Sequence[str],
) -> str | None:
    """Why a reply was not answered by the configured judge (None: it was, as far as the server says)."""
    if fallbacks:
        return f"the gateway answered it from a fallback ({fallbacks} fallback{'s' if fallbacks != 1 else ''})"
    if configured is None:
        return None  # a judge that names no model (scripted, replay) has nothing to compare with
    accepted = [configured, *expected]
    if model and not same_model(model, accepted):
        return f"answered by {model}, not {configured}"
    if expected and deployment and not same_model(deployment, accepted):
        return f"answered by deployment {deployment}, not one of judge.expect_models"
    return None


def _answered(call: CallResult) -> bool:
    return call.label != "error" and call.answered_by is not None


DECLARED = "the judge as declared"  # every name the configured model or judge.expect_models accepts


def routed_elsewhere(
    configured: str | None, unexpected: Sequence[str], routes: Mapping[str, Sequence[str]] | None
) -> dict[str, Any] | None:
    """The run's judge.model names a model the gateway has a deployment of (`openai/gpt-4o` for `gpt-4o`), yet calls
    were answered by other deployments nobody declared (an alias that shadows the model): what was asked for, the
    gateway's deployments of it (and of the group of that name), and who answered instead. A name that is only a
    group of the gateway's own (`judge-fb`, answered by its fallback) is no model it has: answered_unexpected and
    the fallback count say that case."""
    if not configured or not unexpected or not routes:
        return None
    own = [model for models in routes.values() for model in models if same_model(model, [configured])]
    if not own:
        return None  # the gateway has no such model: the name is an alias of its own, and answered_unexpected says it
    own += routes.get(configured, ())
    elsewhere = [name for name in unexpected if not same_model(name, own)]
    if not elsewhere:
        return None
    return {"model": configured, "gateway_deployments": sorted(set(own)), "answered_by": elsewhere}


def model_of(name: str, accepted: Sequence[str]) -> str:
    """The model an answering name stands for: the declared judge when the configured model or one of
    judge.expect_models accepts it (provider prefix and dated snapshot aside), else the name without its provider
    prefix and snapshot date (`openai/gpt-4o-2024-08-06` and `gpt-4o` are one model)."""
    if accepted and same_model(name, accepted):
        return DECLARED
    bare = _bare(name)
    return _SNAPSHOT.sub("", bare) or bare


def judge_origin(results: Sequence[ItemResult], configured: str | None, expected: Sequence[str]) -> Origin:
    """One judge's provenance figures: answered_by, calls_foreign, mixed items, cached foreign, gateway counts."""
    # One pass over the kinds of row into counts of what tells the calls apart here (a run's calls name a few
    # models and deployments): lists of a million items' calls cost more than the rows they come from.
    rows = Rows.of(results)
    seen: Counter[tuple[str, str | None, Any, int, bool]] = Counter()  # who, model, deployment, fallbacks, cached
    fallbacks = retries = 0
    for kind, times in rows.counted():
        for call in kind.calls:
            fallbacks += times * bool(call.fallbacks)
            retries += times * call.gateway_retries
            if _answered(call):
                deployment = (call.origin or {}).get("deployment")
                seen[str(call.answered_by), call.model, deployment, call.fallbacks, call.cached] += times
    by: Counter[str] = Counter()
    for key, n in seen.items():
        by[key[0]] += n
    accepted = [name for name in (configured, *expected) if name]
    model = {name: model_of(name, accepted) for name in by}  # each answering name's model, decided once
    model.pop(GATEWAY_CACHED, None)  # a gateway's cached reply: who wrote it is not known, so it names no model
    # Decided once per distinct (model, deployment, fallbacks): a run's calls name only a few.
    foreign = sum(
        n
        for (_, reported, deployment, count, _), n in seen.items()
        if foreign_reason(reported, deployment, count, configured, expected)
    )
    mixed = rows.per_kind(
        lambda kind: (
            len(kind.calls) == 2
            and all(_answered(call) for call in kind.calls)
            and GATEWAY_CACHED not in (kind.calls[0].answered_by, kind.calls[1].answered_by)
            and model[str(kind.calls[0].answered_by)] != model[str(kind.calls[1].answered_by)]
        ),
        np.bool_,
    )
    mixed_ids = [rows.id(i) for i in np.flatnonzero(mixed).tolist()]
    known = [(key[0], key[4], n) for key, n in seen.items() if key[0] != GATEWAY_CACHED]  # who, cached, calls
    fresh = {model[name] for name, cached, _ in known if not cached}
    cached_foreign = sum(n for name, cached, n in known if cached and fresh and model[name] not in fresh)
    return {
        "answered_by": dict(by.most_common()),
        "models_answering": len(set(model.values())),
        # names neither judge.model nor judge.expect_models accepts (a gateway's deployment behind an alias): said
        "answered_unexpected": [
            name for name, _ in by.most_common() if accepted and name in model and model[name] != DECLARED
        ],
        "calls_gateway_cached": by.get(GATEWAY_CACHED, 0),
        "calls_foreign": foreign,
        "items_mixed_judge": len(mixed_ids),
        "items_mixed_judge_ids": mixed_ids,
        "cached_foreign": cached_foreign,
        "gateway_fallbacks": fallbacks,
        "gateway_retries": retries,
    }


def merge_origins(origins: Mapping[str, Origin]) -> Origin:
    """The run's provenance from each judge's: counts summed; an ensemble's answered_by keyed "judge: deployment"."""
    if len(origins) == 1:
        return next(iter(origins.values()))
    parts = list(origins.items())

    def total(key: _SummedKey) -> int:
        return sum(origin.get(key, 0) for _, origin in parts)

    return {  # the order of the keys as summary.json has always written them for an ensemble
        "answered_by": {f"{name}: {who}": n for name, o in parts for who, n in o.get("answered_by", {}).items()},
        "items_mixed_judge_ids": [
            f"{name}: {item}" for name, o in parts for item in o.get("items_mixed_judge_ids", [])
        ],
        "answered_unexpected": [f"{name}: {who}" for name, o in parts for who in o.get("answered_unexpected", [])],
        "calls_foreign": total("calls_foreign"),
        "items_mixed_judge": total("items_mixed_judge"),
        "cached_foreign": total("cached_foreign"),
        "gateway_fallbacks": total("gateway_fallbacks"),
        "gateway_retries": total("gateway_retries"),
        "calls_gateway_cached": total("calls_gateway_cached"),
        "models_answering": total("models_answering"),
    }


_SummedKey = Literal[
    "models_answering", "calls_gateway_cached", "calls_foreign", "items_mixed_judge", "cached_foreign",
    "gateway_fallbacks", "gateway_retries",
]  # fmt: skip


def is_mixed(origin: Origin) -> bool:
    """Several models answered (names the declaration maps to one model count once), a foreign one, or a fallback."""
    models = origin.get("models_answering", len(origin.get("answered_by", {})))
    return bool(models > 1 or origin.get("calls_foreign") or origin.get("gateway_fallbacks"))


def mixed_judge_note(origin: Origin, judge: str, by_judge: Mapping[str, Origin] | None = None) -> str | None:
    """The one line saying how a run's judge was not one judge (None: it was one judge).

    `by_judge` (an ensemble's judges' own origins): the ensemble was one judge each when every judge was one."""
    if by_judge is not None and len(by_judge) > 1:
        if not any(is_mixed(own) for own in by_judge.values()):
            return None
    elif not is_mixed(origin):
        return None
    who = ", ".join(f"{name} {n}" for name, n in origin["answered_by"].items())
    parts = [f"calls answered by {who}"]
    if origin["calls_foreign"]:
        parts.append(f"{origin['calls_foreign']} by a model other than the configured one")
    if origin["gateway_fallbacks"]:
        parts.append(f"{origin['gateway_fallbacks']} from a gateway fallback")
    if origin["items_mixed_judge"]:
        parts.append(f"{origin['items_mixed_judge']} items had their two orders answered by different models")
    if origin["cached_foreign"]:
        parts.append(
            f"{origin['cached_foreign']} cached replies came from another model than this run's fresh ones "
            "(judge.expect_models naming the model wanted, with cache.reask=[foreign], asks them again)"
        )
    return f"judge {judge!r} was not one judge: " + "; ".join(parts)


def unhonoured_settings(call: CallResult, temperature: float | None, top_p: float | None, logprobs: bool) -> list[str]:
    """The settings sent that this call's reply shows were not honoured (a gateway may have dropped them).

    Reasoning tokens prove a reasoning model, which samples at its own temperature and top_p (1) whatever was
    sent; a reasoning model returns no log-probabilities.
    """
    if call.label == "error":
        return []
    reasoning = call.reasoning_tokens > 0
    found = []
    if reasoning and temperature is not None and temperature != 1:
        found.append("temperature")
    if reasoning and top_p is not None and top_p != 1:
        found.append("top_p")
    if logprobs and call.probs is None and (reasoning or (call.model is not None and is_reasoning_model(call.model))):
        found.append("logprobs")
    return found


def settings_not_honoured(
    rows: Sequence[ItemResult], temperature: float | None, top_p: float | None, logprobs: bool
) -> tuple[int, dict[str, int]]:
    """(calls with any setting not honoured, calls per setting) of one judge's rows."""
    per_setting: Counter[str] = Counter()
    calls = 0
    for kind, times in Rows.of(rows).counted():
        for call in kind.calls:
            found = unhonoured_settings(call, temperature, top_p, logprobs)
            calls += times * bool(found)
            per_setting.update({setting: times for setting in found})
    return calls, dict(per_setting)


def not_honoured_note(calls: int, per_setting: dict[str, int], configured: dict[str, object]) -> str | None:
    """The one line saying which settings sent the replies show were not honoured (None: all were, as far as seen)."""
    if not calls:
        return None
    settings = ", ".join(
        f"judge.{name}={str(configured.get(name)).lower()} ({n} calls)" for name, n in per_setting.items()
    )
    return (
        f"{calls} replies show settings that were sent but not honoured: {settings}; the replies come from a reasoning "
        "model (reasoning tokens, or its name), which samples at its own temperature and gives no log-probabilities "
        "(a gateway may drop such settings silently, e.g. LiteLLM's drop_params); provenance.json lists them under "
        "settings_not_honoured: set them to null for this model"
    )
