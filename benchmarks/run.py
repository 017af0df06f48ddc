"""Speed and memory of judgebias at the limit, as ratios against baselines measured in the same invocation.

Usage: python benchmarks/run.py [--quick] [--only NAME ...] [--repeats 3] [--keep]
(`make bench` runs it with the defaults.) Benchmarks, in order:

  live      1,000 items (2,000 calls) at 100 ms server latency, max_concurrency=64, against a bare thread-pool
            loop of the official `openai` SDK sending the same 2,000 requests at the same concurrency; also the
            latency bound and the naive sequential loop (measured on fewer items, scaled per call).
  default   the same at the default concurrency (16), against the latency bound 2N x 0.1 s / 16; also checks
            that verdicts reach disk while the run is still going.
  cached    a fully cached rerun: cost per cached call, (T(10,000 items) - T(10 items)) / 20,000; that the
            `openai` SDK is never imported; start-up of a warm 10-item run against a minimal Hydra app.
  cached_redis  the same cost per cached call with cache.backend=redis (a password-protected redis-server on
            127.0.0.1, filled from the disk cache by a bundle), beside the disk cache's, measured in the same way.
  ratelimit 2,000 calls against a server admitting 100 requests/s (429 + Retry-After beyond), max_concurrency=64:
            adaptive (no client limit) and with judge.requests_per_minute=6000.
  memory    peak RSS of a cached run over 50,000 short items against the 10-item run; and how long the summary
            phase takes for 50,000 items at the default settings.
  scale     1,000,000 generated pairs through an offline judge (judge=longer) beside the loop a user would write
            (benchmarks/hand_loop.py, whose win rate and consistency the run must equal): the ratio of wall
            times, peak RSS, peak RSS at 1M against 100k; and a 200,000-item fully cached rerun's cost per call.
  compare   `python -m judgebias.compare` and `check --baseline` of two 1,000,000-item runs (the candidate's lines
            shuffled): wall time, and peak RSS against the base run's own peak.

Every measured run is a fresh subprocess; each figure is the median of --repeats runs. The devserver runs in
its own process. Live judgebias runs import the SDK before the run starts (benchmarks/jb_entry.py), as the
baseline does before its clock starts; the one-off import is measured and printed on its own.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import harness
from harness import PYTHON, Measured, median, run_measured

LATENCY = 0.1


@dataclass
class Figure:
    """One line of the results table."""

    target: str  # which target of issue #6 ("1".."5", or "-" for information only)
    name: str
    measured: str
    goal: str = ""
    passed: bool | None = None  # None: information, no target

    @property
    def verdict(self) -> str:
        """PASS, MISS or "info"."""
        return "info" if self.passed is None else ("PASS" if self.passed else "MISS")


@dataclass
class Context:
    """What every benchmark needs: sizes, repeats, a scratch folder, and the shared cached dataset."""

    quick: bool
    repeats: int
    work: Path
    env: dict[str, str]
    cached_sizes: dict[int, Path]
    cached_filled: int = 0

    def n(self, full: int, quick: int) -> int:
        """A size: `full`, or `quick` for a smoke run."""
        return quick if self.quick else full

    def log(self, message: str) -> None:
        """Progress on stderr (the table goes to stdout)."""
        print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def base_overrides(url: str, items: Path, cache: Path, run_dir: Path) -> list[str]:
    """The overrides every benchmark run shares: the local judge, a JSONL dataset, its own cache and run folder."""
    return [
        "judge=local",
        f"judge.base_url={url}",
        "data=jsonl",
        f"data.path={items}",
        f"cache.dir={cache}",
        f"hydra.run.dir={run_dir}",
        "progress=off",
        "report=false",
    ]


def judgebias_run(
    ctx: Context,
    name: str,
    overrides: list[str],
    *,
    preimport: bool = False,
    probe: bool = False,
    plain: bool = False,
    failed_calls_ok: bool = False,
    while_running: Callable[[], None] | None = None,
) -> tuple[Measured, dict[str, Any]]:
    """One judgebias run in a fresh process; returns the measurement and summary.json (probe results in extra)."""
    log_dir = ctx.work / "logs" / name
    env = dict(ctx.env)
    if preimport:
        env["JUDGEBIAS_BENCH_PREIMPORT_OPENAI"] = "1"
    probe_file = log_dir / "probe.json"
    if probe:
        env["JUDGEBIAS_BENCH_PROBE"] = str(probe_file)
    args = [PYTHON, "-m", "judgebias.run", *overrides] if plain else harness.judgebias_args(overrides)
    measured = run_measured(args, log_dir=log_dir, env=env, cwd=ctx.work, while_running=while_running)
    run_dir = Path(next(o.split("=", 1)[1] for o in overrides if o.startswith("hydra.run.dir=")))
    failed_calls = measured.code != 0 and failed_calls_ok and (run_dir / "summary.json").exists()
    if measured.code != 0 and not (failed_calls and harness.read_summary(run_dir).get("failed_calls")):
        raise RuntimeError(f"judgebias run {name} exited {measured.code}:\n{measured.stderr[-3000:]}")
    if probe:
        measured.extra = json.loads(probe_file.read_text(encoding="utf-8"))
    return measured, harness.read_summary(run_dir)


def check_live(summary: dict[str, Any], calls: int, name: str, *, failed_calls_ok: bool = False) -> None:
    """A live benchmark run must have made every call live and had none fail."""
    if summary["calls_live"] != calls or (summary["failed_calls"] and not failed_calls_ok):
        raise RuntimeError(
            f"{name}: expected {calls} live calls and no failures, got {summary['calls_live']} live, "
            f"{summary['failed_calls']} failed"
        )


# ----------------------------------------------------------------------------------------------- 1. live


def sdk_loop_args(url: str, requests: Path, *flags: str) -> list[str]:
    """The command of one bare-SDK baseline run (benchmarks/sdk_loop.py)."""
    return [PYTHON, str(harness.HERE / "sdk_loop.py"), "--url", url, "--requests", str(requests), *flags]


def bench_live(ctx: Context) -> list[Figure]:
    """Target 1: judgebias at max_concurrency=64 against a bare SDK loop, the latency bound and a sequential loop."""
    n = ctx.n(1000, 150)
    calls = 2 * n
    seq_items = ctx.n(40, 10)
    concurrency = 64
    folder = harness.fresh(ctx.work / "live")
    items = folder / "items.jsonl"
    harness.write_items(items, n, seed=1)
    bare, judged, sequential = [], [], []
    with harness.devserver("--latency", str(LATENCY)) as server:
        requests = folder / "requests.jsonl"
        config = harness.compose(base_overrides(server.url, items, folder / "unused-cache", folder / "unused-run"))
        assert harness.write_requests(config, requests) == calls
        for repeat in range(ctx.repeats):
            ctx.log(f"live: repeat {repeat + 1}/{ctx.repeats}: bare SDK loop, {calls} calls at c={concurrency}")
            loop = run_measured(
                sdk_loop_args(server.url, requests, "--concurrency", str(concurrency)),
                log_dir=ctx.work / "logs" / f"live-bare-{repeat}",
                env=ctx.env,
            )
            bare.append(json.loads(loop.stdout)["seconds"])
            ctx.log(f"live: repeat {repeat + 1}/{ctx.repeats}: judgebias, {calls} calls at c={concurrency}")
            run_dir = folder / f"run-{repeat}"
            overrides = base_overrides(server.url, items, harness.fresh(folder / f"cache-{repeat}"), run_dir)
            _, summary = judgebias_run(
                ctx,
                f"live-judgebias-{repeat}",
                [*overrides, f"max_concurrency={concurrency}", "bootstrap.resamples=0"],
                preimport=True,
            )
            check_live(summary, calls, "live")
            judged.append(summary["judging_seconds"])
            ctx.log(f"live: repeat {repeat + 1}/{ctx.repeats}: sequential SDK loop, {seq_items} items")
            loop = run_measured(
                sdk_loop_args(server.url, requests, "--sequential", "--limit", str(2 * seq_items)),
                log_dir=ctx.work / "logs" / f"live-seq-{repeat}",
                env=ctx.env,
            )
            sequential.append(json.loads(loop.stdout)["seconds"] / (2 * seq_items))
    ctx.log(f"live: bare {bare}, judgebias {judged}, sequential per call {sequential}")
    t_bare, t_jb = median(bare), median(judged)
    bound = calls * LATENCY / concurrency
    t_seq = median(sequential) * calls
    return [
        Figure(
            "1",
            f"judging phase / bare SDK loop ({calls} calls, c={concurrency}, {LATENCY * 1000:.0f} ms)",
            f"{t_jb / t_bare:.2f}x ({t_jb:.2f} s / {t_bare:.2f} s)",
            "<= 1.00x",
            t_jb / t_bare <= 1.00,
        ),
        Figure(
            "1",
            f"latency bound {calls} x {LATENCY} s / {concurrency}",
            f"{bound:.2f} s; judgebias at {t_jb / bound:.2f}x, bare loop at {t_bare / bound:.2f}x of it",
        ),
        Figure(
            "1",
            f"speed-up over the sequential loop (per call from {2 * seq_items} calls, x {calls})",
            f"{t_seq / t_jb:.1f}x ({t_seq:.0f} s / {t_jb:.2f} s)",
            ">= 25x",
            t_seq / t_jb >= 25,
        ),
    ]


# -------------------------------------------------------------------------------------------- 2. default


def bench_default(ctx: Context) -> list[Figure]:
    """Target 2: the default concurrency (16) against the latency bound; verdicts on disk during the run."""
    n = ctx.n(1000, 200)
    calls = 2 * n
    concurrency = 16
    folder = harness.fresh(ctx.work / "default")
    items = folder / "items.jsonl"
    harness.write_items(items, n, seed=2)
    judged, streamed = [], []
    with harness.devserver("--latency", str(LATENCY)) as server:
        for repeat in range(ctx.repeats):
            ctx.log(f"default: repeat {repeat + 1}/{ctx.repeats}: judgebias, {calls} calls at the default concurrency")
            run_dir = folder / f"run-{repeat}"
            partial, final = run_dir / "verdicts.jsonl.part", run_dir / "verdicts.jsonl"
            seen = {"lines": 0}

            def peek(partial: Path = partial, final: Path = final, seen: dict[str, int] = seen) -> None:
                if not final.exists() and partial.exists():
                    with partial.open("rb") as file:
                        seen["lines"] = max(seen["lines"], file.read().count(b"\n"))

            overrides = base_overrides(server.url, items, harness.fresh(folder / f"cache-{repeat}"), run_dir)
            _, summary = judgebias_run(
                ctx,
                f"default-{repeat}",
                [*overrides, "bootstrap.resamples=0"],
                preimport=True,
                while_running=peek,
            )
            check_live(summary, calls, "default")
            judged.append(summary["judging_seconds"])
            streamed.append(seen["lines"])
    ctx.log(f"default: judgebias {judged}; verdict lines seen on disk before the end {streamed}")
    bound = calls * LATENCY / concurrency
    t_jb = median(judged)
    return [
        Figure(
            "2",
            f"judging phase / latency bound {calls} x {LATENCY} s / {concurrency} (default concurrency)",
            f"{t_jb / bound:.3f}x ({t_jb:.2f} s / {bound:.2f} s)",
            "<= 1.15x",
            t_jb / bound <= 1.15,
        ),
        Figure(
            "5",
            "verdicts on disk while the run was still going (most lines seen in verdicts.jsonl.part)",
            f"{min(streamed)} of {n} lines (least of {len(streamed)} runs)",
            "> 0",
            min(streamed) > 0,
        ),
    ]


# --------------------------------------------------------------------------------------------- 3. cached

CACHED_URL = "http://127.0.0.1:9/v1"  # part of every cache key; nothing listens there: a miss would fail


def cached_store(ctx: Context, n: int) -> tuple[Path, Path]:
    """(items file of the first `n` items, cache dir) with every call of those items in the cache."""
    folder = ctx.work / "cached"
    cache = folder / "cache"
    if n not in ctx.cached_sizes:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"items-{n}.jsonl"
        harness.write_items(path, n, seed=3)
        ctx.cached_sizes[n] = path
    if ctx.cached_filled < n:
        started = time.perf_counter()
        config = harness.compose(base_overrides(CACHED_URL, ctx.cached_sizes[n], cache, folder / "unused"))
        count = harness.fill_cache(config)
        ctx.log(
            f"cached: wrote {count} replies with judgebias's own key functions in {time.perf_counter() - started:.1f} s"
        )
        ctx.cached_filled = n
    return ctx.cached_sizes[n], cache


def cached_run(ctx: Context, name: str, n: int, extra: list[str], **kwargs: Any) -> tuple[Measured, dict[str, Any]]:
    """One fully cached judgebias run over the first `n` items; fails unless every call was a cache hit."""
    items, cache = cached_store(ctx, n)
    run_dir = ctx.work / "cached" / f"run-{name}"
    measured, summary = judgebias_run(ctx, name, [*base_overrides(CACHED_URL, items, cache, run_dir), *extra], **kwargs)
    if summary["calls_cached"] != 2 * n or summary["calls_live"]:
        raise RuntimeError(f"{name}: expected {2 * n} cached calls, got {summary['calls_cached']}")
    return measured, summary


def bench_cached(ctx: Context) -> list[Figure]:
    """Target 3: cost per cached call, no SDK import, start-up against a minimal Hydra app."""
    big = ctx.n(10_000, 1_000)
    small = 10
    cached_store(ctx, big)
    cached_store(ctx, small)
    app = harness.write_minimal_hydra_app(ctx.work / "hydra-min")
    settings = ["bootstrap.resamples=0"]
    t_big, t_small, t_app = [], [], []
    startup_repeats = max(ctx.repeats, 5)
    for repeat in range(startup_repeats):
        ctx.log(f"cached: repeat {repeat + 1}/{startup_repeats}: minimal Hydra app, warm 10-item run, {big}-item run")
        app_run = run_measured(
            [PYTHON, str(app), f"hydra.run.dir={ctx.work / 'hydra-min' / f'out-{repeat}'}"],
            log_dir=ctx.work / "logs" / f"hydra-min-{repeat}",
            env=ctx.env,
        )
        t_app.append(app_run.seconds)
        t_small.append(cached_run(ctx, f"cached-{small}-{repeat}", small, settings, plain=True)[0].seconds)
        if repeat < ctx.repeats:
            t_big.append(cached_run(ctx, f"cached-{big}-{repeat}", big, settings, plain=True)[0].seconds)
    probe, _ = cached_run(ctx, f"cached-{big}-probe", big, settings, probe=True)
    imported = bool(probe.extra["openai_imported"])
    ctx.log(f"cached: T({big}) {t_big}, T({small}) {t_small}, minimal Hydra app {t_app}")
    per_call = (median(t_big) - median(t_small)) / (2 * (big - small))
    startup = median(t_small) / median(t_app)
    return [
        Figure(
            "3",
            f"cost per cached call, (T({big}) - T({small})) / {2 * (big - small)}",
            f"{per_call * 1e6:.0f} us ({median(t_big):.2f} s - {median(t_small):.2f} s)",
            "<= 100 us",
            per_call <= 100e-6,
        ),
        Figure("3", "`openai` imported by a fully cached run", "yes" if imported else "no", "no", not imported),
        Figure(
            "3",
            "warm 10-item run / minimal Hydra app (whole process, start to exit)",
            f"{startup:.2f}x ({median(t_small):.3f} s / {median(t_app):.3f} s)",
            "<= 1.30x",
            startup <= 1.30,
        ),
    ]


def bench_cached_redis(ctx: Context) -> list[Figure]:
    """The cost per cached call with cache.backend=redis, beside the disk cache's, measured in the same way now."""
    from judgebias.cache import ReplyCache, open_store
    from judgebias.cache.bundle import export_bundle, import_bundle

    big = ctx.n(10_000, 1_000)
    small = 10
    _, disk = cached_store(ctx, big)
    cached_store(ctx, small)
    settings = ["bootstrap.resamples=0"]
    with harness.redis_server(ctx.work / "redis") as server:
        env = {**ctx.env, "JUDGEBIAS_REDIS_URL": server.url}
        started = time.perf_counter()
        bundle = ctx.work / "cached" / "replies.jsonl.gz"
        export_bundle(ReplyCache(str(disk), "use"), bundle)
        os.environ["JUDGEBIAS_REDIS_URL"] = server.url
        try:
            store = open_store("redis", str(ctx.work / "cached" / "node"), "use")
            _, added, _ = import_bundle(store, bundle)
            store.close()
        finally:
            del os.environ["JUDGEBIAS_REDIS_URL"]
        ctx.log(f"cached_redis: {added} replies loaded into Redis in {time.perf_counter() - started:.1f} s")
        redis_settings = [*settings, "cache.backend=redis"]
        times: dict[str, dict[int, list[float]]] = {"disk": {big: [], small: []}, "redis": {big: [], small: []}}
        saved = ctx.env
        for repeat in range(ctx.repeats):
            for backend, extra in (("disk", settings), ("redis", redis_settings)):
                ctx.env = env
                try:
                    for n in (small, big):
                        ctx.log(f"cached_redis: repeat {repeat + 1}/{ctx.repeats}: {backend}, {n} items")
                        measured, _ = cached_run(ctx, f"cached-{backend}-{n}-{repeat}", n, extra, plain=True)
                        times[backend][n].append(measured.seconds)
                finally:
                    ctx.env = saved
    figures = []
    where = {"disk": "", "redis": " (redis-server on 127.0.0.1)"}
    for backend in ("disk", "redis"):
        t_big, t_small = median(times[backend][big]), median(times[backend][small])
        per_call = (t_big - t_small) / (2 * (big - small))
        figures.append(
            Figure(
                "-",
                f"cost per cached call, cache.backend={backend}{where[backend]}, (T({big}) - T({small})) / "
                f"{2 * (big - small)}",
                f"{per_call * 1e6:.0f} us ({t_big:.2f} s - {t_small:.2f} s)",
            )
        )
    start = median(times["redis"][small]) - median(times["disk"][small])
    figures.append(Figure("-", f"warm {small}-item run, cache.backend=redis minus disk", f"{start:+.2f} s"))
    return figures


