"""Batch then live through one alias of a real LiteLLM proxy (its batch route, `files_settings`, in front of the
dev server's Batch API): the batch's replies name the model from the batch body (`gpt-4o-mini`), the live replies
the deployment from the proxy's headers (`openai/gpt-4o-mini`); one deployment answered every call, by the
upstream's own count, and the run is one judge."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from judgebias import check
from judgebias.devserver.server import RunningServer, ServerOptions, start_server
from tests.gateway.helpers import KEY_ENV, MASTER_KEY, deployment_entry, own_proxy
from tests.helpers import write_items
from tests.reliability.helpers import pairs, run_here

pytestmark = pytest.mark.gateway

ALIAS = "gpt-4o-mini"


@pytest.fixture(scope="module")
def batch_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, RunningServer]]:
    """A proxy whose alias gpt-4o-mini and whose files/batches route both lead to one dev server."""
    upstream = start_server(ServerOptions(policy="hash"))
    config = (
        "model_list:\n"
        + deployment_entry(ALIAS, f"openai/{ALIAS}", upstream.url)
        + f"files_settings:\n  - custom_llm_provider: openai\n    api_base: {upstream.url}\n    api_key: upstream-key\n"
    )
    try:
        with own_proxy(tmp_path_factory, "litellm-batch", config) as url:
            yield url, upstream
    finally:
        upstream.stop()


def test_batch_then_live_through_one_alias_is_one_judge(
    batch_gateway: tuple[str, RunningServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, upstream = batch_gateway
    monkeypatch.setenv(KEY_ENV, MASTER_KEY)
    data = tmp_path / "items.jsonl"
    common = (
        "judge=local", f"judge.model={ALIAS}", f"judge.base_url={url}", f"judge.api_key_env={KEY_ENV}", "data=jsonl",
        f"data.path={data}", f"cache.dir={tmp_path / 'cache'}", "bootstrap.resamples=0", "report=false", "progress=off",
    )  # fmt: skip
    write_items(data, pairs(4))
    batched = run_here(tmp_path / "batch", *common, "judge.mode=batch", "judge.batch_poll_seconds=0.2")
    counted = upstream.stats()
    assert (8, 8, 1, 1) == (
        batched["calls_batched"],
        counted["batch"]["lines_answered"],
        counted["batch"]["uploads"],
        counted["batch"]["batches_created"],
    )
    assert {ALIAS: 8} == batched["answered_by"]  # the batch output names the model of the batch body

    write_items(data, pairs(8))  # four items more: their calls go live through the same alias
    live = run_here(tmp_path / "live", *common)

    assert 8 == upstream.stats()["requests"] - counted["requests"]  # the new items only, by the upstream's count
    assert (8, 8) == (live["calls_cached"], live["calls_live"])
    assert {ALIAS: 8, f"openai/{ALIAS}": 8} == live["answered_by"]
    assert ("ok", False, 1, 0) == (
        live["status"],
        live["mixed_judge"],
        live["models_answering"],
        live["cached_foreign"],
    )
    assert 0 == check.main([str(tmp_path / "live")])
