"""A real open-weight judge: llama-cpp-python's server with Gemma 3 270M on 127.0.0.1, shared by the session.

Installed by tools/install-llamacpp.sh (.venv-llamacpp and .models/gemma-3-270m-q4_k_m.gguf; LLAMACPP_VENV and
JUDGEBIAS_GGUF point elsewhere); the tests skip, naming what is missing, when either is absent. A test may stop
the server (to show the cache alone answers); the next test that asks for it starts it again. The server's access
log counts the requests it answered, so a test can say how many reached the model.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import REPO, free_port, stop_process

VENV = Path(os.environ.get("LLAMACPP_VENV", REPO / ".venv-llamacpp"))
MODEL = Path(os.environ.get("JUDGEBIAS_GGUF", REPO / ".models" / "gemma-3-270m-q4_k_m.gguf"))
ALIAS = "gemma-3-270m"
# Small enough that a long answer overflows it with little text, large enough for the shipped rubric on q1's first
# items (under 260 tokens); llama-cpp-python keeps n_ctx x 262,144 vocabulary logits for the logprobs.
N_CTX = 512
# One core for the model and one for the test process and the CLI runs it starts: on 2 busy cores two threads
# waiting on each other evaluate a prompt slower than one (measured: 47-61 s against 67-69 s for four prompts).
THREADS = max(1, min(2, (os.cpu_count() or 1) - 1))
START_TIMEOUT = 180.0  # seconds: loading the model on 2 busy cores


class LlamaServer:
    """llama-cpp-python's OpenAI-compatible server on a fixed port: stopped and started again on the same one."""

    def __init__(self, folder: Path, *options: str) -> None:
        self.port = free_port()
        self.log = folder / "server.log"
        self.options = options  # more of the server's own flags
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The server's /v1 base URL."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        """Start serving and wait until the model is loaded (its /v1/models answers)."""
        command = [
            str(VENV / "bin" / "python"),
            "-m",
            "llama_cpp.server",
            *("--model", str(MODEL), "--model_alias", ALIAS, "--chat_format", "gemma"),
            *("--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(N_CTX), "--n_threads", str(THREADS)),
            *self.options,
        ]
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")} | {"PYTHONUNBUFFERED": "1"}
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=5):
                    return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    tail = self.log.read_text(errors="replace")[-2000:]
                    self.stop()
                    pytest.fail(f"llama.cpp server did not start: {tail}")
                time.sleep(0.5)

    def stop(self) -> None:
        """Stop the server (its port is free afterwards)."""
        if self.process is not None:
            stop_process(self.process, timeout=20)
            self.process = None

    def requests(self, path: str = "/v1/completions") -> int:
        """How many requests to `path` the server has answered so far (from its access log)."""
        return self.log.read_text(errors="replace").count(f'"POST {path} HTTP/1.1"')

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST a JSON body to the server (a direct request, not through judgebias)."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=300) as response:
            reply: dict[str, Any] = json.loads(response.read())
        return reply


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """The real model's server, started once; skipped (naming what is missing) without the venv or the model."""
    installed()
    server = LlamaServer(tmp_path_factory.mktemp("llamacpp"))
    server.start()
    yield server
    server.stop()


def installed() -> None:
    """Skip, naming what is missing, without llama-cpp-python's server or the model."""
    if not (VENV / "bin" / "python").exists():
        pytest.skip(f"llama-cpp-python's server not installed at {VENV}: run tools/install-llamacpp.sh")
    if not MODEL.exists():
        pytest.skip(f"Gemma 3 270M not found at {MODEL}: run tools/install-llamacpp.sh")


@pytest.fixture
def llama(llama_server: LlamaServer) -> LlamaServer:
    """The session's server, started again if a test before stopped it (a restart loads and warms the model anew)."""
    if llama_server.process is None:
        llama_server.start()
    return llama_server


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One reply cache for the whole group, so a later test reuses what an earlier one paid for."""
    return tmp_path_factory.mktemp("realmodel-cache")
