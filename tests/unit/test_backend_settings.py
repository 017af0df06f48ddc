"""Each judge setting belongs to the settings every backend shares or to one backend's own group; a setting given to
a backend that does not read it is said, never silently dropped."""

from __future__ import annotations

import dataclasses

from judgebias.config.checks import CAPABILITIES, SHARED_SETTINGS, unread_settings
from judgebias.config.schema import BackendKind, JudgeConfig, Strategy


def test_every_judge_setting_is_shared_or_in_a_backends_own_group() -> None:
    """A new field of JudgeConfig must be declared where it belongs (else no note could say it is unread)."""
    declared = SHARED_SETTINGS.union(*(capabilities.settings for capabilities in CAPABILITIES.values()))
    assert {field.name for field in dataclasses.fields(JudgeConfig)} - declared == set()
    groups = [CAPABILITIES[kind].settings for kind in BackendKind]
    assert all(not (a & b) for i, a in enumerate(groups) for b in groups[i + 1 :])  # no key in two groups


def test_a_setting_the_backend_does_not_read_is_named() -> None:
    """A scripted judge given a temperature, an endpoint judge given a scripted bias: each named with its value."""
    scripted = JudgeConfig(backend=BackendKind.scripted, name="noisy", strategy=Strategy.noisy, first_bias=0.2)
    assert [] == unread_settings(scripted)
    assert unread_settings(dataclasses.replace(scripted, temperature=0.5, base_url="http://x")) == [
        "judge 'noisy' (backend=scripted) does not read judge.base_url=http://x, judge.temperature=0.5: it changes "
        "nothing here"
    ]
    live = JudgeConfig(backend=BackendKind.openai, name="gpt", model="m", temperature=0.7, first_bias=0.1)
    assert unread_settings(live) == [
        "judge 'gpt' (backend=openai) does not read judge.first_bias=0.1: it changes nothing here"
    ]