# ------------------------------------------------------------------------------------------ 4. ratelimit


def bench_ratelimit(ctx: Context) -> list[Figure]:
    """Target 4: a server admitting 100 requests/s; adaptive client, and a client limit of 6000 per minute."""
    n = ctx.n(1000, 200)
    calls = 2 * n
    rate = 100.0
    concurrency = 64
    folder = harness.fresh(ctx.work / "ratelimit")
    items = folder / "items.jsonl"
    harness.write_items(items, n, seed=4)
    variants = {
        "adaptive": ("adaptive (no client limit)", []),
        "rpm": ("judge.requests_per_minute=6000", ["judge.requests_per_minute=6000"]),
    }
    results: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
    with harness.devserver("--latency", str(LATENCY), "--rate-limit", str(rate)) as server:
        for repeat in range(ctx.repeats):
            for variant, (_, extra) in variants.items():
                ctx.log(f"ratelimit: repeat {repeat + 1}/{ctx.repeats}: {variant}, {calls} calls at c={concurrency}")
                server.reset()
                run_dir = folder / f"run-{variant}-{repeat}"
                cache = harness.fresh(folder / f"cache-{variant}-{repeat}")
                _, summary = judgebias_run(
                    ctx,
                    f"ratelimit-{variant}-{repeat}",
                    [
                        *base_overrides(server.url, items, cache, run_dir),
                        f"max_concurrency={concurrency}",
                        "bootstrap.resamples=0",
                        *extra,
                    ],
                    preimport=True,
                    failed_calls_ok=True,
                )
                stats = server.stats()
                check_live(summary, calls, f"ratelimit {variant}", failed_calls_ok=True)
                limited = int(stats["by_status"].get("429", 0))
                results[variant].append(
                    {
                        "seconds": summary["judging_seconds"],
                        "share": limited / stats["requests"],
                        "limited": limited,
                        "failed": summary["failed_calls"],
                    }
                )
    figures = []
    for variant, (label, _) in variants.items():
        runs = results[variant]
        ctx.log(f"ratelimit {variant}: {runs}")
        seconds = median([r["seconds"] for r in runs])
        share = median([r["share"] for r in runs])
        failed = max(r["failed"] for r in runs)
        achieved = (calls - failed) / seconds / rate
        figures += [
            Figure(
                "4",
                f"{label}: completed calls per second / admitted {rate:.0f}/s (c={concurrency})",
                f"{achieved:.3f} ({calls} calls in {seconds:.2f} s; failed calls: {failed})",
                ">= 0.90, none failed",
                achieved >= 0.90 and failed == 0,
            ),
            Figure(
                "4",
                f"{label}: 429s / all requests",
                f"{100 * share:.1f}% (429s per run: {', '.join(str(int(r['limited'])) for r in runs)})",
                "<= 25%",
                share <= 0.25,
            ),
        ]
    return figures


