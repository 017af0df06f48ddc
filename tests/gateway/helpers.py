"""Helpers of the gateway tests: the LiteLLM proxy's program, keys and config, and a small dataset."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from judgebias.devserver.server import RunningServer
from tests.helpers import write_items
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


def litellm_config(upstream: str) -> str:
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
