"""Faults from the judge endpoint, measured at the local server: storms, exhausted retries, permanent errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from judgebias.devserver.server import RunningServer
from tests.helpers import InProcessCli, write_items
from tests.reliability.helpers import (
    KEY,
    KEY_ENV,
    cached_replies,
    decisions,
    early_retries,
    local,
    pairs,
    run_here,
    verdict_lines,
)

pytestmark = pytest.mark.reliability

StartServer = Callable[..., RunningServer]
FAULTS = ("p429", "p500", "phang", "preset", "ptruncate")


def test_a_fault_storm_ends_with_the_clean_verdicts(
    server: StartServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """429s with Retry-After, 500s, hangs past the timeout, resets mid-response and cut-off replies change no verdict."""
    monkeypatch.setenv(KEY_ENV, KEY[KEY_ENV])
    data = write_items(tmp_path / "items.jsonl", pairs(24))
    judge = {"policy": "hash", "first_bias": 0.3}
    clean = server(**judge)
    storm = server(
        **judge, p429=0.1, p500=0.08, phang=0.06, preset=0.08, ptruncate=0.08, fault_retry_after=0.2, fault_seed=3
    )
    # brackets: a reply cut to 3 characters is unreadable, so a sampled judge's truncated reply is asked again (a
    # judge at temperature 0 would give the same reply again: its cut-off replies are outcomes, not retried)
    common = ("data=jsonl", f"data.path={data}", "rubric=brackets", "judge.max_tokens=64", "max_concurrency=4")
    common += ("judge.temperature=0.7",)
    retries = ("judge.timeout=0.5", "judge.max_retries=10")
    calm = run_here(tmp_path / "calm", *local(clean.url, f"cache.dir={tmp_path / 'calm-cache'}", *common))
    stormy = run_here(tmp_path / "storm", *local(storm.url, f"cache.dir={tmp_path / 'cache'}", *common, *retries))

    stats = storm.stats()
    assert all(stats["faults"][fault] > 0 for fault in FAULTS), stats["faults"]
    assert (0, 0) == (calm["failed_calls"], stormy["failed_calls"])
    assert decisions(tmp_path / "calm") == decisions(tmp_path / "storm")
    calls = 48
    assert calls == stats["distinct_bodies"] == len(cached_replies(tmp_path / "cache"))
    # each call answered once: the only extra answers are the cut-off ones, each asked again
    assert calls + stats["faults"]["ptruncate"] == stats["completions_ok"]
    assert all("[[" in reply["text"] for reply in cached_replies(tmp_path / "cache").values())
    assert stats["max_per_body"] <= 10 + 1
    assert {0.2} == {event["retry_after"] for event in storm.timeline() if event["status"] == 429}
    assert [] == early_retries(storm)


def test_a_rate_limited_server_is_not_stormed_after_a_burst(
    server: StartServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sixteen workers against a server admitting 40 requests a second: every call succeeds, none retried early."""
    monkeypatch.setenv(KEY_ENV, KEY[KEY_ENV])
    data = write_items(tmp_path / "items.jsonl", pairs(40))
    limited = server(policy="longer", rate_limit=40, latency=0.1)
    summary = run_here(
        tmp_path / "run",
        *local(limited.url, f"cache.dir={tmp_path / 'cache'}", "data=jsonl", f"data.path={data}", "max_concurrency=16"),
    )

    stats = limited.stats()
    assert 0 == summary["failed_calls"]
    assert stats["faults"]["rate_limit"] > 0
    assert stats["max_per_body"] <= 6 + 1
    assert all(event["retry_after"] for event in limited.timeline() if event["status"] == 429)
    assert [] == early_retries(limited)
    # a herd (every worker back at the same instant) is refused again and again: more refusals than calls
    assert stats["by_status"]["429"] < 80