# --------------------------------------------------------------------------------------------- 5. memory


def bench_memory(ctx: Context) -> list[Figure]:
    """Target 5: peak RSS of a cached run over 50,000 items against 10 items; the summary phase at defaults."""
    big = ctx.n(50_000, 5_000)
    small = 10
    cached_store(ctx, small)
    items, _ = cached_store(ctx, big)
    text_bytes = sum(
        len(record[key].encode("utf-8"))
        for line in items.read_text(encoding="utf-8").splitlines()
        for record in [json.loads(line)]
        for key in ("id", "question", "a", "b")
    )
    settings = ["bootstrap.resamples=0"]
    rss_big, rss_small = [], []
    for repeat in range(ctx.repeats):
        ctx.log(f"memory: repeat {repeat + 1}/{ctx.repeats}: cached runs over {small} and {big} items")
        rss_small.append(cached_run(ctx, f"memory-{small}-{repeat}", small, settings, plain=True)[0].max_rss_kib)
        rss_big.append(cached_run(ctx, f"memory-{big}-{repeat}", big, settings, plain=True)[0].max_rss_kib)
    ctx.log(f"memory: peak RSS KiB {small} items {rss_small}, {big} items {rss_big}")
    if not harness.GNU_TIME:
        raise RuntimeError("memory: peak RSS per run needs GNU time at /usr/bin/time (apt-get install time)")
    growth = (median(rss_big) - median(rss_small)) * 1024
    allowed = 2048 * big + text_bytes
    report = _report_available()
    defaults = [] if report else ["report=false"]
    summary_runs = []
    for repeat in range(1):  # one run: information only, and the longest run of the benchmark
        ctx.log(f"memory: summary phase of {big} items at the default settings")
        measured, _ = cached_run(ctx, f"summary-{big}-{repeat}", big, defaults, probe=True)
        summary_runs.append(measured)
    summary_seconds = median([m.extra.get("summary_seconds", 0.0) for m in summary_runs])
    write_seconds = median([m.extra.get("write_seconds", 0.0) for m in summary_runs])
    return [
        Figure(
            "5",
            f"peak RSS growth, {big} vs {small} cached items / (2 KiB per item + the items' text)",
            f"{growth / allowed:.2f} ({growth / 2**20:.1f} MiB of {allowed / 2**20:.1f} MiB allowed; "
            f"{(growth - text_bytes) / big:.0f} B per item beyond its {text_bytes / big:.0f} B of text)",
            "<= 1.00",
            growth <= allowed,
        ),
        Figure(
            "-",
            f"summary phase for {big} items at the default settings (1000 bootstrap resamples"
            f"{'' if report else '; report=false: judgebias.report.run_report is not in this tree'})",
            f"{summary_seconds:.2f} s summary + {write_seconds:.2f} s ratings/provenance"
            f"{'/report' if report else ''}; whole run {median([m.seconds for m in summary_runs]):.1f} s, "
            f"peak RSS {median([m.max_rss_kib for m in summary_runs]) / 1024:.0f} MiB",
        ),
    ]


