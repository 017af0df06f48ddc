"""Helpers of the reliability suite: small datasets, fast-retry overrides, in-process runs, cache inspection."""

from __future__ import annotations

import itertools
import json
import sqlite3
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import diskcache
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

from judgebias.cache import TextOnlyDisk
from judgebias.cli.schemas import register_schemas
from judgebias.config.schema import Config, RubricConfig
from judgebias.devserver.server import RunningServer
from judgebias.engine.runner import run_experiment
from judgebias.run import to_config
from tests.helpers import REPO, Cli

KEY_ENV = "JUDGEBIAS_RELIABILITY_KEY"
KEY = {KEY_ENV: "sk-reliability-test-key"}


def pairs(count: int, *, prefix: str = "i") -> list[dict[str, Any]]:
    """`count` items whose answers differ in length in both directions, so a `longer` judge picks both sides."""
    items = []
    for i in range(count):
        short, long = f"answer {i}", f"answer {i} " + "with more detail " * (1 + i % 3)
        a, b = (short, long) if i % 2 else (long, short)
        items.append({"id": f"{prefix}{i}", "question": f"Question {i}?", "a": a, "b": b, "human": "1"})
    return items


def local(url: str, *more: str) -> list[str]:
    """Overrides for the `local` judge at a test server: a key from KEY_ENV, fast but real retries, no extras."""
    return [
        "judge=local",
        f"judge.base_url={url}",
        f"judge.api_key_env={KEY_ENV}",
        "judge.retry_backoff=0.01",
        "judge.retry_backoff_max=0.05",
        "bootstrap.resamples=0",
        "report=false",
        "progress=off",
        *more,
    ]


def shipped_rubric(name: str) -> RubricConfig:
    """A shipped rubric option as the schema composes it (the YAML states only what differs from the defaults)."""
    node = OmegaConf.merge(
        OmegaConf.structured(RubricConfig),
        OmegaConf.load(REPO / "src" / "judgebias" / "conf" / "rubric" / f"{name}.yaml"),
    )
    rubric = OmegaConf.to_object(node)
    assert isinstance(rubric, RubricConfig)
    return rubric


def config_of(*overrides: str) -> Config:
    """The typed Config that `python -m judgebias.run OVERRIDES` would run, composed in-process."""
    register_schemas()
    with initialize_config_module("judgebias.conf", version_base="1.3"):
        return to_config(compose("config", overrides=list(overrides)))


def run_here(out_dir: Path, *overrides: str) -> dict[str, Any]:
    """Run the experiment in this process (no Hydra start-up cost); return its summary."""
    return run_experiment(config_of(*overrides), out_dir, echo=lambda _: None)


def verdict_lines(run_dir: Path) -> list[dict[str, Any]]:
    """The verdicts.jsonl lines of a finished run."""
    text = (run_dir / "verdicts.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def decisions(run_dir: Path) -> dict[str, tuple[str, str, str]]:
    """Per item id: (call1, call2, verdict), what must not depend on faults or interruptions."""
    return {line["id"]: (line["call1"], line["call2"], line["verdict"]) for line in verdict_lines(run_dir)}


def cached_replies(cache_dir: Path) -> dict[str, dict[str, Any]]:
    """Every cached reply, read the way judgebias reads them (no pickle), after SQLite's own integrity check."""
    with sqlite3.connect(cache_dir / "cache.db") as db:
        assert [("ok",)] == db.execute("PRAGMA integrity_check").fetchall()
    cache = diskcache.Cache(str(cache_dir), disk=TextOnlyDisk)
    try:
        replies = {}
        for key in cache.iterkeys():
            text = cache.get(key)
            assert isinstance(text, str), f"cache value of {key} is not JSON text"
            replies[key] = json.loads(text)
        return replies
    finally:
        cache.close()


def attempts_by_body(server: RunningServer) -> dict[str, list[dict[str, Any]]]:
    """The server's timeline grouped by request body, each body's attempts in arrival order."""
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in server.timeline():
        grouped[event["body"]].append(event)
    return dict(grouped)


def early_retries(server: RunningServer) -> list[tuple[str, float, float]]:
    """(body, seconds waited, seconds asked) for every retry sent sooner than its 429's Retry-After allowed."""
    early = []
    for body, attempts in attempts_by_body(server).items():
        for refused, retry in itertools.pairwise(attempts):
            if refused["status"] == 429 and refused["retry_after"] is not None:
                # From when the 429 began to be sent (the earliest the client can have read it), not from when the
                # server's thread noted it done: under load that thread can wait for the interpreter after sending.
                waited = retry["arrived"] - refused["sent"]
                if waited < refused["retry_after"]:
                    early.append((body, waited, refused["retry_after"]))
    return early


def judgebias(cli: Cli, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m judgebias.run ARGS` run from the test's folder as typed: no run folder or cache added."""
    return subprocess.run(
        [sys.executable, "-m", "judgebias.run", *args],
        cwd=cli.tmp_path,
        env=cli.env | (env or {}),
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file below `folder` (hidden ones too) and its bytes, to show that nothing was written there."""
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}
