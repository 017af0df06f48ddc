"""Secrets and trust: the key is never written anywhere, cache keys separate every setting, a cache never runs code."""

from __future__ import annotations

import dataclasses
import json
import pickle
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import diskcache
import pytest

from judgebias.backends.openai import OpenAIJudge
from judgebias.cache import ReplyCache, call_key
from judgebias.config.schema import JudgeConfig, RubricConfig
from judgebias.core.errors import UserError
from judgebias.devserver.server import RunningServer
from tests.helpers import Cli, JsonHandler, Result, serving, write_items
from tests.reliability.helpers import KEY, KEY_ENV, cached_replies, local, pairs, run_here

pytestmark = pytest.mark.reliability

StartServer = Callable[..., RunningServer]
CANARY = "sk-canary-7f3a9c1e5b2d4f6a8c0e"


class EchoingHandler(JsonHandler):
    """A careless OpenAI-compatible server: every error message quotes the request's Authorization header."""

    status = 401
    padding = 0  # characters before the quote, to place the key across the point where a message is cut short

    def do_POST(self) -> None:
        self.request_body()
        auth = self.headers.get("Authorization")
        message = f"{'.' * self.padding}Incorrect API key provided: {auth}. Request headers were {dict(self.headers)}"
        self.send_json(self.status, {"error": {"message": message, "type": "invalid_request_error", "code": None}})


@pytest.fixture
def echoing() -> Iterator[Callable[..., str]]:
    """Start echoing servers on 127.0.0.1 answering every request with the given status; returns their /v1 URL."""
    with ExitStack() as servers:

        def start(status: int, padding: int = 0) -> str:
            handler = type("Handler", (EchoingHandler,), {"status": status, "padding": padding})
            return servers.enter_context(serving(handler))

        yield start


def leaks(root: Path, results: list[Result]) -> list[str]:
    """Every file under `root` (runs, .hydra dumps, logs, reports, the cache) and output holding the canary, or half."""
    half = CANARY[: len(CANARY) // 2]
    found = [str(path) for path in root.rglob("*") if path.is_file() and half.encode() in path.read_bytes()]
    return found + [f"output of run {i}" for i, r in enumerate(results) if half in r.stdout + r.stderr]


@pytest.mark.slow
def test_the_api_key_is_written_nowhere(cli: Cli, server: StartServer, echoing: Callable[..., str]) -> None:
    """A canary key, used by a run, a sweep, failing calls and refused runs, is in no file, cache, log or message."""
    key = {KEY_ENV: CANARY}
    data = write_items(cli.tmp_path / "items.jsonl", pairs(4))
    good = server(policy="longer", api_key=CANARY)
    flaky = server(policy="longer", api_key=CANARY, p500=0.5, fault_seed=2)
    refusing = server(policy="longer", api_key="a-different-key")
    on = ("data=jsonl", f"data.path={data}")
    results = [
        cli(*local(good.url, *on, "report=true", "bootstrap.resamples=20"), env=key),
        cli("-m", *local(good.url, *on, "judge.temperature=0.0,0.7"), env=key),
        cli(*local(flaky.url, *on, "judge.max_retries=0"), env=key),
        cli(*local(refusing.url, *on), env=key),
        cli(*local(echoing(401), *on), env=key),
        cli(*local(echoing(500, padding=143), *on, "judge.max_retries=0"), env=key),  # the key across char 200
    ]

    assert [0, 0, 1, 2, 2, 1] == [result.code for result in results], results
    assert {1} == {good.stats()["distinct_auth"], flaky.stats()["distinct_auth"]}  # the canary was really sent
    assert (results[0].run_dir / "report.html").exists() and (results[0].run_dir / ".hydra" / "config.yaml").exists()
    assert "[redacted]" in results[4].stderr
    assert any("[redacted]" in line for line in (results[5].run_dir / "verdicts.jsonl").read_text().splitlines())
    assert [] == leaks(cli.tmp_path, results)


BASE = JudgeConfig(backend="openai", name="j", model="m", base_url="http://127.0.0.1:9/v1", api_key_env=KEY_ENV)
RUBRIC = RubricConfig(name="r", system="s", user="u")
MESSAGES = [{"role": "system", "content": "judge"}, {"role": "user", "content": "A or B?"}]


def key_of(config: JudgeConfig, messages: list[dict[str, str]] = MESSAGES) -> str:
    """The cache key of one call of a judge configured as `config`."""
    return call_key(OpenAIJudge(config, RUBRIC).cache_request(messages))


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"base_url": "http://127.0.0.1:10/v1"}, id="endpoint"),
        pytest.param({"model": "m2"}, id="model"),
        pytest.param({"temperature": 0.7}, id="temperature"),
        pytest.param({"top_p": 0.9}, id="top_p"),
        pytest.param({"seed": 1}, id="seed"),
        pytest.param({"seed": None}, id="no-seed"),
        pytest.param({"max_tokens": 17}, id="max_tokens"),
        pytest.param({"logprobs": True}, id="logprobs"),
    ],
)
def test_every_setting_that_shapes_a_reply_changes_the_cache_key(change: dict[str, Any]) -> None:
    """A reply made under another endpoint, model or sampling setting is never served: each one changes the key."""
    assert key_of(BASE) != key_of(dataclasses.replace(BASE, **change))


