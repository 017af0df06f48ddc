"""The spending cap behind a real LiteLLM proxy whose own timeout gives up on a slow upstream: the proxy answers 408
while the upstream (tests/reliability/billing_server.py) goes on, answers and bills by its own count. Every 408
may have been billed, so the cap counts each at its bound: the upstream's bill stays within max_cost_usd."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gateway.helpers import KEY_ENV, MASTER_KEY, dataset, deployment_entry, own_proxy
from tests.reliability.billing_server import PRICE_PER_MTOK, Bill, billing_server
from tests.reliability.helpers import run_here

pytestmark = pytest.mark.gateway

GATEWAY_TIMEOUT = 1  # seconds the proxy waits for the upstream before it answers 408 itself
SLOW_UPSTREAM = 1.5  # seconds the upstream takes to answer (and bill) each request
CAP = 1.5  # USD: about three attempts at the upstream's prices; the run could send 2 x ITEMS x (1 + RETRIES)
ITEMS = 4
RETRIES = 2


@pytest.fixture(scope="module")
def timing_out_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Bill]]:
    """A proxy with no retries of its own in front of the billing server, with a timeout shorter than its answer."""
    with billing_server("usage", delay=SLOW_UPSTREAM) as (upstream, bill):
        config = (
            "model_list:\n"
            + deployment_entry("judge-slow", "openai/judgebias-dev", upstream, f"      timeout: {GATEWAY_TIMEOUT}\n")
            + "router_settings:\n  num_retries: 0\n"
        )
        with own_proxy(tmp_path_factory, "litellm-cap", config) as url:
            yield url, bill


def test_the_upstreams_bill_stays_within_the_cap_when_the_gateway_times_out(
    timing_out_gateway: tuple[str, Bill], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every attempt ends in the proxy's 408 and every one is billed upstream: the run stops at the cap, and the
    upstream's own bill, once its last request has finished, is within it."""
    url, bill = timing_out_gateway
    monkeypatch.setenv(KEY_ENV, MASTER_KEY)

    summary = run_here(
        tmp_path / "run", "judge=local", "judge.model=judge-slow", f"judge.base_url={url}",
        f"judge.api_key_env={KEY_ENV}", dataset(tmp_path, ITEMS), f"cache.dir={tmp_path / 'cache'}",
        f"judge.max_retries={RETRIES}", "judge.retry_backoff=0", "max_concurrency=1", "bootstrap.resamples=0",
        f"max_cost_usd={CAP}", f"judge.price_input_per_mtok={PRICE_PER_MTOK}",
        f"judge.price_output_per_mtok={PRICE_PER_MTOK}", "report=false", "progress=off",
    )  # fmt: skip
    time.sleep(SLOW_UPSTREAM + 1)  # the upstream finishes (and bills) what the proxy gave up on

    assert "budget" == summary["status"], summary.get("notes")
    assert 0 < bill.requests < 2 * ITEMS * (1 + RETRIES), bill.requests
    assert bill.billed_usd <= CAP, (bill.requests, bill.billed_usd)
    assert summary["timeouts"] >= 1 and summary["budget"]["used_usd"] <= CAP + 1e-9
