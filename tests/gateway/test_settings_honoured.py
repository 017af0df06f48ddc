"""Settings a reply shows were not honoured (a gateway dropping them before a reasoning model) are said, not hidden."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from judgebias.devserver.server import RunningServer
from tests.gateway.helpers import KEY_ENV, MASTER_KEY, Gateway, dataset
from tests.gateway.test_litellm import through
from tests.reliability.helpers import run_here

StartServer = Callable[..., RunningServer]
CALLS = 2 * 4


def judged(judge: RunningServer, tmp_path: Path, model: str, *more: str, name: str = "run") -> Any:
    """One in-process run of the `local` judge at `judge` naming `model` (cache in tmp_path/cache); its summary."""
    return run_here(
        tmp_path / name,
        "judge=local",
        f"judge.model={model}",
        f"judge.base_url={judge.url}",
        "judge.api_key_env=null",
        "judge.max_tokens=2000",
        "judge.logprobs=true",
        dataset(tmp_path, CALLS // 2),
        f"cache.dir={tmp_path / 'cache'}",
        "bootstrap.resamples=0",
        "report=false",
        "progress=off",
        *more,
    )


def test_a_dropped_temperature_and_logprobs_are_counted_noted_and_not_claimed_as_honoured(
    server: StartServer, tmp_path: Path
) -> None:
    """A gateway alias for a reasoning model that drops temperature and logprobs: the reasoning tokens give it away."""
    judge = server(reasoning_models=("judge",), drop_params=True)
    summary = judged(judge, tmp_path, "judge")
    rerun = judged(judge, tmp_path, "judge", name="rerun")  # from the cache: the reasoning tokens were kept
    expected = (CALLS, {"temperature": CALLS, "logprobs": CALLS})
    assert expected == (summary["calls_settings_not_honoured"], summary["settings_not_honoured"])
    assert expected == (rerun["calls_settings_not_honoured"], rerun["settings_not_honoured"])
    assert CALLS == rerun["calls_cached"]
    (note,) = [line for line in summary["notes"] if "not honoured" in line]
    assert "judge.temperature=0.0 (8 calls)" in note and "judge.logprobs=true (8 calls)" in note
    provenance = json.loads((tmp_path / "run" / "provenance.json").read_text(encoding="utf-8"))
    assert expected[1] == provenance["settings_not_honoured"]


def test_a_model_that_honours_its_settings_is_not_flagged(server: StartServer, tmp_path: Path) -> None:
    """An ordinary model at temperature 0 with logprobs: nothing is counted, noted or listed."""
    judge = server()
    summary = judged(judge, tmp_path, "local-model")
    assert (0, {}) == (summary["calls_settings_not_honoured"], summary["settings_not_honoured"])
    assert not [line for line in summary["notes"] if "not honoured" in line]
    provenance = json.loads((tmp_path / "run" / "provenance.json").read_text(encoding="utf-8"))
    assert {} == provenance["settings_not_honoured"]


@pytest.mark.gateway
def test_litellm_drop_params_is_caught_by_the_replies_reasoning_tokens(
    gateway: Gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the real proxy, drop_params drops temperature=0 for an o-series deployment without a word; the
    replies' reasoning tokens are what show it, and the run says so."""
    monkeypatch.setenv(KEY_ENV, MASTER_KEY)
    overrides = through(gateway, "judge-dropped", dataset(tmp_path, CALLS // 2), f"cache.dir={tmp_path / 'c'}")
    summary = run_here(tmp_path / "run", *overrides, "judge.max_tokens=2000")
    assert (0, CALLS, {"temperature": CALLS}) == (
        summary["failed_calls"],
        summary["calls_settings_not_honoured"],
        summary["settings_not_honoured"],
    )
    assert [line for line in summary["notes"] if "judge.temperature=0.0 (8 calls)" in line]
