"""Settings the schema's types cannot check (ranges, names, templates), all checked here before anything runs.

Closed choices (backend, cache mode, labels, parser, progress, strategy) are enums in the schema and fail when
the config is composed; this module checks the values within a type that would fail mid-run or mean something
the user did not intend.
"""

from __future__ import annotations

import re

from judgebias.config import BackendKind, Config, JudgeConfig, ProgressMode, Strategy, judges_of
from judgebias.errors import SecretInConfig, UserError
from judgebias.prompt import unknown_placeholders

ENV_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_settings(config: Config) -> None:
    """Raise a UserError naming the first setting out of range, and the fix."""
    if config.max_concurrency < 1:
        raise UserError(f"max_concurrency={config.max_concurrency} must be at least 1 (default 16)")
    if config.bootstrap.resamples < 0:
        raise UserError(f"bootstrap.resamples={config.bootstrap.resamples} must be 0 (no intervals) or more")
    if config.progress not in set(ProgressMode):
        raise UserError(f"progress={config.progress!r}: use auto, on or off")
    for template in (config.rubric.system, config.rubric.user):
        unknown = unknown_placeholders(template)
        if unknown:
            raise UserError(f"rubric {config.rubric.name!r} uses unknown placeholder {{{unknown[0]}}}")
    data = config.data
    if data.limit is not None and data.limit < 1:
        raise UserError(f"data.limit={data.limit} must be at least 1 (or null for all items)")
    truncate = data.normalize.truncate_words
    if truncate is not None and truncate < 1:
        raise UserError(f"data.normalize.truncate_words={truncate} must be at least 1 (or null)")
    for judge in judges_of(config).values():
        check_judge(judge)


def check_judge(judge: JudgeConfig) -> None:
    """The settings one judge's backend needs in range."""
    if judge.backend == BackendKind.openai:
        _check_openai(judge)
    elif judge.backend == BackendKind.scripted:
        if judge.strategy not in set(Strategy):
            raise UserError(
                f"judge {judge.name!r}: judge.strategy={judge.strategy!r} is not a scripted strategy "
                "(use always_a, longer, noisy or formatted)"
            )
        if not 0.0 <= judge.first_bias <= 1.0:
            raise UserError(f"judge {judge.name!r}: judge.first_bias={judge.first_bias} must be within [0, 1]")
        if not 0.0 <= judge.style_bias <= 1.0:
            raise UserError(f"judge {judge.name!r}: judge.style_bias={judge.style_bias} must be within [0, 1]")


def _check_openai(judge: JudgeConfig) -> None:
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
        if quota is not None and quota <= 0:
            raise UserError(f"judge {judge.name!r}: judge.{key}={quota} must be > 0, or null for no client-side limit")
    if judge.max_tokens < 1:
        raise UserError(f"judge {judge.name!r}: judge.max_tokens={judge.max_tokens} must be at least 1")
    if judge.api_key_env is not None and not ENV_VAR_NAME.fullmatch(judge.api_key_env):
        # Most likely the key itself: never echo it, and let the caller scrub it from Hydra's config dumps.
        raise SecretInConfig(
            f"judge {judge.name!r}: judge.api_key_env takes the NAME of an environment variable (e.g. "
            "OPENAI_API_KEY), not the key itself; the value was removed from this run's saved config",
            judge.api_key_env,
        )
