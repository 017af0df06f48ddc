"""What every provider's batches share: a call's line id, batches cut to size, and the messages about them.

Pure: no I/O and no SDK. A line's custom_id is derived from the call's cache key, so a reply read back from any
provider's results (OpenAI's, a gateway's, vLLM's `run-batch` file) lands in the cache under the key a live call of
the same request uses. A provider's own format is its transport's (e.g. backends.openai_batch).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from judgebias.core.errors import UserError

PREFIX = "jb-"


def custom_id(key: str) -> str:
    """The custom_id of the call with cache key `key` (stable: the same call has the same id in every run)."""
    return PREFIX + key


def key_of(line_id: str) -> str | None:
    """The cache key a custom_id stands for, or None when judgebias did not write it."""
    key = line_id[len(PREFIX) :]
    if not line_id.startswith(PREFIX) or len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
        return None
    return key


def split(lines: Iterable[tuple[str, bytes]], max_lines: int, max_bytes: int) -> Iterator[list[tuple[str, bytes]]]:
    """The (line id, encoded line) pairs cut into batches of at most `max_lines` lines and `max_bytes` bytes each,
    in order, as they come."""
    if max_lines < 1:
        raise UserError(f"judge.batch_size={max_lines} must be at least 1 (default 50000, OpenAI's limit)")
    current: list[tuple[str, bytes]] = []
    size = 0
    for line_id, line in lines:
        if len(line) > max_bytes:
            raise UserError(f"one batch line is {len(line)} bytes, more than a batch may hold ({max_bytes})")
        if current and (len(current) >= max_lines or size + len(line) > max_bytes):
            yield current
            current, size = [], 0
        current.append((line_id, line))
        size += len(line)
    if current:
        yield current


def validation_report(batch_id: str, errors: Iterable[Mapping[str, Any]]) -> str:
    """Why a batch failed validation, one provider error per line (at most 10), for the user."""
    listed = list(errors)
    lines = [
        f"  line {e.get('line')}: {e.get('code')}: {e.get('message')}" + (f" ({e['param']})" if e.get("param") else "")
        for e in listed[:10]
    ]
    more = [f"  ... and {len(listed) - 10} more"] if len(listed) > 10 else []
    return "\n".join([f"batch {batch_id} failed validation; nothing in it ran:", *lines, *more])


def status_text(batches: Iterable[tuple[str, str, int, int, int]]) -> str:
    """The progress line: each batch's id, status and request counts (completed+failed of total)."""
    parts = [
        f"{bid} {status} {done + failed}/{total}" + (f" ({failed} failed)" if failed else "")
        for bid, status, done, failed, total in batches
    ]
    return "batches: " + " | ".join(parts)
