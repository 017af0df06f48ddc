"""judge.api=completions end to end against the dev server's /v1/completions, through the real openai SDK."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from judgebias.backends.openai import OpenAIJudge
from judgebias.core.errors import UserError
from judgebias.devserver.server import RunningServer, ServerOptions, start_server
from tests.helpers import write_items
from tests.reliability.helpers import config_of, pairs, run_here, verdict_lines


def _overrides(tmp_path: Path, url: str, *more: str, items: list[dict[str, str]] | None = None) -> list[str]:
    path = write_items(tmp_path / "items.jsonl", pairs(4) if items is None else items)
    return [
        "judge=llamacpp",
        f"judge.base_url={url}",
        "judge.retry_backoff=0.01",
        f"data.path={path}",
        f"cache.dir={tmp_path / 'cache'}",
        "bootstrap.resamples=0",
        "report=false",
        "progress=off",
        *more,
    ]


@pytest.fixture
def devserver() -> Iterator[RunningServer]:
    """A dev server picking the longer answer, answering completions too."""
    with start_server(ServerOptions(policy="longer")) as running:
        yield running


def test_a_rambling_completion_is_read_from_its_first_token(tmp_path: Path, devserver: RunningServer) -> None:
    """With room to ramble (the continuation names the other label), each verdict is still the first token's label."""
    summary = run_here(tmp_path / "run", *_overrides(tmp_path, devserver.url, "judge.max_tokens=8"))
    lines = verdict_lines(tmp_path / "run")
    assert 0 == summary["n_invalid"]
    assert 1.0 == summary["position_consistency"]
    assert all("The other answer" in line["raw1"] for line in lines)  # the whole text is kept
    assert [line["verdict"] for line in lines] == ["1" if len(p["a"]) > len(p["b"]) else "2" for p in pairs(4)]


def test_soft_verdicts_sum_the_spellings_of_the_first_token(tmp_path: Path, devserver: RunningServer) -> None:
    """The first token's top log-probabilities give each label the sum of its spellings (" A" 0.72 + "A" 0.08)."""
    run_here(tmp_path / "run", *_overrides(tmp_path, devserver.url, "judge.logprobs=true"))
    line = verdict_lines(tmp_path / "run")[0]
    chosen = line["call1"]
    assert 0.8 == pytest.approx(line["probs1"][chosen])
    assert 0.15 == pytest.approx(line["probs1"]["B" if chosen == "A" else "A"])
    assert line["soft"] == pytest.approx(0.825 if line["verdict"] == "1" else 0.175)  # a tie counts half


def test_a_completion_rerun_is_free_and_its_key_names_the_api(tmp_path: Path, devserver: RunningServer) -> None:
    """A rerun sends nothing; the same judge through the chat endpoint is a different cache key (and is sent)."""
    overrides = _overrides(tmp_path, devserver.url)
    run_here(tmp_path / "first", *overrides)
    sent = devserver.stats()["requests"]
    assert 8 == sent
    again = run_here(tmp_path / "again", *overrides)
    assert sent == devserver.stats()["requests"]
    assert 8 == again["calls_cached"]
    run_here(tmp_path / "chat", *overrides, "judge.api=chat")
    assert sent + 8 == devserver.stats()["requests"]


def test_cache_keys_of_chat_judges_are_unchanged() -> None:
    """A chat judge's cache key holds no "api" (existing caches stay warm); a completion's holds the prompt."""
    chat = config_of("judge=local", "judge.api_key_env=null")
    completions = config_of("judge=llamacpp")
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    assert "api" not in OpenAIJudge(chat.judge, chat.rubric).cache_request(messages)
    key = OpenAIJudge(completions.judge, completions.rubric).cache_request(messages)
    assert ("completions", "S\n\nU\n\nThe better answer is Answer") == (key["api"], key["prompt"])


def test_a_prompt_longer_than_the_context_fails_its_call_only(tmp_path: Path) -> None:
    """An n_ctx overflow is one failed call with the fix named, not retried, and the other calls go on."""
    items = pairs(3)
    items[1]["a"] = "word " * 400
    with start_server(ServerOptions(n_ctx=300)) as running:
        summary = run_here(tmp_path / "run", *_overrides(tmp_path, running.url, items=items))
        assert 6 == running.stats()["requests"]  # each call sent once: the overflow is not retried
    lines = verdict_lines(tmp_path / "run")
    assert ["A", "error", "A"] == [line["call1"] if line["call1"] == "error" else "A" for line in lines]
    assert 1 == summary["n_errors"]  # the one item whose calls failed
    line = lines[1]
    assert "error" == line["call2"]
    assert "data.normalize.truncate_tokens" in line["error1"]
    assert "not retried" in line["error1"]


def test_completions_are_asked_live_only() -> None:
    """judge.api=completions with a batch mode is one clear error before anything runs."""
    config = config_of("judge=llamacpp", "judge.mode=batch")
    with pytest.raises(UserError, match=r"judge\.api=completions is asked live only"):
        OpenAIJudge(config.judge, config.rubric)


def test_a_judge_without_a_system_role_reads_its_instructions_in_the_user_message() -> None:
    """judge.system_role=false sends the system text at the head of the user message, under a key of its own."""
    with_role = config_of("judge=local", "judge.api_key_env=null")
    without = config_of("judge=local", "judge.api_key_env=null", "judge.system_role=false")
    messages = [{"role": "system", "content": "Rules."}, {"role": "user", "content": "Question?"}]
    body = OpenAIJudge(without.judge, without.rubric).request_body(messages)
    assert [{"role": "user", "content": "Rules.\n\nQuestion?"}] == body["messages"]
    assert OpenAIJudge(with_role.judge, with_role.rubric).cache_request(messages) != OpenAIJudge(
        without.judge, without.rubric
    ).cache_request(messages)