# ----------------------------------------------------------------------------------------------- scale

SCALE_WALL_RATIO = 4.0  # offline judgebias against the hand-written loop, wall time
SCALE_RSS_MIB = 400.0  # peak RSS of the 1M-item offline run
SCALE_FLAT = 1.5  # peak RSS at 1M items against 100k
SCALE_CACHED_US = 100.0  # a cached call of the 200k-item rerun


def offline_run(
    ctx: Context, name: str, items: Path, *extra: str, probe: bool = False
) -> tuple[Measured, dict[str, Any]]:
    """judge=longer over `items` (no request, no cache), as a user runs it: report and progress off (`probe`: the
    summary phase timed)."""
    run_dir = ctx.work / "scale" / f"run-{name}"
    overrides = ["judge=longer", "data=jsonl", f"data.path={items}", f"cache.dir={ctx.work / 'scale' / 'cache'}",
                 f"hydra.run.dir={run_dir}", "progress=off", "report=false", *extra]  # fmt: skip
    return judgebias_run(ctx, name, overrides, plain=not probe, probe=probe)


def hand_loop(ctx: Context, name: str, items: Path) -> tuple[Measured, dict[str, Any]]:
    """benchmarks/hand_loop.py over `items`: its measurement and the figures it printed."""
    out = ctx.work / "scale" / f"hand-{name}.jsonl"
    measured = run_measured([PYTHON, str(harness.HERE / "hand_loop.py"), str(items), str(out)],
                            log_dir=ctx.work / "logs" / f"hand-{name}", env=ctx.env)  # fmt: skip
    if measured.code != 0:
        raise RuntimeError(f"hand loop {name} exited {measured.code}:\n{measured.stderr[-2000:]}")
    return measured, json.loads(measured.stdout.strip().splitlines()[-1])


