"""Batch files in OpenAI's format: the input lines a run sends, and the output and error lines it reads back.

Pure: no I/O and no SDK. A line's custom_id is derived from the call's cache key, so a reply read back from
any output file (OpenAI's, a gateway's, vLLM's `run-batch`) lands in the cache under the key a live call of the
same request uses. The same format serves `judge.mode=batch`, `export` and `import`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from judgebias.core.errors import UserError
from judgebias.io.jsonl import json_lines, text_lines

ENDPOINT = "/v1/chat/completions"
MAX_FILE_BYTES = 200 * 1024 * 1024  # OpenAI's limit on one batch input file
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


def input_line(key: str, body: Mapping[str, Any]) -> bytes:
    """One input line: the call's custom_id, POST to the chat endpoint, and the body a live call sends."""
    line = {"custom_id": custom_id(key), "method": "POST", "url": ENDPOINT, "body": body}
    return json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def split(lines: Iterable[bytes], max_lines: int, max_bytes: int = MAX_FILE_BYTES) -> Iterator[list[bytes]]:
    """The lines cut into files of at most `max_lines` lines and `max_bytes` bytes each, in order, as they come."""
    if max_lines < 1:
        raise UserError(f"judge.batch_size={max_lines} must be at least 1 (default 50000, OpenAI's limit)")
    current: list[bytes] = []
    size = 0
    for line in lines:
        if len(line) > max_bytes:
            raise UserError(f"one batch line is {len(line)} bytes, more than a batch file may hold ({max_bytes})")
        if current and (len(current) >= max_lines or size + len(line) > max_bytes):
            yield current
            current, size = [], 0
        current.append(line)
        size += len(line)
    if current:
        yield current


@dataclass(frozen=True)
class LineResult:
    """One line of an output or error file: the chat-completion body, or the provider's reason it has none."""

    custom_id: str
    line: int  # 1-based line number in its file
    body: dict[str, Any] | None
    error: str | None


def read_results(text: str, source: str) -> list[LineResult]:
    """Every line of an output or error file (OpenAI's format; vLLM's run-batch writes the same)."""
    results = []
    for number, record in json_lines(text_lines(text), source):
        line_id = record.get("custom_id") if isinstance(record, dict) else None
        if not isinstance(line_id, str):
            raise UserError(f"{source}:{number}: custom_id is missing (not a batch output line)")
        body, error = _outcome(record)
        results.append(LineResult(line_id, number, body, error))
    return results


def _outcome(record: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """(body, None) for a 200 response with a body; (None, reason) for anything else."""
    response = record.get("response")
    error = record.get("error")
    if isinstance(response, Mapping):
        status = response.get("status_code")
        body = response.get("body")
        if status == 200 and isinstance(body, dict) and not error:
            return body, None
        reason = _error_text(body.get("error") if isinstance(body, Mapping) else None) or _error_text(error)
        return None, f"HTTP {status}" + (f" {reason}" if reason else "")
    return None, _error_text(error) or "no response and no error in the line"


def _error_text(error: Any) -> str:
    """`code: message` of an error object, or the text of an error string (vLLM writes a string)."""
    if isinstance(error, str):
        return error.strip().splitlines()[0][:300] if error.strip() else ""
    if isinstance(error, Mapping):
        code, message = error.get("code"), str(error.get("message") or "").strip()
        first = message.splitlines()[0][:300] if message else ""
        return ": ".join(str(part) for part in (code, first) if part)
    return ""


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