@pytest.mark.slow
def test_calls_failing_after_their_retries_are_errors_and_a_rerun_makes_only_those(
    cli_here: InProcessCli, server: StartServer, tmp_path: Path
) -> None:
    """A call still failing after its retries is an `error` per order, the run exits 1 in one line, a rerun redoes it."""
    data = write_items(tmp_path / "items.jsonl", pairs(8))
    flaky = server(policy="longer", p500=0.6, fault_seed=11)
    args = (*local(flaky.url, "data=jsonl", f"data.path={data}", "judge.max_retries=1"),)
    first = cli_here(*args, env=KEY)

    assert 1 == first.code, first
    lines = first.stderr.strip().splitlines()
    notices = [line for line in lines if "; retrying in " in line]  # what is retried and why, as it happens
    assert ["judgebias:"] == [line.split()[0] for line in lines if line not in notices]
    assert all(line.startswith("judgebias: judge 'local'") for line in notices)
    summary = first.summary()
    failed = summary["failed_calls"]
    assert 0 < failed < 16
    assert 1 + 1 == flaky.stats()["max_per_body"]  # judge.max_retries=1: two attempts, no more
    assert failed == summary["errors_call1"] + summary["errors_call2"]
    assert {"transient": failed} == summary["failed_by_kind"]
    lines = verdict_lines(first.run_dir)
    assert f"errors_call1={summary['errors_call1']}, errors_call2={summary['errors_call2']}" in first.stderr
    for line in lines:
        errors = [line.get(f"error{order}") for order in (1, 2) if line[f"call{order}"] == "error"]
        assert len(errors) == [line["call1"], line["call2"]].count("error")
        assert all("HTTP 500" in error and "2 attempts" in error for error in errors), line
        kinds = [line.get(f"failure{order}") for order in (1, 2) if line[f"call{order}"] == "error"]
        assert ["transient"] * len(errors) == kinds  # a 500 from the server, retried and still failing
        if errors:
            assert "error" == line["verdict"]  # never a silent tie
    assert (first.run_dir / "summary.json").exists() and not (first.run_dir / "verdicts.jsonl.part").exists()

    port = flaky.port
    flaky.stop()
    steady = server(policy="longer", port=port)
    again = cli_here(*args, env=KEY)
    assert 0 == again.code, again
    assert failed == steady.stats()["requests"] == again.summary()["calls_live"]
    assert all("error" not in (line["call1"], line["call2"]) for line in verdict_lines(again.run_dir))


def oversized(tmp_path: Path) -> Path:
    """A dataset whose first answer makes a request larger than the server accepts (16 MB), then small items."""
    return write_items(tmp_path / "big.jsonl", [{"id": "big", "question": "Q", "a": "word " * 3_500_000, "b": "x"}])


PERMANENT: list[Any] = [
    pytest.param({"api_key": "another-key"}, "HTTP 401", id="bad-key"),
    pytest.param({"allowed_models": ("some-other-model",)}, "HTTP 404 model_not_found", id="unknown-model"),
    pytest.param({"quota_exhausted": True}, "HTTP 429 insufficient_quota", id="quota-exhausted"),
    pytest.param({}, "HTTP 413", id="request-too-large"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("faults", "reason"), PERMANENT)
def test_a_permanent_error_stops_the_run_at_once_without_retries(
    cli_here: InProcessCli, server: StartServer, tmp_path: Path, faults: dict[str, Any], reason: str
) -> None:
    """Bad key, unknown model, exhausted quota, too large a request: exit 2 at once, naming judge and endpoint."""
    endpoint = server(policy="longer", latency=0.05, **faults)
    small = pairs(20)
    if reason == "HTTP 413":
        data = oversized(tmp_path)
        with data.open("a", encoding="utf-8") as file:
            file.writelines(json.dumps(item) + "\n" for item in small)
    else:
        data = write_items(tmp_path / "items.jsonl", small)
    result = cli_here(*local(endpoint.url, "data=jsonl", f"data.path={data}", "max_concurrency=4"), env=KEY)

    assert 2 == result.code, result
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"judgebias: error: judge 'local' (local-model at {endpoint.url})")
    assert reason in line and "attempts" not in line
    stats = endpoint.stats()
    # only the calls already in flight when the first refusal came back reached the server, and none was retried
    assert stats["requests"] <= 4
    assert stats["max_per_body"] <= 1
    assert "failed" == result.summary()["status"]
    assert not (result.run_dir / "verdicts.jsonl").exists()
