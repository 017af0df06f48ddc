"""Settings the schema's types cannot check (ranges, names, templates), all checked here before anything runs.

Closed choices (cache mode, labels, parser, progress, strategy) are enums in the schema and fail when
the config is composed; this module checks the values within a type that would fail mid-run or mean something
the user did not intend, and `judge.backend` against the kinds declared here (a kind of one's own is registered
with its capabilities, so the choice is open).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from judgebias.config.schema import (
    BatchSettings,
    CacheMode,
    Config,
    EndpointSettings,
    JudgeApi,
    JudgeConfig,
    JudgeMode,
    ProgressMode,
    ReplaySettings,
    RubricConfig,
    ScriptedSettings,
    SharedSettings,
    Strategy,
    TokenBudgetParam,
    judges_of,
)
from judgebias.core.bounds import RESAMPLES, SEED
from judgebias.core.errors import SecretInConfig, UserError
from judgebias.core.fields import mapping_problem
from judgebias.core.models import is_reasoning_model as is_reasoning_name
from judgebias.core.prompt import unknown_placeholders
from judgebias.core.record import DETERMINISTIC_OUTCOMES
from judgebias.core.redaction import looks_like_secret

REASKABLE = (*DETERMINISTIC_OUTCOMES, "foreign")  # cache.reask values: cached outcomes, and foreign replies
ENV_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MIN_QUOTA_PER_MINUTE = 1 / 1440  # a client-side quota must let at least one request (or token) through a day


def non_finite(node: Any, prefix: str = "") -> tuple[str, float] | None:
    """The first setting (dotted key, value) holding NaN or an infinity, in a config's dataclasses, maps and lists."""
    if isinstance(node, float):
        return None if math.isfinite(node) else (prefix.rstrip("."), node)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        items: Any = ((field.name, getattr(node, field.name)) for field in dataclasses.fields(node))
    elif isinstance(node, dict):
        items = node.items()
    elif isinstance(node, list | tuple):
        items = enumerate(node)
    else:
        return None
    for name, value in items:
        found = non_finite(value, f"{prefix}{name}.")
        if found:
            return found
    return None


def check_settings(config: Config) -> None:
    """Raise a UserError naming the first setting out of range, and the fix."""
    odd = non_finite(config)
    if odd:
        raise UserError(f"{odd[0]}={odd[1]} is not a number a run can use: give a finite value")
    if config.max_concurrency < 1:
        raise UserError(f"max_concurrency={config.max_concurrency} must be at least 1 (default 16)")
    for name, value, bound in (
        ("bootstrap.seed", config.bootstrap.seed, SEED),
        ("bootstrap.resamples", config.bootstrap.resamples, RESAMPLES),
    ):
        if bound.problem(value):
            raise UserError(f"{name}={value} must be from {bound.low} to {bound.high:,}: {bound.hint.strip('()')}")
    if config.calibration.min_labels < 2:
        raise UserError(
            f"calibration.min_labels={config.calibration.min_labels} must be at least 2 (default 10): an interval "
            "needs at least two labels"
        )
    if config.max_cost_usd is not None and not config.max_cost_usd > 0:
        raise UserError(f"max_cost_usd={config.max_cost_usd} must be more than 0 (or null for no cap)")
    if config.max_tokens_total is not None and config.max_tokens_total < 1:
        raise UserError(f"max_tokens_total={config.max_tokens_total} must be at least 1 (or null for no cap)")
    if config.max_cost_usd is not None or config.max_tokens_total is not None:
        for judge in judges_of(config).values():
            check_cap(judge, config.max_cost_usd, config.max_tokens_total)
    if config.progress not in set(ProgressMode):
        raise UserError(f"progress={config.progress!r}: use auto, on or off")
    for template in (config.rubric.system, config.rubric.user):
        unknown = unknown_placeholders(template)
        if unknown:
            raise UserError(f"rubric {config.rubric.name!r} uses unknown placeholder {{{unknown[0]}}}")
    if config.rubric.min_reply_tokens is not None and config.rubric.min_reply_tokens < 1:
        raise UserError(f"rubric.min_reply_tokens={config.rubric.min_reply_tokens} must be at least 1 (or null)")
    data = config.data
    mapping = mapping_problem(data.fields or {}, data.labels or {})
    if mapping:
        raise UserError(mapping)
    if data.limit is not None and data.limit < 1:
        raise UserError(f"data.limit={data.limit} must be at least 1 (or null for all items)")
    truncate = data.normalize.truncate_words
    if truncate is not None and truncate < 1:
        raise UserError(f"data.normalize.truncate_words={truncate} must be at least 1 (or null)")
    tokens = data.normalize.truncate_tokens
    if tokens is not None and tokens < 1:
        raise UserError(f"data.normalize.truncate_tokens={tokens} must be at least 1 (or null)")
    if tokens is not None and truncate is not None:
        raise UserError(
            "data.normalize.truncate_words and data.normalize.truncate_tokens are both set: cut by one "
            "(truncate_tokens counts with data.normalize.tokenizer, which may be words)"
        )
    for judge in judges_of(config).values():
        check_judge(judge)
        check_batch(judge, config.cache.mode)
        check_reply_room(judge, config.rubric)
    unknown_reask = [value for value in config.cache.reask if value not in REASKABLE]
    if unknown_reask:
        raise UserError(
            f"cache.reask={unknown_reask[0]!r} is not a cached outcome: use any of {', '.join(REASKABLE)} "
            "(e.g. cache.reask=[refusal,foreign])"
        )
    if not is_variable_name(config.cache.url_env):
        # Most likely the URL itself, password and all: never echo it, and let the caller scrub it from the dumps.
        raise SecretInConfig(
            "cache.url_env takes the NAME of an environment variable (e.g. JUDGEBIAS_REDIS_URL) that holds the "
            "Redis URL, not the URL itself; the value was removed from this run's saved config",
            config.cache.url_env,
        )


