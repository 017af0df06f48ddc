"""Cache bundles: the replies behind a result as one compressed file, so anyone can rerun it at no cost.

A bundle is gzip-compressed JSON lines: a manifest first (format, judgebias version, entry count, a sha256 of
the entry lines, the judges' endpoints and models, the models the servers reported), then one
`{"key": ..., "value": ...}` line per reply, sorted by key. The same replies always give the same bytes
(no timestamps, gzip mtime 0), so a published bundle can be checked by its hash.

A run's keys come from the `cache_keys.json` the runner writes into its run folder; a sweep folder holds one
per job. Importing checks every entry (and the whole file against the manifest) before writing anything.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from judgebias.core.errors import UserError
from judgebias.io.versions import installed_versions

FORMAT = "judgebias-bundle"
FORMAT_VERSION = 1
RUN_KEYS = "cache_keys.json"  # written by the runner into every run folder
KEY = re.compile(r"[0-9a-f]{64}")
REPLY_FIELDS = {"text": (str, type(None)), "prompt_tokens": (int,), "completion_tokens": (int,)}


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


def public_endpoint(url: str | None) -> str | None:
    """An endpoint URL without any user:password part, for manifests."""
    if not url:
        return url
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


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

    def __init__(self, out_dir: Path, judges: Iterable[str]) -> None:
        self.out_dir = out_dir
        self.index = {name: number for number, name in enumerate(judges)}
        self.partial = out_dir / (RUN_KEYS + ".part")
        self._file: Any = None

    def add(self, judge: str, key: str) -> None:
        """Record one call's key (of a paid judge)."""
        if self._file is None:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            self._file = self.partial.open("w", encoding="utf-8")
        self._file.write(f"{self.index[judge]} {key}\n")

    def finish(self, judges: Mapping[str, Mapping[str, Any]]) -> None:
        """Write cache_keys.json from the recorded keys (run_record's layout), then drop the partial file."""
        if self._file is None:
            return
        self._file.close()
        header = run_record(judges, {})
        names = list(self.index)
        temp = self.out_dir / (RUN_KEYS + ".tmp")
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
        os.replace(temp, self.out_dir / RUN_KEYS)
        self.partial.unlink()
        self._file = None

    def abandon(self) -> None:
        """The run stopped before finishing: close and remove the partial file (nothing if already finished)."""
        if self._file is not None:
            self._file.close()
            self._file = None
            self.partial.unlink(missing_ok=True)


def read_run_keys(run_dir: Path) -> RunKeys:
    """The keys recorded by a run folder, or by every job folder under a sweep folder."""
    if not run_dir.is_dir():
        raise UserError(f"--run {run_dir}: no such run folder")
    records = sorted(run_dir.rglob(RUN_KEYS))
    if not records:
        raise UserError(
            f"--run {run_dir}: no {RUN_KEYS} in this folder or below (runs of judgebias before bundles did not "
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
            raise UserError(f"{path}: not a {RUN_KEYS} written by judgebias (delete it and rerun the run)") from None
    return RunKeys(sorted(keys), sorted(judges.values(), key=lambda j: (j["name"], str(j.get("model")))), len(records))


def _entry_line(key: str, value: dict[str, Any]) -> bytes:
    return json.dumps({"key": key, "value": value}, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8"
    )


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
    lines = [_entry_line(key, value) for key, value in entries]
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


def read_bundle(path: Path) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    """The manifest and entries of a bundle, every entry checked; a UserError names the first bad line."""
    try:
        with gzip.open(path, "rb") as stream:
            raw_lines = stream.read().splitlines()
    except FileNotFoundError:
        raise UserError(f"{path}: no such bundle file") from None
    except (OSError, EOFError) as error:
        raise UserError(f"{path}: not a judgebias bundle (not a complete gzip file: {error})") from None
    if not raw_lines:
        raise UserError(f"{path}: empty bundle (no manifest)")
    try:
        manifest = json.loads(raw_lines[0])
    except ValueError:
        manifest = None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise UserError(f"{path}:1: not a judgebias bundle manifest (expected format {FORMAT!r})")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise UserError(
            f"{path}:1: bundle format_version {manifest.get('format_version')!r} is not {FORMAT_VERSION}: "
            "import it with the judgebias version named in its manifest"
        )
    entries: list[tuple[str, dict[str, Any]]] = []
    digest = hashlib.sha256()
    for number, line in enumerate(raw_lines[1:], start=2):
        digest.update(line + b"\n")
        entries.append(_checked_entry(path, number, line))
    if manifest.get("entries") != len(entries):
        raise UserError(f"{path}: the manifest counts {manifest.get('entries')} entries, the file holds {len(entries)}")
    if manifest.get("sha256") != digest.hexdigest():
        raise UserError(f"{path}: the entries do not match the manifest's sha256 (the file was altered or cut)")
    return manifest, entries


def _checked_entry(path: Path, number: int, line: bytes) -> tuple[str, dict[str, Any]]:
    """One entry line as (key, value), or a UserError naming the line and what is wrong."""
    try:
        entry = json.loads(line)
    except ValueError:
        raise UserError(f"{path}:{number}: not valid JSON") from None
    if not isinstance(entry, dict) or set(entry) != {"key", "value"}:
        raise UserError(f"{path}:{number}: an entry is an object with exactly `key` and `value`")
    key, value = entry["key"], entry["value"]
    if not isinstance(key, str) or not KEY.fullmatch(key):
        raise UserError(f"{path}:{number}: key {str(key)[:80]!r} is not a judgebias cache key (64 hex digits)")
    if not isinstance(value, dict):
        raise UserError(f"{path}:{number}: value is not a reply object")
    for field, types in REPLY_FIELDS.items():
        if field not in value or not isinstance(value[field], types) or isinstance(value[field], bool):
            raise UserError(f"{path}:{number}: reply field {field!r} is missing or of the wrong type")
    return key, value


def import_bundle(store: Store, path: Path) -> tuple[dict[str, Any], int, int]:
    """Load a bundle into `store` (checked in full first); returns the manifest, replies added, replies present."""
    manifest, entries = read_bundle(path)
    present = store.get_many([key for key, _ in entries])
    new = [(key, value) for key, value in entries if key not in present]
    store.put_many(new)
    return manifest, len(new), len(entries) - len(new)