def bench_scale(ctx: Context) -> list[Figure]:
    """1,000,000 generated pairs through an offline judge beside the hand-written loop (wall, peak RSS, and the
    same win rate and consistency from both: the loop is the oracle); peak RSS at 1M against 100k; a 200,000-item
    fully cached rerun's cost per call."""
    big, small = ctx.n(1_000_000, 20_000), ctx.n(100_000, 2_000)
    folder = ctx.work / "scale"
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for n in (big, small):
        files[n] = folder / f"items-{n}.jsonl"
        if not files[n].exists():
            harness.write_items(files[n], n, seed=5)
    walls, loops, loop_rss, rss = [], [], [], {big: [], small: []}
    for repeat in range(ctx.repeats):
        ctx.log(f"scale: repeat {repeat + 1}/{ctx.repeats}: {big} items offline, and the hand-written loop")
        loop, figures = hand_loop(ctx, f"{big}-{repeat}", files[big])
        run, summary = offline_run(ctx, f"{big}-{repeat}", files[big])
        for name in ("win_rate", "position_consistency"):
            if abs(summary[name] - figures[name]) > 1e-12:
                raise RuntimeError(f"scale: {name} {summary[name]} differs from the hand loop's {figures[name]}")
        walls.append(run.seconds)
        loops.append(loop.seconds)
        loop_rss.append(loop.max_rss_kib)
        rss[big].append(run.max_rss_kib)
        rss[small].append(offline_run(ctx, f"{small}-{repeat}", files[small])[0].max_rss_kib)
    ratio = median(walls) / median(loops)
    peak = median(rss[big]) / 1024
    flat = median(rss[big]) / median(rss[small])
    # The people's number at scale: labels on 1% of the items, so every figure is corrected (PPI++ over 1M items,
    # the people's ratings a logistic fit over them), held to the same wall and memory targets.
    sparse = folder / f"items-{big}-labels-1pct.jsonl"
    if not sparse.exists():
        harness.write_items(sparse, big, seed=5, labelled=0.01)
    ctx.log(f"scale: {big} items offline with labels on 1% of them (the corrected figures)")
    people_run, people_summary = offline_run(ctx, f"{big}-labels-1pct", sparse, probe=True)
    if people_summary.get("corrected_win_rate") is None or not people_summary["corrected"]["unlabelled"]:
        raise RuntimeError(
            f"scale: the 1%-labelled run did not correct its win rate: {people_summary.get('corrected')}"
        )
    people_ratio = people_run.seconds / median(loops)
    people_peak = people_run.max_rss_kib / 1024
    cached_n = ctx.n(200_000, 5_000)
    ctx.log(f"scale: a fully cached rerun of {cached_n} items (and of 10)")
    cached_times = []
    for repeat in range(ctx.repeats):
        tiny, _ = cached_run(ctx, f"scale-cached-10-{repeat}", 10, ["bootstrap.resamples=0"], plain=True)
        large, _ = cached_run(ctx, f"scale-cached-{cached_n}-{repeat}", cached_n, [], plain=True)
        cached_times.append((large.seconds - tiny.seconds) / (2 * cached_n - 20) * 1e6)
    per_call = median(cached_times)
    return [
        Figure("scale", f"{big} items offline (judge=longer) / the hand-written loop, wall time",
               f"{ratio:.1f}x ({median(walls):.1f} s / {median(loops):.1f} s; same win rate and consistency)",
               f"<= {SCALE_WALL_RATIO:.0f}x", ratio <= SCALE_WALL_RATIO),
        Figure("scale", f"peak RSS of the {big}-item offline run",
               f"{peak:.0f} MiB (the hand-written loop: {median(loop_rss) / 1024:.0f} MiB)",
               f"<= {SCALE_RSS_MIB:.0f} MiB", peak <= SCALE_RSS_MIB),
        Figure("scale", f"peak RSS at {big} items / at {small}", f"{flat:.2f}", f"<= {SCALE_FLAT}", flat <= SCALE_FLAT),
        Figure("scale", f"{big} items, labels on 1% (the people's figures corrected) / the hand-written loop, wall",
               f"{people_ratio:.1f}x ({people_run.seconds:.1f} s; summary phase "
               f"{people_run.extra.get('summary_seconds', 0.0):.1f} s + "
               f"{people_run.extra.get('write_seconds', 0.0):.1f} s ratings/provenance; "
               f"{people_summary['corrected']['labelled']} labels)",
               f"<= {SCALE_WALL_RATIO:.0f}x", people_ratio <= SCALE_WALL_RATIO),
        Figure("scale", f"peak RSS of the {big}-item run with labels on 1%", f"{people_peak:.0f} MiB",
               f"<= {SCALE_RSS_MIB:.0f} MiB", people_peak <= SCALE_RSS_MIB),
        Figure("scale", f"cost per cached call, {cached_n}-item rerun at the defaults",
               f"{per_call:.0f} us", f"<= {SCALE_CACHED_US:.0f} us", per_call <= SCALE_CACHED_US),
    ]  # fmt: skip


