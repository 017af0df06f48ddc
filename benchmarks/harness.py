"""The pieces benchmarks/run.py is built from: the devserver in its own process, synthetic datasets, judgebias and
baseline runs in fresh subprocesses (wall time and peak RSS of each), and the machine's description.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PYTHON = sys.executable
GNU_TIME = shutil.which("time", path="/usr/bin:/bin")  # GNU time, for each run's own peak RSS
MODELS = ("model-alpha", "model-beta", "model-gamma", "model-delta")
WORDS = [
    "the",
    "answer",
    "is",
    "clearly",
    "stated",
    "with",
    "a",
    "short",
    "reason",
    "and",
    "one",
    "example",
    "that",
    "supports",
    "it",
    "while",
    "the",
    "other",
    "misses",
    "a",
    "step",
    "so",
    "the",
    "result",
    "differs",
    "slightly",
    "from",
    "what",
    "was",
    "asked",
    "but",
    "remains",
    "readable",
    "and",
    "polite",
    "overall",
]

MINIMAL_HYDRA_APP = """import hydra
from omegaconf import DictConfig


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> None:
    print(cfg.name, cfg.value)


if __name__ == "__main__":
    main()
"""


@dataclass
class Measured:
    """One subprocess: exit code, wall seconds, peak RSS (KiB) and what it printed."""

    code: int
    seconds: float
    max_rss_kib: int
    stdout: str
    stderr: str
    extra: dict[str, Any] = field(default_factory=dict)


def median(values: Sequence[float]) -> float:
    """The median (the benchmarks' one summary of repeated runs on a noisy machine)."""
    return float(statistics.median(values))


def figure_options(doc: str, resamples: int) -> argparse.Namespace:
    """The --resamples and --seed options of a script that prints figures with intervals; its docstring's first
    line describes it."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=resamples)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def machine() -> dict[str, str]:
    """Date, cores, CPU model and Python version, for the record."""
    model = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "nproc": str(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()),
        "cpu": model,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def tree_rss_kib(pid: int) -> int:
    """The RSS of a process and all its descendants, summed (KiB; 0 once they are gone)."""
    total, waiting = 0, [pid]
    while waiting:
        current = waiting.pop()
        try:
            with open(f"/proc/{current}/status", encoding="ascii", errors="replace") as status:
                total += next((int(line.split()[1]) for line in status if line.startswith("VmRSS:")), 0)
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children", encoding="ascii") as children:
                    waiting += [int(child) for child in children.read().split()]
        except (OSError, ValueError):
            continue  # ended between two reads
    return total


def run_measured(
    args: Sequence[str],
    *,
    log_dir: Path,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 900.0,
    while_running: Callable[[], None] | None = None,
) -> Measured:
    """Run `args` in a fresh process: wall seconds, exit code, output, and the peak RSS of the run's processes.

    The peak RSS of each process comes from GNU time (/usr/bin/time), a small C process between this one and the
    measured one: Linux carries the parent's high-water mark into a forked child's ru_maxrss across exec, so a
    child spawned straight from this (large) process would report at least this process's size. GNU time gives
    the largest single process; a run that judges on several cores has several at once, so their RSS is also
    summed every few milliseconds (pages they share counted in each: an upper bound), and the larger is kept.
    """
    log_dir.mkdir(parents=True, exist_ok=True)
    out_path, err_path, rss_path = log_dir / "stdout.txt", log_dir / "stderr.txt", log_dir / "maxrss.txt"
    command = [GNU_TIME, "-f", "%M", "-o", str(rss_path), *args] if GNU_TIME else list(args)
    with out_path.open("wb") as out, err_path.open("wb") as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=err, env=env, cwd=cwd)
        summed, sampled = 0, 0.0
        while process.poll() is None:
            if time.perf_counter() - started > timeout:
                process.kill()
                process.wait()
                break
            if while_running is not None:
                while_running()
            if time.perf_counter() - sampled >= 0.02:
                sampled = time.perf_counter()
                summed = max(summed, tree_rss_kib(process.pid))
            time.sleep(0.005)
        seconds = time.perf_counter() - started
    rss = 0
    if GNU_TIME and rss_path.exists():
        lines = rss_path.read_text(encoding="utf-8").split()
        rss = int(lines[-1]) if lines and lines[-1].isdigit() else 0
    rss = max(rss, summed)
    return Measured(
        code=process.returncode,
        seconds=seconds,
        max_rss_kib=rss,
        stdout=out_path.read_text(encoding="utf-8", errors="replace"),
        stderr=err_path.read_text(encoding="utf-8", errors="replace"),
    )


class DevServer:
    """`python -m judgebias.devserver` in its own process (its CPU is not the client's), with its counters."""

    def __init__(self, *flags: str) -> None:
        self.process = subprocess.Popen(
            [PYTHON, "-m", "judgebias.devserver", "--port", "0", "--policy", "hash", *flags],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if not line.startswith("serving on "):
            self.process.kill()
            raise RuntimeError(f"the devserver did not start: {line!r}")
        self.url = line.removeprefix("serving on ")
        self.root = self.url.removesuffix("/v1")

    def reset(self) -> None:
        """Zero the counters and refill the rate limiter."""
        request = urllib.request.Request(self.root + "/reset", data=b"{}", method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            response.read()

    def stats(self) -> dict[str, Any]:
        """The server's counters (requests, by_status, ...)."""
        with urllib.request.urlopen(self.root + "/stats", timeout=10) as response:
            stats: dict[str, Any] = json.loads(response.read())
        return stats

    def stop(self) -> None:
        """SIGTERM, then wait."""
        stop_process(self.process)


def stop_process(process: subprocess.Popen[Any], timeout: float = 10) -> None:
    """SIGTERM, wait up to `timeout` seconds, then SIGKILL."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def devserver(*flags: str) -> Iterator[DevServer]:
    """A devserver for the length of a `with` block."""
    server = DevServer(*flags)
    try:
        yield server
    finally:
        server.stop()


class RedisServer:
    """A password-protected `redis-server` on a free 127.0.0.1 port, its data in `folder` (nothing saved)."""

    def __init__(self, folder: Path) -> None:
        import secrets
        import socket

        executable = shutil.which("redis-server")
        if executable is None:
            raise RuntimeError("redis-server is not installed (tools/install-system.sh installs it)")
        folder.mkdir(parents=True, exist_ok=True)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        password = secrets.token_hex(12)
        config = folder / "redis.conf"
        config.write_text(
            f'port {port}\nbind 127.0.0.1\ndir {folder}\nrequirepass {password}\nsave ""\nappendonly no\n'
            "logfile redis.log\n",
            encoding="utf-8",
        )
        self.url = f"redis://:{password}@127.0.0.1:{port}/0"
        self.process = subprocess.Popen([executable, str(config)], cwd=folder)
        deadline = time.monotonic() + 20
        while not self._answers(port, password):
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.stop()
                raise RuntimeError(f"redis-server did not start on port {port}")
            time.sleep(0.05)

    @staticmethod
    def _answers(port: int, password: str) -> bool:
        import redis

        try:
            return bool(redis.Redis(host="127.0.0.1", port=port, password=password, socket_connect_timeout=1).ping())
        except redis.ConnectionError:
            return False

    def stop(self) -> None:
        """SIGTERM, then wait."""
        stop_process(self.process)


@contextmanager
def redis_server(folder: Path) -> Iterator[RedisServer]:
    """A redis-server for the length of a `with` block."""
    server = RedisServer(folder)
    try:
        yield server
    finally:
        server.stop()


def write_items(path: Path, n: int, *, seed: int = 0, labelled: float | None = None) -> int:
    """A JSONL dataset of `n` short items with human labels and model names; returns the bytes of their text.
    `labelled`: the share of items that keep a human label (default: the three quarters the draw gives)."""
    rng = random.Random(seed)
    keep = random.Random(seed + 1)  # its own stream: the items are the same with or without `labelled`
    text_bytes = 0
    with path.open("w", encoding="utf-8") as file:
        for index in range(n):
            question = f"Question {index}: which answer explains item {rng.randrange(10**6)} better?"
            a = " ".join(rng.choices(WORDS, k=rng.randint(6, 14)))
            b = " ".join(rng.choices(WORDS, k=rng.randint(6, 14)))
            model_a, model_b = rng.sample(MODELS, 2)
            record = {
                "id": f"item-{index:06d}",
                "question": question,
                "a": a,
                "b": b,
                "human": rng.choice(("1", "2", "tie", None)),
                "model_a": model_a,
                "model_b": model_b,
            }
            if labelled is not None:
                record["human"] = (record["human"] or "tie") if keep.random() < labelled else None
            text_bytes += sum(len(record[key].encode("utf-8")) for key in ("id", "question", "a", "b"))
            file.write(json.dumps(record) + "\n")
    return text_bytes


def write_rag_items(path: Path, documents: int, questions: int, words: int, *, seed: int = 0) -> None:
    """Items judged against a long shared context, as a RAG evaluation's are: `documents` documents of `words` words
    each, `questions` short questions on each (its items one after the other), two short answers per question."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as file:
        for d in range(documents):
            document = " ".join(rng.choices(WORDS, k=words))
            for q in range(questions):
                a, b = (" ".join(rng.choices(WORDS, k=rng.randint(8, 16))) for _ in range(2))
                record = {
                    "id": f"doc{d}-q{q}",
                    "context": document,
                    "question": f"Question {q} on document {d}: which answer reads the document better?",
                    "a": a,
                    "b": b,
                }
                file.write(json.dumps(record) + "\n")


# The layout every prompt cache defeats: the answers first, then the context and the question (docs/speed.md).
ANSWERS_FIRST_RUBRIC = """name: answers_first
system: >-
  You are an impartial judge comparing two answers to the same question.
  Reply with exactly one of: {label_first}, {label_second}, or {tie_label}. Write nothing else.
user: |-
  {first}

  {second}

  {context}[Question]
  {question}

  Which answer is better? Reply with exactly one of: {label_first}, {label_second}, {tie_label}.
"""


def answers_first_conf(folder: Path) -> Path:
    """A config folder (for --config-dir) holding the answers-first rubric."""
    (folder / "rubric").mkdir(parents=True, exist_ok=True)
    (folder / "rubric" / "answers_first.yaml").write_text(ANSWERS_FIRST_RUBRIC, encoding="utf-8")
    return folder


LLAMACPP_VENV = Path(os.environ.get("LLAMACPP_VENV", REPO / ".venv-llamacpp"))
GGUF = Path(os.environ.get("JUDGEBIAS_GGUF", REPO / ".models" / "gemma-3-270m-q4_k_m.gguf"))


class LlamaServer:
    """llama-cpp-python's server with the suite's Gemma 3 270M, one thread, its log kept: the log's `prompt eval time
    = ... / N tokens` lines are the server's own count of the prompt tokens it evaluated."""

    def __init__(self, folder: Path, n_ctx: int) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.log = folder / "llama-server.log"
        self.port = _free_port()
        command = [
            str(LLAMACPP_VENV / "bin" / "python"), "-m", "llama_cpp.server", "--model", str(GGUF),
            "--model_alias", "gemma-3-270m", "--chat_format", "gemma", "--host", "127.0.0.1", "--port", str(self.port),
            "--n_ctx", str(n_ctx), "--n_threads", "1",
        ]  # fmt: skip
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 300
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/v1/models", timeout=5):
                    break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"llama.cpp server did not start: {self.log.read_text()[-2000:]}") from None
                time.sleep(0.5)

    def evaluated(self) -> int:
        """Prompt tokens the server has evaluated so far (its log's own count)."""
        text = self.log.read_text(encoding="utf-8", errors="replace")
        return sum(int(n) for n in re.findall(r"prompt eval time =\s*[\d.]+ ms /\s*(\d+) tokens", text))

    def stop(self) -> None:
        """SIGTERM, then wait."""
        stop_process(self.process, timeout=20)


def llamacpp_available() -> bool:
    """Whether tools/install-llamacpp.sh installed the server and the model."""
    return (LLAMACPP_VENV / "bin" / "python").exists() and GGUF.exists()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def shuffle_lines(path: Path, *, seed: int) -> None:
    """Put a file's lines in a seeded random order (in place)."""
    lines = path.read_bytes().splitlines(keepends=True)
    random.Random(seed).shuffle(lines)
    path.write_bytes(b"".join(lines))


def compose(overrides: Sequence[str]) -> Any:
    """judgebias's typed Config for these overrides, composed by Hydra as the CLI composes it."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    from judgebias.cli.schemas import register_schemas
    from judgebias.run import to_config

    register_schemas()
    GlobalHydra.instance().clear()
    with initialize_config_module(config_module="judgebias.conf", version_base="1.3"):
        cfg = hydra_compose(config_name="config", overrides=list(overrides))
    return to_config(cfg)


def calls_of(config: Any) -> Iterator[tuple[Any, Any, Any]]:
    """(backend, view, messages) of every call the run would make, enumerated by judgebias's own runner."""
    from judgebias.backends import Judging, build_backend
    from judgebias.engine.items import RunItems
    from judgebias.engine.judging import run_requests

    backend = build_backend(config.judge, config.rubric, None)
    judging = Judging(config.judge.name, config.judge, backend)
    for _, _, request in run_requests(config, [judging], RunItems(config)):
        yield backend, request.view, request.messages


def write_requests(config: Any, path: Path) -> int:
    """The chat messages of every call of the run, one JSON line each (for the bare-SDK baselines)."""
    count = 0
    with path.open("w", encoding="utf-8") as file:
        for _, _, messages in calls_of(config):
            file.write(json.dumps({"messages": messages}, ensure_ascii=False) + "\n")
            count += 1
    return count


def fill_cache(config: Any) -> int:
    """Store a reply for every call of the run with judgebias's own key and cache functions, in the form the runner
    stores (with the request its key came from); returns the count."""
    import hashlib

    from judgebias.cache import ReplyCache, call_key
    from judgebias.core.record import Reply

    entries = []
    for backend, view, messages in calls_of(config):
        request = backend.cache_request(messages)
        key = call_key(request)
        pick = hashlib.sha256(key.encode()).digest()[0] % 3
        text = (view.label_first, view.label_second, config.rubric.tie_label)[pick]
        reply = Reply(text=text, prompt_tokens=80, completion_tokens=1, model="judgebias-dev")
        entries.append((key, reply.to_json() | {"request": request}))  # as the runner stores it: a bundle can prove it
    cache = ReplyCache(config.cache.dir, "use")
    try:
        cache.put_many(entries)  # one transaction for the lot
    finally:
        cache.close()
    return len(entries)


def compile_judgebias() -> None:
    """Byte-compile judgebias's modules, as installing a wheel does, so no run pays for compiling them.

    An editable install compiles them at first import, unless PYTHONDONTWRITEBYTECODE is set (as on some CI
    machines): then every run would compile judgebias's sources while Hydra and numpy load compiled files.
    """
    import compileall

    import judgebias

    compileall.compile_dir(str(Path(judgebias.__file__).parent), quiet=1)


def write_minimal_hydra_app(folder: Path) -> Path:
    """A minimal Hydra app (one two-key YAML config, prints a line); returns its script."""
    (folder / "conf").mkdir(parents=True, exist_ok=True)
    (folder / "conf" / "config.yaml").write_text("name: minimal\nvalue: 1\n", encoding="utf-8")
    script = folder / "app.py"
    script.write_text(MINIMAL_HYDRA_APP, encoding="utf-8")
    return script


def judgebias_args(overrides: Sequence[str]) -> list[str]:
    """The command of one judgebias run through the probing entry point."""
    return [PYTHON, str(HERE / "jb_entry.py"), *overrides]


def read_summary(run_dir: Path) -> dict[str, Any]:
    """summary.json of a finished run."""
    summary: dict[str, Any] = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    return summary


def fresh(path: Path) -> Path:
    """`path`, emptied."""
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path
