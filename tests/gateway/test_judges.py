"""Reasoning models, thinking replies, announced waits and gateway errors, against the dev server on 127.0.0.1."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import pytest

from judgebias.backends.openai import OpenAIJudge
from judgebias.cache import call_key
from judgebias.config.schema import JudgeConfig, RubricConfig
from judgebias.core.errors import UserError
from judgebias.devserver.server import REASONING_TOKENS, RunningServer
from tests.gateway.helpers import dataset
from tests.helpers import JsonHandler, free_port, serving
from tests.reliability.helpers import early_retries, run_here, verdict_lines

StartServer = Callable[..., RunningServer]
RUBRIC = RubricConfig(name="t", system="s", user="u")
MESSAGES = [{"role": "user", "content": "Which answer is better?"}]
FAST = ("judge.retry_backoff=0.01", "judge.retry_backoff_max=0.05", "bootstrap.resamples=0", "report=false")


def judge_at(url: str, preset: str, *more: str) -> list[str]:
    """Overrides running a shipped judge preset, unchanged but for its endpoint, against a local server."""
    return [f"judge={preset}", f"judge.base_url={url}", "judge.api_key_env=null", "progress=off", *FAST, *more]


@pytest.mark.parametrize("preset", ["gpt5", "gpt5_mini", "o4_mini"])
def test_reasoning_presets_run_unchanged_against_a_reasoning_model(
    preset: str, server: StartServer, tmp_path: Path
) -> None:
    """The reasoning presets send nothing a reasoning model refuses, and bill its hidden tokens as output."""
    model = {"gpt5": "gpt-5", "gpt5_mini": "gpt-5-mini", "o4_mini": "o4-mini"}[preset]
    judge = server(reasoning_models=(model,))
    summary = run_here(tmp_path / "run", *judge_at(judge.url, preset), dataset(tmp_path), f"cache.dir={tmp_path}/c")
    per_call = REASONING_TOKENS["low"] + 1  # the presets' effort, then a one-token verdict
    assert ({"200": 12}, 0, 12 * per_call) == (
        judge.stats()["by_status"],
        summary["failed_calls"],
        summary["completion_tokens"],
    )


@pytest.mark.parametrize(
    ("override", "refused"),
    [("judge.temperature=0", "judge.temperature=0.0"), ("judge.logprobs=true", "judge.logprobs=True")],
)
def test_settings_a_reasoning_model_refuses_are_caught_before_any_call(
    override: str, refused: str, server: StartServer, tmp_path: Path
) -> None:
    """judge.temperature=0 or judge.logprobs=true on a reasoning preset stops the run before a request is sent."""
    judge = server(reasoning_models=("gpt-5",))
    with pytest.raises(UserError, match=refused.replace(".", r"\.")):
        run_here(tmp_path / "run", *judge_at(judge.url, "gpt5", override), dataset(tmp_path), f"cache.dir={tmp_path}/c")
    assert 0 == judge.stats()["requests"]


def test_a_budget_spent_reasoning_is_said_and_not_retried(server: StartServer, tmp_path: Path) -> None:
    """Empty replies at finish_reason "length" are not resent: outcome `truncated`, judge.max_tokens named in a note."""
    judge = server(reasoning_models=("gpt-5",))
    summary = run_here(
        tmp_path / "run",
        *judge_at(judge.url, "gpt5", "judge.max_tokens=100", "judge.reasoning_effort=medium"),
        dataset(tmp_path),
        f"cache.dir={tmp_path}/c",
    )
    budget_notes = [note for note in summary["notes"] if "judge.max_tokens=100" in note and "reasoning" in note]
    assert (12, {"truncated": 12}, 1) == (judge.stats()["requests"], summary["outcomes"], len(budget_notes))


def test_logprobs_refused_mid_run_degrade_to_hard_verdicts(server: StartServer, tmp_path: Path) -> None:
    """A model that refuses logprobs but is not known as a reasoning model gives hard verdicts, not a fatal 400."""
    judge = server(reasoning_models=("thinker",))
    summary = run_here(
        tmp_path / "run",
        *judge_at(judge.url, "local", "judge.model=thinker", "judge.temperature=null", "judge.logprobs=true"),
        "judge.max_tokens=4000",
        "judge.max_tokens_param=max_completion_tokens",
        dataset(tmp_path),
        f"cache.dir={tmp_path}/c",
    )
    assert (0, 12, True) == (
        summary["failed_calls"],
        summary["calls_total"] - summary["n_invalid"],
        any("no soft verdicts" in note for note in summary["notes"]),
    )


def test_null_sampling_keys_are_not_sent_and_the_budget_field_is_configurable() -> None:
    """temperature/top_p/seed null are left out of the body; the budget goes under judge.max_tokens_param."""
    config = JudgeConfig(
        backend="openai",
        name="r",
        model="m",
        temperature=None,
        seed=None,
        max_tokens=300,
        max_tokens_param="max_completion_tokens",
        reasoning_effort="high",
        extra_body={"service_tier": "flex"},
    )
    body = OpenAIJudge(config, RUBRIC).request_body(MESSAGES)
    expected = {
        "model": "m",
        "messages": MESSAGES,
        "max_completion_tokens": 300,
        "reasoning_effort": "high",
        "service_tier": "flex",
    }
    assert expected == body


def test_todays_cache_keys_are_unchanged_and_new_settings_enter_only_when_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """A configuration of today keeps its cache key; extra_body and reasoning_effort change it, headers do not."""
    today = JudgeConfig(backend="openai", name="g", model="gpt-4o", base_url="http://h/v1/")
    key_of_today = call_key(
        {
            "endpoint": "http://h/v1",
            "model": "gpt-4o",
            "messages": MESSAGES,
            "temperature": 0.0,
            "max_tokens": 16,
            "seed": 0,
            "top_p": None,
            "logprobs": False,
        }
    )
    monkeypatch.setenv("JUDGEBIAS_TEST_HEADER", "secret-header-value")

    def key(**changes: object) -> str:
        config = JudgeConfig(**{**today.__dict__, **changes})  # type: ignore[arg-type]
        return call_key(OpenAIJudge(config, RUBRIC).cache_request(MESSAGES))

    assert (key_of_today, key_of_today) == (key(), key(extra_headers={"X-Title": "JUDGEBIAS_TEST_HEADER"}))
    assert len({key_of_today, key(extra_body={"a": 1}), key(reasoning_effort="low")}) == 3


@pytest.mark.parametrize("think", ["inline", "field"])
def test_thinking_judges_are_read_after_their_reasoning(think: str, server: StartServer, tmp_path: Path) -> None:
    """Replies that think aloud (naming the other answer first) get the verdicts of the same judge without thinking."""
    plain, thinking = server(), server(think=think)
    runs = {}
    for name, judge in (("plain", plain), ("thinking", thinking)):
        run_here(tmp_path / name, *judge_at(judge.url, "local"), dataset(tmp_path), f"cache.dir={tmp_path}/{name}c")
        runs[name] = verdict_lines(tmp_path / name)
    verdicts = {name: [(line["call1"], line["call2"]) for line in lines] for name, lines in runs.items()}
    kept_raw = all(("<think>" in line["raw1"]) == (think == "inline") for line in runs["thinking"])
    assert (verdicts["plain"], True) == (verdicts["thinking"], kept_raw)


@pytest.mark.parametrize("style", ["litellm", "reset"])
def test_gateway_and_rate_limiter_waits_are_honoured(style: str, server: StartServer, tmp_path: Path) -> None:
    """Waits announced as llm_provider-retry-after(-ms) or an exhausted x-ratelimit window: no call fails, none early."""
    judge = server(rate_limit=40, latency=0.1, wait_style=style)
    overrides = (*judge_at(judge.url, "local", "max_concurrency=8"), dataset(tmp_path, 40), f"cache.dir={tmp_path}/c")
    summary = run_here(tmp_path / "run", *overrides)
    assert (0, []) == (summary["failed_calls"], early_retries(judge))
    assert judge.stats()["faults"]["rate_limit"] > 0  # the limit was really reached


def test_a_gateway_error_shows_its_status_once_with_a_key_hint(
    server: StartServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LiteLLM's 400 "No connected db." for a wrong key reads "HTTP 400 No connected db." and points at the key."""
    monkeypatch.setenv("JUDGEBIAS_GW_KEY", "sk-wrong-key")
    judge = server(api_key="right", error_style="gateway")
    with pytest.raises(UserError) as raised:
        run_here(
            tmp_path / "run",
            *judge_at(judge.url, "local", "judge.api_key_env=JUDGEBIAS_GW_KEY"),
            dataset(tmp_path),
            f"cache.dir={tmp_path}/c",
        )
    assert str(raised.value).endswith(
        "HTTP 400 No connected db. (the API key was refused: check the key in $JUDGEBIAS_GW_KEY (read from "
        "judge.api_key_env=JUDGEBIAS_GW_KEY; export the right key, or point judge.api_key_env at the variable that "
        "holds it))"
    )


