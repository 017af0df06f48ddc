"""The headline names the models: "bot-v2 vs bot-v1: bot-v2 wins 75.0% ...", from either side, and reporting the
other side sends no call (the server's own count). The judge is a server that prefers the answer holding GOOD, so
the expected figures are counted by hand from the items."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

from tests.helpers import InProcessCli, JsonHandler, serving, write_items

# b holds GOOD on 3 of 4 items: b wins 3 of 4 (75%), a 1 of 4 (25%); both orders agree on every item.
ITEMS = [
    {"id": "1", "question": "q1", "a": "plain", "b": "GOOD", "model_a": "bot-v1", "model_b": "bot-v2"},
    {"id": "2", "question": "q2", "a": "plain", "b": "GOOD", "model_a": "bot-v1", "model_b": "bot-v2"},
    {"id": "3", "question": "q3", "a": "GOOD", "b": "plain", "model_a": "bot-v1", "model_b": "bot-v2"},
    {"id": "4", "question": "q4", "a": "plain", "b": "GOOD", "model_a": "bot-v1", "model_b": "bot-v2"},
]


class PrefersGood(JsonHandler):
    """A judge that answers A when the answer shown first holds GOOD, else B; it counts what it received."""

    received: ClassVar[list[int]] = []

    def do_POST(self) -> None:
        body = json.loads(self.request_body())
        self.received.append(1)
        prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
        second = prompt.index("[The Start of Answer B")
        label = "A" if "GOOD" in prompt[:second] else "B"
        choice = {"index": 0, "message": {"role": "assistant", "content": label}, "finish_reason": "stop"}
        self.send_json(200, {"model": body["model"], "choices": [choice], "usage": {"prompt_tokens": 1}})


def _judge(url: str) -> tuple[str, ...]:
    return ("judge=local", f"judge.base_url={url}", "judge.api_key_env=null", "report=false")


def test_the_other_side_is_reported_without_a_call(cli_here: InProcessCli, tmp_path: Path) -> None:
    path = write_items(tmp_path / "pairs.jsonl", ITEMS)
    judge = type("Judge", (PrefersGood,), {"received": []})
    with serving(judge) as url:
        first = cli_here("data=jsonl", f"data.path={path}", *_judge(url))
        assert first.code == 0, first
        assert len(judge.received) == 8
        other = cli_here("data=jsonl", f"data.path={path}", "side=b", *_judge(url))
        assert other.code == 0, other
        assert len(judge.received) == 8  # the server saw nothing more: b's side is a reading of the same calls
    assert "bot-v1 vs bot-v2: bot-v1 wins 25.0%" in first.stdout
    assert "bot-v2 vs bot-v1: bot-v2 wins 75.0%" in other.stdout
    said = other.summary()["headline"]
    assert (said["side"], said["name"], said["other"], said["win_rate"]) == ("b", "bot-v2", "bot-v1", 0.75)
    low, high = first.summary()["ci"]["win_rate"]
    assert said["ci"] == [1 - high, 1 - low]
    assert other.summary()["win_rate"] == 0.25  # the summary's figures stay a's: the contract is unchanged
    assert other.summary()["calls_cached"] == 8


def test_names_given_in_the_config_and_the_gate_reads_the_side(cli_here: InProcessCli, tmp_path: Path) -> None:
    path = write_items(
        tmp_path / "pairs.jsonl", [{k: v for k, v in i.items() if not k.startswith("model")} for i in ITEMS]
    )
    judge = type("Judge", (PrefersGood,), {"received": []})
    with serving(judge) as url:
        plain = cli_here("data=jsonl", f"data.path={path}", *_judge(url))
        named = cli_here(
            "data=jsonl", f"data.path={path}", "side=b", "data.names.a=old", "data.names.b=new", *_judge(url)
        )
    assert plain.summary()["headline"]["text"].startswith("a vs b: a wins 25.0%")
    assert " vs " not in plain.stdout  # no names to say: the console's win_rate line is the headline
    assert "new vs old: new wins 75.0%" in named.stdout

    def gate(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "judgebias.check", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)

    passed = gate(str(named.run_dir), "--min-win-rate", "0.7")
    assert passed.returncode == 0, passed.stderr
    assert "new vs old: new wins 75.0%" in passed.stdout
    assert gate(str(plain.run_dir), "--min-win-rate", "0.7").returncode == 1  # a's side: 25%
    # On the interval's lower bound: four items cannot show 70% beyond the noise.
    low = named.summary()["headline"]["ci"][0]
    assert low < 0.7
    bounded = gate(str(named.run_dir), "--min-win-rate", "0.7", "--on", "lower")
    assert bounded.returncode == 1
    assert re.search(r"lower bound of win_rate of new = 0\.\d{3}, needs win_rate >= 0\.7", bounded.stdout)
    assert gate(str(named.run_dir), "--min-win-rate", f"{low:.3f}", "--on", "lower").returncode == 0


def test_the_sweep_table_names_the_models(cli_here: InProcessCli, tmp_path: Path) -> None:
    path = write_items(tmp_path / "pairs.jsonl", ITEMS)
    judge = type("Judge", (PrefersGood,), {"received": []})
    with serving(judge) as url:
        sweep = cli_here("-m", "data=jsonl", f"data.path={path}", "side=a,b", *_judge(url))
    assert sweep.code == 0, sweep
    with (sweep.run_dir / "sweep_summary.csv").open(encoding="utf-8", newline="") as file:
        rows = list(csv.DictReader(file))
    assert [row["models"] for row in rows] == ["bot-v1 vs bot-v2", "bot-v2 vs bot-v1"]
    assert [float(row["win_rate"]) for row in rows] == [0.25, 0.75]
