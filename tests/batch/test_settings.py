"""Batch-mode settings are checked before anything runs, each refusal naming the key and the fix."""

from __future__ import annotations

import pytest

from judgebias.config.checks import check_batch
from judgebias.config.schema import CacheMode, JudgeConfig, JudgeMode
from judgebias.core.errors import UserError


def judge(**changes: object) -> JudgeConfig:
    """An OpenAI-compatible judge in batch mode, with the given changes."""
    config = JudgeConfig(backend="openai", name="j", model="m", mode=JudgeMode.batch)
    for name, value in changes.items():
        setattr(config, name, value)
    return config


@pytest.mark.parametrize(
    ("changes", "cache_mode", "message"),
    [
        ({"backend": "scripted"}, CacheMode.use, "needs a backend that sends batches"),
        ({}, CacheMode.off, "needs cache.mode=use or refresh"),
        ({}, CacheMode.only, "needs cache.mode=use or refresh"),
        ({"batch_size": 0}, CacheMode.use, "judge.batch_size must be >= 1"),
        ({"batch_poll_seconds": 0.0}, CacheMode.use, "judge.batch_poll_seconds > 0"),
        ({"batch_discount": 1.5}, CacheMode.use, "judge.batch_discount=1.5 must be within [0, 1]"),
        ({"mode": JudgeMode["import"]}, CacheMode.use, "needs judge.batch_file=PATH"),
    ],
)
def test_a_batch_setting_out_of_range_is_refused(
    changes: dict[str, object], cache_mode: CacheMode, message: str
) -> None:
    """Each impossible batch setting is a user error naming the key and what it needs."""
    with pytest.raises(UserError, match=message.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        check_batch(judge(**changes), cache_mode)


def test_live_mode_and_a_sound_batch_setting_pass() -> None:
    """A live judge is never checked for batch settings; a sound batch judge passes."""
    check_batch(judge(mode=JudgeMode.live, batch_size=0), CacheMode.off)
    check_batch(judge(), CacheMode.refresh)
