"""Bundles as an adversary writes them: keys checked against their requests, values against the reply schema, sizes
bounded while decompressing, and every replay of imported replies saying so."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from judgebias.cache import ReplyCache
from judgebias.cache.bundle import MAX_LINE_BYTES, export_bundle, import_bundle, read_run_keys
from judgebias.core.errors import UserError
from judgebias.devserver.server import RunningServer
from judgebias.engine.runner import run_experiment
from tests.helpers import write_items
from tests.reliability.helpers import KEY, config_of, local, pairs, run_here

pytestmark = pytest.mark.reliability

StartServer = Callable[..., RunningServer]


def canonical(entry: dict[str, Any]) -> bytes:
    """An entry line as judgebias writes it."""
    return json.dumps(entry, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def write_bundle(path: Path, manifest: dict[str, Any], entries: list[dict[str, Any]]) -> Path:
    """A bundle as a forger would write it: any entries, the manifest's count and sha256 made to match."""
    lines = [canonical(entry) for entry in entries]
    digest = hashlib.sha256(b"".join(line + b"\n" for line in lines)).hexdigest()
    head = json.dumps({**manifest, "entries": len(lines), "sha256": digest}).encode()
    path.write_bytes(gzip.compress(b"\n".join([head, *lines]) + b"\n", mtime=0))
    return path


