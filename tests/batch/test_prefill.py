"""The batch pre-pass asks a backend for its batch transport and never swaps a judge's backend."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgebias.backends import Call, Judging, build_backend
from judgebias.batch import files as batchfile
from judgebias.batch.prefill import prefill, transport_of
from judgebias.cache import ReplyCache, call_key
from judgebias.config.schema import JudgeConfig, JudgeMode, ProgressMode, RubricConfig
from judgebias.core.errors import UserError
from judgebias.core.item import Item
from judgebias.core.prompt import shown
from judgebias.core.record import Request
from judgebias.io.run_dir import RunDir

RUBRIC = RubricConfig(name="default", system="s", user="u")


def judge(**settings: object) -> JudgeConfig:
    """A live judge at an endpoint nothing listens on: the pre-pass under test sends nothing."""
    return JudgeConfig(backend="openai", name="j", model="m", base_url="http://127.0.0.1:9/v1", **settings)  # type: ignore[arg-type]


def two_calls(judging: Judging) -> list[Call]:
    """Both orders of one item, looked up in an empty cache (misses)."""
    item = Item(id="x", question="q", a="first answer", b="second answer")
    calls = []
    for order in (1, 2):
        request = Request(item, shown(item, order, "letters"), [{"role": "user", "content": f"order {order}"}])
        calls.append(Call(judging, item, request, call_key(judging.backend.cache_request(request.messages)), None))
    return calls


def output_line(key: str, text: str) -> str:
    """One line of an OpenAI-format batch output file answering the call with this cache key."""
    body = {"choices": [{"message": {"content": text}, "finish_reason": "stop"}], "model": "m"}
    return json.dumps({"custom_id": batchfile.custom_id(key), "response": {"status_code": 200, "body": body}})


def test_an_imported_file_fills_the_cache_and_a_missing_line_fails_with_its_reason(tmp_path: Path) -> None:
    """Import mode caches the replies it has, keeps the same backend object, and names why the other call fails."""
    config = judge(mode=JudgeMode["import"], batch_file=str(tmp_path / "out.jsonl"))
    judging = Judging("j", config, build_backend(config, RUBRIC, None))
    backend = judging.backend
    calls = two_calls(judging)
    answered, unanswered = calls[0].key, calls[1].key
    assert answered is not None and unanswered is not None
    (tmp_path / "out.jsonl").write_text(output_line(answered, "A") + "\n", encoding="utf-8")
    cache = ReplyCache(str(tmp_path / "cache"), "use")
    result = prefill([judging], calls, cache, RunDir(tmp_path / "run"), progress=ProgressMode.off)
    assert backend is judging.backend
    assert {answered} == result.batched
    assert "A" == (cache.get_many([answered])[answered] or {}).get("text")
    assert judging.batch_gaps is not None
    assert f"no line for this call in judge.batch_file={tmp_path / 'out.jsonl'}" == judging.batch_gaps.reason(
        unanswered
    )
    cache.close()


def test_a_backend_without_a_batch_transport_is_refused_in_one_line() -> None:
    """A scripted judge has no batch transport: asking for one is a user error naming the judge and the fix."""
    config = JudgeConfig(backend="scripted", name="s", strategy="always_a")  # type: ignore[arg-type]
    judging = Judging("s", config, build_backend(config, RUBRIC, None))
    assert judging.backend.batch_transport() is None
    with pytest.raises(UserError, match=r"judge 's' .* cannot send batches: use judge.mode=live"):
        transport_of(judging)


def test_an_imported_line_with_an_error_body_is_not_cached_and_fails_with_its_reason(tmp_path: Path) -> None:
    """A 200 line whose body is an error object (transient-looking) fails its call with that reason, uncached."""
    config = judge(mode=JudgeMode["import"], batch_file=str(tmp_path / "out.jsonl"))
    judging = Judging("j", config, build_backend(config, RUBRIC, None))
    calls = two_calls(judging)
    key = calls[0].key
    assert key is not None
    body = {"error": {"message": "upstream overloaded", "type": "server_error"}}
    line = {"custom_id": batchfile.custom_id(key), "response": {"status_code": 200, "body": body}}
    (tmp_path / "out.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    cache = ReplyCache(str(tmp_path / "cache"), "use")
    result = prefill([judging], calls, cache, RunDir(tmp_path / "run"), progress=ProgressMode.off)
    assert (set(), {}) == (result.batched, cache.get_many([key]))
    assert judging.batch_gaps is not None
    assert "out.jsonl:1: an error sent with status 200: upstream overloaded (not cached)" == judging.batch_gaps.reason(
        key
    )
    cache.close()