# --------------------------------------------------------------------------------------------- compare

COMPARE_RSS_RATIO = 2.0  # compare's peak RSS against the peak of the run it compares
COMPARE_SECONDS = 60.0  # compare of two 1M-item runs


def bench_compare(ctx: Context) -> list[Figure]:
    """`python -m judgebias.compare` and `check --baseline` of two 1,000,000-item runs (judge=longer as the base,
    judge=noisy as the candidate): wall time, and peak RSS against the peak of the base run itself, measured in the
    same invocation. The candidate's lines are shuffled, so its rows are matched by id, not by position; compare
    must match every item, and the gate must fail the noisy judge's drop in consistency."""
    big = ctx.n(1_000_000, 20_000)
    folder = ctx.work / "compare"
    folder.mkdir(parents=True, exist_ok=True)
    items = ctx.work / "scale" / f"items-{big}.jsonl"
    if not items.exists():
        items.parent.mkdir(parents=True, exist_ok=True)
        harness.write_items(items, big, seed=5)
    base_dir, cand_dir = folder / "base", folder / "cand"
    common = ["data=jsonl", f"data.path={items}", f"cache.dir={folder / 'cache'}", "progress=off", "report=false"]
    ctx.log(f"compare: a base run and a candidate run of {big} items")
    base_run, _ = judgebias_run(ctx, "compare-base", ["judge=longer", f"hydra.run.dir={base_dir}", *common], plain=True)
    judgebias_run(ctx, "compare-cand", ["judge=noisy", f"hydra.run.dir={cand_dir}", *common], plain=True)
    harness.shuffle_lines(cand_dir / "verdicts.jsonl", seed=1)
    walls, rss, gate_walls, gate_rss = [], [], [], []
    for repeat in range(ctx.repeats):
        ctx.log(f"compare: repeat {repeat + 1}/{ctx.repeats}")
        out = folder / f"out-{repeat}"
        measured = run_measured([PYTHON, "-m", "judgebias.compare", str(base_dir), str(cand_dir), "--out", str(out)],
                                log_dir=ctx.work / "logs" / f"compare-{repeat}", env=ctx.env)  # fmt: skip
        if measured.code != 0:
            raise RuntimeError(f"compare exited {measured.code}:\n{measured.stderr[-2000:]}")
        document = json.loads((out / "compare.json").read_text(encoding="utf-8"))
        if document["matched"] != big:
            raise RuntimeError(f"compare matched {document['matched']} of {big} items")
        walls.append(measured.seconds)
        rss.append(measured.max_rss_kib)
        gate = run_measured([PYTHON, "-m", "judgebias.check", str(cand_dir), "--baseline", str(base_dir)],
                            log_dir=ctx.work / "logs" / f"gate-{repeat}", env=ctx.env)  # fmt: skip
        if gate.code != 1 or "position_consistency dropped" not in gate.stdout:
            raise RuntimeError(f"the gate did not fail the noisy judge (exit {gate.code}):\n{gate.stdout[-2000:]}")
        gate_walls.append(gate.seconds)
        gate_rss.append(gate.max_rss_kib)
    run_peak = base_run.max_rss_kib
    ratio, gate_ratio = median(rss) / run_peak, median(gate_rss) / run_peak
    return [
        Figure("compare", f"compare of two {big}-item runs, wall time", f"{median(walls):.1f} s",
               f"<= {COMPARE_SECONDS:.0f} s", median(walls) <= COMPARE_SECONDS),
        Figure("compare", f"compare's peak RSS / the {big}-item run's own",
               f"{ratio:.2f} ({median(rss) / 1024:.0f} MiB / {run_peak / 1024:.0f} MiB)",
               f"<= {COMPARE_RSS_RATIO:.0f}", ratio <= COMPARE_RSS_RATIO),
        Figure("compare", f"check --baseline on two {big}-item runs, wall time", f"{median(gate_walls):.1f} s",
               f"<= {COMPARE_SECONDS:.0f} s", median(gate_walls) <= COMPARE_SECONDS),
        Figure("compare", "check --baseline's peak RSS / the run's own",
               f"{gate_ratio:.2f} ({median(gate_rss) / 1024:.0f} MiB)", f"<= {COMPARE_RSS_RATIO:.0f}",
               gate_ratio <= COMPARE_RSS_RATIO),
    ]  # fmt: skip


