"""Cache bundles: the replies behind a result as one compressed file, so anyone can rerun it at no cost.

A bundle is gzip-compressed JSON lines: a manifest first (format, judgebias version, entry count, a sha256 of
the entry lines, the judges' endpoints and models, the models the servers reported), then one
`{"key": ..., "request": ..., "value": ...}` line per reply, sorted by key: the request is what the key was
computed from (never a credential), so import recomputes every key. The same replies always give the same bytes
(no timestamps, gzip mtime 0), so a published bundle can be checked by its hash.

What a bundle proves: which replies a run used, filed under the requests that asked for them. What it cannot
prove: that a provider sent them; anyone can write a well-formed bundle. So replies imported from a bundle are
marked in the cache, and a run that uses them says so (summary.json, provenance.json, the printed summary).

A run's keys come from the `cache_keys.json` the runner writes into its run folder; a sweep folder holds one
per job. Importing reads the file as a stream (bounded per line and in total), checks every entry (and the
whole file against the manifest) before writing anything.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import re
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from judgebias.cache.disk import call_key
from judgebias.core.errors import UserError
from judgebias.core.record import reply_problem
from judgebias.core.redaction import credential_env_values, public_endpoint, url_secrets
from judgebias.io.files import unwritable
from judgebias.io.run_dir import CACHE_KEYS, RunDir
from judgebias.io.versions import installed_versions

FORMAT = "judgebias-bundle"
FORMAT_VERSION = 2  # 2: every entry carries its request
KEY = re.compile(r"[0-9a-f]{64}")
MAX_LINE_BYTES = 80 * 1024 * 1024  # one entry: a reply of up to 16 M characters and its request
MAX_BUNDLE_BYTES = 8 * 1024**3  # the whole file, decompressed
IMPORT_CHUNK = 500  # entries looked up and stored together on import


class Store(Protocol):
    """What a bundle needs of a cache: read every entry or some, write many."""

    def entries(self) -> Iterator[tuple[str, dict[str, Any]]]: ...

    def get_many(self, keys: list[str]) -> dict[str, dict[str, Any]]: ...

    def put_many(self, entries: Iterable[tuple[str, dict[str, Any]]]) -> None: ...


@dataclass(frozen=True)
class RunKeys:
    """The calls one run (or every job of a sweep) answered from or stored in the cache."""

    keys: list[str]  # sorted, without repeats
    judges: list[dict[str, Any]]  # name, backend, endpoint, model of each paid judge
    runs: int  # run folders read


def version() -> str:
    """The installed judgebias version."""
    return installed_versions(["judgebias"])["judgebias"] or "unknown"


def run_record(judges: Mapping[str, Mapping[str, Any]], keys: Mapping[str, Iterable[str]]) -> dict[str, Any]:
    """The content of a run's cache_keys.json: each paid judge's endpoint and model, and the keys of its calls."""
    return {
        "judges": {
            name: {**judge, "endpoint": public_endpoint(judge.get("endpoint"))} for name, judge in judges.items()
        },
        "keys": {name: sorted(set(found)) for name, found in keys.items()},
    }


class KeyLog:
    """The keys of a run's paid calls, appended to a file in the run folder as they are looked up.

    Kept on disk, not in a set: a run over a million items would otherwise hold two million keys in memory just to
    write them out at the end. `finish` streams them into cache_keys.json (a key may repeat when a prompt does;
    readers take the set).
    """

    def __init__(self, run: RunDir, judges: Iterable[str]) -> None:
        self.run = run
        self.index = {name: number for number, name in enumerate(judges)}
        self.partial = run.cache_keys_partial
        self._file: Any = None

    def add(self, judge: str, key: str) -> None:
        """Record one call's key (of a paid judge)."""
        try:
            if self._file is None:
                self.run.make()
                self._file = self.partial.open("w", encoding="utf-8")
            self._file.write(f"{self.index[judge]} {key}\n")
        except OSError as error:
            raise unwritable(self.partial, error, "every reply received so far is in the cache") from None

    def finish(self, judges: Mapping[str, Mapping[str, Any]]) -> None:
        """Write cache_keys.json from the recorded keys (run_record's layout), then drop the partial file."""
        try:
            self._finish(judges)
        except OSError as error:
            self.abandon()
            raise unwritable(self.run.cache_keys, error, "every reply received is in the cache") from None

    def _finish(self, judges: Mapping[str, Mapping[str, Any]]) -> None:
        if self._file is None:
            return
        self._file.close()
        header = run_record(judges, {})
        names = list(self.index)
        temp = self.run.cache_keys_temporary
        with temp.open("w", encoding="utf-8") as out:
            out.write('{"judges": ' + json.dumps(header["judges"], ensure_ascii=False) + ', "keys": {')
            for number, name in enumerate(names):
                out.write(("" if number == 0 else ", ") + json.dumps(name, ensure_ascii=False) + ": [")
                first = True
                with self.partial.open(encoding="utf-8") as lines:
                    for line in lines:
                        index, _, key = line.rstrip("\n").partition(" ")
                        if int(index) == number:
                            out.write(("" if first else ", ") + json.dumps(key))
                            first = False
                out.write("]")
            out.write("}}\n")
        os.replace(temp, self.run.cache_keys)
        self.partial.unlink()
        self._file = None

    def abandon(self) -> None:
        """The run stopped before finishing: close and remove the partial file (nothing if already finished)."""
        if self._file is not None:
            with contextlib.suppress(OSError):  # a full disk refuses the buffered rest: the file goes anyway
                self._file.close()
            self._file = None
            self.partial.unlink(missing_ok=True)
            self.run.cache_keys_temporary.unlink(missing_ok=True)


