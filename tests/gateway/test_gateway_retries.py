"""Through a real LiteLLM proxy that retries on its own (router num_retries: 3) in front of an upstream that always
fails: the upstream's own count shows the product of the two retry budgets; judgebias says the gateway's retries on
failed calls are unknown (LiteLLM's error responses do not carry them) and that both retried, with the product."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from judgebias.devserver.server import RunningServer, ServerOptions, start_server
from tests.gateway.helpers import KEY_ENV, MASTER_KEY, dataset, deployment_entry, own_proxy
from tests.reliability.helpers import run_here

pytestmark = pytest.mark.gateway

GATEWAY_RETRIES = 3
ITEMS = 2
GATEWAY_TIMEOUT = 1  # seconds the proxy waits for judge-slow's upstream before it answers 408 itself
SLOW_UPSTREAM = 2.5


@pytest.fixture(scope="module")
def retrying_gateway(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, RunningServer, RunningServer]]:
    """A proxy of its own with router retries, in front of a dev server that answers every request 500 (`judge`)
    and one that answers after SLOW_UPSTREAM seconds, past the proxy's own timeout (`judge-slow`)."""
    upstream = start_server(ServerOptions(p500=1.0))
    slow = start_server(ServerOptions(latency=SLOW_UPSTREAM))
    config = (
        "model_list:\n"
        + deployment_entry("judge", "openai/judgebias-dev", upstream.url)
        + deployment_entry("judge-slow", "openai/judgebias-dev", slow.url, f"      timeout: {GATEWAY_TIMEOUT}\n")
        + f"router_settings:\n  num_retries: {GATEWAY_RETRIES}\n  retry_after: 0\n"
    )
    try:
        with own_proxy(tmp_path_factory, "litellm-retries", config) as url:
            yield url, upstream, slow
    finally:
        upstream.stop()
        slow.stop()


def test_retries_of_both_the_client_and_the_gateway_are_said_with_their_product(
    retrying_gateway: tuple[str, RunningServer, RunningServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """judge.max_retries=1 behind num_retries=3: each failing call costs (1 + 1) x (3 + 1) upstream requests by the
    upstream's count; the summary counts the gateway's error responses whose retries are unknown, and says both."""
    url, upstream, _ = retrying_gateway
    monkeypatch.setenv(KEY_ENV, MASTER_KEY)
    before = upstream.stats()["requests"]

    summary = run_here(
        tmp_path / "run", "judge=local", "judge.model=judge", f"judge.base_url={url}", f"judge.api_key_env={KEY_ENV}",
        dataset(tmp_path, ITEMS), f"cache.dir={tmp_path / 'cache'}", "judge.max_retries=1", "judge.retry_backoff=0",
        "bootstrap.resamples=0", "report=false", "progress=off",
    )  # fmt: skip

    calls = 2 * ITEMS
    assert calls * 2 * (GATEWAY_RETRIES + 1) == upstream.stats()["requests"] - before
    assert (calls, calls * 2) == (summary["failed_calls"], summary["gateway_errors_retries_unknown"])
    (note,) = [note for note in summary["notes"] if "the gateway reported" in note]
    assert "retries on failed calls are unknown" in note and "(1 + 1) x (the gateway's retries + 1)" in note


def test_the_gateways_own_timeout_is_a_timeout_that_may_be_billed(
    retrying_gateway: tuple[str, RunningServer, RunningServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LiteLLM's own timeout answers 408 while the upstream goes on and completes the request (its own count): each
    408 is counted in `timeouts`, and the summary says those requests may have been billed twice."""
    url, _, slow = retrying_gateway
    monkeypatch.setenv(KEY_ENV, MASTER_KEY)
    before = slow.stats()["requests"]

    summary = run_here(
        tmp_path / "run", "judge=local", "judge.model=judge-slow", f"judge.base_url={url}",
        f"judge.api_key_env={KEY_ENV}", dataset(tmp_path, 1), f"cache.dir={tmp_path / 'cache'}",
        "judge.max_retries=1", "judge.retry_backoff=0", "max_concurrency=1", "bootstrap.resamples=0",
        "report=false", "progress=off",
    )  # fmt: skip

    sent = slow.stats()["requests"] - before
    assert sent >= 2 and summary["timeouts"] >= 2, (sent, summary["timeouts"], summary.get("notes"))
    assert any("may have been billed twice" in note for note in summary["notes"])
