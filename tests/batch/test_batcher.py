"""Batches submitted and collected with the real openai SDK against the devserver's Batch API."""

from __future__ import annotations

from pathlib import Path

import pytest
from openai import OpenAI

from judgebias.core.errors import UserError
from judgebias.devserver.batch import BatchOptions
from judgebias.devserver.server import ServerOptions, start_server
from tests.batch.helpers import batcher, calls


def test_batch_replies_equal_live_replies(tmp_path: Path) -> None:
    """Every call's reply cached from a batch is the reply the live endpoint gives the same body."""
    with start_server(ServerOptions(policy="hash")) as server:
        run, cache = batcher(server, tmp_path)
        wanted = calls(6)
        outcome = run.run(wanted)
        live = OpenAI(base_url=server.url, api_key="k", max_retries=0)
        expected = {key: live.chat.completions.create(**body).choices[0].message.content for key, body in wanted}
        assert ({key for key, _ in wanted}, {}) == (outcome.filled, outcome.errors)
        assert expected == {key: cache.get(key)["text"] for key, _ in wanted}  # type: ignore[index]
        assert [("completed", 6, 6)] == [(b.status, b.completed, b.total) for b in outcome.batches]
        assert [] == list((tmp_path / "cache" / "batches").glob("*.json"))


def test_batch_size_and_byte_limit_split_the_calls(tmp_path: Path) -> None:
    """batch_size lines per batch at most, and no input file over the byte limit."""
    with start_server(ServerOptions()) as server:
        by_lines = batcher(server, tmp_path / "a", batch_size=2)[0].run(calls(5))
        by_bytes = batcher(server, tmp_path / "b", max_bytes=1000)[0].run(calls(5))
        assert [2, 2, 1] == [b.total for b in by_lines.batches]
        assert len(by_bytes.batches) >= 2 and 5 == sum(b.total for b in by_bytes.batches)
        assert 3 + len(by_bytes.batches) == server.stats()["batch"]["batches_created"]


def test_an_unwaited_batch_is_reattached_not_resubmitted(tmp_path: Path) -> None:
    """A run that did not wait leaves its batch in the ledger; the next run collects it without a new upload."""
    with start_server(ServerOptions(batch=BatchOptions(seconds=1.5))) as server:
        first = batcher(server, tmp_path)[0].run(calls(4), wait=False)
        assert 1 == len(first.running) and not first.filled
        assert 1 == len(list((tmp_path / "cache" / "batches").glob("*.json")))
        second, _ = batcher(server, tmp_path)
        outcome = second.run(calls(4))
        assert 4 == len(outcome.filled) and first.running == [b.batch_id for b in outcome.batches]
        assert {"uploads": 1, "batches_created": 1} == {
            k: v for k, v in server.stats()["batch"].items() if k in ("uploads", "batches_created")
        }


def test_a_file_uploaded_before_an_interruption_is_not_uploaded_again(tmp_path: Path) -> None:
    """An upload recorded without its batch (stopped in between) gets its batch, or adopts the one made."""
    with start_server(ServerOptions()) as server:
        run, _ = batcher(server, tmp_path)
        made = run._submit(_lines(3))  # a whole submission whose batch id was never recorded
        made.batch_id = None
        run.ledger.save(made)
        outcome = batcher(server, tmp_path)[0].run(calls(3))
        assert 3 == len(outcome.filled)
        assert (1, 1) == (server.stats()["batch"]["uploads"], server.stats()["batch"]["batches_created"])


def test_failed_lines_become_errors_and_are_resubmitted_alone(tmp_path: Path) -> None:
    """Lines the provider answered with an error carry its reason; the next run sends only those."""
    with start_server(ServerOptions(batch=BatchOptions(fail_fraction=0.5))) as server:
        wanted = calls(8)
        first = batcher(server, tmp_path)[0].run(wanted)
        assert first.errors and 8 == len(first.errors) + len(first.filled)
        assert all("HTTP 500" in reason and "batch-" in reason for reason in first.errors.values())
        again = batcher(server, tmp_path)[0].run([(k, b) for k, b in wanted if k in first.errors])
        assert (set(first.errors), {}) == (again.filled, again.errors)
        assert [len(first.errors)] == [b.total for b in again.batches]


def test_an_expired_batch_keeps_its_finished_lines(tmp_path: Path) -> None:
    """Lines run before a batch expired are cached; only the rest come back as batch_expired errors."""
    with start_server(ServerOptions(batch=BatchOptions(expire_after_lines=3))) as server:
        outcome = batcher(server, tmp_path)[0].run(calls(5))
        assert (3, 2) == (len(outcome.filled), len(outcome.errors))
        assert all("batch_expired" in reason for reason in outcome.errors.values())
        assert [("expired", 3, 2)] == [(b.status, b.completed, b.failed) for b in outcome.batches]


def test_a_cancelled_batch_reports_its_unrun_lines(tmp_path: Path) -> None:
    """A batch cancelled while running ends with its unrun lines as batch_cancelled errors."""
    with start_server(ServerOptions(batch=BatchOptions(seconds=60))) as server:
        first = batcher(server, tmp_path)[0].run(calls(4), wait=False)
        OpenAI(base_url=server.url, api_key="k").batches.cancel(first.running[0])
        outcome = batcher(server, tmp_path)[0].run(calls(4))
        assert ["cancelled"] == [b.status for b in outcome.batches]
        assert 4 == len(outcome.errors) + len(outcome.filled) and outcome.errors
        assert all("batch_cancelled" in reason for reason in outcome.errors.values())


def test_a_batch_failing_validation_stops_with_its_id_and_line_errors(tmp_path: Path) -> None:
    """A batch the provider refuses to run stops the run, naming the batch and each line's error."""
    with start_server(ServerOptions(allowed_models=("another-model",))) as server:
        run, _ = batcher(server, tmp_path)
        with pytest.raises(UserError) as stopped:
            run.run(calls(2))
        message = str(stopped.value)
        assert "batch batch-dev" in message and "failed validation" in message
        assert "line 1: model_not_found" in message and "line 2: model_not_found" in message


def _lines(count: int) -> list[tuple[str, bytes]]:
    from judgebias.backends.openai_batch import input_line
    from judgebias.batch import files as batchfile

    return [(batchfile.custom_id(key), input_line(batchfile.custom_id(key), body)) for key, body in calls(count)]


def test_a_batch_the_endpoint_forgot_is_dropped_and_its_lines_sent_again(tmp_path: Path) -> None:
    """A recorded batch the endpoint no longer knows (a reset server) is dropped and its calls resubmitted."""
    with start_server(ServerOptions(batch=BatchOptions(seconds=60))) as first:
        batcher(first, tmp_path)[0].run(calls(3), wait=False)
        url = first.url
    with start_server(ServerOptions(port=int(url.split(":")[2].split("/")[0]))) as second:
        outcome = batcher(second, tmp_path)[0].run(calls(3))
        assert (3, {}) == (len(outcome.filled), outcome.errors)
        assert 1 == second.stats()["batch"]["batches_created"]
