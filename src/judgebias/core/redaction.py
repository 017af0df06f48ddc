"""Credentials out of text: the values of the key env vars a run reads, and anything shaped like a key or token.

No module state: the env var names come with each call (from the run's config), so two runs in one process
never share what they redact.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

REDACTED = "[redacted]"
MIN_SECRET = 8  # shorter values are not redacted by value: too many false hits in ordinary text
DEFAULT_KEY_ENVS = ("OPENAI_API_KEY",)

SECRET_PATTERNS = (
    (re.compile(r"\b(?:sk|rk)-[A-Za-z0-9_\-]{12,}"), REDACTED),
    (re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9_\-.=]{12,}"), r"\1" + REDACTED),
    (
        re.compile(r"(?i)\b((?:api[-_]?key|access[-_]?token|token|secret|password)[\"']?\s*[=:]\s*[\"']?)[^\s&\"',}]+"),
        r"\1" + REDACTED,
    ),
    (re.compile(r"(?<=://)[^/\s@]+@"), REDACTED + "@"),
)


def replace_secrets(text: str, secrets: Iterable[str]) -> str:
    """`text` with each known secret value (long enough to be one) replaced, longest first."""
    for secret in sorted((s for s in set(secrets) if len(s) >= MIN_SECRET), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def key_env_names(config: Any) -> set[str]:
    """Every `api_key_env` (judge and ensemble alike), the env vars behind `extra_headers` values, and the Redis
    `url_env` named in a plain (resolved) config."""
    names: set[str] = set()
    if isinstance(config, dict):
        for key, value in config.items():
            if key in ("api_key_env", "url_env") and isinstance(value, str) and value:
                names.add(value)
            elif key == "extra_headers" and isinstance(value, dict):
                names |= {variable for variable in value.values() if isinstance(variable, str) and variable}
            else:
                names |= key_env_names(value)
    elif isinstance(config, list):
        for value in config:
            names |= key_env_names(value)
    return names


@dataclass(frozen=True)
class Redactor:
    """Redacts the values of the named env vars (read at call time) and every key-shaped string."""

    env_names: frozenset[str] = frozenset(DEFAULT_KEY_ENVS)

    @classmethod
    def for_config(cls, config: Any) -> Redactor:
        """A redactor for the key env vars a plain config names (plus OPENAI_API_KEY)."""
        return cls(frozenset(DEFAULT_KEY_ENVS) | key_env_names(config))

    def __call__(self, text: str) -> str:
        """`text` without credentials."""
        text = replace_secrets(text, (os.environ.get(name, "") for name in self.env_names))
        for pattern, replacement in SECRET_PATTERNS:
            text = pattern.sub(replacement, text)
        return text