def is_variable_name(value: str) -> bool:
    """Whether `value` can be the name of an environment variable and does not have the shape of a key itself
    (Azure's 32 hex digits and Google's `AIza...` keys are valid names too)."""
    return bool(ENV_VAR_NAME.fullmatch(value)) and not looks_like_secret(value)


def check_judge(judge: SharedSettings) -> None:
    """The settings one judge's backend reads (the shared ones and its own group's) in range; a key it does not
    read is said at the start instead (unread_settings)."""
    capabilities = capabilities_of(judge)
    read = {f.name: getattr(judge, f.name) for f in dataclasses.fields(capabilities.group)}
    odd = non_finite(read)
    if odd:
        raise UserError(
            f"judge {judge.name!r}: judge.{odd[0]}={odd[1]} is not a number a run can use: give a finite value"
        )
    if not 1 <= judge.samples <= MAX_SAMPLES:
        raise UserError(
            f"judge {judge.name!r}: judge.samples={judge.samples} must be from 1 (default) to {MAX_SAMPLES}: each "
            f"item is asked 2 x samples times, and {MAX_SAMPLES} already measures repetition stability to a point"
        )
    for key in ("price_input_per_mtok", "price_output_per_mtok", "price_cached_input_per_mtok"):
        if (read.get(key) or 0) < 0:
            raise UserError(f"judge {judge.name!r}: judge.{key}={read[key]} must be 0 or more (USD per million tokens)")
    if capabilities.check is not None:
        capabilities.check(judge)


def _check_scripted(judge: ScriptedSettings) -> None:
    """A scripted judge's rule and its biases."""
    if judge.strategy not in set(Strategy):
        raise UserError(
            f"judge {judge.name!r}: judge.strategy={judge.strategy!r} is not a scripted strategy "
            "(use always_a, longer, noisy or formatted)"
        )
    if not 0.0 <= judge.first_bias <= 1.0:
        raise UserError(f"judge {judge.name!r}: judge.first_bias={judge.first_bias} must be within [0, 1]")
    if not 0.0 <= judge.style_bias <= 1.0:
        raise UserError(f"judge {judge.name!r}: judge.style_bias={judge.style_bias} must be within [0, 1]")


MAX_SAMPLES = 100  # judge.samples above this is refused: 2 x samples calls per item, and no figure needs more


def check_cap(judge: EndpointSettings, max_cost_usd: float | None, max_tokens_total: int | None) -> None:
    """A spending cap must be able to bind: every call of a live judge needs a bound (judge.max_tokens) and, for a
    cost cap, a price; without them a cap would let everything through with no word."""
    if not capabilities_of(judge).paid:
        return
    cap = f"max_cost_usd={max_cost_usd:g}" if max_cost_usd is not None else f"max_tokens_total={max_tokens_total}"
    if judge.max_tokens is None:
        raise UserError(
            f"judge {judge.name!r}: {cap} needs judge.max_tokens (a reply without a limit has no worst case, so no "
            "cap can bind): set judge.max_tokens=..."
        )
    if max_cost_usd is not None and judge.price_input_per_mtok == 0 and judge.price_output_per_mtok == 0:
        raise UserError(
            f"judge {judge.name!r}: max_cost_usd={max_cost_usd:g} with no price for {judge.model!r} (both prices are "
            "0), so no call would count against it: set judge.price_input_per_mtok and judge.price_output_per_mtok "
            "(USD per million tokens), or cap tokens with max_tokens_total"
        )


