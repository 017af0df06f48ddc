"""Credentials out of text: the values of the key env vars a run reads, and anything shaped like a key or token.

No module state: the env var names come with each call (from the run's config), so two runs in one process
never share what they redact.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

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
    """An endpoint URL without any credential: what files, messages and cache keys may show. Its user:password part
    goes, a credential-named query value becomes [redacted] (so such keys stay what they were), and any other part
    shaped like a key (a path segment, a query value, the fragment) becomes [redacted-<8 hex of its sha256>]: two
    gateways reached through different keys keep different cache keys, and neither key is written anywhere."""
    if not url:
        return url
    for secret in url_query_secrets(url):
        url = url.replace(secret, REDACTED)
    for secret in sorted(_shaped_url_parts(url), key=len, reverse=True):
        url = url.replace(secret, hashed_marker(secret))
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def hashed_marker(secret: str) -> str:
    """What stands for a secret where two secrets must stay told apart (a cache key): a short hash, never the text."""
    return f"[redacted-{hashlib.sha256(secret.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}]"


def url_secrets(value: str) -> list[str]:
    """Every credential a URL carries, as written and percent-decoded: its user:password, a credential-named query
    value (key=, token=, sig=, ...), and any path segment, query value, fragment part or user name shaped like a
    key. Empty for text that is not a URL."""
    found = [secret for secret in (url_password(value), *url_query_secrets(value)) if secret]
    for written in _shaped_url_parts(value):
        found += [written, *(piece for piece in _URL_PIECE.split(unquote(written)) if looks_like_secret(piece))]
    return list(dict.fromkeys(found))


_URL_PIECE = re.compile(r"[/?&=;,:#+]")  # what separates the pieces of a path, query or fragment


def _shaped_url_parts(value: str) -> list[str]:
    """The parts of a URL (as written) that hold something shaped like a key, once percent-decoded: path segments,
    query values, fragment parts, a user name."""
    if "://" not in value:
        return []
    try:
        parts = urlsplit(value)
        username = parts.username
    except ValueError:
        return []
    pieces = [username or "", *_URL_PIECE.split(parts.path), *_URL_PIECE.split(parts.query)]
    pieces += _URL_PIECE.split(parts.fragment)
    return [piece for piece in dict.fromkeys(pieces) if piece and _holds_secret(piece)]


def _holds_secret(piece: str) -> bool:
    """Whether a URL piece, percent-decoded, is or holds (between separators) a key-shaped string."""
    decoded = unquote(piece)
    return looks_like_secret(decoded) or any(looks_like_secret(part) for part in _URL_PIECE.split(decoded))


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


CREDENTIAL_NAMES = re.compile(r"(?i)key|token|secret|passw|auth|credential")  # env vars that hold credentials


def credential_env_values() -> list[str]:
    """The values of every environment variable whose name says it holds a credential (OPENAI_API_KEY, HF_TOKEN,
    MY_GATEWAY_SECRET, ...), long enough to be one: what a file meant for publishing is checked against."""
    return [
        value
        for name, value in os.environ.items()
        if CREDENTIAL_NAMES.search(name) and len(value) >= MIN_SECRET and not value.isdigit()
    ]


def config_secrets(config: Any) -> set[str]:
    """Secrets written into a plain config itself rather than named: every credential its URLs carry (a base_url's
    password, a key in its query or path)."""
    found: set[str] = set()
    if isinstance(config, dict):
        for value in config.values():
            found |= config_secrets(value)
    elif isinstance(config, list):
        for value in config:
            found |= config_secrets(value)
    elif isinstance(config, str):
        found.update(url_secrets(config))
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
            found += [value, *url_secrets(value)]
        return found

    def known(self, text: str) -> str:
        """`text` with only the known secret values replaced: for replies and data, whose wording must not change."""
        return replace_secrets(text, self.secrets())

    def __call__(self, text: str) -> str:
        """`text` without credentials: the known values, anything shaped like a key or token, and the key-shaped
        parts of any URL in it."""
        text = self.known(text)
        if "://" in text:
            for url in _URL_IN_TEXT.findall(text):
                for secret in _shaped_url_parts(url):
                    text = text.replace(secret, REDACTED)
        for pattern, replacement in SECRET_PATTERNS:
            text = pattern.sub(replacement, text)
        return text


_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+")


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