def read_run_keys(run_dir: Path) -> RunKeys:
    """The keys recorded by a run folder, or by every job folder under a sweep folder."""
    if not run_dir.is_dir():
        raise UserError(f"--run {run_dir}: no such run folder")
    records = sorted(run_dir.rglob(CACHE_KEYS))
    if not records:
        raise UserError(
            f"--run {run_dir}: no {CACHE_KEYS} in this folder or below (runs of judgebias before bundles did not "
            "record their calls): rerun the same command with cache.mode=only to record them at no cost"
        )
    keys: set[str] = set()
    judges: dict[tuple[str, Any, Any], dict[str, Any]] = {}
    for path in records:
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            for name, judge in record["judges"].items():
                judges.setdefault((name, judge.get("endpoint"), judge.get("model")), {"name": name, **judge})
            for found in record["keys"].values():
                keys.update(found)
        except (OSError, ValueError, KeyError, AttributeError, TypeError):
            raise UserError(f"{path}: not a {CACHE_KEYS} written by judgebias (delete it and rerun the run)") from None
    return RunKeys(sorted(keys), sorted(judges.values(), key=lambda j: (j["name"], str(j.get("model")))), len(records))


def _entry_line(key: str, value: dict[str, Any]) -> bytes:
    reply = {name: field for name, field in value.items() if name not in ("request", "bundle")}
    entry = {"key": key, "request": value["request"], "value": reply}
    return json.dumps(entry, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def export_bundle(store: Store, path: Path, run: RunKeys | None = None) -> dict[str, Any]:
    """Write every reply of `store` (or only those of `run`) to `path`; returns the manifest."""
    if run is None:
        entries = list(store.entries())
    else:
        found = store.get_many(run.keys)
        missing = [key for key in run.keys if key not in found]
        if missing:
            raise UserError(
                f"{len(missing)} of the {len(run.keys)} replies this run used are not in the cache (first key "
                f"{missing[0]}): a bundle without them would not reproduce the run; export from the cache it used "
                "(--backend, --cache-dir)"
            )
        entries = [(key, found[key]) for key in run.keys]
    entries.sort(key=lambda entry: entry[0])
    unproven = [key for key, value in entries if not isinstance(value.get("request"), dict)]
    if unproven:
        raise UserError(
            f"{len(unproven)} of the {len(entries)} replies were stored without their request (by a judgebias "
            f"before bundles carried requests; first key {unproven[0]}): a bundle could not prove their keys. Export "
            "a run made since (--run), or rerun with cache.mode=refresh to store them again"
        )
    lines = [_entry_line(key, value) for key, value in entries]
    _refuse_credentials(entries, lines, run)
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line + b"\n")
    models = Counter(str(value.get("model")) for _, value in entries)
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "judgebias": version(),
        "entries": len(entries),
        "sha256": digest.hexdigest(),
        "judges": run.judges if run is not None else [],
        "models": dict(sorted(models.items())),
        "scope": "run" if run is not None else "cache",
    }
    temp = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with temp.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as out:
            out.write(json.dumps(manifest, sort_keys=True, ensure_ascii=False).encode("utf-8") + b"\n")
            for line in lines:
                out.write(line + b"\n")
        temp.replace(path)
    except OSError as error:
        raise UserError(f"{path}: cannot write the bundle ({error.strerror or error})") from None
    return manifest