def test_an_upstream_credential_failure_is_reported_as_the_gateways(server: StartServer, tmp_path: Path) -> None:
    """A gateway's provider refusing the gateway's own key is not blamed on the user's key."""
    judge = server(upstream_key_refused=True, error_style="gateway")
    with pytest.raises(UserError) as raised:
        run_here(tmp_path / "run", *judge_at(judge.url, "local"), dataset(tmp_path), f"cache.dir={tmp_path}/c")
    message = str(raised.value)
    assert ("HTTP 401 litellm.AuthenticationError", True, False) == (
        message.split(": ", 1)[1][:36],
        "the gateway's configuration needs fixing" in message,
        "check the key in" in message,
    )


def test_retries_after_a_timeout_are_counted_as_possibly_billed_twice(server: StartServer, tmp_path: Path) -> None:
    """Every request retried after a client-side timeout is counted in `timeouts`, with a note on double billing."""
    judge = server(phang=0.3, hang_seconds=3.0, fault_seed=1)
    summary = run_here(
        tmp_path / "run",
        *judge_at(judge.url, "local", "judge.timeout=0.5"),
        dataset(tmp_path),
        f"cache.dir={tmp_path}/c",
    )
    hangs = judge.stats()["faults"]["phang"]
    assert hangs > 0
    # Every hang is a timeout; on a loaded machine an ordinary slow request may time out too.
    assert (0, True, True) == (
        summary["failed_calls"],
        summary["timeouts"] >= hangs,
        any("billed twice" in note for note in summary["notes"]),
    )


