"""A real LiteLLM proxy on 127.0.0.1 (from .venv-litellm, installed by `make litellm`), shared by the session.

It runs without a database, with a master key, in front of a dev server (a plain model, an rpm-limited one and
an o-series one) and with a `mock_response` model that needs no server at all. For provenance it also has a group
with a fallback to another model (`judge-fb`, its primary a dev server of its own whose 500s can be switched on), a
group whose only deployment is down (`judge-down`, everything answered by the fallback) and a group that balances
load across two models (`judge-lb`).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from judgebias.devserver.server import ServerOptions, start_server
from tests.gateway.helpers import LITELLM, Gateway, launch_proxy, litellm_config
from tests.helpers import free_port, stop_process


@pytest.fixture(scope="session")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """LiteLLM's proxy on a free port in front of a dev server; skipped (naming it) when the proxy is missing."""
    if not LITELLM.exists():
        pytest.skip(f"LiteLLM proxy not installed at {LITELLM}: run `make litellm`")
    folder = tmp_path_factory.mktemp("litellm")
    upstream = start_server(ServerOptions(reasoning_models=("o4-mini",)))
    primary = start_server(ServerOptions(policy="longer"))
    backup = start_server(ServerOptions(policy="first"))
    down = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    (folder / "config.yaml").write_text(litellm_config(upstream.url, primary.url, backup.url, down), encoding="utf-8")
    url, proxy, log = launch_proxy(folder)
    try:
        yield Gateway(url, upstream, log, primary, backup)
    finally:
        stop_process(proxy, timeout=20)
        for server in (upstream, primary, backup):
            server.stop()
