"""The printed summary's header: the overrides that make a run different, and nothing that is not one."""

from __future__ import annotations

from typing import cast

from judgebias.core.summary import Summary
from judgebias.report.console import changed_settings

SUMMARY = cast(Summary, {"judge": "local", "rubric": "default", "data": "q1"})


def test_group_choices_already_in_the_header_and_hydra_settings_are_left_out() -> None:
    """judge=local is named by the header already and hydra.* settings are not the run's: only the rest shows."""
    overrides = ["judge=local", "rubric.labels=tags", "hydra.run.dir=/tmp/x", "hydra/launcher=joblib", "+x.y=1"]

    assert ["rubric.labels=tags", "+x.y=1"] == changed_settings(SUMMARY, overrides)


def test_a_group_choice_the_header_does_not_name_is_kept() -> None:
    """A second judge added to an ensemble is an override the header must list."""
    assert ["+judge@ensemble.big=gpt4o"] == changed_settings(SUMMARY, ["+judge@ensemble.big=gpt4o"])


def test_a_key_typed_into_an_override_is_not_repeated() -> None:
    """A credential-shaped value in an override is redacted before it is printed."""
    (shown,) = changed_settings(SUMMARY, ["judge.extra_body.token=sk-abcdefghijklmnopqrstu"])

    assert "sk-abcdefghijklmnopqrstu" not in shown
