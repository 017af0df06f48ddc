"""Helpers of the batch tests: request bodies as the OpenAI judge sends them, and a Batcher on a test server."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from judgebias.backends.openai import OpenAIJudge
from judgebias.backends.openai_batch import OpenAIBatches
from judgebias.batch.batcher import Batcher, Ledger
from judgebias.cache import ReplyCache
from judgebias.config.schema import JudgeConfig, RubricConfig
from judgebias.devserver.server import RunningServer


def body(index: int) -> dict[str, Any]:
    """A chat-completions body with two fenced answers of different lengths (a `longer` judge picks one)."""
    short, long = f"answer {index}", f"answer {index} " + "with more detail " * (1 + index % 3)
    first, second = (short, long) if index % 2 else (long, short)
    prompt = (
        f"Question {index}?\n\n[The Start of Answer A · 1a2b3c4d]\n{first}\n[The End of Answer A · 1a2b3c4d]\n\n"
        f"[The Start of Answer B · 5e6f7a8b]\n{second}\n[The End of Answer B · 5e6f7a8b]"
    )
    return {
        "model": "local-model",
        "messages": [{"role": "user", "content": prompt}],
        "temperature": 0.0,
        "max_tokens": 16,
    }


def calls(count: int) -> list[tuple[str, dict[str, Any]]]:
    """`count` calls as (cache key, body); the key is any 64-hex string, as the cache's keys are."""
    return [(hashlib.sha256(f"call {i}".encode()).hexdigest(), body(i)) for i in range(count)]


def reply_text(body: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The cached form of a reply, reduced to its text (the runner uses the OpenAI judge's reply_from_json)."""
    return {"text": body["choices"][0]["message"]["content"]}


def batcher(server: RunningServer, tmp_path: Path, **settings: Any) -> tuple[Batcher, ReplyCache]:
    """A Batcher at `server` with its ledger and cache under tmp_path (polling every 0.05 s unless told)."""
    cache = ReplyCache(str(tmp_path / "cache"), "use")
    settings = {"poll_seconds": 0.05} | settings
    made = Batcher(transport(server), Ledger(tmp_path / "cache" / "batches"), cache.put, reply_text, **settings)
    return made, cache


def transport(server: RunningServer) -> OpenAIBatches:
    """OpenAI's Batch API at `server`, as a live judge of that endpoint sends batches (no key: none is needed)."""
    judge = JudgeConfig(backend="openai", name="j", model="local-model", base_url=server.url, api_key_env=None)
    return OpenAIBatches(OpenAIJudge(judge, RubricConfig(name="r", system="s", user="u")))
