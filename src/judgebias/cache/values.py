"""A cached reply as stored text: the reply's fields, then the request its key came from, last.

A cache hit needs the reply, not its request (the prompt, a thousand bytes or more, kept so that a bundle can prove
its keys): it was most of the text a hit decoded (a lookup of the benchmark's values took 8.5-9.6 us with it,
6.7-7.0 us without). The request is therefore written last, and a lookup that does not ask for it decodes the text
up to it. Pure: text in, dict out.
"""

from __future__ import annotations

import json
from typing import Any

from judgebias.core.record import STORED_AT

REQUEST = "request"
# The request's key at the top level, as json.dumps writes it (default separators): a quote inside a JSON string is
# escaped, so this can only be a key; one of a nested object is told apart below by the text before it.
_REQUEST_KEY = f', "{REQUEST}": '
# Fields written after the request by earlier versions (and by any writer that appends to a stored value): a value
# with one of them after its request is decoded whole, so none is lost.
_AFTER_REQUEST = (f'"{STORED_AT}": ', '"bundle": ')


def encode_value(value: dict[str, Any]) -> str:
    """The stored text of a reply: its fields in order, the request (when it has one) last."""
    if REQUEST in value and next(reversed(value)) != REQUEST:
        value = {name: field for name, field in value.items() if name != REQUEST} | {REQUEST: value[REQUEST]}
    return json.dumps(value, ensure_ascii=False)


def decode_value(text: Any, *, request: bool = True) -> dict[str, Any] | None:
    """A stored reply from its text (None: not a JSON object, so not a reply judgebias wrote: a miss).

    `request=False`: without its request when the request is the value's last field (the rest of the value as
    stored); any other value is decoded whole, its request included."""
    if not isinstance(text, str):
        return None
    if not request:
        head = _before_request(text)
        if head is not None:
            return head
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _before_request(text: str) -> dict[str, Any] | None:
    """The value's fields before its request, when the request is its last top-level field; else None."""
    start = text.find(_REQUEST_KEY)
    if start < 0 or any(text.find(name, start) >= 0 for name in _AFTER_REQUEST):
        return None
    try:
        # Closing the text before the key makes a whole object only when the key is at the top level: cut inside
        # a nested object, a brace is left open and this is not JSON.
        head = json.loads(text[:start] + "}")
    except json.JSONDecodeError:
        return None
    return head if isinstance(head, dict) else None