# ----------------------------------------------------------------------------------------- shared prefixes

PREFIX_CALLS_RATIO = 1.6  # llama.cpp: calls/s of the shipped layout, orders together / the answers-first order
PREFIX_TOKENS_RATIO = 0.6  # llama.cpp: prompt tokens evaluated per item / the answers-first order's
PREFIX_COST_RATIO = 0.65  # billing server (cached tokens at half price): dollars per item / the answers-first order's
PRICES = ("2.5", "1.25", "10")  # USD per million tokens in / cached / out: gpt-4o's
NAIVE = ("answers_first", "false")  # the rubric and judge.orders_together of the naive order


def bench_shared_prefix(ctx: Context) -> list[Figure]:
    """Items judged against a long shared context (RAG: documents of 1,500 words, several questions each): the
    shipped layout (system, context, question, then the answers) with an item's two orders sent back to back,
    against the naive order (the answers first, each call on its own). Through the billing devserver, which caches
    prefixes as OpenAI does and bills cached tokens at half price: dollars per item from its own bill. Through the
    real llama.cpp server of the test suite: calls per second, and prompt tokens evaluated per item from its log."""
    folder = harness.fresh(ctx.work / "prefix")
    conf = harness.answers_first_conf(folder / "conf")
    figures = _prefix_billing(ctx, folder, conf)
    return figures + _prefix_llamacpp(ctx, folder, conf)


def _layouts(conf: Path) -> dict[str, list[str]]:
    """The two orders compared: each one's leading overrides (--config-dir first, as Hydra wants it)."""
    rubric, together = NAIVE
    return {
        "naive": ["--config-dir", str(conf), f"rubric={rubric}", f"judge.orders_together={together}"],
        "shared": [],
    }


def _prefix_billing(ctx: Context, folder: Path, conf: Path) -> list[Figure]:
    documents, questions, words = ctx.n(6, 2), ctx.n(8, 3), 1500
    items = folder / "rag.jsonl"
    harness.write_rag_items(items, documents, questions, words, seed=3)
    n = documents * questions
    price_in, price_cached, price_out = PRICES
    server_prices = ("--price-input", price_in, "--price-cached", price_cached, "--price-output", price_out)
    judge_prices = [f"judge.price_input_per_mtok={price_in}", f"judge.price_cached_input_per_mtok={price_cached}",
                    f"judge.price_output_per_mtok={price_out}"]  # fmt: skip
    dollars, cached, agree = {}, {}, {}
    with harness.devserver("--latency", "0.05", "--prefix-cache", *server_prices) as server:
        for name, leading in _layouts(conf).items():
            server.reset()  # an empty prompt cache and bill for each
            ctx.log(f"prefix: {name} order, {2 * n} calls through the billing server")
            overrides = [*leading, *base_overrides(server.url, items, harness.fresh(folder / f"cache-{name}"),
                         folder / f"bill-{name}"), "max_concurrency=8", "bootstrap.resamples=0", *judge_prices]  # fmt: skip
            _, summary = judgebias_run(ctx, f"prefix-bill-{name}", overrides, plain=True)
            check_live(summary, 2 * n, "prefix")
            bill = server.stats()["billing"]
            dollars[name] = bill["billed_usd"] / n
            cached[name] = bill["cached_tokens"] / bill["prompt_tokens"]
            agree[name] = abs(summary["cost_usd"] - bill["billed_usd"]) < 1e-6
    if not all(agree.values()):
        raise RuntimeError(f"prefix: cost_usd differs from the server's own bill: {agree}")
    ratio = dollars["shared"] / dollars["naive"]
    return [
        Figure("prefix", f"billing server, {n} items of {words}-word documents: dollars per item / the naive order's",
               f"{ratio:.2f} (${dollars['shared']:.5f} / ${dollars['naive']:.5f}; cached tokens "
               f"{100 * cached['shared']:.0f}% / {100 * cached['naive']:.0f}%; cost_usd = the server's bill)",
               f"<= {PREFIX_COST_RATIO}", ratio <= PREFIX_COST_RATIO),
    ]  # fmt: skip