def test_the_prompt_changes_the_cache_key() -> None:
    """Another prompt (one character of one message, or the role) is another key."""
    other = [MESSAGES[0], {"role": "user", "content": "A or B ?"}]
    roles = [{"role": "user", "content": "judge"}, MESSAGES[1]]
    assert len({key_of(BASE), key_of(BASE, other), key_of(BASE, roles)}) == 3


def test_the_cache_key_never_includes_the_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys and values that do not shape the reply (the key, timeouts, retries, quotas, prices) leave the key as is."""
    monkeypatch.setenv(KEY_ENV, CANARY)
    judge = OpenAIJudge(BASE, RUBRIC)
    assert CANARY not in json.dumps(judge.cache_request(MESSAGES))
    unchanged = {key_of(BASE)}
    monkeypatch.setenv(KEY_ENV, "sk-another-key")
    unchanged.add(key_of(BASE))
    for change in ({"api_key_env": "OTHER_KEY"}, {"timeout": 5.0}, {"max_retries": 0}, {"requests_per_minute": 9.0}):
        unchanged.add(key_of(dataclasses.replace(BASE, **change)))
    unchanged.add(key_of(dataclasses.replace(BASE, base_url="http://127.0.0.1:9/v1/")))
    assert 1 == len(unchanged)


def test_another_endpoint_is_not_answered_from_the_cache(
    server: StartServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same run against a second endpoint on the same cache makes every call again there."""
    monkeypatch.setenv(KEY_ENV, KEY[KEY_ENV])
    data = write_items(tmp_path / "items.jsonl", pairs(3))
    first, second = server(policy="longer"), server(policy="first")
    for judge in (first, second):
        run_here(
            tmp_path / judge.url[-10:-3],
            *local(judge.url, f"cache.dir={tmp_path / 'c'}", "data=jsonl", f"data.path={data}"),
        )
    assert (6, 6) == (first.stats()["requests"], second.stats()["requests"])


class Planted:
    """A pickled value that, if ever unpickled, creates a file: proof that code ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        return (open, (str(self.marker), "w"))


def plant(cache_dir: Path, value: Any) -> list[str]:
    """Overwrite every entry of a judgebias cache with `value`, as another program could; return the keys."""
    cache = diskcache.Cache(str(cache_dir))
    try:
        keys = list(cache.iterkeys())
        for key in keys:
            cache.set(key, value)
        return keys
    finally:
        cache.close()


def test_a_pickled_value_in_the_cache_is_refused_unread(tmp_path: Path) -> None:
    """Reading a key that holds a pickle raises a UserError and never unpickles it."""
    marker = tmp_path / "code-ran"
    cache = ReplyCache(str(tmp_path / "cache"), "use")
    cache.put("k", {"text": "A"})
    cache.close()
    assert ["k"] == plant(tmp_path / "cache", Planted(marker))
    assert pickle.dumps(Planted(marker))  # the plant really is a pickle that would run code

    with pytest.raises(UserError, match="pickled value"):
        ReplyCache(str(tmp_path / "cache"), "use").get("k")
    assert not marker.exists()


@pytest.mark.slow
def test_a_run_on_a_cache_with_pickles_stops_without_running_them(
    cli: Cli, server: StartServer, tmp_path: Path
) -> None:
    """A rerun whose cache entries were replaced by pickles exits 2 in one line and runs none of them."""
    judge = server(policy="longer")
    data = write_items(tmp_path / "items.jsonl", pairs(2))
    args = local(judge.url, "data=jsonl", f"data.path={data}")
    assert 0 == cli(*args, env=KEY).code
    marker = tmp_path / "code-ran"
    assert 4 == len(plant(cli.cache_dir, Planted(marker)))

    result = cli(*args, env=KEY)
    assert 2 == result.code
    assert 1 == len(result.stderr.strip().splitlines()) and "pickled value" in result.stderr
    assert not marker.exists()
    assert 4 == judge.stats()["requests"]


def test_a_cached_value_judgebias_cannot_read_is_a_miss_and_is_replaced(
    server: StartServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache entry holding text that is not a JSON object is asked again and overwritten with the reply."""
    monkeypatch.setenv(KEY_ENV, KEY[KEY_ENV])
    judge = server(policy="longer")
    data = write_items(tmp_path / "items.jsonl", pairs(2))
    args = local(judge.url, f"cache.dir={tmp_path / 'cache'}", "data=jsonl", f"data.path={data}")
    run_here(tmp_path / "first", *args)
    plant(tmp_path / "cache", '["not", "a reply"]')

    summary = run_here(tmp_path / "second", *args)
    assert (0, 8) == (summary["failed_calls"], judge.stats()["requests"])
    assert all(isinstance(reply.get("text"), str) for reply in cached_replies(tmp_path / "cache").values())