def entries_of(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A bundle's manifest and entry lines."""
    head, *lines = gzip.decompress(path.read_bytes()).splitlines()
    return json.loads(head), [json.loads(line) for line in lines]


@pytest.fixture
def real_bundle(server: StartServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[str]]:
    """A bundle of a real 12-item run against the dev server, and the overrides that replay it."""
    monkeypatch.setenv(*next(iter(KEY.items())))
    judge = server()
    data = write_items(tmp_path / "items.jsonl", pairs(12))
    overrides = [*local(judge.url), f"data.path={data}"]
    run = tmp_path / "run"
    run.mkdir()
    run_here(run, *overrides, f"cache.dir={tmp_path / 'cache'}")
    path = tmp_path / "run.jsonl.gz"
    export_bundle(ReplyCache(str(tmp_path / "cache"), "use"), path, read_run_keys(run))
    return path, overrides


def replay(tmp_path: Path, bundle: Path, overrides: list[str], name: str) -> tuple[dict[str, Any], list[str]]:
    """Import `bundle` into a fresh cache and replay the run from it alone; its summary and printed lines."""
    cache = tmp_path / f"cache-{name}"
    import_bundle(ReplyCache(str(cache), "use"), bundle)
    out = tmp_path / name
    out.mkdir()
    printed: list[str] = []
    config = config_of(*overrides, f"cache.dir={cache}", "cache.mode=only")
    summary = dict(run_experiment(config, out, echo=printed.append))
    return summary | {"provenance": json.loads((out / "provenance.json").read_text())}, printed


def test_a_replay_of_forged_replies_says_they_were_imported(
    real_bundle: tuple[Path, list[str]], tmp_path: Path
) -> None:
    """Replies forged under a real run's keys replay, but summary, provenance and the printed summary name the bundle."""
    path, overrides = real_bundle
    manifest, entries = entries_of(path)
    forged = [entry | {"value": entry["value"] | {"text": "A"}} for entry in entries]
    bundle = write_bundle(tmp_path / "forged.jsonl.gz", manifest, forged)
    summary, printed = replay(tmp_path, bundle, overrides, "forged")
    sha = hashlib.sha256(bundle.read_bytes()).hexdigest()
    expected = {
        "replies": len(entries),
        "bundles": [{"file": bundle.name, "sha256": sha, "judges": manifest["judges"]}],
    }
    assert expected == summary["imported_replies"] == summary["provenance"]["imported_replies"]
    assert any(line for line in "\n".join(printed).splitlines() if "IMPORTED" in line and sha[:12] in line)


def test_a_manifest_naming_other_judges_is_one_warning_line(
    real_bundle: tuple[Path, list[str]], tmp_path: Path
) -> None:
    """A bundle whose manifest names a model the config does not use is replayed with one warning line."""
    path, overrides = real_bundle
    manifest, entries = entries_of(path)
    judges = [judge | {"model": "gpt-4o-2024-08-06"} for judge in manifest["judges"]]
    bundle = write_bundle(tmp_path / "other.jsonl.gz", manifest | {"judges": judges}, entries)
    _, printed = replay(tmp_path, bundle, overrides, "other")
    warnings = [line for line in printed if line.startswith("warning: bundle other.jsonl.gz")]
    assert 1 == len(warnings) and "gpt-4o-2024-08-06" in warnings[0] and "\n" not in warnings[0]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"probs": "zzz"}, "reply field 'probs' is not an object"),
        ({"model": {}}, "reply field 'model' is not text"),
        ({"prompt_tokens": -(10**9)}, "reply field 'prompt_tokens' -1000000000 is outside"),
        ({"completion_tokens": 10**30}, "reply field 'completion_tokens' 1000000000000000000000000000000 is outside"),
        ({"probs": {"A": 7.5}}, "reply field 'probs' ['A'] 7.5 is outside"),
        ({"bundle": {"file": "x"}}, "'bundle' is set by import"),
        ({"outcome": "verdict"}, "reply field 'outcome' is not one of refusal, content_filter"),
        ({"stored_at": "yesterday"}, "'stored_at' is not a UTC time"),
    ],
)
def test_a_value_outside_the_reply_schema_is_refused_and_nothing_is_stored(
    real_bundle: tuple[Path, list[str]], tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    """A bundle with one reply of the wrong type or out of bounds is refused naming its line; the cache stays empty."""
    path, _ = real_bundle
    manifest, entries = entries_of(path)
    entries[3]["value"] |= change
    bundle = write_bundle(tmp_path / "bad.jsonl.gz", manifest, entries)
    cache = ReplyCache(str(tmp_path / "empty"), "use")
    with pytest.raises(UserError) as refused:
        import_bundle(cache, bundle)
    assert f"{bundle}:5: " in str(refused.value) and message in str(refused.value)
    assert [] == list(cache.entries())


def test_a_key_that_is_not_its_request_s_key_is_refused(real_bundle: tuple[Path, list[str]], tmp_path: Path) -> None:
    """An entry filed under another request's key (a reply moved to another prompt) is refused as forged."""
    path, _ = real_bundle
    manifest, entries = entries_of(path)
    entries[0]["request"], entries[1]["request"] = entries[1]["request"], entries[0]["request"]
    bundle = write_bundle(tmp_path / "moved.jsonl.gz", manifest, entries)
    with pytest.raises(UserError, match=r":2: key [0-9a-f]{64} is not the key of the request beside it"):
        import_bundle(ReplyCache(str(tmp_path / "empty"), "use"), bundle)


def test_a_repeated_key_is_refused_not_counted_twice(real_bundle: tuple[Path, list[str]], tmp_path: Path) -> None:
    """A bundle holding one entry twice is refused naming the line, instead of reporting two replies added."""
    path, _ = real_bundle
    manifest, entries = entries_of(path)
    bundle = write_bundle(tmp_path / "twice.jsonl.gz", manifest, [entries[0], entries[0]])
    with pytest.raises(UserError, match=r":3: key [0-9a-f]{64} repeats"):
        import_bundle(ReplyCache(str(tmp_path / "empty"), "use"), bundle)


def test_a_small_gzip_holding_a_huge_line_is_refused_within_bounded_memory(tmp_path: Path) -> None:
    """A gzip bomb (one line far past the per-line limit) is refused in one line, its memory bounded by that limit."""
    manifest = {"format": "judgebias-bundle", "format_version": 2, "entries": 1, "sha256": "0" * 64}
    bomb = tmp_path / "bomb.jsonl.gz"
    with gzip.open(bomb, "wb", compresslevel=1) as out:
        out.write(json.dumps(manifest).encode() + b"\n")
        block = b" " * (1 << 20)
        for _ in range(3 * MAX_LINE_BYTES // len(block)):
            out.write(block)
    assert bomb.stat().st_size < 2_000_000
    # The peak of this process's own memory (VmHWM, kB), not ru_maxrss: Linux carries the parent's high-water mark
    # into a child's ru_maxrss across fork and exec, and the test process may be large.
    measured = (
        "import sys\n"
        "from judgebias.cache.__main__ import main\n"
        "code = main(sys.argv[1:])\n"
        "print(next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM:')))\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", measured, "import", str(bomb), "--cache-dir", str(tmp_path / "c")],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ.copy(),
        check=False,
    )
    assert 2 == done.returncode
    assert [f"judgebias: error: {bomb}:2: a line longer than {MAX_LINE_BYTES} bytes: not a bundle entry"] == (
        done.stderr.splitlines()
    )
    peak_mb = int(done.stdout.split()[-1]) / 1024
    assert peak_mb < 150 + 2 * MAX_LINE_BYTES / 2**20, f"peak {peak_mb:.0f} MB for a bounded read"


def test_a_bundle_of_repeated_samples_verifies_and_replays(
    server: StartServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With judge.samples=2 every ask's entry carries what its key was computed from, so export, import and replay work."""
    monkeypatch.setenv(*next(iter(KEY.items())))
    judge = server()
    data = write_items(tmp_path / "items.jsonl", pairs(3))
    overrides = [*local(judge.url), f"data.path={data}", "judge.samples=2", "judge.temperature=0.7"]
    run = tmp_path / "run"
    run.mkdir()
    run_here(run, *overrides, f"cache.dir={tmp_path / 'cache'}")
    bundle = tmp_path / "samples.jsonl.gz"
    export_bundle(ReplyCache(str(tmp_path / "cache"), "use"), bundle, read_run_keys(run))
    summary, _ = replay(tmp_path, bundle, overrides, "replayed")
    assert 12 == summary["imported_replies"]["replies"]
    assert 0 == summary["calls_live"]