def test_nothing_listening_gives_up_within_seconds_and_says_so_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A refused connection before any reply stops the run in seconds, after a line saying what is retried and why."""
    port = free_port()  # closed again: nothing listens there
    started = time.monotonic()
    with pytest.raises(UserError, match="could not connect"):
        run_here(
            tmp_path / "run",
            *judge_at(f"http://127.0.0.1:{port}/v1", "local", "judge.retry_backoff=0.5", "judge.retry_backoff_max=30"),
            dataset(tmp_path),
            f"cache.dir={tmp_path}/c",
        )
    elapsed = time.monotonic() - started
    assert elapsed < 15.0, elapsed  # 3 quick attempts, not the 7 backed-off ones (18-26 s before)
    assert "could not connect (is the server running? check judge.base_url); retrying in" in capsys.readouterr().err


class RecordingHandler(JsonHandler):
    """An OpenAI-compatible server that answers "A" and remembers a header of every request."""

    seen: ClassVar[list[str | None]] = []  # the X-Title header of every request

    def do_POST(self) -> None:
        self.request_body()
        self.seen.append(self.headers.get("X-Title"))
        choice = {"index": 0, "message": {"role": "assistant", "content": "A"}, "finish_reason": "stop"}
        self.send_json(200, {"model": "m", "choices": [choice], "usage": {"prompt_tokens": 1}})


def test_extra_headers_are_sent_from_env_vars_and_written_nowhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A header's value comes from its env var at call time and is in no output file and no cache entry."""
    canary = "hdr-canary-5c1d9e7f3a"
    monkeypatch.setenv("JUDGEBIAS_TEST_TITLE", canary)
    handler = type("Handler", (RecordingHandler,), {"seen": []})
    with serving(handler) as url:
        run_here(
            tmp_path / "run",
            *judge_at(url, "local", "+judge.extra_headers.X-Title=JUDGEBIAS_TEST_TITLE"),
            dataset(tmp_path, 2),
            f"cache.dir={tmp_path / 'cache'}",
        )
    leaked = [str(path) for path in tmp_path.rglob("*") if path.is_file() and canary.encode() in path.read_bytes()]
    assert ([canary] * 4, []) == (handler.seen, leaked)


@pytest.mark.parametrize(
    ("variable", "message"),
    [
        ("JUDGEBIAS_UNSET_TITLE", "takes its value from JUDGEBIAS_UNSET_TITLE"),
        ("Bearer sk-123", "NAME of an environment"),
    ],
)
def test_a_header_without_its_env_var_stops_the_run_before_any_call(
    variable: str, message: str, server: StartServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unset header variable, or a value typed where its name belongs, is one error before any request."""
    monkeypatch.delenv("JUDGEBIAS_UNSET_TITLE", raising=False)
    judge = server()
    with pytest.raises(UserError, match=message):
        run_here(
            tmp_path / "run",
            *judge_at(judge.url, "local", f"+judge.extra_headers.X-Title={variable!r}"),
            dataset(tmp_path),
            f"cache.dir={tmp_path}/c",
        )
    assert 0 == judge.stats()["requests"]


def test_a_thinking_judge_cut_off_mid_thought_is_not_resent(server: StartServer, tmp_path: Path) -> None:
    """A reply still inside <think> at finish_reason "length" is the outcome `truncated` with the budget note, sent once."""
    judge = server(think="inline")
    summary = run_here(
        tmp_path / "run",
        *judge_at(judge.url, "local", "judge.max_tokens=3"),
        dataset(tmp_path),
        f"cache.dir={tmp_path}/c",
    )
    budget_notes = [note for note in summary["notes"] if "judge.max_tokens=3" in note]
    assert (12, {"truncated": 12}, 1) == (judge.stats()["requests"], summary["outcomes"], len(budget_notes))
