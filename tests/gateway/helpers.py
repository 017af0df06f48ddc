"""Helpers of the gateway tests: the LiteLLM proxy's program, keys and config, and a small dataset."""

from __future__ import annotations

import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from judgebias.devserver.server import RunningServer
from tests.helpers import free_port, stop_process, write_items
from tests.reliability.helpers import pairs

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
    primary: RunningServer  # judge-fb's own deployment (primary-model)
    backup: RunningServer  # the fallback's deployment (backup-model), a judge that decides otherwise


PRIMARY_500 = 0.3  # the share of judge-fb's requests its primary answers 500 while failing


def deployment_entry(name: str, model: str, base: str, extra: str = "") -> str:
    """One model_list entry of a proxy config: the group `name` served by `model` at `base` (`extra`: more of its
    litellm_params, indented as they are)."""
    return (
        f"  - model_name: {name}\n    litellm_params:\n      model: {model}\n"
        f"      api_base: {base}\n      api_key: upstream-key\n{extra}"
    )


@contextmanager
def own_proxy(tmp_path_factory: pytest.TempPathFactory, name: str, config: str) -> Iterator[str]:
    """A LiteLLM proxy of a test module's own with `config` (the master key is added): its /v1 URL, stopped after;
    the module skips, naming it, when the proxy is not installed."""
    if not LITELLM.exists():
        pytest.skip(f"LiteLLM proxy not installed at {LITELLM}: run `make litellm`")
    folder = tmp_path_factory.mktemp(name)
    (folder / "config.yaml").write_text(f"{config}general_settings:\n  master_key: {MASTER_KEY}\n", encoding="utf-8")
    url, proxy, _ = launch_proxy(folder)
    try:
        yield url
    finally:
        stop_process(proxy, timeout=20)


def litellm_config(upstream: str, primary: str, backup: str, down: str) -> str:
    """The proxy's config: plain, rpm-limited, o-series and mock models; a fallback group and a load-balanced alias."""

    def deployment(name: str, model: str, extra: str = "", base: str = upstream) -> str:
        return deployment_entry(name, model, base, extra)

    return (
        "model_list:\n"
        + deployment("judge", "openai/judgebias-dev")
        + deployment("judge-limited", "openai/judgebias-dev", f"      rpm: {LIMITED_RPM}\n")
        + deployment("o4-mini", "openai/o4-mini")
        + deployment("judge-dropped", "openai/o4-mini", "      drop_params: true\n")
        + "  - model_name: mock\n    litellm_params:\n      model: openai/mock\n      mock_response: A\n"
        + deployment("judge-fb", "openai/primary-model", base=primary)
        + deployment("judge-backup", "openai/backup-model", base=backup)
        + deployment("judge-down", "openai/primary-model", base=down)
        + deployment("judge-lb", "openai/model-x")
        + deployment("judge-lb", "openai/model-y")
        + deployment("judge-regions", "openai/gpt4o-eastus")  # one model served under two deployment names
        + deployment("judge-regions", "openai/gpt4o-westus")
        + deployment("judge-snap", "openai/gpt-4o")  # a model and its dated snapshot behind one alias
        + deployment("judge-snap", "openai/gpt-4o-2024-08-06")
        + deployment("gpt-4o", "openai/gpt-4o")  # a real model's name, shadowed by the alias below
        + deployment("judge-big", "openai/big-model")
        + f"general_settings:\n  master_key: {MASTER_KEY}\n"
        + "litellm_settings:\n  num_retries: 0\n"
        + "router_settings:\n  routing_strategy: usage-based-routing-v2\n  disable_cooldowns: true\n"
        + '  fallbacks: [{"judge-fb": ["judge-backup"]}, {"judge-down": ["judge-backup"]}]\n'
        + '  model_group_alias: {"gpt-4o": "judge-big"}\n'
    )


def launch_proxy(folder: Path) -> tuple[str, subprocess.Popen[bytes], Path]:
    """LiteLLM's proxy on a free port of 127.0.0.1 with folder/config.yaml, once it answers: (its /v1 URL, the
    process, its log). A proxy that exits or does not start in time fails the test naming the log."""
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
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if proxy.poll() is not None:
            pytest.fail(f"the LiteLLM proxy exited with {proxy.returncode}; see {log}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health/liveliness", timeout=2):
                return f"http://127.0.0.1:{port}/v1", proxy, log
        except OSError:
            if time.monotonic() > deadline:
                stop_process(proxy, timeout=20)
                pytest.fail(f"the LiteLLM proxy did not start within {START_TIMEOUT:.0f}s; see {log}")
            time.sleep(0.5)
