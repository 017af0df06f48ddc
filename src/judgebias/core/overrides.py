"""Overrides as a sweep's tables and charts show them: what differs between jobs, readable. Pure logic.

Hydra keeps an override as typed (`data.path='/data/run 2/pairs.csv'`, `judge.base_url=http://10.0.0.5:8001/v1`);
a label shows its value unquoted, a file by its name and a URL by its host:port, so what tells two jobs apart fits
where a long path or URL would have been cut.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

_QUOTED = re.compile(r"""\A(['"])(.*)\1\Z""", re.DOTALL)
_ESCAPED = re.compile(r"\\(.)")


def unescaped(value: str) -> str:
    """A Hydra override value without its quotes and backslash escapes (`'a b'` -> `a b`, `a\\,b` -> `a,b`)."""
    quoted = _QUOTED.match(value)
    if quoted:
        return quoted.group(2).replace("\\" + quoted.group(1), quoted.group(1))
    return _ESCAPED.sub(r"\1", value)


def readable(override: str) -> str:
    """`key=value` with the value as a label shows it: unquoted, a path by its file name, a URL by host:port."""
    key, sign, value = override.partition("=")
    if not sign:
        return override
    value = unescaped(value)
    if re.match(r"\A[a-z][a-z0-9+.-]*://", value):
        parts = urlsplit(value)
        value = parts.netloc.rpartition("@")[2] or value  # never a user:password part
    elif "/" in value and key.rsplit(".", 1)[-1] in ("path", "dir", "judgments", "root", "sample", "batch_file"):
        value = value.rstrip("/").rsplit("/", 1)[-1] or value
    return f"{key}={value}"


def readable_jobs(jobs: list[list[str]]) -> list[list[str]]:
    """Each job's overrides readable; a key whose values would then read the same for two jobs that differ (two
    files of one name in different folders) keeps its whole (unquoted) values, so the jobs stay told apart."""
    short: dict[str, set[str]] = {}
    whole: dict[str, set[str]] = {}
    for overrides in jobs:
        for override in overrides:
            key = override.partition("=")[0]
            short.setdefault(key, set()).add(readable(override))
            whole.setdefault(key, set()).add(override)
    keep = {key for key in short if len(short[key]) < len(whole[key])}
    return [
        [
            f"{o.partition('=')[0]}={unescaped(o.partition('=')[2])}" if o.partition("=")[0] in keep else readable(o)
            for o in overrides
        ]
        for overrides in jobs
    ]
