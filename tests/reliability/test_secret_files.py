"""Secrets never reach a file: a server echoing the request's headers, keys pasted by shape, a password in the URL."""

from __future__ import annotations

import gzip
import json
import secrets
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from judgebias.core.redaction import looks_like_secret
from judgebias.devserver.server import RunningServer
from tests.helpers import Cli, InProcessCli, free_port, write_items
from tests.reliability.helpers import KEY_ENV, judgebias, local, pairs

pytestmark = [pytest.mark.reliability, pytest.mark.slow]

StartServer = Callable[..., RunningServer]
KEY_VALUE = "sk-echoed-" + "4f1d9a7c3e5b8d2a6c0e"
HEADER_ENV, HEADER_VALUE = "JUDGEBIAS_TEST_ORG", "org-secret-73c1a9f05e2d"
AZURE_KEY = "c9f8e7d6c5b4a39281706f5e4d3c2b1a"  # 32 hex digits: also a valid variable name
EXPORT = (sys.executable, "-m", "judgebias.cache", "export")
GOOGLE_KEY = "AIzaSyD4-example9fQ2xK7mN3pL8vR1tW6yZ0bC"


def files_holding(root: Path, *values: str) -> list[str]:
    """Every file under `root` (hidden ones and the cache too) that holds any of `values`, or half of one."""
    halves = [value[: len(value) // 2].encode() for value in values]
    return [str(p) for p in root.rglob("*") if p.is_file() and any(h in p.read_bytes() for h in halves)]


def test_a_server_echoing_the_request_headers_in_its_replies_leaves_them_in_no_file(
    cli_here: InProcessCli, server: StartServer
) -> None:
    """The key and an extra header's value that a 200 reply quotes are in no verdict, cache entry, bundle or dump."""
    judge = server(policy="longer", api_key=KEY_VALUE, echo_headers=True)
    data = write_items(cli_here.tmp_path / "items.jsonl", pairs(4))
    env = {KEY_ENV: KEY_VALUE, HEADER_ENV: HEADER_VALUE}
    run = cli_here(
        *local(judge.url, "data=jsonl", f"data.path={data}", f"+judge.extra_headers.OpenAI-Organization={HEADER_ENV}"),
        "report=true",
        env=env,
    )
    assert 4 == run.code, run  # every reply an echo, none readable (exit 4): every file is written
    raws = [line["raw1"] for line in run.verdicts()]
    assert all("[redacted]" in raw and "request headers" in raw for raw in raws)  # the echo arrived, redacted
    exported = subprocess.run(
        [*EXPORT, "bundle.jsonl.gz", "--run", str(run.run_dir), "--cache-dir", str(cli_here.cache_dir)],
        cwd=cli_here.tmp_path,
        env=cli_here.env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert 0 == exported.returncode, exported.stderr
    plain = cli_here.tmp_path / "bundle.txt"
    plain.write_bytes(gzip.decompress((cli_here.tmp_path / "bundle.jsonl.gz").read_bytes()))
    assert [] == files_holding(cli_here.tmp_path, KEY_VALUE, HEADER_VALUE)
    assert KEY_VALUE[:10] not in run.stdout + run.stderr


@pytest.mark.parametrize("pasted", [AZURE_KEY, GOOGLE_KEY, "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0"])
def test_a_key_pasted_as_the_variable_name_is_refused_before_anything_is_printed_even_in_a_sweep(
    cli: Cli, pasted: str
) -> None:
    """judge.api_key_env=<a key> (also in a -m list) exits 2 in one line; no output and no file holds the key."""
    for sweep in (False, True):
        choice = f"OPENAI_API_KEY,{pasted}" if sweep else pasted
        args = [*(["-m"] if sweep else []), "judge=local", f"judge.api_key_env={choice}", f"cache.dir={cli.cache_dir}"]
        result = judgebias(cli, *args, f"hydra.{'sweep' if sweep else 'run'}.dir=out{int(sweep)}")
        assert 2 == result.returncode
        assert "" == result.stdout
        assert 1 == len(result.stderr.splitlines()) and "judge.api_key_env takes the NAME" in result.stderr
        assert pasted[:8] not in result.stderr
    assert [] == files_holding(cli.tmp_path, pasted)


def test_a_key_pasted_into_ones_own_yaml_is_refused_by_its_shape(cli: Cli) -> None:
    """An Azure-shaped key written as api_key_env in a --config-dir judge is refused and scrubbed from .hydra/."""
    mine = cli.tmp_path / "conf" / "judge"
    mine.mkdir(parents=True)
    (mine / "azure.yaml").write_text(
        f"defaults: [local]\nname: azure\napi_key_env: {AZURE_KEY}\nbase_url: http://127.0.0.1:9/v1\n", encoding="utf-8"
    )
    result = judgebias(cli, "--config-dir", "conf", "judge=azure", "hydra.run.dir=out", f"cache.dir={cli.cache_dir}")
    assert 2 == result.returncode, result.stderr
    assert "api_key_env takes the NAME" in result.stderr and AZURE_KEY[:8] not in result.stdout + result.stderr
    assert [] == files_holding(cli.tmp_path / "out", AZURE_KEY)


def test_a_password_typed_in_the_base_url_is_refused_unseen(cli: Cli) -> None:
    """judge.base_url=http://user:PASSWORD@host on the command line exits 2 in one line that does not show it."""
    password = "pw-" + secrets.token_hex(8)
    for sweep in (False, True):
        url = f"http://judge:{password}@127.0.0.1:9/v1"
        result = judgebias(cli, *(["-m"] if sweep else []), "judge=local", f"judge.base_url={url}")
        assert 2 == result.returncode
        assert "" == result.stdout and 1 == len(result.stderr.splitlines()), result.stderr
        assert "oc.env" in result.stderr and password not in result.stderr
    assert [] == files_holding(cli.tmp_path, password)


def test_a_password_in_a_base_url_from_the_environment_is_in_no_file_or_message(
    cli_here: InProcessCli, server: StartServer
) -> None:
    """A base_url with user:password@ read from an env var: the run works; summary, provenance, cache, errors hide it."""
    password = "pw-" + secrets.token_hex(8)
    judge = server(policy="longer", echo_headers=True)
    data = write_items(cli_here.tmp_path / "items.jsonl", pairs(3))
    url = judge.url.replace("http://", f"http://judge:{password}@")
    env = {"JUDGEBIAS_TEST_URL": url, KEY_ENV: KEY_VALUE}
    on = ("judge=local", "judge.base_url=${oc.env:JUDGEBIAS_TEST_URL}", f"judge.api_key_env={KEY_ENV}")
    ran = cli_here(*on, "data=jsonl", f"data.path={data}", "report=false", env=env)
    assert 4 == ran.code, ran  # every reply an echo, none readable (exit 4): every file is written
    assert "[redacted]@127.0.0.1" in json.dumps(json.loads((ran.run_dir / "provenance.json").read_text()))
    down = cli_here(
        *on,
        "data=jsonl",
        f"data.path={data}",
        "cache.mode=refresh",
        env={"JUDGEBIAS_TEST_URL": f"http://judge:{password}@127.0.0.1:{free_port()}/v1", KEY_ENV: KEY_VALUE},
    )
    assert 2 == down.code, down
    assert password not in down.stdout + down.stderr
    assert [] == files_holding(cli_here.tmp_path, password)


def test_key_shapes_are_told_from_variable_names() -> None:
    """Azure, Google, sk- and long random strings look like keys; upper-case names with underscores do not."""
    keys = [AZURE_KEY, GOOGLE_KEY, "sk-abcdefghijklmnop", "Xk29fLq0Zp7RbV3nTw8YcJ4m"]
    names = ["OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "JUDGEBIAS_RELIABILITY_KEY", "MyKey", "openrouter_key_2"]
    assert [True] * len(keys) == [looks_like_secret(key) for key in keys]
    assert [False] * len(names) == [looks_like_secret(name) for name in names]


def test_a_gateway_header_naming_the_key_is_redacted_in_the_replys_origin(monkeypatch: pytest.MonkeyPatch) -> None:
    """The origin a gateway's headers report (deployment, id, api base) never keeps a credential the run sends."""
    from judgebias.backends.openai import OpenAIJudge
    from judgebias.config.schema import JudgeConfig, RubricConfig

    key = "sk-" + secrets.token_hex(20)
    monkeypatch.setenv(KEY_ENV, key)
    judge = OpenAIJudge(
        JudgeConfig(backend="openai", name="g", model="m", base_url="http://127.0.0.1:9/v1", api_key_env=KEY_ENV),  # type: ignore[arg-type]
        RubricConfig(name="r", system="s", user="u"),
    )
    body = json.dumps({"choices": [{"message": {"content": "A"}, "finish_reason": "stop"}], "model": "m"})
    headers = {
        "x-litellm-model-name": "m",
        "x-litellm-model-id": f"id-{key}",
        "x-litellm-model-api-base": f"https://upstream.example/v1?api_key={key}",
    }

    reply = judge._read(body, headers, ("A", "B", "tie"))

    assert "m" == reply.deployment
    assert reply.api_base is not None and reply.deployment_id is not None
    assert key not in json.dumps(reply.to_json())