# The request fields that hold the data's text (questions, answers): a URL in them is the data's, not an endpoint's.
DATA_FIELDS = frozenset({"messages", "prompt"})


def _refuse_credentials(entries: list[tuple[str, dict[str, Any]]], lines: list[bytes], run: RunKeys | None) -> None:
    """A bundle is the file people publish: checked whole before a byte is written. Refused, in one line naming the
    entry and field, when an endpoint (in a request or the manifest) carries a part shaped like a credential, or
    when any entry holds the value of an environment variable that holds a credential here."""
    for judge in run.judges if run is not None else []:
        if url_secrets(str(judge.get("endpoint") or "")):
            raise UserError(_credential_refusal(f"the manifest's judge {judge.get('name')!r}", "endpoint"))
    known = [secret.encode("utf-8", "surrogatepass") for secret in credential_env_values()]
    escaped = [
        json.dumps(secret.decode("utf-8", "surrogatepass"), ensure_ascii=False)[1:-1].encode() for secret in known
    ]
    for (key, value), line in zip(entries, lines, strict=True):
        request = value["request"]
        for name, field_value in request.items():
            if name not in DATA_FIELDS and any(url_secrets(text) for text in _texts(field_value)):
                raise UserError(_credential_refusal(f"entry {key}", f"request.{name}"))
        if any(secret in line for secret in (*known, *escaped)):
            raise UserError(
                f"entry {key} holds the value of an environment variable that holds a credential here (it is not "
                "shown): no bundle was written; rerun with cache.mode=refresh so the run redacts it, or unset the "
                "variable if it is no secret"
            )


def _credential_refusal(where: str, field: str) -> str:
    return (
        f"{where}: field {field!r} names an endpoint with a part shaped like a credential (not shown), stored by an "
        "earlier judgebias before such parts were redacted: no bundle was written; rerun the run (its keys now hold "
        "a hash of that part, never the part) and export again"
    )


