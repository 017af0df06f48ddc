"""judgebias through a real LiteLLM proxy: live runs, free reruns, its rpm limit, o-series mapping, a wrong key."""

from __future__ import annotations

from pathlib import Path

import pytest

from judgebias.core.errors import FatalJudgeError
from tests.gateway.helpers import KEY_ENV, LIMITED_RPM, MASTER_KEY, Gateway, dataset
from tests.helpers import Cli
from tests.reliability.helpers import run_here, verdict_lines

pytestmark = pytest.mark.gateway


def through(gateway: Gateway, model: str, *more: str) -> list[str]:
    """Overrides for the `local` judge at the gateway, as a user would point judgebias at theirs."""
    return [
        "judge=local",
        f"judge.model={model}",
        f"judge.base_url={gateway.url}",
        f"judge.api_key_env={KEY_ENV}",
        "bootstrap.resamples=0",
        "report=false",
        "progress=off",
        *more,
    ]


@pytest.mark.slow
def test_a_live_run_and_a_free_rerun_through_the_gateway(gateway: Gateway, cli: Cli, tmp_path: Path) -> None:
    """A run through LiteLLM judges every call live; the same command again is answered from the cache for free."""
    before = gateway.upstream.stats()["completions_ok"]
    overrides = (*through(gateway, "judge"), dataset(tmp_path, 8))
    live = cli(*overrides, env={KEY_ENV: MASTER_KEY})
    sent = gateway.upstream.stats()["completions_ok"] - before
    rerun = cli(*overrides, env={KEY_ENV: MASTER_KEY})
    first, second = live.summary(), rerun.summary()
    assert (0, 16, 16, 0) == (live.code, first["calls_live"], sent, first["failed_calls"])
    assert (0, 0, 16, 0.0) == (rerun.code, second["calls_live"], second["calls_cached"], second["cost_usd"])
    assert sent == gateway.upstream.stats()["completions_ok"] - before


@pytest.mark.slow
def test_the_gateways_own_rpm_limit_finishes_with_no_failed_call(gateway: Gateway, cli: Cli, tmp_path: Path) -> None:
    """Past LiteLLM's rpm limit, its announced wait (llm_provider-retry-after) is waited out: every call succeeds."""
    calls = LIMITED_RPM + 6
    overrides = (*through(gateway, "judge-limited"), dataset(tmp_path, calls // 2))
    result = cli(*overrides, env={KEY_ENV: MASTER_KEY}, timeout=400)
    summary = result.summary()
    assert (0, 0, calls) == (result.code, summary["failed_calls"], summary["calls_live"])
    assert summary["retries"] > 0  # the limit was really reached
    assert "429" in result.stderr  # and the wait was announced on the terminal as it began


def test_the_o4_mini_preset_runs_through_litellms_o_series_mapping(
    gateway: Gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The o4_mini preset, unchanged but for its endpoint, is accepted by LiteLLM and the reasoning model behind it."""
    monkeypatch.setenv(KEY_ENV, MASTER_KEY)
    summary = run_here(
        tmp_path / "run",
        "judge=o4_mini",
        f"judge.base_url={gateway.url}",
        f"judge.api_key_env={KEY_ENV}",
        "bootstrap.resamples=0",
        "report=false",
        "progress=off",
        dataset(tmp_path, 4),
        f"cache.dir={tmp_path / 'cache'}",
    )
    assert (0, 8, 0) == (summary["failed_calls"], summary["calls_live"], summary["n_invalid"])
    assert "400" not in gateway.upstream.stats()["by_status"]


def test_a_mock_response_model_is_judged_like_any_other(
    gateway: Gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LiteLLM's mock_response model (always "A") reads as a judge that always picks the first-shown answer."""
    monkeypatch.setenv(KEY_ENV, MASTER_KEY)
    run_here(tmp_path / "run", *through(gateway, "mock"), dataset(tmp_path, 4), f"cache.dir={tmp_path / 'c'}")
    assert [("A", "A")] * 4 == [(line["call1"], line["call2"]) for line in verdict_lines(tmp_path / "run")]


@pytest.mark.slow
def test_a_wrong_master_key_is_explained_in_one_line(gateway: Gateway, cli: Cli, tmp_path: Path) -> None:
    """LiteLLM's 400 "No connected db." for a wrong key is one error line with the status once and a key hint."""
    result = cli(*through(gateway, "judge"), dataset(tmp_path, 2), env={KEY_ENV: "sk-not-the-master-key"})
    lines = [line for line in result.stderr.splitlines() if line.startswith("judgebias: error:")]
    assert (2, 1) == (result.code, len(lines))
    assert lines[0].endswith(
        f"HTTP 400 No connected db. (the API key was refused: check the key in ${KEY_ENV} (read from "
        f"judge.api_key_env={KEY_ENV}; export the right key, or point judge.api_key_env at the variable that holds it))"
    )


def test_batch_mode_at_litellm_without_a_files_backend_stops_in_one_line_naming_the_fix(
    gateway: Gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real proxy answers its files route 500 when no files_settings is configured: one line, cause and fix."""
    monkeypatch.setenv(KEY_ENV, MASTER_KEY)
    before = gateway.upstream.stats()["requests"]
    overrides = through(gateway, "judge", dataset(tmp_path, 2), "judge.mode=batch", f"cache.dir={tmp_path / 'c'}")
    with pytest.raises(FatalJudgeError) as stopped:
        run_here(tmp_path / "run", *overrides)
    message = str(stopped.value)
    assert "\n" not in message and "HTTP 500" in message
    assert "files_settings" in message and "judge.mode=live" in message
    assert before == gateway.upstream.stats()["requests"]  # nothing was sent live instead
