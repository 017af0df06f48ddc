"""Batch mode behind a gateway: its headers on every batch request, its replies that are not verdicts, its 500s."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from judgebias.core.errors import FatalJudgeError
from judgebias.devserver.batch import BatchOptions
from judgebias.devserver.server import RunningServer
from tests.helpers import write_items
from tests.reliability.helpers import pairs, run_here

ITEMS = 4
CALLS = 2 * ITEMS


StartServer = Callable[..., RunningServer]


def batch_run(server: RunningServer, tmp_path: Path, *more: str, name: str = "run", mode: str = "batch") -> Any:
    """One in-process run of the `local` judge at `server` in batch mode (cache in tmp_path/cache); its summary."""
    data = tmp_path / "items.jsonl"
    if not data.exists():
        data.parent.mkdir(parents=True, exist_ok=True)
        write_items(data, pairs(ITEMS))
    return run_here(
        tmp_path / name,
        "judge=local",
        f"judge.base_url={server.url}",
        "judge.api_key_env=null",
        f"judge.mode={mode}",
        "judge.batch_poll_seconds=0.05",
        "judge.retry_backoff=0.01",
        "judge.retry_backoff_max=0.05",
        "data=jsonl",
        f"data.path={data}",
        f"cache.dir={tmp_path / 'cache'}",
        "bootstrap.resamples=0",
        "report=false",
        "progress=off",
        *more,
    )


def test_the_batch_api_client_sends_judge_extra_headers(
    server: StartServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gateway that authenticates batch requests by header gets judge.extra_headers on uploads and batches."""
    monkeypatch.setenv("JB_TEST_ROUTE", "route-7f3a")
    server = server(policy="hash", required_header=("X-Route", "route-7f3a"))
    summary = batch_run(server, tmp_path, "+judge.extra_headers.X-Route=JB_TEST_ROUTE")
    assert (CALLS, 0) == (summary["calls_batched"], summary["failed_calls"])
    assert (1, 1) == (server.stats()["batch"]["uploads"], server.stats()["batch"]["batches_created"])


@pytest.mark.reliability  # a faulty route, retried by the SDK with its backoff (seconds): out of the quick part
def test_a_gateways_batch_route_answering_500_is_one_line_naming_cause_and_fix(
    server: StartServer, tmp_path: Path
) -> None:
    """LiteLLM without a files backend answers 500 on /v1/files: the run stops with one line saying what to do."""
    server = server(policy="hash", batch=BatchOptions(route_status=500))
    with pytest.raises(FatalJudgeError) as stopped:
        batch_run(server, tmp_path)
    message = str(stopped.value)
    assert "\n" not in message
    assert "HTTP 500" in message and "files_settings" in message and "judge.mode=live" in message
    assert 0 == server.stats()["requests"]  # no live call was made instead


def test_batch_lines_without_a_verdict_that_look_transient_are_not_cached_and_asked_again(
    server: StartServer, tmp_path: Path
) -> None:
    """A batch line whose body has no choices fails its call and is not cached: the rerun's batch asks it again."""
    server = server(policy="hash", batch=BatchOptions(reply_shape="no_choices"))
    first = batch_run(server, tmp_path)
    again = batch_run(server, tmp_path, name="again")
    assert (0, CALLS) == (first["calls_batched"], first["failed_calls"])
    assert (CALLS, 0, 0) == (again["calls_batched"], again["calls_cached"], again["failed_calls"])
    assert 2 * CALLS == server.stats()["batch"]["lines_answered"]


def test_a_batch_naming_the_providers_model_shares_the_cache_with_live_runs_through_the_alias(
    server: StartServer, tmp_path: Path
) -> None:
    """With judge.batch_model, batch lines name the provider's model and the key stays the alias's: either run
    after the other is free, and both are one judge."""
    server = server(policy="hash", allowed_models=("judge-alias",), batch=BatchOptions(models=("provider-model",)))
    alias = ("judge.model=judge-alias", "judge.batch_model=provider-model")
    live = batch_run(server, tmp_path / "a", *alias, mode="live")
    batched_after = batch_run(server, tmp_path / "a", *alias, name="batched")
    assert (0, 0, CALLS) == (batched_after["calls_batched"], server.stats()["batch"]["uploads"], live["calls_live"])
    assert CALLS == batched_after["calls_cached"]

    batched = batch_run(server, tmp_path / "b", *alias)
    requests = server.stats()["requests"]
    live_after = batch_run(server, tmp_path / "b", *alias, mode="live", name="live")
    assert (CALLS, 0) == (batched["calls_batched"], batched["failed_calls"])
    assert (CALLS, requests) == (live_after["calls_cached"], server.stats()["requests"])
    assert {"provider-model": CALLS} == batched["answered_by"]
    assert ["ok"] * 4 == [s["status"] for s in (live, batched_after, batched, live_after)]
