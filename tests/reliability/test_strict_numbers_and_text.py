"""Strict numbers and text: NaN and infinities refused at configuration, linear parsers, \\n-only JSONL lines,
spreadsheet-safe CSV cells, and a server's control characters shown escaped."""

from __future__ import annotations

import csv
import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from judgebias.backends.openai_batch import read_results
from judgebias.core.errors import UserError
from judgebias.core.parsing import parse_reply
from judgebias.devserver.server import RunningServer
from tests.helpers import Cli, JsonHandler, serving, write_items
from tests.reliability.helpers import KEY, local, pairs, run_here

pytestmark = pytest.mark.reliability

StartServer = Callable[..., RunningServer]


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("agreement_threshold=nan", "agreement_threshold=nan is not a number a run can use"),
        ("judge.temperature=inf", "judge.temperature=inf is not a number a run can use"),
        ("judge.top_p=-inf", "judge.top_p=-inf is not a number a run can use"),
        ("judge.requests_per_minute=1e-9", "judge.requests_per_minute=1e-09 must be at least 0.000694 (one a day)"),
        ("bootstrap.resamples=10000000", "bootstrap.resamples=10000000 must be from 0 to 100,000"),
    ],
)
def test_settings_no_run_can_use_are_refused_before_any_call(
    server: StartServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str, message: str
) -> None:
    """A NaN or infinite setting, a quota of one request in millennia or ten million bootstrap resamples is one
    UserError naming it, at once: no request is sent (so nothing is retried) and no summary is written."""
    monkeypatch.setenv(*next(iter(KEY.items())))
    judge = server(policy="longer")
    data = write_items(tmp_path / "items.jsonl", pairs(2))
    start = time.monotonic()
    with pytest.raises(UserError, match=re.escape(message)):
        run_here(tmp_path / "run", *local(judge.url, "data=jsonl", f"data.path={data}", setting))
    assert time.monotonic() - start < 30 and 0 == judge.stats()["requests"]
    assert not (tmp_path / "run" / "summary.json").exists()


@pytest.mark.parametrize("style", ["llmbar", "arenahard", "label"])
def test_a_reply_of_many_newlines_is_read_in_linear_time(style: str) -> None:
    """20,000 newlines then a verdict parse in well under a second (a quadratic regex took 5-6 s)."""
    start = time.perf_counter()
    parse_reply("\n" * 20_000 + "Output (a) is better.\n[[A>B]]\nA", style=style)
    assert time.perf_counter() - start < 1.0


def test_a_batch_output_line_holding_u2028_is_one_line() -> None:
    """A reply containing U+2028 (JSON keeps it unescaped) stays one batch line: lines split at \\n only."""
    reply = {"choices": [{"message": {"content": "A\u2028B is the better one"}, "finish_reason": "stop"}]}
    record = {"custom_id": "jb-1", "response": {"status_code": 200, "body": reply}, "error": None}
    text = json.dumps(record, ensure_ascii=False) + "\n"
    assert "\u2028" in text
    [line] = read_results(text, "out.jsonl")
    assert line.body is not None and "A\u2028B" in line.body["choices"][0]["message"]["content"]


def test_model_names_that_a_spreadsheet_would_run_are_escaped_in_ratings_csv(tmp_path: Path) -> None:
    """Model names such as =HYPERLINK(...) or @SUM(...) are written to ratings.csv as text, not as formulas."""
    hostile = ['=HYPERLINK("http://example.invalid","x")', "@SUM(1+1)", "+cmd", "-2+3"]
    items = [{**item, "model_a": hostile[i % 4], "model_b": hostile[(i + 1) % 4]} for i, item in enumerate(pairs(16))]
    data = write_items(tmp_path / "items.jsonl", items)
    run_here(tmp_path / "run", "judge=longer", "data=jsonl", f"data.path={data}", "report=false", "progress=off")
    with (tmp_path / "run" / "ratings.csv").open(newline="", encoding="utf-8") as file:
        models = [row["model"] for row in csv.DictReader(file)]
    assert sorted("'" + name for name in hostile) == sorted(models)


class ColouringHandler(JsonHandler):
    """A server whose refusals carry terminal escape sequences and a carriage return that fakes a line."""

    def do_POST(self) -> None:
        self.request_body()
        message = "\x1b[2J\x1b[31mbad key\x1b[0m\rjudgebias: all calls succeeded\x07"
        self.send_json(401, {"error": {"message": message, "type": "invalid_request_error", "code": None}})


@pytest.fixture
def colouring() -> Iterator[str]:
    """A ColouringHandler server on 127.0.0.1; its /v1 URL."""
    with serving(ColouringHandler) as url:
        yield url


@pytest.mark.slow
def test_a_servers_control_characters_reach_the_terminal_escaped(cli: Cli, colouring: str) -> None:
    """An error text with ESC, CR and BEL is printed with them escaped: visible, and acting on nothing."""
    result = cli(*local(colouring, "data.limit=2"), env=KEY)
    assert 2 == result.code, result
    assert not any(char in result.stderr for char in "\x1b\r\x07")
    assert "HTTP 401 \\x1b[2J\\x1b[31mbad key\\x1b[0m" in result.stderr
