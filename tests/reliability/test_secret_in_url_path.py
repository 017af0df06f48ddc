"""A key in the base URL's path (a gateway reached at …/gw/<key>/v1), its query or its fragment reaches no file the
run, the cache or a bundle writes: not cache_keys.json, not cache.db, not the bundle's manifest or requests, not
verdicts.jsonl when the server echoes its own path back in the reply and in a gateway header. The cache key holds a
hash of it, never the text, so two keys still reach two caches. Typed on the command line it is refused unseen; an
old cache entry that holds one in its request is refused by export before a byte is written."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from urllib.parse import quote

import pytest

from judgebias.cache import ReplyCache
from judgebias.cache.__main__ import main as cache_main
from judgebias.cache.disk import call_key
from tests.helpers import InProcessCli, JsonHandler, serving, write_items
from tests.reliability.helpers import pairs

pytestmark = pytest.mark.reliability

PREFIXED = "sk-proj-Qx7vN2mL8pK4rT9wZ1yB6uE3"  # the shape of a key by its prefix
RANDOM = "Zx8kQ2mN7pL4vR9sT1wY6uE3aBcD"  # no prefix: a key by its randomness alone


class Echo(JsonHandler):
    """A judge that answers A and quotes its own request path in the reply, its model's origin header and its
    system fingerprint (percent-encoded there), as a misconfigured gateway may."""

    def do_POST(self) -> None:
        self.request_body()
        body = {
            "id": "x",
            "object": "chat.completion",
            "model": "m",
            "system_fingerprint": quote(self.path, safe=""),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": f"A (served {self.path})"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 1},
        }
        self.send_json_bytes(200, json.dumps(body).encode(), {"x-litellm-model-api-base": f"http://up{self.path}"})


def everything_written(cli_here: InProcessCli, run_dir: Path, tmp_path: Path) -> bytes:
    """Every file of the run folder and the cache, and a bundle exported from the run (decompressed)."""
    bundle = tmp_path / "bundle.jsonl.gz"
    assert 0 == cache_main(["export", str(bundle), "--run", str(run_dir), "--cache-dir", str(cli_here.cache_dir)])
    texts = [gzip.decompress(bundle.read_bytes())]
    for folder in (run_dir, cli_here.cache_dir):
        texts += [path.read_bytes() for path in folder.rglob("*") if path.is_file()]
    return b"\n".join(texts)


@pytest.mark.parametrize(
    ("where", "key"),
    [("path", PREFIXED), ("path", RANDOM), ("fragment", RANDOM), ("query", RANDOM)],
)
def test_a_key_anywhere_in_the_base_url_reaches_no_file(
    cli_here: InProcessCli, tmp_path: Path, where: str, key: str
) -> None:
    """The URL comes from the environment (never typed): the run answers, the echo is redacted in verdicts.jsonl,
    and no form of the key (as written, percent-encoded, JSON-escaped) is in any file, cache or bundle."""
    data = write_items(tmp_path / "items.jsonl", pairs(3))
    with serving(Echo) as url:
        root = url.removesuffix("/v1")
        base = {
            "path": f"{root}/gw/{key}/v1",
            "fragment": f"{url}#token={key}",
            "query": f"{url}?workspace={key}",
        }[where]
        result = cli_here(
            "judge=local", "judge.base_url=${oc.env:JUDGE_URL}", "judge.api_key_env=null", "report=true",
            "data=jsonl", f"data.path={data}", env={"JUDGE_URL": base},
        )  # fmt: skip
    assert 4 == result.code, result  # every reply an echo, none readable (exit 4): every file is written
    written = everything_written(cli_here, result.run_dir, tmp_path)
    for form in (key, quote(key, safe=""), json.dumps(key)[1:-1], key[: len(key) // 2]):
        assert form.encode() not in written, form
    keys = json.loads((result.run_dir / "cache_keys.json").read_text(encoding="utf-8"))
    endpoint = next(iter(keys["judges"].values()))["endpoint"]
    assert "[redacted" in endpoint, endpoint
    if where == "path":
        assert all("[redacted]" in line["raw1"] for line in result.verdicts())


def test_two_keys_in_the_path_keep_two_caches(cli_here: InProcessCli, tmp_path: Path) -> None:
    """The same gateway reached with two different keys: the second run is not answered from the first's cache
    (the key's hash, not the key, sets the cache key)."""
    data = write_items(tmp_path / "items.jsonl", pairs(2))
    common = ("judge=local", "judge.base_url=${oc.env:JUDGE_URL}", "judge.api_key_env=null", "report=false",
              "data=jsonl", f"data.path={data}")  # fmt: skip
    with serving(Echo) as url:
        root = url.removesuffix("/v1")
        first = cli_here(*common, env={"JUDGE_URL": f"{root}/gw/{PREFIXED}/v1"})
        second = cli_here(*common, env={"JUDGE_URL": f"{root}/gw/{RANDOM}/v1"})
    assert (4, 4) == (first.code, second.code)  # echoes, none readable (exit 4): every file is written
    assert (4, 0) == (first.summary()["calls_live"], first.summary()["calls_cached"])
    assert (4, 0) == (second.summary()["calls_live"], second.summary()["calls_cached"])


def test_a_key_typed_in_the_base_urls_path_is_refused_unseen(cli_here: InProcessCli) -> None:
    """judge.base_url=http://host/gw/<key>/v1 on the command line: one line, the key not repeated, no folder."""
    result = cli_here("judge=local", f"judge.base_url=http://127.0.0.1:9/gw/{RANDOM}/v1")
    assert 2 == result.code and "holds a key in its path" in result.stderr
    assert RANDOM not in result.stderr + result.stdout and RANDOM[:14] not in result.stderr
    assert not result.run_dir.exists()


def test_export_refuses_an_old_entry_whose_request_holds_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cache filled before such keys were redacted holds one in a request's endpoint: export says so in one line
    without showing it, and writes no bundle."""
    cache_dir = tmp_path / "cache"
    request = {
        "endpoint": f"http://gw.example/gw/{RANDOM}/v1",
        "model": "m",
        "messages": [{"role": "user", "content": "q"}],
    }
    cache = ReplyCache(str(cache_dir), "use")
    cache.put(call_key(request), {"text": "A", "prompt_tokens": 1, "completion_tokens": 1, "request": request})
    cache.close()
    bundle = tmp_path / "bundle.jsonl.gz"

    assert 2 == cache_main(["export", str(bundle), "--cache-dir", str(cache_dir)])
    err = capsys.readouterr().err
    assert 1 == len(err.strip().splitlines()) and "field 'request.endpoint'" in err, err
    assert RANDOM not in err and RANDOM[:14] not in err
    assert not bundle.exists() and not list(tmp_path.glob("bundle*"))
