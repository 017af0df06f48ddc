"""Helpers every test folder imports (no fixtures: those are in conftest.py): the shared data, ports, threads, small
HTTP servers, the CLI."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def shared_data_root() -> Path | None:
    """The shared datasets: $JUDGEBIAS_DATA_ROOT, else ../shared/data beside the project."""
    candidates = [os.environ.get("JUDGEBIAS_DATA_ROOT"), str(REPO.parent / "shared" / "data")]
    for candidate in candidates:
        if candidate and (Path(candidate) / "mtbench-human" / "items.jsonl").exists():
            return Path(candidate)
    return None


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on now: the kernel's pick for port 0, released again."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def stop_process(process: subprocess.Popen[Any], timeout: float) -> None:
    """SIGTERM, wait up to `timeout` seconds, then SIGKILL."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def in_threads(work: Callable[[int], None], count: int = 8) -> list[BaseException]:
    """Run work(0) ... work(count - 1) in threads at once and wait for all; what they raised, collected (an exception in
    a thread would not fail the test by itself)."""
    errors: list[BaseException] = []

    def guarded(index: int) -> None:
        try:
            work(index)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=guarded, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


class JsonHandler(BaseHTTPRequestHandler):
    """The base of a test's own small HTTP server: reads request bodies, answers JSON, logs nothing."""

    def request_body(self) -> bytes:
        """The request's body (empty when it has none)."""
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def send_json(self, status: int, payload: Any) -> None:
        """Answer with `payload` as JSON and this HTTP status."""
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test's output shows what it checks, not every request."""


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """A threaded HTTP server with this handler on a free port of 127.0.0.1 for a `with` block; its /v1 URL."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


class Cli:
    """`python -m judgebias.run` in a subprocess, with its own cache and output folders under tmp_path."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.cache_dir = tmp_path / "cache"
        self.runs = 0
        self.env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "HYDRA_FULL_ERROR")}
        root = shared_data_root()
        if root is not None:
            self.env["JUDGEBIAS_DATA_ROOT"] = str(root)

    def __call__(self, *overrides: str, env: dict[str, str] | None = None, timeout: float = 240) -> Result:
        """Run once into a fresh run folder; return exit code, output and the run folder."""
        self.runs += 1
        run_dir = self.tmp_path / f"run{self.runs}"
        multirun = "-m" in overrides
        overrides = tuple(o for o in overrides if o != "-m")
        args = [sys.executable, "-m", "judgebias.run", *(["-m"] if multirun else [])]
        args += [f"cache.dir={self.cache_dir}", f"hydra.{'sweep' if multirun else 'run'}.dir={run_dir}"]
        completed = subprocess.run(
            [*args, *overrides],
            cwd=self.tmp_path,
            env=self.env | (env or {}),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        return Result(completed.returncode, completed.stdout, completed.stderr, run_dir)


class Result:
    """What one CLI run left behind."""

    def __init__(self, code: int, stdout: str, stderr: str, run_dir: Path) -> None:
        self.code, self.stdout, self.stderr, self.run_dir = code, stdout, stderr, run_dir

    def summary(self) -> dict[str, Any]:
        """The run's summary.json."""
        return json.loads((self.run_dir / "summary.json").read_text(encoding="utf-8"))

    def verdicts(self) -> list[dict[str, Any]]:
        """The run's verdicts.jsonl lines."""
        lines = (self.run_dir / "verdicts.jsonl").read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines]

    def __repr__(self) -> str:
        return f"Result(code={self.code}, stdout={self.stdout[-2000:]!r}, stderr={self.stderr[-2000:]!r})"


def write_items(path: Path, items: list[dict[str, Any]]) -> Path:
    """Write a JSONL dataset for a test."""
    path.write_text("".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items), encoding="utf-8")
    return path


def local_judge(server: Any, *more: str) -> tuple[str, ...]:
    """Overrides for the `local` judge at a test server: no key, quick retries, no report, then `more`."""
    return (
        "judge=local",
        f"judge.base_url={server.url}",
        "judge.api_key_env=null",
        "judge.retry_backoff=0.01",
        "report=false",
        *more,
    )
