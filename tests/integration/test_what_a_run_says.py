"""What a run says when its figures need reading: a judge that answered nothing readable (its own exit code, no
blame on the rubric), a kappa of 0 beside a high agreement (why), and judge.samples' figures printed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

from judgebias.cli.ending import EXIT_NOTHING_READABLE
from tests.helpers import InProcessCli, JsonHandler, serving, write_items


class Mumbles(JsonHandler):
    """A judge that answers every request, never with a verdict."""

    received: ClassVar[list[int]] = []

    def do_POST(self) -> None:
        body = json.loads(self.request_body())
        self.received.append(1)
        choice = {"index": 0, "message": {"role": "assistant", "content": "Both have merit."}, "finish_reason": "stop"}
        self.send_json(200, {"model": body["model"], "choices": [choice], "usage": {"prompt_tokens": 1}})


def test_a_judge_that_answered_nothing_readable_ends_with_its_own_code(cli_here: InProcessCli, tmp_path: Path) -> None:
    items = [{"id": str(n), "question": "q", "a": "x", "b": f"y{n}", "human": "a"} for n in range(6)]
    path = write_items(tmp_path / "pairs.jsonl", items)
    judge = type("Judge", (Mumbles,), {"received": []})
    with serving(judge) as url:
        result = cli_here(
            "data=jsonl", f"data.path={path}", "judge=local", f"judge.base_url={url}", "judge.api_key_env=null"
        )
    assert len(judge.received) == 12  # every call answered: nothing failed
    assert result.code == EXIT_NOTHING_READABLE == 4
    assert "judgebias: the judge answered nothing readable: none of its 12 replies" in result.stderr
    summary = result.summary()
    assert summary["status"] == "unreadable"
    assert "rubric is not good enough" not in result.stdout
    assert "the judge answered nothing readable" in summary["agreement_message"]
    assert (result.run_dir / "verdicts.jsonl").exists()


def test_a_kappa_of_zero_beside_high_agreement_is_explained(cli_here: InProcessCli, tmp_path: Path) -> None:
    # People always prefer a; the noisy judge mostly says a: high agreement, and chance alone agrees as often.
    items = [{"id": str(n), "question": f"q{n}", "a": f"good {n}", "b": f"bad {n}", "human": "a"} for n in range(20)]
    result = cli_here("data=jsonl", f"data.path={write_items(tmp_path / 'pairs.jsonl', items)}", "report=false")
    assert result.code == 0, result
    summary = result.summary()
    assert summary["human_agreement"] >= 0.6 and abs(summary["cohen_kappa"]) < 0.05
    assert "chance alone agrees that often" in summary["cohen_kappa_note"]
    assert summary["cohen_kappa_note"] in result.stdout


def test_the_samples_figures_are_printed(cli_here: InProcessCli) -> None:
    result = cli_here("judge.samples=3", "data.limit=8", "report=false")
    assert result.code == 0, result
    summary = result.summary()
    assert (
        f"samples: 3 per order   stability: order 1 {100 * summary['repetition_stability_order1']:.1f}%"
        in result.stdout
    )
    assert f"majority of samples: win_rate {100 * summary['majority_win_rate']:.1f}%" in result.stdout
