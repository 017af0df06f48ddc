"""Runs with cache.backend=redis as users start them: several nodes and processes sharing replies and one quota."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Cli, Result, local_judge
from tests.redis.helpers import RedisServer, cache_cli, free_port, most_in_any_second

pytestmark = [pytest.mark.redis, pytest.mark.slow]


def local(server: Any, *more: str) -> tuple[str, ...]:
    """Overrides for the `local` judge pointed at a test server, the Redis backend, quick intervals, no report."""
    return local_judge(server, "cache.backend=redis", "bootstrap.resamples=50", *more)


def requests(server: Any) -> int:
    """Every chat-completions request the server received."""
    return int(server.stats()["requests"])


def launch(cli: Cli, name: str, *overrides: str, env: dict[str, str]) -> tuple[subprocess.Popen[str], Path]:
    """Start one run in the background (its own run folder; cache.dir is set by the overrides)."""
    run_dir = cli.tmp_path / name
    process = subprocess.Popen(
        [sys.executable, "-m", "judgebias.run", f"hydra.run.dir={run_dir}", *overrides],
        cwd=cli.tmp_path,
        env={**cli.env, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return process, run_dir


def finish(process: subprocess.Popen[str], run_dir: Path) -> Result:
    """Wait for a background run; what it left behind."""
    out, err = process.communicate(timeout=240)
    return Result(process.returncode, out, err, run_dir)


def together(cli: Cli, runs: list[tuple[str, ...]], *, env: dict[str, str]) -> list[Result]:
    """Start one run per list of overrides at once, run N with its own run folder and cache.dir (node N); wait."""
    started = [
        launch(cli, f"run{n}", *overrides, f"cache.dir={cli.tmp_path / f'node{n}'}", env=env)
        for n, overrides in enumerate(runs)
    ]
    return [finish(*run) for run in started]


def judged(result: Result) -> list[dict[str, Any]]:
    """The verdict lines without the flags that say whether each call was answered from the cache."""
    return [{k: v for k, v in line.items() if k not in ("cached1", "cached2")} for line in result.verdicts()]


def no_secret_in(folder: Path, secret: str) -> list[Path]:
    """Files under `folder` that contain `secret` (but Redis's own folder, whose config holds the password)."""
    return [
        path
        for path in folder.rglob("*")
        if path.is_file() and "redis" not in path.relative_to(folder).parts[:1] and secret.encode() in path.read_bytes()
    ]


def test_two_nodes_share_replies_so_the_second_run_sends_nothing(
    cli: Cli, server: Any, redis_server: RedisServer
) -> None:
    """A run on another node (its own cache.dir) with the same Redis is answered entirely from Redis."""
    judge = server(policy="hash")
    env = {"JUDGEBIAS_REDIS_URL": redis_server.url}
    first = cli(*local(judge, "data.limit=6", f"cache.dir={cli.tmp_path / 'node1'}"), env=env)
    second = cli(*local(judge, "data.limit=6", f"cache.dir={cli.tmp_path / 'node2'}"), env=env)
    assert (0, 0) == (first.code, second.code), (first, second)
    assert 12 == requests(judge)
    assert (0, 12) == (second.summary()["calls_live"], second.summary()["calls_cached"])
    assert [v["verdict"] for v in first.verdicts()] == [v["verdict"] for v in second.verdicts()]
    assert [] == no_secret_in(cli.tmp_path, redis_server.password)


def test_four_processes_hold_one_requests_per_minute_quota(cli: Cli, server: Any, redis_server: RedisServer) -> None:
    """Four runs at judge.requests_per_minute=1200 sharing a Redis send about 20 requests per second together."""
    judge = server(policy="hash")
    env = {"JUDGEBIAS_REDIS_URL": redis_server.url}
    results = together(
        cli,
        [
            local(judge, "data.limit=12", f"judge.seed={n}", "judge.requests_per_minute=1200", "max_concurrency=8")
            for n in range(4)
        ],
        env=env,
    )
    assert [0] * 4 == [result.code for result in results], results
    arrivals = sorted(event["arrived"] for event in judge.timeline())
    assert 96 == len(arrivals)
    busiest = most_in_any_second(arrivals)
    assert busiest <= 22  # 20 admitted per second by Redis's clock, plus the jitter of the trip to the server
    assert arrivals[-1] - arrivals[0] >= (96 - 22) / 20


def test_two_processes_needing_the_same_calls_at_once_pay_once(
    cli: Cli, server: Any, redis_server: RedisServer
) -> None:
    """Two identical runs started together send each call once; both finish with the same verdicts."""
    judge = server(policy="hash", latency=0.4)
    env = {"JUDGEBIAS_REDIS_URL": redis_server.url}
    results = together(cli, [local(judge, "data.limit=16", "max_concurrency=4")] * 2, env=env)
    assert (0, 0) == (results[0].code, results[1].code), results
    assert 32 == requests(judge)
    assert 32 == sum(result.summary()["calls_live"] for result in results)
    assert [v["verdict"] for v in results[0].verdicts()] == [v["verdict"] for v in results[1].verdicts()]


def test_an_unreachable_redis_stops_the_run_before_any_call(cli: Cli, server: Any) -> None:
    """With no Redis at the URL the run exits 2 with one line naming Redis and host:port, and sends nothing."""
    judge = server(policy="hash")
    port = free_port()
    password = "pw-never-printed-123"
    result = cli(*local(judge, "data.limit=2"), env={"JUDGEBIAS_REDIS_URL": f"redis://:{password}@127.0.0.1:{port}/0"})
    assert (
        2,
        f"judgebias: error: Redis at 127.0.0.1:{port} could not connect while opening the cache: check that it runs and that JUDGEBIAS_REDIS_URL holds its host, port and password (or use cache.backend=disk)\n",
        0,
    ) == (
        result.code,
        result.stderr,
        requests(judge),
    )
    assert [] == no_secret_in(cli.tmp_path, password)


def test_a_missing_url_variable_is_a_one_line_error(cli: Cli, server: Any) -> None:
    """cache.backend=redis without the env var names the variable and exits 2 before any call."""
    judge = server(policy="hash")
    result = cli(*local(judge, "data.limit=2", "cache.url_env=MY_REDIS_URL"), env={"MY_REDIS_URL": ""})
    assert 2 == result.code
    assert result.stderr.startswith("judgebias: error: cache.backend=redis needs MY_REDIS_URL in the environment")


def test_a_url_typed_into_url_env_is_refused_and_scrubbed(cli: Cli, server: Any, redis_server: RedisServer) -> None:
    """cache.url_env takes a variable's name: a URL typed there is refused and removed from the saved config."""
    judge = server(policy="hash")
    result = cli(*local(judge, "data.limit=2", f"cache.url_env={redis_server.url}"))
    assert 2 == result.code
    assert "cache.url_env takes the NAME of an environment variable" in result.stderr
    assert [] == no_secret_in(cli.tmp_path, redis_server.password)


def test_redis_lost_mid_run_stops_cleanly_and_the_rerun_pays_only_for_unanswered_calls(
    cli: Cli, server: Any, redis_server: RedisServer
) -> None:
    """Killing Redis mid-run: one line, no traceback; replies already paid for are kept and never paid again."""
    judge = server(policy="hash", latency=0.3)
    env = {"JUDGEBIAS_REDIS_URL": redis_server.url}
    overrides = (*local(judge, "data.limit=24", "max_concurrency=4"), f"cache.dir={cli.tmp_path / 'node'}")
    process, run_dir = launch(cli, "run-killed", *overrides, env=env)
    deadline = time.monotonic() + 120
    while requests(judge) < 8 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    redis_server.kill()
    stopped = finish(process, run_dir)
    paid_first = requests(judge)
    assert 2 == stopped.code, stopped
    assert 1 == len(stopped.stderr.strip().splitlines()), stopped.stderr
    assert stopped.stderr.startswith(f"judgebias: error: Redis at {redis_server.where} ")
    assert "Traceback" not in stopped.stderr and redis_server.password not in stopped.stderr
    assert 8 <= paid_first < 48

    redis_server.start()  # Redis keeps what it had (append-only file); the node's outbox holds what it missed
    rerun = cli(*overrides, env=env)
    assert 0 == rerun.code, rerun
    assert 48 == requests(judge)  # every call paid exactly once over the two runs
    assert (48 - paid_first, paid_first) == (rerun.summary()["calls_live"], rerun.summary()["calls_cached"])


def test_a_bundle_round_trip_disk_to_redis_and_back_replays_with_no_endpoint(
    cli: Cli, server: Any, redis_server: RedisServer
) -> None:
    """A run's bundle imported into an empty Redis, and from there into an empty disk cache, replays it exactly."""
    judge = server(policy="hash")
    env = {"JUDGEBIAS_REDIS_URL": redis_server.url}
    base = ("judge=local", f"judge.base_url={judge.url}", "judge.api_key_env=null", "data.limit=8", "report=false")
    live = cli(*base, f"cache.dir={cli.tmp_path / 'disk'}")
    assert 0 == live.code, live
    judge.stop()  # from here on there is no endpoint: every reply must come from a bundle

    def tool(*args: str) -> subprocess.CompletedProcess[str]:
        return cache_cli(*args, env=env)

    exported = tool(
        "export", str(cli.tmp_path / "run.gz"), "--run", str(live.run_dir), "--cache-dir", str(cli.tmp_path / "disk")
    )
    loaded = tool("import", str(cli.tmp_path / "run.gz"), "--backend", "redis", "--cache-dir", str(cli.tmp_path / "r"))
    assert (0, 0) == (exported.returncode, loaded.returncode), (exported, loaded)
    on_redis = cli(*base, "cache.backend=redis", "cache.mode=only", f"cache.dir={cli.tmp_path / 'r'}", env=env)
    assert 0 == on_redis.code, on_redis
    again = tool(
        "export",
        str(cli.tmp_path / "again.gz"),
        "--run",
        str(on_redis.run_dir),
        "--backend",
        "redis",
        "--cache-dir",
        str(cli.tmp_path / "r"),
    )
    into_disk = tool("import", str(cli.tmp_path / "again.gz"), "--cache-dir", str(cli.tmp_path / "fresh"))
    assert (0, 0) == (again.returncode, into_disk.returncode), (again, into_disk)
    on_disk = cli(*base, "cache.mode=only", f"cache.dir={cli.tmp_path / 'fresh'}")
    assert 0 == on_disk.code, on_disk
    assert judged(live) == judged(on_redis) == judged(on_disk)
    assert (cli.tmp_path / "run.gz").read_bytes() == (cli.tmp_path / "again.gz").read_bytes()
    assert 16 == on_disk.summary()["calls_cached"]


def test_ctrl_c_while_waiting_for_another_process_s_call_stops_at_once(
    cli: Cli, server: Any, redis_server: RedisServer
) -> None:
    """A run waiting for calls another process is sending stops on Ctrl-C within seconds, not when those end."""
    judge = server(policy="hash", latency=30.0)
    env = {"JUDGEBIAS_REDIS_URL": redis_server.url}
    overrides = local(judge, "data.limit=1", "judge.timeout=120")
    sender, _ = launch(cli, "sender", *overrides, f"cache.dir={cli.tmp_path / 'a'}", env=env)
    deadline = time.monotonic() + 60
    while requests(judge) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    waiter, waiter_dir = launch(cli, "waiter", *overrides, f"cache.dir={cli.tmp_path / 'b'}", env=env)
    deadline = time.monotonic() + 60
    while not (waiter_dir / ".hydra").is_dir() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(3)  # the job started a moment ago: by now it has found both calls leased and waits
    waiter.send_signal(signal.SIGINT)
    started = time.monotonic()
    stopped = finish(waiter, waiter_dir)
    waited = time.monotonic() - started
    sender.kill()
    sender.communicate()
    assert (130, 2) == (stopped.code, requests(judge)), stopped
    assert waited < 10
