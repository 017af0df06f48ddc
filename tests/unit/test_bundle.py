"""Cache bundles on the disk cache: what goes in, what comes out, and what an altered file is refused for."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from judgebias.cache import ReplyCache, call_key
from judgebias.cache.bundle import (
    KeyLog,
    export_bundle,
    import_bundle,
    public_endpoint,
    read_bundle,
    read_run_keys,
    run_record,
)
from judgebias.core.errors import UserError
from judgebias.io.run_dir import CACHE_KEYS, RunDir


def reply(n: int) -> dict[str, Any]:
    """A cached reply as the runner stores it."""
    return {"text": "AB"[n % 2], "prompt_tokens": 50 + n, "completion_tokens": 1, "model": "m-2024", "probs": None}


def request_of(n: int) -> dict[str, Any]:
    """The canonical request of call `n` (what its key is computed from)."""
    return {"endpoint": "http://127.0.0.1:1/v1", "model": "m", "messages": [{"role": "user", "content": str(n)}]}


def key_of(n: int) -> str:
    """A cache key as the runner makes them."""
    return call_key(request_of(n))


def without_origin(entries: Any) -> dict[str, Any]:
    """Cache entries without the import's `bundle` mark."""
    return {key: {k: v for k, v in value.items() if k != "bundle"} for key, value in entries}


@pytest.fixture
def filled(tmp_path: Path) -> ReplyCache:
    """A disk cache holding ten replies, each with its request (as the runner stores them)."""
    cache = ReplyCache(str(tmp_path / "cache"), "use")
    for n in range(10):
        cache.put(key_of(n), {**reply(n), "request": request_of(n)})
    return cache


def test_a_bundle_round_trip_gives_back_every_reply(filled: ReplyCache, tmp_path: Path) -> None:
    """Every reply exported from one cache is found, unchanged, in an empty cache the bundle is imported into."""
    manifest = export_bundle(filled, tmp_path / "all.jsonl.gz")
    empty = ReplyCache(str(tmp_path / "empty"), "use")
    _, added, present = import_bundle(empty, tmp_path / "all.jsonl.gz")
    assert (10, 10, 0) == (manifest["entries"], added, present)
    assert dict(filled.entries()) == without_origin(empty.entries())


def test_the_same_replies_always_make_the_same_file(filled: ReplyCache, tmp_path: Path) -> None:
    """A bundle has no timestamps, so its hash identifies the replies (a paper can cite it)."""
    export_bundle(filled, tmp_path / "one.gz")
    export_bundle(filled, tmp_path / "two.gz")
    assert (tmp_path / "one.gz").read_bytes() == (tmp_path / "two.gz").read_bytes()


def test_the_manifest_names_version_counts_and_reported_models(filled: ReplyCache, tmp_path: Path) -> None:
    """The manifest says which judgebias wrote it, how many replies it holds and which models answered."""
    manifest = export_bundle(filled, tmp_path / "all.gz")
    assert ("judgebias-bundle", 10, {"m-2024": 10}, "cache") == (
        manifest["format"],
        manifest["entries"],
        manifest["models"],
        manifest["scope"],
    )
    assert manifest == read_bundle(tmp_path / "all.gz")[0]


def test_a_run_bundle_holds_only_that_run_s_replies_and_judges(filled: ReplyCache, tmp_path: Path) -> None:
    """--run exports exactly the keys the run recorded, and the judges' endpoints and models (no credentials)."""
    run = tmp_path / "run"
    run.mkdir()
    judges = {"j": {"backend": "openai", "endpoint": "https://user:secret@gw.example/v1", "model": "m"}}
    record = run_record(judges, {"j": [key_of(1), key_of(2), key_of(1)]})
    (run / CACHE_KEYS).write_text(json.dumps(record), encoding="utf-8")
    manifest = export_bundle(filled, tmp_path / "run.gz", read_run_keys(run))
    _, entries = read_bundle(tmp_path / "run.gz")
    assert sorted([key_of(1), key_of(2)]) == [key for key, _ in entries]
    assert [{"name": "j", "backend": "openai", "endpoint": "https://gw.example/v1", "model": "m"}] == manifest["judges"]


def test_a_sweep_folder_exports_the_replies_of_all_its_jobs(filled: ReplyCache, tmp_path: Path) -> None:
    """A sweep folder's bundle holds the union of the keys its job folders recorded."""
    for job, keys in (("0", [key_of(1)]), ("1", [key_of(2), key_of(3)])):
        (tmp_path / "sweep" / job).mkdir(parents=True)
        record = run_record({"j": {"endpoint": "http://x/v1", "model": "m"}}, {"j": keys})
        (tmp_path / "sweep" / job / CACHE_KEYS).write_text(json.dumps(record), encoding="utf-8")
    run = read_run_keys(tmp_path / "sweep")
    assert (sorted([key_of(1), key_of(2), key_of(3)]), 2) == (run.keys, run.runs)