def _prefix_llamacpp(ctx: Context, folder: Path, conf: Path) -> list[Figure]:
    if not harness.llamacpp_available():
        return [Figure("prefix", "llama.cpp server", "not measured: tools/install-llamacpp.sh installs it")]
    documents, questions, words = ctx.n(3, 2), ctx.n(3, 2), ctx.n(700, 300)
    items = folder / "rag-llama.jsonl"
    harness.write_rag_items(items, documents, questions, words, seed=4)
    n = documents * questions
    server = harness.LlamaServer(folder / "llama", n_ctx=4096)
    speed, evaluated = {}, {}
    try:
        warm = urllib.request.Request(
            f"http://127.0.0.1:{server.port}/v1/completions", data=json.dumps({"model": "gemma-3-270m",
            "prompt": "Warm up.", "max_tokens": 1}).encode(), headers={"Content-Type": "application/json"},
        )  # fmt: skip
        with urllib.request.urlopen(warm, timeout=300) as response:  # the first request loads the model's pages
            response.read()
        for name, leading in _layouts(conf).items():
            ctx.log(f"prefix: {name} order, {2 * n} calls through llama.cpp")
            before = server.evaluated()
            overrides = [*leading, "judge=llamacpp", f"judge.port={server.port}", "data=jsonl", f"data.path={items}",
                         f"cache.dir={harness.fresh(folder / f'llama-cache-{name}')}",
                         f"hydra.run.dir={folder / f'llama-{name}'}", "max_concurrency=1", "bootstrap.resamples=0",
                         "progress=off", "report=false"]  # fmt: skip
            _, summary = judgebias_run(ctx, f"prefix-llama-{name}", overrides, plain=True)
            check_live(summary, 2 * n, "prefix")
            speed[name] = summary["calls_live"] / summary["judging_seconds"]
            evaluated[name] = (server.evaluated() - before) / n
    finally:
        server.stop()
    faster, fewer = speed["shared"] / speed["naive"], evaluated["shared"] / evaluated["naive"]
    return [
        Figure("prefix", f"llama.cpp, {n} items of {words}-word documents: calls/s / the naive order's",
               f"{faster:.2f}x ({speed['shared']:.2f} / {speed['naive']:.2f} calls/s)",
               f">= {PREFIX_CALLS_RATIO}x", faster >= PREFIX_CALLS_RATIO),
        Figure("prefix", "llama.cpp: prompt tokens evaluated per item (its log) / the naive order's",
               f"{fewer:.2f} ({evaluated['shared']:.0f} / {evaluated['naive']:.0f})",
               f"<= {PREFIX_TOKENS_RATIO}", fewer <= PREFIX_TOKENS_RATIO),
    ]  # fmt: skip


def _report_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("judgebias.report.run_report") is not None


def sdk_import_seconds(ctx: Context) -> Figure:
    """The one-off `import openai` + client, which live runs pay once before their first call."""
    times = []
    for repeat in range(ctx.repeats):
        with_sdk = run_measured(
            [PYTHON, "-c", "import openai; openai.OpenAI(api_key='x', base_url='http://127.0.0.1:9/v1')"],
            log_dir=ctx.work / "logs" / f"sdk-import-{repeat}",
            env=ctx.env,
        )
        bare = run_measured([PYTHON, "-c", "pass"], log_dir=ctx.work / "logs" / f"python-{repeat}", env=ctx.env)
        times.append(with_sdk.seconds - bare.seconds)
    return Figure(
        "-",
        "one-off `import openai` + client (paid once by a live run, before its first call)",
        f"{median(times):.2f} s",
    )


BENCHMARKS: dict[str, Callable[[Context], list[Figure]]] = {
    "live": bench_live,
    "default": bench_default,
    "cached": bench_cached,
    "cached_redis": bench_cached_redis,
    "ratelimit": bench_ratelimit,
    "memory": bench_memory,
    "scale": bench_scale,
    "compare": bench_compare,
    "prefix": bench_shared_prefix,
}


def table(figures: list[Figure], info: dict[str, str], seconds: float, quick: bool, repeats: int) -> str:
    """The results as Markdown."""
    lines = [
        f"judgebias benchmarks{' (--quick: small sizes, not the targets)' if quick else ''}: {info['date']}, "
        f"{info['nproc']} cores, {info['cpu']}, Python {info['python']}; median of {repeats} runs; "
        f"{seconds / 60:.1f} min",
        "",
        "| # | figure | measured | target | result |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {f.target} | {f.name} | {f.measured} | {f.goal} | {f.verdict} |" for f in figures]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the chosen benchmarks and print the table; exit 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes and one run each: a smoke test")
    parser.add_argument("--only", action="append", choices=sorted(BENCHMARKS), help="run only this (repeatable)")
    parser.add_argument("--repeats", type=int, default=None, help="runs per figure (default 3; 1 with --quick)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder (logs, run folders)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    repeats = args.repeats or (1 if args.quick else 3)
    work = Path(tempfile.mkdtemp(prefix="judgebias-bench-"))
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "JUDGEBIAS_CACHE_DIR")}
    env["HYDRA_FULL_ERROR"] = "1"
    ctx = Context(quick=args.quick, repeats=repeats, work=work, env=env, cached_sizes={})
    harness.compile_judgebias()
    info = harness.machine()
    started = time.perf_counter()
    figures: list[Figure] = []
    try:
        for name in args.only or list(BENCHMARKS):
            ctx.log(f"{name}: start")
            figures += BENCHMARKS[name](ctx)
        if not args.only or "live" in args.only:
            figures.append(sdk_import_seconds(ctx))
    finally:
        if args.keep:
            ctx.log(f"scratch folder kept: {work}")
        else:
            import shutil

            shutil.rmtree(work, ignore_errors=True)
    figures.sort(key=lambda f: f.target if f.target != "-" else "9")
    text = table(figures, info, time.perf_counter() - started, args.quick, repeats)
    print(text)
    if args.json:
        args.json.write_text(
            json.dumps({"machine": info, "figures": [f.__dict__ | {"result": f.verdict} for f in figures]}, indent=2)
            + "\n",
            encoding="utf-8",
        )
    return 1 if any(f.passed is False for f in figures) else 0


if __name__ == "__main__":
    sys.exit(main())