def price_notes(judge: EndpointSettings) -> list[str]:
    """A preset's prices used for another model (`judge=gpt4o judge.model=gpt-4.5-preview`): said, since the cost and
    the cap then count at prices that are not that model's. A dated snapshot of the model is the model."""
    priced = judge.priced_for
    if priced is None or judge.model is None or judge.model == priced or judge.model.startswith(priced + "-"):
        return []
    return [
        f"judge {judge.name!r}: judge.model={judge.model} is counted at the prices of {priced} (the preset's: "
        f"{judge.price_input_per_mtok:g} / {judge.price_output_per_mtok:g} USD per million tokens in / out); set "
        f"judge.price_input_per_mtok, judge.price_output_per_mtok, judge.price_cached_input_per_mtok and "
        f"judge.priced_for={judge.model} for its own"
    ]


def check_reply_room(judge: EndpointSettings, rubric: RubricConfig) -> None:
    """A live judge's reply budget must fit the rubric's answer format: a cut reply carries no verdict, so every
    call would be paid for and come back unreadable."""
    need = rubric.min_reply_tokens
    if not capabilities_of(judge).counts_tokens or judge.api != JudgeApi.chat or need is None:
        return
    if judge.max_tokens is not None and judge.max_tokens < need:
        raise UserError(
            f"judge {judge.name!r}: judge.max_tokens={judge.max_tokens} is too few for rubric={rubric.name}, whose "
            f"reply is an explanation and then the verdict (at least {need} tokens): every reply would be cut before "
            f"its verdict; give it room with judge.max_tokens=512 (or choose a rubric whose reply is a bare label, "
            "such as rubric=default)"
        )


def check_batch(judge: BatchSettings, cache_mode: CacheMode) -> None:
    """Batch modes need a judge whose replies are cached, and numbers in range."""
    if judge.mode == JudgeMode.live:
        return
    where = f"judge {judge.name!r}: judge.mode={judge.mode}"
    if not capabilities_of(judge).batches:
        batching = ", ".join(kind for kind, can in CAPABILITIES.items() if can.batches)
        raise UserError(f"{where} needs a backend that sends batches ({batching}), not backend={judge.backend}")
    if not (cache_mode.writes and cache_mode.sends):
        raise UserError(f"{where} fills the cache, so it needs cache.mode=use or refresh (not {cache_mode})")
    if judge.batch_size < 1 or judge.batch_poll_seconds <= 0:
        raise UserError(f"{where}: judge.batch_size must be >= 1 and judge.batch_poll_seconds > 0")
    if not 0.0 <= judge.batch_discount <= 1.0:
        raise UserError(f"{where}: judge.batch_discount={judge.batch_discount} must be within [0, 1] (0.5: half price)")
    if judge.mode == JudgeMode["import"] and not judge.batch_file:
        raise UserError(f"{where} needs judge.batch_file=PATH (the batch's output file)")


def _check_openai(judge: BatchSettings) -> None:
    """Numbers an HTTP judge needs in range: a negative backoff or quota would fail mid-run or silently mean none."""
    if not judge.model:
        raise UserError(f"judge {judge.name!r} needs judge.model (the model id the endpoint serves)")
    if judge.max_retries < 0 or judge.timeout <= 0:
        raise UserError(f"judge {judge.name!r}: judge.max_retries must be >= 0 and judge.timeout > 0")
    for key, seconds in (("retry_backoff", judge.retry_backoff), ("retry_backoff_max", judge.retry_backoff_max)):
        if seconds < 0:
            raise UserError(f"judge {judge.name!r}: judge.{key}={seconds} must be >= 0 (seconds)")
    for key, quota in (
        ("requests_per_minute", judge.requests_per_minute),
        ("tokens_per_minute", judge.tokens_per_minute),
    ):
        if quota is not None and quota < MIN_QUOTA_PER_MINUTE:
            raise UserError(
                f"judge {judge.name!r}: judge.{key}={quota} must be at least {MIN_QUOTA_PER_MINUTE:.6f} (one a day), "
                "or null for no client-side limit"
            )
    if judge.max_tokens is not None and judge.max_tokens < 1:
        raise UserError(f"judge {judge.name!r}: judge.max_tokens={judge.max_tokens} must be at least 1 (or null)")
    if judge.api == JudgeApi.completions and judge.mode != JudgeMode.live:
        raise UserError(
            f"judge {judge.name!r}: judge.api=completions is asked live only (batches hold chat calls): "
            "set judge.mode=live, or judge.api=chat"
        )
    if judge.max_wait < 0:
        raise UserError(f"judge {judge.name!r}: judge.max_wait={judge.max_wait} must be >= 0 (seconds)")
    for header, variable in judge.extra_headers.items():
        if not is_variable_name(str(variable)):
            raise SecretInConfig(
                f"judge {judge.name!r}: judge.extra_headers.{header} takes the NAME of an environment variable "
                "holding the header's value, not the value itself; the value was removed from this run's saved config",
                str(variable),
            )
    _check_reasoning(judge)
    if judge.api_key_env is not None and not is_variable_name(judge.api_key_env):
        # Most likely the key itself: never echo it, and let the caller scrub it from Hydra's config dumps.
        raise SecretInConfig(
            f"judge {judge.name!r}: judge.api_key_env takes the NAME of an environment variable (e.g. "
            "OPENAI_API_KEY), not the key itself; the value was removed from this run's saved config",
            judge.api_key_env,
        )


