"""Credentials out of text: the values of the key env vars a run reads, and anything shaped like a key or token.

No module state: the env var names come with each call (from the run's config), so two runs in one process
never share what they redact.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

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


KEY_SHAPES = (
    re.compile(r"[0-9a-fA-F]{32,}"),  # Azure OpenAI and Cognitive Services keys: 32 hex digits
    re.compile(r"AIza[0-9A-Za-z_\-]{20,}"),  # Google API keys
    re.compile(r"(?:sk|rk|pk)[-_][A-Za-z0-9_\-]{8,}"),  # OpenAI, Anthropic, Stripe style keys
    re.compile(r"(?:ghp|gho|ghs|github_pat|glpat|hf|xox[abp])[_-][A-Za-z0-9_\-]{8,}"),  # code hosts, chat tokens
    re.compile(r"AKIA[0-9A-Z]{16}"),  # AWS access key ids
)
ENTROPY_LENGTH = 20  # from this length a string of high entropy and mixed letters and digits is taken for a key
ENTROPY_BITS = 3.7  # bits per character: upper-case names with underscores stay below, random keys above


def looks_like_secret(value: str) -> bool:
    """Whether `value` has the shape of a key or token (known prefixes, 32 hex digits, long and random), so a
    setting that takes the NAME of an environment variable can refuse it even when it is also a valid name."""
    if any(shape.fullmatch(value) for shape in KEY_SHAPES):
        return True
    if len(value) < ENTROPY_LENGTH or "_" in value or value.isupper():
        return False  # MY_SERVICE_KEY_2: the shape of a variable name
    if not (any(c.isdigit() for c in value) and any(c.islower() for c in value) and any(c.isupper() for c in value)):
        return False
    counts = Counter(value)
    bits = -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())
    return bits >= ENTROPY_BITS


def public_endpoint(url: str | None) -> str | None:
    """An endpoint URL without any user:password part or credential in its query: what files, messages and cache
    keys may show."""
    if not url:
        return url
    for secret in url_query_secrets(url):
        url = url.replace(secret, REDACTED)
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def url_password(value: str) -> str | None:
    """The password of a URL's `user:password@` part (a base_url, a Redis URL), if it has one."""
    try:
        return urlsplit(value).password if "://" in value else None
    except ValueError:
        return None


def redact_tree(value: Any, redact: Callable[[str], str]) -> Any:
    """`value` (JSON-like: dicts, lists, strings, numbers) with `redact` applied to every string, keys included."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(k) if isinstance(k, str) else k: redact_tree(v, redact) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_tree(v, redact) for v in value]
    return value


def replace_secrets(text: str, secrets: Iterable[str]) -> str:
    """`text` with each known secret value (long enough to be one) replaced, longest first: as written, and in any
    JSON-escaped form a server may echo it in (`/` as `\\/`, any character as `\\uXXXX`), so the secret is gone
    from the raw body before it is decoded, cached or written."""
    escaped = "\\" in text
    for secret in sorted((s for s in set(secrets) if len(s) >= MIN_SECRET), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
        if escaped:
            text = _escaped_forms(secret).sub(REDACTED, text)
    return text


@functools.lru_cache(maxsize=64)
def _escaped_forms(secret: str) -> re.Pattern[str]:
    """A pattern matching `secret` with any of its characters JSON-escaped (in any mix, hex in either case)."""

    def one(char: str) -> str:
        forms = [re.escape(char), rf"\\u(?i:{ord(char):04x})"]
        if char in '/"\\':
            forms.append(re.escape("\\" + char))
        return "(?:" + "|".join(forms) + ")"

    return re.compile("".join(one(char) for char in secret))


QUERY_SECRET_NAMES = frozenset({"key", "api_key", "apikey", "token", "access_token", "sig", "signature", "secret"})


def url_query_secrets(value: str) -> list[str]:
    """The values of a URL's credential-like query parameters (`?key=AIza...`, `api_key=`, `token=`, `sig=`)."""
    if "?" not in value or "://" not in value:
        return []
    try:
        query = urlsplit(value).query
    except ValueError:
        return []
    return [v for k, v in parse_qsl(query, keep_blank_values=False) if k.lower() in QUERY_SECRET_NAMES and v]


def config_secrets(config: Any) -> set[str]:
    """Secrets written into a plain config itself rather than named: the passwords of its URLs (a base_url)."""
    found: set[str] = set()
    if isinstance(config, dict):
        for value in config.values():
            found |= config_secrets(value)
    elif isinstance(config, list):
        for value in config:
            found |= config_secrets(value)
    elif isinstance(config, str):
        password = url_password(config)
        if password:
            found.add(password)
        found.update(url_query_secrets(config))
    return found


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
    values: frozenset[str] = frozenset()  # secrets written into the config itself (a base_url's password)

    @classmethod
    def for_config(cls, config: Any) -> Redactor:
        """A redactor for the key env vars a plain config names (plus OPENAI_API_KEY) and its URLs' passwords."""
        return cls(frozenset(DEFAULT_KEY_ENVS) | key_env_names(config), frozenset(config_secrets(config)))

    def secrets(self) -> list[str]:
        """The secret values known now: each named variable's value (and a URL's password in it), then `values`."""
        found = list(self.values)
        for name in self.env_names:
            value = os.environ.get(name, "")
            found += [value, url_password(value) or "", *url_query_secrets(value)]
        return found

    def known(self, text: str) -> str:
        """`text` with only the known secret values replaced: for replies and data, whose wording must not change."""
        return replace_secrets(text, self.secrets())

    def __call__(self, text: str) -> str:
        """`text` without credentials: the known values, and anything shaped like a key or token."""
        text = self.known(text)
        for pattern, replacement in SECRET_PATTERNS:
            text = pattern.sub(replacement, text)
        return text


class RedactingFilter(logging.Filter):
    """A logging filter that takes the known secrets out of every record before a handler writes it (run.log)."""

    def __init__(self, redact: Callable[[str], str]) -> None:
        super().__init__()
        self.redact = redact

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact the formatted message (and a traceback's text) in place; never drop a record."""
        record.msg, record.args = self.redact(record.getMessage()), None
        if record.exc_info:
            record.exc_text = self.redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True
