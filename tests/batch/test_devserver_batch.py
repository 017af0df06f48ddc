"""The devserver's Batch API as the openai SDK sees it: files, batch states, request counts and refusals."""

from __future__ import annotations

import json
import time

import openai
import pytest
from openai import OpenAI

from judgebias.backends.openai_batch import input_line
from judgebias.batch import files as batchfile
from judgebias.devserver.batch import BatchOptions
from judgebias.devserver.server import ServerOptions, options_from_args, start_server
from tests.batch.helpers import calls


def upload(client: OpenAI, count: int, purpose: str = "batch") -> str:
    """Upload `count` input lines; return the file id."""
    data = b"".join(input_line(batchfile.custom_id(key), body) for key, body in calls(count))
    return client.files.create(file=("in.jsonl", data), purpose=purpose).id  # type: ignore[arg-type]


def test_an_uploaded_file_reads_back_byte_for_byte() -> None:
    """files.create(purpose=batch) stores the upload; files.content returns the same bytes."""
    with start_server(ServerOptions()) as server:
        client = OpenAI(base_url=server.url, api_key="k", max_retries=0)
        data = b"".join(input_line(batchfile.custom_id(key), body) for key, body in calls(3))
        made = client.files.create(file=("in.jsonl", data), purpose="batch")
        assert ("batch", len(data), "in.jsonl") == (made.purpose, made.bytes, made.filename)
        assert data == client.files.content(made.id).content


def test_a_batch_runs_on_the_clock_and_counts_its_requests() -> None:
    """A batch is in progress for the configured seconds, then completed with output counts and files."""
    with start_server(ServerOptions(batch=BatchOptions(seconds=2.0))) as server:
        client = OpenAI(base_url=server.url, api_key="k", max_retries=0)
        batch = client.batches.create(
            input_file_id=upload(client, 4), endpoint="/v1/chat/completions", completion_window="24h"
        )
        assert "in_progress" == client.batches.retrieve(batch.id).status
        time.sleep(2.1)
        done = client.batches.retrieve(batch.id)
        assert ("completed", 4, 4, 0) == (
            done.status,
            done.request_counts.total,  # type: ignore[union-attr]
            done.request_counts.completed,  # type: ignore[union-attr]
            done.request_counts.failed,  # type: ignore[union-attr]
        )
        lines = [json.loads(row) for row in client.files.content(done.output_file_id).text.splitlines()]  # type: ignore[arg-type]
        assert [batchfile.custom_id(key) for key, _ in calls(4)] == [line["custom_id"] for line in lines]
        assert done.error_file_id is None and 0 == server.stats()["requests"]


def test_a_batch_needs_a_batch_file_and_the_24h_window() -> None:
    """A file uploaded for another purpose, an unknown file or another window is refused at creation."""
    with start_server(ServerOptions()) as server:
        client = OpenAI(base_url=server.url, api_key="k", max_retries=0)
        with pytest.raises(openai.BadRequestError, match="purpose 'batch'"):
            client.batches.create(
                input_file_id=upload(client, 1, "user_data"), endpoint="/v1/chat/completions", completion_window="24h"
            )
        with pytest.raises(openai.NotFoundError):
            client.batches.create(input_file_id="file-nope", endpoint="/v1/chat/completions", completion_window="24h")
        with pytest.raises(openai.BadRequestError, match="completion_window"):
            client.batches.create(
                input_file_id=upload(client, 1),
                endpoint="/v1/chat/completions",
                completion_window="1h",  # type: ignore[arg-type]
            )


def test_batch_endpoints_check_the_key() -> None:
    """With an api_key configured, the Batch API refuses a wrong key as the chat endpoint does."""
    with start_server(ServerOptions(api_key="right")) as server, pytest.raises(openai.AuthenticationError):
        upload(OpenAI(base_url=server.url, api_key="wrong", max_retries=0), 1)


def test_batch_flags_on_the_command_line() -> None:
    """python -m judgebias.devserver takes the batch timing and faults as --batch-* flags."""
    options = options_from_args(
        ["--batch-seconds", "5", "--batch-fail-fraction", "0.2", "--batch-expire-after-lines", "7"]
    )
    assert BatchOptions(seconds=5.0, fail_fraction=0.2, expire_after_lines=7) == options.batch
