"""Shared fixtures: the shared real data, a local OpenAI-compatible server, and the CLI (as a subprocess or in process)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from judgebias.devserver.server import RunningServer, ServerOptions, start_server
from tests.helpers import Cli, InProcessCli, missing_shared_data, shared_data_root


def pytest_configure(config: pytest.Config) -> None:
    """No terminal size for the runs the tests start: pytest-xdist's workers are given COLUMNS=80 and LINES=24,
    and a run fits its printed tables to $COLUMNS (a test that checks the fitting sets it itself)."""
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)


@pytest.fixture
def data_root(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shared real data folder (tests that need it skip with the reason when it is absent), also as
    JUDGEBIAS_DATA_ROOT for the runs the test makes in its own process."""
    root = shared_data_root()
    if root is None:
        pytest.skip(missing_shared_data())
    monkeypatch.setenv("JUDGEBIAS_DATA_ROOT", str(root))
    return root


@pytest.fixture
def server() -> Iterator[Callable[..., RunningServer]]:
    """Start local OpenAI-compatible servers on 127.0.0.1 with the given options; all stopped afterwards."""
    started: list[RunningServer] = []

    def start(**options: Any) -> RunningServer:
        running = start_server(ServerOptions(**options))
        started.append(running)
        return running

    yield start
    for running in started:
        running.stop()


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    """Run the CLI as a user would, isolated from the user's cache and key."""
    return Cli(tmp_path)


@pytest.fixture
def cli_here(tmp_path: Path) -> InProcessCli:
    """The CLI's real entry point in this process, for tests that check what a run writes, not the process itself."""
    return InProcessCli(tmp_path)
