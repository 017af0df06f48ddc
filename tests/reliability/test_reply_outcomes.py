"""Status-200 replies that carry no verdict, sent by the dev server over HTTP to the real SDK: explicit outcomes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from judgebias.devserver.server import RunningServer
from tests.helpers import write_items
from tests.reliability.helpers import KEY, KEY_ENV, cached_replies, local, pairs, run_here, verdict_lines

pytestmark = pytest.mark.reliability

StartServer = Any


def judged(tmp_path: Path, endpoint: RunningServer, *more: str, name: str = "run") -> dict[str, Any]:
    """One in-process run of 4 items against `endpoint`, its cache in tmp_path/cache."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    data = write_items(tmp_path / "items.jsonl", pairs(4))
    overrides = local(endpoint.url, "data=jsonl", f"data.path={data}", f"cache.dir={tmp_path / 'cache'}", *more)
    return run_here(tmp_path / name, *overrides)


@pytest.mark.parametrize(
    ("shape", "outcome", "reason"),
    [
        ("refusal", "refusal", "refused"),
        ("content_filter", "content_filter", "content filter"),
        ("tool_calls", "tool_calls", "tool calls"),
    ],
)
def test_a_deterministic_reply_without_a_verdict_is_an_outcome_kept_and_cached(
    server: StartServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str, outcome: str, reason: str
) -> None:
    """A refusal, a content filter or tool calls only: an outcome with its reason, apart from `invalid`, cached once."""
    monkeypatch.setenv(KEY_ENV, KEY[KEY_ENV])
    endpoint = server(reply_shape=shape)
    summary = judged(tmp_path, endpoint)

    assert (0, 8, {outcome: 8}, 0) == (
        summary["n_invalid"],
        summary["n_no_verdict"],
        summary["outcomes"],
        summary["failed_calls"],
    )
    assert "unreadable" == summary["status"]
    assert summary["notes"][0].startswith("8 of 8 replies (100%) carry no readable verdict")
    assert f"cache.reask=[{outcome}]" in " ".join(summary["notes"])
    lines = verdict_lines(tmp_path / "run")
    assert all(line["outcome1"] == outcome and reason in line["reason1"] for line in lines)
    if shape == "refusal":
        assert all(line["raw1"].startswith("I'm sorry, I can't help") for line in lines)  # the refusal text kept
    assert 8 == endpoint.stats()["requests"]  # not retried: the same request gives the same reply
    assert {outcome} == {reply.get("outcome") for reply in cached_replies(tmp_path / "cache").values()}


def test_cache_reask_asks_cached_refusals_again(
    server: StartServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cache.reask=[refusal] sends the cached refusals again, and their new replies replace them."""
    monkeypatch.setenv(KEY_ENV, KEY[KEY_ENV])
    recovered = server(reply_shape="refusal")
    judged(tmp_path, recovered)
    recovered.reconfigure(reply_shape="normal")
    recovered.reset()

    plain = judged(tmp_path, recovered, name="plain")
    again = judged(tmp_path, recovered, "cache.reask=[refusal]", name="again")

    assert (8, 0) == (plain["calls_cached"], plain["calls_live"])
    assert (0, 8, "ok", 0) == (again["calls_cached"], again["calls_live"], again["status"], again["n_no_verdict"])
    assert 8 == recovered.stats()["requests"]


@pytest.mark.parametrize("shape", ["error_body", "no_choices", "empty_choices", "html"])
def test_a_transient_looking_reply_is_retried_as_an_error_and_never_cached(
    server: StartServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    """An error body with status 200, no choices or a non-JSON page: retried, then a verdict; never cached."""
    monkeypatch.setenv(KEY_ENV, KEY[KEY_ENV])
    endpoint = server(reply_shape=shape, reply_shape_first_n=1)
    summary = judged(tmp_path, endpoint)

    assert (0, 0, 0, "ok") == (
        summary["failed_calls"],
        summary["n_no_verdict"],
        summary["n_invalid"],
        summary["status"],
    )
    assert 8 == summary["retries"]
    assert 16 == endpoint.stats()["requests"]
    assert all("outcome" not in reply for reply in cached_replies(tmp_path / "cache").values())


def test_a_transient_reply_that_persists_fails_the_call_with_the_requests_sent(
    server: StartServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A login page every time: failed calls whose reason names the page and the requests really sent; no traceback."""
    monkeypatch.setenv(KEY_ENV, KEY[KEY_ENV])
    endpoint = server(reply_shape="html")
    summary = judged(tmp_path, endpoint, "judge.max_retries=2")

    assert (8, "errors", {"not_json": 8}) == (summary["failed_calls"], summary["status"], summary["outcomes"])
    lines = verdict_lines(tmp_path / "run")
    assert all("the body is not JSON" in line["error1"] and "after 3 attempts" in line["error1"] for line in lines)
    assert {} == cached_replies(tmp_path / "cache")
    assert 24 == endpoint.stats()["requests"]


def test_content_given_as_a_list_of_parts_is_read(
    server: StartServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reply whose content is [{"type": "text", "text": ...}] gives the same verdicts as a plain string."""
    monkeypatch.setenv(KEY_ENV, KEY[KEY_ENV])
    plain = judged(tmp_path / "plain", server())
    parts = judged(tmp_path / "parts", server(reply_shape="content_parts"))

    assert (0, 0) == (parts["n_invalid"], parts["n_no_verdict"])
    assert (plain["wins"], plain["ties"], plain["losses"]) == (parts["wins"], parts["ties"], parts["losses"])


def test_a_cut_off_reply_at_temperature_0_is_not_retried(
    server: StartServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """finish_reason=length at temperature 0: one request per call, outcome `truncated`, advice to raise max_tokens."""
    monkeypatch.setenv(KEY_ENV, KEY[KEY_ENV])
    endpoint = server(ptruncate=1.0)
    summary = judged(tmp_path, endpoint, "rubric=brackets", "judge.max_tokens=64")

    assert 8 == endpoint.stats()["requests"]
    assert ({"truncated": 8}, 0, "unreadable") == (summary["outcomes"], summary["retries"], summary["status"])
    assert any("raise judge.max_tokens" in note for note in summary["notes"])
    assert summary["notes"][0].startswith("8 of 8 replies")  # the share comes before any other advice


def test_a_sampled_judges_cut_off_reply_is_retried_at_most_twice(
    server: StartServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sampled judge's cut-off reply is asked again, but at most twice, whatever judge.max_retries allows."""
    monkeypatch.setenv(KEY_ENV, KEY[KEY_ENV])
    endpoint = server(ptruncate=1.0)
    summary = judged(tmp_path, endpoint, "rubric=brackets", "judge.max_tokens=64", "judge.temperature=0.7")

    assert 8 * 3 == endpoint.stats()["requests"]
    assert {"truncated": 8} == summary["outcomes"]
