"""batch/ with a provider unlike OpenAI's (tests/batch/inline_provider.py): inline requests, no files, results at a
URL. The ledger, the splitting, the re-attaching and the pre-pass work through its transport unchanged; the
provider's own log of what it created, received and answered is the oracle."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from judgebias.backends import Call, Judging
from judgebias.batch import files as batchfile
from judgebias.batch.batcher import Batcher, BatchRecord, Ledger
from judgebias.batch.prefill import prefill
from judgebias.cache import ReplyCache, call_key
from judgebias.config.schema import JudgeConfig, JudgeMode, ProgressMode
from judgebias.core.errors import BatchPending, FatalJudgeError
from judgebias.core.item import Item
from judgebias.core.prompt import shown
from judgebias.core.record import Request
from judgebias.io.run_dir import RunDir
from tests.batch.helpers import calls as openai_calls
from tests.batch.inline_provider import InlineBatches, InlineJudge, InlineProvider


def calls(transport: InlineBatches, count: int) -> list[tuple[str, dict[str, Any]]]:
    """`count` calls as (cache key, the provider's params)."""
    return [(key, transport.batch_body(body["messages"])) for key, body in openai_calls(count)]


def text_of(body: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The cached form of a reply, reduced to its text."""
    return {"text": "".join(part["text"] for part in body["content"])}


def batcher(transport: InlineBatches, tmp_path: Path, **settings: Any) -> tuple[Batcher, ReplyCache]:
    cache = ReplyCache(str(tmp_path / "cache"), "use")
    made = Batcher(transport, Ledger(tmp_path / "cache" / "batches"), cache.put, text_of, poll_seconds=0.05, **settings)
    return made, cache


def answered(provider: InlineProvider, keys: list[str]) -> dict[str, str]:
    return {key: provider.log.answers[batchfile.custom_id(key)] for key in keys}


def test_every_reply_cached_is_the_one_the_provider_answered(tmp_path: Path) -> None:
    """Replies land under their calls' keys; the batch size splits them; the ledger is empty after."""
    with InlineProvider() as provider:
        run, cache = batcher(InlineBatches(provider.url), tmp_path, batch_size=3)
        wanted = calls(run.transport, 7)  # type: ignore[arg-type]
        outcome = run.run(wanted)
        keys = [key for key, _ in wanted]
        assert (set(keys), {}) == (outcome.filled, outcome.errors)
        assert answered(provider, keys) == {key: cache.get(key)["text"] for key in keys}  # type: ignore[index]
        assert (3, 7) == (provider.log.created, provider.log.requests)
        assert [3, 3, 1] == [b.total for b in outcome.batches]
        assert [] == list((tmp_path / "cache" / "batches").glob("*.json"))


def test_an_unwaited_batch_is_collected_by_the_next_run_without_a_second_batch(tmp_path: Path) -> None:
    with InlineProvider(seconds=1.0) as provider:
        transport = InlineBatches(provider.url)
        first = batcher(transport, tmp_path)[0].run(calls(transport, 4), wait=False)
        assert 1 == len(first.running) and not first.filled
        outcome = batcher(transport, tmp_path)[0].run(calls(transport, 4))
        assert 4 == len(outcome.filled) and first.running == [b.batch_id for b in outcome.batches]
        assert (1, 4) == (provider.log.created, provider.log.requests)


def test_a_batch_created_before_its_id_was_recorded_is_adopted_by_its_label(tmp_path: Path) -> None:
    """Stopped between the provider creating a batch and the ledger learning its id: the rerun finds it."""
    with InlineProvider() as provider:
        transport = InlineBatches(provider.url)
        run, _ = batcher(transport, tmp_path)
        chunk = [
            (batchfile.custom_id(key), transport.encode(batchfile.custom_id(key), b)) for key, b in calls(transport, 3)
        ]
        made = run._submit(chunk)
        made.batch_id = None
        run.ledger.save(made)
        outcome = batcher(transport, tmp_path)[0].run(calls(transport, 3))
        assert 3 == len(outcome.filled)
        assert (1, 3) == (provider.log.created, provider.log.requests)


def test_a_record_whose_batch_was_never_created_is_dropped_and_its_calls_sent(tmp_path: Path) -> None:
    """Nothing staged and no batch at the provider: the record is dropped, its calls go once."""
    with InlineProvider() as provider:
        transport = InlineBatches(provider.url)
        wanted = calls(transport, 3)
        ids = [batchfile.custom_id(key) for key, _ in wanted]
        Ledger(tmp_path / "cache" / "batches").save(BatchRecord("never-created", provider.url, ids, 3))
        outcome = batcher(transport, tmp_path)[0].run(wanted)
        assert (3, {}) == (len(outcome.filled), outcome.errors)
        assert (1, 3) == (provider.log.created, provider.log.requests)


def test_errored_lines_carry_the_providers_reason_and_only_they_go_again(tmp_path: Path) -> None:
    with InlineProvider(errored_every=2) as provider:
        transport = InlineBatches(provider.url)
        wanted = calls(transport, 6)
        first = batcher(transport, tmp_path)[0].run(wanted)
        assert (3, 3) == (len(first.filled), len(first.errors))
        assert all(r.startswith("batch msgbatch_0001: overloaded_error") for r in first.errors.values())
        again = batcher(transport, tmp_path)[0].run([(k, b) for k, b in wanted if k in first.errors])
        assert [3] == [b.total for b in again.batches]
        assert (2, 9) == (provider.log.created, provider.log.requests)


def test_a_batch_the_provider_forgot_is_dropped_and_sent_again(tmp_path: Path) -> None:
    with InlineProvider(seconds=60) as gone:
        transport = InlineBatches(gone.url)
        batcher(transport, tmp_path)[0].run(calls(transport, 3), wait=False)
    with InlineProvider(port=int(gone.url.rsplit(":", 1)[1])) as provider:  # the same endpoint, restarted
        transport = InlineBatches(provider.url)
        outcome = batcher(transport, tmp_path)[0].run(calls(transport, 3))
        assert (3, {}) == (len(outcome.filled), outcome.errors)
        assert 1 == provider.log.created


def test_a_batch_the_provider_refuses_stops_the_judge_in_one_line(tmp_path: Path) -> None:
    with InlineProvider() as provider:
        transport = InlineBatches(provider.url)
        wanted = [(key, body | {"max_tokens": None}) for key, body in calls(transport, 2)]
        with pytest.raises(FatalJudgeError) as stopped:
            batcher(transport, tmp_path)[0].run(wanted)
        assert f"the Batch API at {provider.url}: HTTP 400: params.max_tokens: Field required" == str(stopped.value)
        assert 0 == provider.log.created


def prepass_calls(judging: Judging, cache: ReplyCache) -> list[Call]:
    """Three items in both orders as the pre-pass sees them: each call with its key and what the cache holds."""
    made = []
    for index in range(3):
        item = Item(id=f"x{index}", question=f"q{index}", a=f"first {index}", b=f"second answer {index}")
        for order in (1, 2):
            messages = [{"role": "system", "content": "judge"}, {"role": "user", "content": f"{index}/{order}"}]
            request = Request(item, shown(item, order, "letters"), messages)
            key = call_key(judging.backend.cache_request(messages))
            made.append(Call(judging, item, request, key, cache.get(key)))
    return made


def test_the_prepass_fills_a_batch_mode_judge_through_the_providers_transport(tmp_path: Path) -> None:
    """judge.mode=batch with this provider: every miss answered by batch, none sent live, the cache holds the
    provider's answers as replies (with its token counts), and a second pre-pass over the hits sends nothing."""
    with InlineProvider() as provider:
        transport = InlineBatches(provider.url)
        config = JudgeConfig(
            backend="openai", name="j", model="test-model", mode=JudgeMode.batch, batch_poll_seconds=0.05
        )
        judging = Judging("j", config, InlineJudge(transport))
        cache = ReplyCache(str(tmp_path / "cache"), "use")

        def looked_up() -> list[Call]:
            return prepass_calls(judging, cache)

        result = prefill([judging], looked_up(), cache, RunDir(tmp_path / "run"), progress=ProgressMode.off)
        keys = [call.key for call in looked_up() if call.key is not None]
        assert set(keys) == result.batched and {} == result.errors
        assert answered(provider, keys) == {key: cache.get(key)["text"] for key in keys}  # type: ignore[index]
        assert {(20, 1)} == {(cache.get(k)["prompt_tokens"], cache.get(k)["completion_tokens"]) for k in keys}  # type: ignore[index]
        again = prefill([judging], looked_up(), cache, RunDir(tmp_path / "run2"), progress=ProgressMode.off)
        assert (set(), 1, 6) == (again.batched, provider.log.created, provider.log.requests)


def test_export_and_import_use_the_providers_own_file_format(tmp_path: Path) -> None:
    """judge.mode=export writes the provider's own request lines (the provider accepts them as a batch as they
    are); judge.mode=import reads the provider's own results file, saved by hand, into the cache, marked imported,
    and nothing else is sent."""
    with InlineProvider() as provider:
        transport = InlineBatches(provider.url)
        judging = Judging("j", JudgeConfig(backend="openai", name="j", model="test-model"), InlineJudge(transport))
        cache = ReplyCache(str(tmp_path / "cache"), "use")
        wanted = prepass_calls(judging, cache)
        run = RunDir(tmp_path / "run")

        judging.config.mode = JudgeMode.export
        with pytest.raises(BatchPending):
            prefill([judging], wanted, cache, run, progress=ProgressMode.off)
        lines = run.batch_input.read_bytes().splitlines(keepends=True)
        # The user's own steps at the provider: the exported lines as a batch, its results saved to a file.
        state = transport.create("by hand", None, lines)
        while not state.ended:
            state = transport.retrieve(state.id)
        results = tmp_path / "results.jsonl"
        results.write_bytes(b"".join(transport._http(url) for url in state.results))

        judging.config.mode, judging.config.batch_file = JudgeMode("import"), str(results)
        result = prefill([judging], prepass_calls(judging, cache), cache, run, progress=ProgressMode.off)

    keys = [call.key for call in wanted if call.key is not None]
    assert set(keys) == result.batched and {} == result.errors
    assert answered(provider, keys) == {key: cache.get(key)["text"] for key in keys}  # type: ignore[index]
    assert (1, 6) == (provider.log.created, provider.log.requests)  # the user's batch only
    assert all(cache.get(key)["bundle"]["kind"] == "batch output file" for key in keys)  # type: ignore[index]