def _texts(value: Any) -> list[str]:
    """Every string in a JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for inner in value.values() for text in _texts(inner)]
    if isinstance(value, list):
        return [text for inner in value for text in _texts(inner)]
    return []


@dataclass(frozen=True)
class Checked:
    """A bundle that passed every check: its manifest, entry count, and the sha256 of the file as it is."""

    manifest: dict[str, Any]
    entries: int
    file_sha256: str


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """The decompressed lines of a bundle, numbered from 1, read as a stream within MAX_LINE_BYTES/MAX_BUNDLE_BYTES."""
    total = 0
    try:
        with gzip.open(path, "rb") as stream:
            number = 0
            while line := stream.readline(MAX_LINE_BYTES + 1):
                number += 1
                total += len(line)
                if len(line) > MAX_LINE_BYTES:
                    raise UserError(f"{path}:{number}: a line longer than {MAX_LINE_BYTES} bytes: not a bundle entry")
                if total > MAX_BUNDLE_BYTES:
                    raise UserError(f"{path}: more than {MAX_BUNDLE_BYTES} bytes decompressed: refused")
                yield number, line.rstrip(b"\n")
    except FileNotFoundError:
        raise UserError(f"{path}: no such bundle file") from None
    except (OSError, EOFError, zlib.error) as error:
        raise UserError(f"{path}: not a judgebias bundle (not a complete gzip file: {error})") from None


def _manifest(path: Path, number: int, line: bytes) -> dict[str, Any]:
    try:
        manifest = json.loads(line)
    except ValueError:
        manifest = None
    if number != 1 or not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise UserError(f"{path}:1: not a judgebias bundle manifest (expected format {FORMAT!r})")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise UserError(
            f"{path}:1: bundle format_version {manifest.get('format_version')!r} is not {FORMAT_VERSION} (version 1 "
            "bundles carry no requests, so their keys cannot be checked): export it again with this judgebias"
        )
    return manifest


def _opened(path: Path) -> tuple[dict[str, Any], Iterator[tuple[str, dict[str, Any], dict[str, Any]]]]:
    """The manifest, and (key, request, value) per entry, each checked as it is read, keys strictly increasing."""
    lines = _lines(path)
    first = next(lines, None)
    if first is None:
        raise UserError(f"{path}: empty bundle (no manifest)")
    return _manifest(path, *first), _checked_entries(path, lines)


def _checked_entries(
    path: Path, lines: Iterator[tuple[int, bytes]]
) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    previous = ""
    for number, line in lines:
        key, request, value = _checked_entry(path, number, line)
        if key <= previous:
            raise UserError(
                f"{path}:{number}: key {key} {'repeats' if key == previous else 'is out of order'} (a bundle holds "
                "each key once, sorted): refused"
            )
        previous = key
        yield key, request, value


def read_bundle(path: Path) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    """The manifest and entries (value with its request) of a bundle, every entry checked."""
    checked = check_bundle(path)
    _, entries = _opened(path)
    return checked.manifest, [(key, {**value, "request": request}) for key, request, value in entries]


def check_bundle(path: Path) -> Checked:
    """Check a whole bundle without keeping it in memory; a UserError names the first bad line."""
    digest = hashlib.sha256()
    manifest, entries = _opened(path)
    count = 0
    for key, request, value in entries:
        digest.update(_entry_line(key, {**value, "request": request}) + b"\n")
        count += 1
    if manifest.get("entries") != count:
        raise UserError(f"{path}: the manifest counts {manifest.get('entries')} entries, the file holds {count}")
    if manifest.get("sha256") != digest.hexdigest():
        raise UserError(f"{path}: the entries do not match the manifest's sha256 (the file was altered or cut)")
    return Checked(manifest, count, file_sha256(path))


def file_sha256(path: Path) -> str:
    """The sha256 of the file's bytes (what a reader can check, unlike the manifest's own claim)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()


def _checked_entry(path: Path, number: int, line: bytes) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """One entry line as (key, request, value), or a UserError naming the line and what is wrong."""
    try:
        entry = json.loads(line, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        raise UserError(f"{path}:{number}: not valid JSON") from None
    if not isinstance(entry, dict) or set(entry) != {"key", "request", "value"}:
        raise UserError(f"{path}:{number}: an entry is an object with exactly `key`, `request` and `value`")
    key, request, value = entry["key"], entry["request"], entry["value"]
    if not isinstance(key, str) or not KEY.fullmatch(key):
        raise UserError(f"{path}:{number}: key {str(key)[:80]!r} is not a judgebias cache key (64 hex digits)")
    if not isinstance(request, dict) or call_key(request) != key:
        raise UserError(f"{path}:{number}: key {key} is not the key of the request beside it (forged or altered)")
    if not isinstance(value, dict):
        raise UserError(f"{path}:{number}: value is not a reply object")
    problem = reply_problem(value) or ("bundle" in value and "reply field 'bundle' is set by import, not by bundles")
    if problem:
        raise UserError(f"{path}:{number}: {problem}")
    return key, request, value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def import_bundle(store: Store, path: Path) -> tuple[dict[str, Any], int, int]:
    """Load a bundle into `store` (checked in full first); returns the manifest, replies added, replies present.

    Every stored reply is marked with the bundle it came from (file name, the file's sha256, the manifest's
    judges), so a run that uses it can say so; a reply already in the cache is kept as it is.
    """
    checked = check_bundle(path)
    origin = {"file": path.name, "sha256": checked.file_sha256, "judges": checked.manifest.get("judges") or []}
    added = 0
    chunk: list[tuple[str, dict[str, Any]]] = []

    def store_chunk() -> int:
        present = store.get_many([key for key, _ in chunk])
        new = [(key, value) for key, value in chunk if key not in present]
        store.put_many(new)
        chunk.clear()
        return len(new)

    for key, request, value in _opened(path)[1]:
        chunk.append((key, {**value, "request": request, "bundle": origin}))
        if len(chunk) >= IMPORT_CHUNK:
            added += store_chunk()
    added += store_chunk()
    return checked.manifest, added, checked.entries - added
