"""Helpers every test folder imports (no fixtures: those are in conftest.py): the shared data, ports, threads, small
HTTP servers, the CLI (as a subprocess, or its real entry point in this process)."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import io
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _shared_data_folder() -> Path:
    """Where the shared datasets are looked for: $JUDGEBIAS_DATA_ROOT when set (also when it leads nowhere, so a
    run with an empty folder there sees what a clone with nothing beside it sees), else ../shared/data."""
    configured = os.environ.get("JUDGEBIAS_DATA_ROOT")
    return Path(configured) if configured else REPO.parent / "shared" / "data"


def shared_data_root() -> Path | None:
    """The shared datasets' folder, or None when it does not hold them."""
    folder = _shared_data_folder()
    return folder if (folder / "mtbench-human" / "items.jsonl").exists() else None


def missing_shared_data() -> str:
    """Why a test that reads the shared datasets skips: the folder it looked in."""
    return f"needs the shared datasets: none in {_shared_data_folder()} (set JUDGEBIAS_DATA_ROOT to shared/data)"


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
        self.send_json_bytes(status, json.dumps(payload).encode())

    def send_json_bytes(self, status: int, body: bytes, headers: Mapping[str, str] | None = None) -> None:
        """Answer with a JSON body written by hand (escapes json.dumps would not make), and any extra headers."""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
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
        run_dir, args = self.next_run(overrides)
        completed = subprocess.run(
            [sys.executable, "-m", "judgebias.run", *args],
            cwd=self.tmp_path,
            env=self.env | (env or {}),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        return Result(completed.returncode, completed.stdout, completed.stderr, run_dir)

    def next_run(self, overrides: tuple[str, ...]) -> tuple[Path, list[str]]:
        """A fresh run folder and the command line after `python -m judgebias.run` that runs into it."""
        self.runs += 1
        run_dir = self.tmp_path / f"run{self.runs}"
        multirun = "-m" in overrides
        args = ["-m"] if multirun else []
        args += [f"cache.dir={self.cache_dir}", f"hydra.{'sweep' if multirun else 'run'}.dir={run_dir}"]
        return run_dir, args + [o for o in overrides if o != "-m"]


class InProcessCli(Cli):
    """The real entry point `judgebias.run.main()` in this process, with the command line, cwd and environment `Cli`
    gives its subprocess: the same composition, checks, exit codes and printed text, without the ~1 s of interpreter
    and import start-up. What a run changes in the process is put back afterwards (see `_process_state`). Runs one at
    a time from the main thread; a test about the process itself (signals, exits, a child's environment, several
    processes at once, start-up) keeps `Cli`. `timeout` is accepted for the same interface; pytest-timeout bounds a
    run that hangs."""

    def __call__(self, *overrides: str, env: dict[str, str] | None = None, timeout: float = 240) -> Result:
        """Run once into a fresh run folder; return exit code, output and the run folder."""
        from judgebias import run  # imported before the state is saved: its import-time loggers are the process's

        run_dir, args = self.next_run(overrides)
        stdout, stderr = io.StringIO(), io.StringIO()
        with (
            _process_state(self.env | (env or {}), self.tmp_path, [str(run.__file__), *args]),
            contextlib.redirect_stdout(stdout),
            contextlib.redirect_stderr(stderr),
            _fresh_warnings(),
        ):
            code = _exit_code(run.main)
        return Result(code, _universal_newlines(stdout.getvalue()), _universal_newlines(stderr.getvalue()), run_dir)


def _exit_code(main: Callable[[], None]) -> int:
    """What the interpreter would exit with after `main()`: 0 for a return, SystemExit's code (a message printed to
    stderr is exit 1), or 1 and the traceback on stderr for an exception."""
    try:
        main()
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            return stop.code or 0
        print(stop.code, file=sys.stderr)
        return 1
    except Exception:
        traceback.print_exc()
        return 1
    return 0


def _universal_newlines(text: str) -> str:
    """Text as `subprocess.run(text=True)` reads it from a pipe."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


@contextmanager
def _fresh_warnings() -> Iterator[None]:
    """Warnings filtered as in a new interpreter and printed to (the captured) stderr, as the subprocess would print
    them, instead of being recorded by pytest; pytest's own filters and records are back afterwards."""
    with warnings.catch_warnings():
        warnings.resetwarnings()
        for category in (ResourceWarning, ImportWarning, PendingDeprecationWarning, DeprecationWarning):
            warnings.simplefilter("ignore", category)
        warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")

        def show(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
            sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

        warnings.showwarning = show
        yield


RESTORED_SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2]
"""The handlers a run installs (Ctrl-C during start-up, SLURM's SIGTERM and submitit's requeue signal)."""


@contextmanager
def _process_state(env: dict[str, str], cwd: Path, argv: list[str]) -> Iterator[None]:
    """For the block: this environment, cwd and sys.argv. Afterwards, as before: environment, cwd, argv, stdout/stderr,
    Hydra's global state (GlobalHydra, HydraConfig, the job runtime), every logger's level, handlers, filters,
    propagation and disabled flag (Hydra's logging config replaces the root logger's handlers; the job quiets httpx and
    openai and filters submitit), signal handlers, the garbage collector (paused during start-up, then frozen) and the
    run-folder memo of `${unique_dir:}`; handlers the run opened (run.log) are closed."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig
    from hydra.core.utils import JobRuntime

    from judgebias.cli import rundir

    saved_env, saved_cwd, saved_argv = dict(os.environ), os.getcwd(), sys.argv
    saved_streams = sys.stdout, sys.stderr
    saved_hydra_cfg, saved_job = HydraConfig.instance().cfg, JobRuntime.instance().conf
    saved_made = dict(rundir._made)
    main_thread = threading.current_thread() is threading.main_thread()
    saved_signals = {signum: signal.getsignal(signum) for signum in RESTORED_SIGNALS} if main_thread else {}
    gc_enabled, gc_threshold, gc_frozen = gc.isenabled(), gc.get_threshold(), gc.get_freeze_count()
    saved_loggers = {logger: _logger_state(logger) for logger in _loggers()}
    handlers_before = list(logging._handlerList)  # kept alive, so their ids stay theirs
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.argv = argv
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)
        sys.argv = saved_argv
        sys.stdout, sys.stderr = saved_streams
        GlobalHydra.instance().clear()
        HydraConfig.instance().cfg = saved_hydra_cfg
        JobRuntime.instance().conf = saved_job
        rundir._made.clear()
        rundir._made.update(saved_made)
        for signum, handler in saved_signals.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        if gc.get_freeze_count() and not gc_frozen:
            gc.unfreeze()
        gc.set_threshold(*gc_threshold)
        (gc.enable if gc_enabled else gc.disable)()
        for logger in _loggers():
            saved = saved_loggers.get(logger)
            if saved is None:  # made during the run: as getLogger made it, but for a library's own NullHandler
                logger.setLevel(logging.NOTSET)
                logger.disabled = False
                logger.handlers[:] = [h for h in logger.handlers if isinstance(h, logging.NullHandler)]
                logger.filters[:] = []
                continue
            level, logger.propagate, logger.disabled, handlers, filters = saved
            logger.setLevel(level)
            logger.handlers[:] = handlers
            logger.filters[:] = filters
        known = {id(reference) for reference in handlers_before}
        for reference in [r for r in logging._handlerList if id(r) not in known]:
            handler = reference()
            if handler is not None:
                handler.close()


def _loggers() -> list[logging.Logger]:
    """The root logger and every named logger made so far."""
    named = [logger for logger in logging.Logger.manager.loggerDict.values() if isinstance(logger, logging.Logger)]
    return [logging.getLogger(), *named]


def _logger_state(logger: logging.Logger) -> tuple[int, bool, bool, list[logging.Handler], list[Any]]:
    """What a run may change on a logger: level, propagation, disabled flag, handlers, filters."""
    return logger.level, logger.propagate, logger.disabled, list(logger.handlers), list(logger.filters)


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


def filled(cls: type[Any], **given: Any) -> Any:
    """An instance of a dataclass whose every field holds a value of its own, `given` ones aside (so a field left
    out of a copy shows)."""
    values: dict[str, Any] = {}
    for number, spec in enumerate(dataclasses.fields(cls)):
        values[spec.name] = given.get(spec.name, f"value-{number}")
    return cls(**values)


# The overrides that read pairs kept as {conv_id, prompt, response_v1, response_v2, human_pref: v1|v2|tie}.
THEIR_NAMES = (
    "data.fields.id=conv_id",
    "data.fields.question=prompt",
    "data.fields.a=response_v1",
    "data.fields.b=response_v2",
    "data.fields.human=human_pref",
    "data.labels.v1=a",
    "data.labels.v2=b",
)


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


def interrupt_after_start(process: subprocess.Popen[str], delay: float) -> str:
    """SIGINT `delay` seconds after the process (run with `-X importtime`, stderr piped as text) imported the
    start-up guard, then wait for it; what it printed on stderr without the import-time lines.

    The interpreter's own start-up, before judgebias's first module, is Python's: counting the delay from the
    guard's import means a loaded machine cannot move the signal before it."""
    assert process.stderr is not None
    for line in process.stderr:
        if line.rstrip().endswith("judgebias.process.startup"):
            break
    time.sleep(delay)
    process.send_signal(signal.SIGINT)
    err = "".join(line for line in process.stderr if not line.startswith("import time:"))
    process.wait(timeout=60)
    return err


def counting(monkeypatch: Any, owner: Any, name: str, real: Any = None, fail_after: int | None = None) -> list[Any]:
    """Replace `owner.name` (a class or a function: `real`, else the one there now) for the test with one that keeps,
    in order, each object it made; after `fail_after` of them, one that fails as a fork does at the system's limit
    on processes (EAGAIN)."""
    made: list[Any] = []
    real = getattr(owner, name) if real is None else real

    def counted(*args: Any, **kwargs: Any) -> Any:
        if fail_after is not None and len(made) >= fail_after:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(owner, name, counted)
    return made


def longer_by_hand(record: Mapping[str, Any]) -> tuple[str, str, str]:
    """(verdict, call1, call2) of judge=longer's rule (the longer answer shown wins) in both orders, reconciled by
    hand as benchmarks/hand_loop.py does: the oracle of a scripted run's lines."""

    def shown_second_longer(first: str, second: str) -> str:
        return "B" if len(second) > len(first) else "A"

    call1, call2 = shown_second_longer(record["a"], record["b"]), shown_second_longer(record["b"], record["a"])
    back = {"A": "B", "B": "A"}[call2]
    return ("1" if call1 == "A" else "2") if call1 == back else "tie", call1, call2