def test_a_run_whose_replies_are_not_all_cached_is_refused(filled: ReplyCache, tmp_path: Path) -> None:
    """A bundle that could not reproduce its run is not written."""
    (tmp_path / "run").mkdir()
    record = run_record({"j": {"endpoint": "http://x/v1", "model": "m"}}, {"j": [key_of(1), key_of(99)]})
    (tmp_path / "run" / CACHE_KEYS).write_text(json.dumps(record), encoding="utf-8")
    with pytest.raises(UserError, match=r"1 of the 2 replies this run used are not in the cache"):
        export_bundle(filled, tmp_path / "run.gz", read_run_keys(tmp_path / "run"))
    assert not (tmp_path / "run.gz").exists()


def test_a_run_folder_without_recorded_keys_says_how_to_record_them(tmp_path: Path) -> None:
    """An old run folder gets the fix: rerun it with cache.mode=only, which costs nothing and records its keys."""
    (tmp_path / "old").mkdir()
    with pytest.raises(UserError, match=r"rerun the same command with cache.mode=only"):
        read_run_keys(tmp_path / "old")


def rewrite(path: Path, change: Any) -> None:
    """Rewrite a bundle's lines through `change` (as a careless edit or a cut download would)."""
    lines = gzip.decompress(path.read_bytes()).splitlines()
    path.write_bytes(gzip.compress(b"\n".join(change(lines)) + b"\n"))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda lines: lines[:-1], "the manifest counts 10 entries, the file holds 9"),
        (lambda lines: [*lines[:3], lines[3].replace(b'"text":"', b'"text":"X'), *lines[4:]], "do not match"),
        (
            lambda lines: [*lines[:2], b'{"key": "zz", "request": {}, "value": {}}', *lines[3:]],
            ":3: key 'zz' is not a judgebias",
        ),
        (lambda lines: [*lines[:2], b"{not json", *lines[3:]], ":3: not valid JSON"),
        (lambda lines: [lines[0].replace(b"judgebias-bundle", b"other"), *lines[1:]], ":1: not a judgebias bundle"),
    ],
)
def test_an_altered_bundle_is_refused_and_nothing_is_imported(
    filled: ReplyCache, tmp_path: Path, change: Any, message: str
) -> None:
    """Import checks every entry and the whole file against its manifest before writing anything."""
    path = tmp_path / "all.gz"
    export_bundle(filled, path)
    rewrite(path, change)
    empty = ReplyCache(str(tmp_path / "empty"), "use")
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace("[", r"\[")):
        import_bundle(empty, path)
    assert [] == list(empty.entries())


def test_a_reply_with_a_wrong_field_type_is_named_by_line(filled: ReplyCache, tmp_path: Path) -> None:
    """An entry whose reply has a non-integer token count is refused with its line number and field."""
    path = tmp_path / "all.gz"
    export_bundle(filled, path)
    entry = json.loads(gzip.decompress(path.read_bytes()).splitlines()[5])
    entry["value"]["prompt_tokens"] = "x"
    rewrite(path, lambda lines: [*lines[:5], json.dumps(entry).encode(), *lines[6:]])
    with pytest.raises(UserError, match=r":6: reply field 'prompt_tokens' is not an integer"):
        read_bundle(path)


def test_importing_keeps_replies_already_there(filled: ReplyCache, tmp_path: Path) -> None:
    """A key already in the cache keeps its reply (the runs that used it stay reproducible) and is counted."""
    export_bundle(filled, tmp_path / "all.gz")
    target = ReplyCache(str(tmp_path / "target"), "use")
    mine = {**reply(1), "text": "mine"}
    target.put(key_of(1), mine)
    _, added, present = import_bundle(target, tmp_path / "all.gz")
    assert (9, 1, mine) == (added, present, target.get(key_of(1)))


def test_endpoint_credentials_never_reach_a_manifest() -> None:
    """A user:password in an endpoint URL is dropped from the manifest's copy."""
    assert ["https://h:8/v1", "http://h/v1", None] == [
        public_endpoint("https://u:p@h:8/v1"),
        public_endpoint("http://h/v1"),
        public_endpoint(None),
    ]


def test_a_runs_key_log_writes_the_record_run_record_would(tmp_path: Path) -> None:
    """KeyLog streams the keys to disk and writes the same cache_keys.json content as run_record (as a set)."""
    judges = {"j": {"endpoint": "http://x/v1", "model": "m"}, "k": {"endpoint": "http://y/v1", "model": "n"}}
    log = KeyLog(RunDir(tmp_path), ["j", "k"])
    for judge, number in [("j", 1), ("k", 2), ("j", 3), ("j", 1)]:
        log.add(judge, key_of(number))
    log.finish(judges)
    written = json.loads((tmp_path / CACHE_KEYS).read_text(encoding="utf-8"))
    expected = run_record(judges, {"j": [key_of(1), key_of(3)], "k": [key_of(2)]})
    assert expected["judges"] == written["judges"]
    assert {name: sorted(set(keys)) for name, keys in written["keys"].items()} == expected["keys"]
    assert [CACHE_KEYS] == [path.name for path in tmp_path.iterdir()]


def test_a_stopped_runs_key_log_leaves_nothing_behind(tmp_path: Path) -> None:
    """A run that stops before finishing removes its partial key list."""
    log = KeyLog(RunDir(tmp_path), ["j"])
    log.add("j", key_of(1))
    log.abandon()
    assert [] == list(tmp_path.iterdir())
