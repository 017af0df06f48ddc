"""Through a real LiteLLM proxy with its response cache on: replies it serves from its cache are a source of their
own (calls_gateway_cached, answered_by "unknown (gateway cache)"), never credited to the deployment the router
names on the hit, and repeated samples it serves from its cache make repetition stability not identifiable."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from judgebias.devserver.server import RunningServer, ServerOptions, start_server
from tests.gateway.helpers import KEY_ENV, MASTER_KEY, dataset, deployment_entry, own_proxy
from tests.reliability.helpers import run_here

pytestmark = pytest.mark.gateway

ITEMS = 6


@pytest.fixture(scope="module")
def caching_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, RunningServer]]:
    """A proxy of its own with LiteLLM's in-memory response cache on, in front of a dev server: (URL, upstream)."""
    upstream = start_server(ServerOptions(policy="hash", first_bias=0.3))  # answers as any model it is asked for
    config = (
        "model_list:\n"
        + deployment_entry("judge", "openai/model-x", upstream.url)
        + deployment_entry("judge", "openai/model-y", upstream.url)
        + "litellm_settings:\n  num_retries: 0\n  cache: true\n  cache_params:\n    type: local\n"
        + "router_settings:\n  routing_strategy: usage-based-routing-v2\n"
    )
    try:
        with own_proxy(tmp_path_factory, "litellm-cache", config) as url:
            yield url, upstream
    finally:
        upstream.stop()


def judged(url: str, tmp_path: Path, name: str, *more: str) -> Any:
    """One in-process run at the caching proxy; its summary."""
    return run_here(
        tmp_path / name, "judge=local", "judge.model=judge", f"judge.base_url={url}", f"judge.api_key_env={KEY_ENV}",
        dataset(tmp_path, ITEMS), f"cache.dir={tmp_path / 'cache'}", "bootstrap.resamples=0", "report=false",
        "progress=off", *more,
    )  # fmt: skip


def test_replies_from_the_gateways_cache_are_counted_apart(
    caching_gateway: tuple[str, RunningServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second run asking again (cache.mode=refresh) is answered by the gateway's cache: the upstream counts no
    new request, and judgebias counts every call as gateway-cached, answered by nobody it can name."""
    url, upstream = caching_gateway
    monkeypatch.setenv(KEY_ENV, MASTER_KEY)
    before = upstream.stats()["completions_ok"]
    first = judged(url, tmp_path, "first")
    middle = upstream.stats()["completions_ok"]
    again = judged(url, tmp_path, "again", "cache.mode=refresh")

    assert 2 * ITEMS == middle - before and middle == upstream.stats()["completions_ok"]
    assert 0 == first.get("calls_gateway_cached", 0)
    # the fresh replies are credited to the deployments that wrote them, as each reply's own origin says (the
    # router may send all of them to one of the two: which one is its choice, not the test's)
    written = Counter(
        json.loads(line)[f"origin{order}"]["deployment"]
        for line in (tmp_path / "first" / "verdicts.jsonl").read_text().splitlines()
        for order in (1, 2)
    )
    assert written == first["answered_by"] and set(written) <= {"openai/model-x", "openai/model-y"}
    # the cached replies are credited to neither model (the router names its pick of this request on a hit)
    assert (2 * ITEMS, {"unknown (gateway cache)": 2 * ITEMS}) == (again["calls_gateway_cached"], again["answered_by"])
    assert any("gateway's response cache" in note for note in again["notes"])


def test_samples_the_gateway_served_from_its_cache_leave_repetition_stability_unidentified(
    caching_gateway: tuple[str, RunningServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """judge.samples=3 at temperature 0.7 without a seed: the gateway answers the repeats from its cache (the upstream
    sees fewer than 3 x 2N requests), so stability would read 1.0; it is reported not identifiable, with why."""
    url, upstream = caching_gateway
    monkeypatch.setenv(KEY_ENV, MASTER_KEY)
    before = upstream.stats()["completions_ok"]
    summary = judged(  # one call at a time: each repeat reaches the gateway after the first is in its cache
        url, tmp_path, "samples", "judge.samples=3", "judge.temperature=0.7", "judge.seed=null", "max_concurrency=1"
    )

    assert upstream.stats()["completions_ok"] - before < 3 * 2 * ITEMS
    assert summary["calls_gateway_cached"] > 0
    assert summary["repetition_stability_order1"] is None and summary["repetition_stability_order2"] is None
    assert "gateway's response cache" in summary["repetition_stability_note"]
