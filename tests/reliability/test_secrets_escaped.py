"""A server that echoes the request's key back in JSON-escaped forms (`\\/` as PHP writes it, `\\u003d`, every
character `\\uXXXX`) leaves it in no file of the run: redaction matches the key in every escaped form in the raw
body, before anything is decoded, cached or written. A key in a base URL's query string is refused on the command
line and redacted when it comes through an environment variable."""

from __future__ import annotations

import json
from typing import Any

import pytest

from judgebias.cache.__main__ import main as cache_main
from tests.helpers import InProcessCli, JsonHandler, serving

pytestmark = pytest.mark.reliability

KEY = "sk-proj/Abc=Def+0123456789abcdef/xyz="  # a key with the characters JSON writers escape


def escaped(text: str, style: str) -> str:
    """`text` as a JSON writer of `style` puts it inside a string."""
    if style == "php":
        return text.replace("/", "\\/")
    if style == "equals":
        return text.replace("=", "\\u003d").replace("+", "\\u002B")
    return "".join(f"\\u{ord(char):04x}" for char in text)


def echoing(style: str) -> type[JsonHandler]:
    """A judge that answers A and echoes the Authorization header it received, escaped in `style`."""

    class Echo(JsonHandler):
        def do_POST(self) -> None:
            self.request_body()
            sent = escaped(self.headers.get("Authorization", ""), style)
            content = f"A (received {sent})"
            body = (
                '{"id": "x", "object": "chat.completion", "model": "m", "system_fingerprint": "' + sent + '", '
                '"choices": [{"index": 0, "message": {"role": "assistant", "content": "' + content + '"}, '
                '"finish_reason": "stop"}], "usage": {"prompt_tokens": 5, "completion_tokens": 1}}'
            ).encode()
            self.send_json_bytes(200, body)

    return Echo


def everything_written(cli_here: InProcessCli, result: Any, tmp_path: Any) -> str:
    """Every file the run wrote, its cache and a bundle exported from it, as one text."""
    bundle = tmp_path / "bundle.jsonl.gz"
    assert 0 == cache_main(["export", str(bundle), "--cache-dir", str(cli_here.cache_dir)])
    import gzip

    texts = [gzip.decompress(bundle.read_bytes()).decode("utf-8", "replace")]
    for folder in (result.run_dir, cli_here.cache_dir):
        texts += [path.read_bytes().decode("utf-8", "replace") for path in folder.rglob("*") if path.is_file()]
    return "\n".join(texts)


@pytest.mark.parametrize("style", ["php", "equals", "every-character"])
def test_a_key_echoed_in_an_escaped_form_reaches_no_file(cli_here: InProcessCli, tmp_path: Any, style: str) -> None:
    """verdicts.jsonl, summary.json, the cache and an exported bundle hold no form of the key; the reply is read."""
    with serving(echoing(style)) as url:
        result = cli_here(
            "judge=local",
            f"judge.base_url={url}",
            "judge.api_key_env=JUDGE_KEY",
            "data.limit=3",
            env={"JUDGE_KEY": KEY},
        )
    assert 4 == result.code, result  # every reply an echo, none readable (exit 4): every file is written
    assert "[redacted]" in result.verdicts()[0]["raw1"]
    written = everything_written(cli_here, result, tmp_path)
    for form in (KEY, escaped(KEY, style), json.dumps(KEY)[1:-1], KEY.replace("/", "\\/")):
        assert form not in written, form


def test_a_key_in_a_base_urls_query_is_refused_on_the_command_line(cli_here: InProcessCli) -> None:
    """judge.base_url=...?key=AIza... typed on the command line: one line, the key not repeated, nothing saved."""
    google = "AIzaSyD" + "x1Y2z3" * 6
    result = cli_here("judge=local", f"judge.base_url=http://127.0.0.1:9/v1?key={google}")
    assert 2 == result.code and "query string" in result.stderr and google not in result.stderr
    assert not result.run_dir.exists()


def test_a_key_in_a_base_url_from_the_environment_is_redacted(cli_here: InProcessCli) -> None:
    """The same URL through ${oc.env:...}: the error line, summary.json and the saved config hold no key."""
    google = "AIzaSyD" + "q9W8e7" * 6
    result = cli_here(
        "judge=local", "judge.base_url=${oc.env:JUDGE_URL}", "judge.max_retries=0", "data.limit=2",
        env={"JUDGE_URL": f"http://127.0.0.1:9/v1?key={google}"},
    )  # fmt: skip
    assert 2 == result.code
    texts = [result.stdout, result.stderr]
    texts += [path.read_text(encoding="utf-8") for path in result.run_dir.rglob("*") if path.is_file()]
    assert google not in "\n".join(texts)