def is_reasoning_model(judge: EndpointSettings) -> bool:
    """A judge named as OpenAI's reasoning models (o-series, gpt-5 family), which refuse sampling settings."""
    return is_reasoning_name(judge.model)


def _check_reasoning(judge: EndpointSettings) -> None:
    """What OpenAI's reasoning models answer 400 to, caught before the first call instead of mid-run."""
    if not is_reasoning_model(judge):
        return
    refused = [
        f"judge.{key}={value}"
        for key, value, allowed in (
            ("temperature", judge.temperature, (None, 1, 1.0)),
            ("top_p", judge.top_p, (None, 1, 1.0)),
            ("logprobs", judge.logprobs, (False,)),
            ("max_tokens_param", str(judge.max_tokens_param), (TokenBudgetParam.max_completion_tokens,)),
        )
        if value not in allowed
    ]
    if refused:
        raise UserError(
            f"judge {judge.name!r} ({judge.model}) is a reasoning model, which refuses {', '.join(refused)}: set "
            "judge.temperature=null judge.top_p=null judge.logprobs=false judge.max_tokens_param=max_completion_tokens "
            "(as the gpt5, gpt5_mini and o4_mini presets do)"
        )


@dataclass(frozen=True)
class Capabilities:
    """What a kind of backend can do, which the checks ask instead of its name: a provider of one's own, declared
    with its capabilities, gets the spending-cap, reply-room and batch checks it needs, and runs its own checks."""

    paid: bool = False  # its calls cost money: a spending cap must be able to bind on every one
    counts_tokens: bool = False  # judge.max_tokens is its reply's token budget: the rubric's reply must fit in it
    batches: bool = False  # it has a batch transport: judge.mode=batch, export and import can go through it
    # it answers every item on this machine by a rule, at once (no call waits, costs or is left out): a run of only
    # such judges is cut into parts on every core and its data checked as it is judged
    by_rule: bool = False
    # its own settings' checks (names, ranges), handed the judge's settings: its group's, with the shared ones
    check: Callable[[Any], None] | None = None
    group: type[SharedSettings] = SharedSettings  # the settings it reads: the shared ones and its own group's


# Every backend kind, with what it can do and its own settings (backends.register_backend adds one, with its
# factory).
CAPABILITIES: dict[str, Capabilities] = {
    "openai": Capabilities(paid=True, counts_tokens=True, batches=True, check=_check_openai, group=BatchSettings),
    "scripted": Capabilities(by_rule=True, check=_check_scripted, group=ScriptedSettings),
    "replay": Capabilities(group=ReplaySettings),
}


def unread_settings(judge: JudgeConfig) -> list[str]:
    """Settings given a value (other than the default) that the judge's backend does not read: said at the start
    (a sweep's override may be meant for its other judges), never silently dropped."""
    own = {f.name for f in dataclasses.fields(capabilities_of(judge).group)}
    defaults = JudgeConfig(backend=judge.backend, name=judge.name)
    unread = [
        f"judge.{f.name}={getattr(judge, f.name)}"
        for f in dataclasses.fields(judge)
        if f.name not in own and getattr(judge, f.name) != getattr(defaults, f.name)
    ]
    if not unread:
        return []
    return [
        f"judge {judge.name!r} (backend={judge.backend}) does not read {', '.join(unread)}: it changes nothing here"
    ]


def capabilities_of(judge: SharedSettings) -> Capabilities:
    """The capabilities of the judge's backend; a name no backend is declared under is one line."""
    found = CAPABILITIES.get(str(judge.backend))
    if found is None:
        raise UserError(
            f"judge.backend={judge.backend!r} is not a backend: use one of {', '.join(CAPABILITIES)} (or a kind "
            "registered with judgebias.backends.register_backend)"
        )
    return found
