"""A real LiteLLM proxy on 127.0.0.1 (from .venv-litellm, installed by `make litellm`), shared by the session.

It runs without a database, with a master key, in front of a dev server (a plain model, an rpm-limited one and
an o-series one) and with a `mock_response` model that needs no server at all.
"""

from __future__ import annotations

import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from judgebias.devserver.server import RunningServer, ServerOptions, start_server
from tests.conftest import free_port, stop_process, write_items
from tests.reliability.conftest import pairs

REPO = Path(__file__).resolve().parents[2]
LITELLM = REPO / ".venv-litellm" / "bin" / "litellm"
MASTER_KEY = "sk-judgebias-gateway-master"
KEY_ENV = "JUDGEBIAS_GATEWAY_KEY"
LIMITED_RPM = 10
START_TIMEOUT = 240.0  # seconds: the proxy imports a lot, and this machine is shared


def dataset(tmp_path: Path, count: int = 6) -> str:
    """A data.path override for `count` items of a fresh dataset."""
    return f"data.path={write_items(tmp_path / 'items.jsonl', pairs(count))}"


@dataclass
class Gateway:
    """The running proxy and the dev server behind it."""

    url: str
    upstream: RunningServer
    log: Path


def _config(upstream: str) -> str:
    def deployment(name: str, model: str, extra: str = "") -> str:
        return (
            f"  - model_name: {name}\n    litellm_params:\n      model: {model}\n"
            f"      api_base: {upstream}\n      api_key: upstream-key\n{extra}"
        )

    return (
        "model_list:\n"
        + deployment("judge", "openai/judgebias-dev")
        + deployment("judge-limited", "openai/judgebias-dev", f"      rpm: {LIMITED_RPM}\n")
        + deployment("o4-mini", "openai/o4-mini")
        + "  - model_name: mock\n    litellm_params:\n      model: openai/mock\n      mock_response: A\n"
        + f"general_settings:\n  master_key: {MASTER_KEY}\n"
        + "litellm_settings:\n  num_retries: 0\n"
        + "router_settings:\n  routing_strategy: usage-based-routing-v2\n"
    )


@pytest.fixture(scope="session")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """LiteLLM's proxy on a free port in front of a dev server; skipped (naming it) when the proxy is missing."""
    if not LITELLM.exists():
        pytest.skip(f"LiteLLM proxy not installed at {LITELLM}: run `make litellm`")
    folder = tmp_path_factory.mktemp("litellm")
    upstream = start_server(ServerOptions(reasoning_models=("o4-mini",)))
    (folder / "config.yaml").write_text(_config(upstream.url), encoding="utf-8")
    port = free_port()
    log = folder / "proxy.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DATABASE_URL", "LITELLM_"))}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # no network: use the price map shipped in the package
    with log.open("wb") as out:
        proxy = subprocess.Popen(
            [str(LITELLM), "--config", str(folder / "config.yaml"), "--host", "127.0.0.1", "--port", str(port)],
            cwd=folder,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if proxy.poll() is not None:
                pytest.fail(f"the LiteLLM proxy exited with {proxy.returncode}; see {log}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health/liveliness", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"the LiteLLM proxy did not start within {START_TIMEOUT:.0f}s; see {log}")
                time.sleep(0.5)
        yield Gateway(f"http://127.0.0.1:{port}/v1", upstream, log)
    finally:
        stop_process(proxy, timeout=20)
        upstream.stop()
