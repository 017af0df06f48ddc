"""judgebias against a real model: Gemma 3 270M behind llama-cpp-python's server, judged through judge=llamacpp.

Small on purpose (two q1 items, one or a few generated tokens, temperature 0, seed 0) and one reply cache for the
group, so a test reuses what another paid for: the group runs in a few minutes on 2 busy cores. The model is a
small base model; what it prefers is not checked, only that every path works with it and that the figures are what
its own answers say. Counts are read from the server's own access log.
"""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judgebias.backends.openai import OpenAIJudge
from judgebias.core.prompt import render_messages, shown
from judgebias.engine.items import RunItems
from tests.helpers import Cli
from tests.realmodel.conftest import LlamaServer, installed
from tests.reliability.helpers import cached_replies, config_of, decisions, run_here, verdict_lines

pytestmark = pytest.mark.realmodel
VERDICTS = {"A", "B", "tie", "invalid"}


def judge(llama: LlamaServer, cache: Path | None, *more: str) -> list[str]:
    """Overrides for judge=llamacpp at the test server, on q1, quiet (the CLI fixture names its own cache)."""
    return [
        "judge=llamacpp",
        f"judge.port={llama.port}",
        "data=q1",
        *([f"cache.dir={cache}"] if cache is not None else []),
        "bootstrap.resamples=200",
        "report=false",
        "progress=off",
        "max_concurrency=2",
        *more,
    ]


def test_soft_verdicts_are_the_servers_own_first_token_distribution(
    llama: LlamaServer, shared_cache: Path, tmp_path: Path
) -> None:
    """The run's label probabilities are those the server gives the same prompt asked directly (all spellings).

    Within 0.02, not exactly: llama.cpp reuses the evaluated prefix of the previous prompt, and the same prompt
    evaluated after another one differs in the third decimal (0.5898 and 0.5942 measured here).
    """
    overrides = judge(llama, shared_cache, "data.limit=1", "judge.logprobs=true")
    run_here(tmp_path / "run", *overrides)
    (line,) = verdict_lines(tmp_path / "run")
    config = config_of(*overrides)
    (item,) = RunItems(config)
    rubric = config.rubric
    view = shown(item, 1, rubric.labels)
    prompt = OpenAIJudge(config.judge, rubric).prompt(
        render_messages(item, view, rubric.system, rubric.user, rubric.tie_label)
    )
    body = {"model": "gemma-3-270m", "prompt": prompt, "max_tokens": 1, "temperature": 0, "seed": 0, "logprobs": 5}
    answer = llama.post("/v1/completions", body)["choices"][0]
    top = answer["logprobs"]["top_logprobs"][0]
    expected = {
        label: sum(math.exp(lp) for token, lp in top.items() if token.strip().lower() == label.lower())
        for label in ("A", "B")
    }
    assert any(token.startswith(" ") for token in top)  # the label tokens carry their leading space
    for label, probability in expected.items():
        assert probability == pytest.approx(line["probs1"].get(label, 0.0), abs=0.02)
    assert answer["text"] == line["raw1"]


def test_a_rambling_continuation_is_read_from_its_first_token(
    llama: LlamaServer, shared_cache: Path, tmp_path: Path
) -> None:
    """With room for 3 tokens the model writes on after the label; the verdict is the label, the text kept whole
    (here ' A.' and a line break)."""
    run_here(tmp_path / "run", *judge(llama, shared_cache, "data.limit=1", "judge.max_tokens=3"))
    (line,) = verdict_lines(tmp_path / "run")
    for call, raw in ((line["call1"], line["raw1"]), (line["call2"], line["raw2"])):
        first = raw.split()[0].strip(".:,") if raw.split() else ""
        assert call == (first if first in ("A", "B") else "invalid"), raw


def test_an_answer_longer_than_the_context_fails_its_calls_and_a_token_cut_by_the_servers_tokenizer_fits(
    llama: LlamaServer, shared_cache: Path, tmp_path: Path
) -> None:
    """An answer beyond n_ctx fails only its item's calls, naming the fix; cut by the model's own tokens it is judged."""
    items = [json.loads(line) for line in (Path(__file__).parents[2] / "src/judgebias/datasets/q1.jsonl").open()][:2]
    items[1]["a"] = "This answer goes on and on. " * 100  # about 700 tokens: beyond the 512 of n_ctx
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    overrides = judge(llama, shared_cache, "data=jsonl", f"data.path={path}")
    run_here(tmp_path / "long", *overrides)
    short, long = verdict_lines(tmp_path / "long")
    assert {short["call1"], short["call2"]} <= VERDICTS
    assert ("error", "error") == (long["call1"], long["call2"])
    assert "data.normalize.truncate_tokens" in long["error1"]

    before = llama.requests()
    cut = run_here(tmp_path / "cut", *overrides, "data.normalize.truncate_tokens=60", "data.normalize.tokenizer=server")
    assert "server" == cut["normalization"]["tokenizer"]
    assert 4 == cut["calls_live"] + cut["calls_cached"] and 0 == cut["n_errors"]
    assert cut["calls_live"] == llama.requests() - before
    short_cut, long_cut = verdict_lines(tmp_path / "cut")
    assert short_cut["raw1"] == short["raw1"]  # its answers are shorter than the cut: the same prompt
    assert {long_cut["call1"], long_cut["call2"]} <= VERDICTS
    assert 60 == long_cut["tokens_a"]
    config = config_of(*overrides, "data.normalize.truncate_tokens=60", "data.normalize.tokenizer=server")
    tokens = llama.post("/extras/tokenize", {"input": list(RunItems(config))[1].a})["tokens"]
    assert 60 <= len(tokens) <= 62  # the model's own tokens (a BOS, and perhaps a seam tokenised anew)


def test_a_server_without_log_probabilities_stops_the_run_at_its_first_call(cli: Cli) -> None:
    """llama-cpp-python's server started with --logits_all false answers every request for log-probabilities with a
    500: the run asks once (the server's own log counts one request), stops in one line naming both fixes, and the
    same run without log-probabilities is judged by that server."""
    installed()
    server = LlamaServer(cli.tmp_path, "--logits_all", "false")
    server.start()
    try:
        overrides = (*judge(server, None, "data.limit=1"), "max_concurrency=1")
        refused = cli(*overrides, "judge.logprobs=true")
        assert 1 == server.requests()
        assert 0 != refused.code
        message = refused.stderr.strip()
        assert 1 == len(message.splitlines()) and "Traceback" not in message, message
        assert "--logits_all" in message and "judge.logprobs=false" in message, message
        judged = cli(*overrides)
        assert 0 == judged.code, judged
        (line,) = verdict_lines(judged.run_dir)
        assert {line["call1"], line["call2"]} <= VERDICTS
        assert 3 == server.requests()
    finally:
        server.stop()


def test_a_chat_template_that_drops_the_system_role_is_given_it_in_the_user_message(
    llama: LlamaServer, shared_cache: Path, tmp_path: Path
) -> None:
    """Gemma's template drops the system message; judge.system_role=false puts it before the question instead."""
    chat = ("judge.api=chat", "judge.max_tokens=1", "judge.logprobs=false", "data.limit=1")
    dropped = run_here(tmp_path / "dropped", *judge(llama, shared_cache, *chat))
    folded = run_here(tmp_path / "folded", *judge(llama, shared_cache, *chat, "judge.system_role=false"))
    assert folded["prompt_tokens"] > dropped["prompt_tokens"] + 40  # the system text now reaches the model
    for run in ("dropped", "folded"):
        (line,) = verdict_lines(tmp_path / run)
        assert {line["call1"], line["call2"]} <= VERDICTS
        assert isinstance(line["raw1"], str)


@pytest.mark.slow
def test_a_sweep_over_two_rubrics_judges_with_each(llama: LlamaServer, shared_cache: Path, cli: Cli) -> None:
    """`-m rubric=default,content_only` runs both jobs against the real model and writes the sweep table."""
    before = llama.requests()
    result = cli("-m", *judge(llama, None, "data.limit=1"), "rubric=default,content_only", f"cache.dir={shared_cache}")
    assert 0 == result.code, result
    summaries = [json.loads((result.run_dir / job / "summary.json").read_text()) for job in ("0", "1")]
    assert ["default", "content_only"] == [summary["rubric"] for summary in summaries]
    assert [2, 2] == [summary["calls_live"] + summary["calls_cached"] for summary in summaries]
    assert sum(summary["calls_live"] for summary in summaries) == llama.requests() - before
    assert (result.run_dir / "sweep_summary.csv").exists()


@pytest.mark.slow
def test_ctrl_c_keeps_every_reply_and_the_rerun_sends_only_the_rest(llama: LlamaServer, cli: Cli) -> None:
    """SIGINT after the model's first reply: exit 130, replies kept; the rerun asks the server for the rest only."""
    cue = "rubric.answer_cue=On balance the better answer is Answer"  # prompts no other test sends: all calls live
    overrides = judge(llama, None, "data.limit=2", "max_concurrency=1", cue)
    run_dir = cli.tmp_path / "stopped"
    command = [sys.executable, "-m", "judgebias.run", f"cache.dir={cli.cache_dir}", f"hydra.run.dir={run_dir}"]
    command += overrides
    before = llama.requests()
    process = subprocess.Popen(command, cwd=cli.tmp_path, env=cli.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    while llama.requests() - before < 1:
        assert process.poll() is None, "the run ended before it was interrupted"
        assert time.monotonic() < deadline, "the model answered nothing"
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=240)
    assert 130 == process.returncode, stderr
    kept = len(cached_replies(cli.cache_dir))
    answered = llama.requests() - before
    assert 1 <= kept == answered < 4
    rerun = run_here(cli.tmp_path / "rerun", *overrides, f"cache.dir={cli.cache_dir}")  # the CLI is not the point here
    assert 4 - kept == rerun["calls_live"] == llama.requests() - before - answered


def test_every_item_is_judged_twice_then_rerun_free_and_from_the_cache_alone(
    llama: LlamaServer, shared_cache: Path, tmp_path: Path
) -> None:
    """2 items, 4 calls, each sent once, every reply kept and read; a rerun sends none; cache.mode=only works with
    the server off."""
    overrides = judge(llama, shared_cache, "data.limit=2", "judge.logprobs=true")
    before = llama.requests()
    summary = run_here(tmp_path / "first", *overrides)
    assert summary["calls_live"] == llama.requests() - before
    assert 4 == summary["calls_live"] + summary["calls_cached"]
    lines = verdict_lines(tmp_path / "first")
    assert 2 == len(lines)
    for line in lines:
        assert {line["call1"], line["call2"]} <= VERDICTS
        assert isinstance(line["raw1"], str) and isinstance(line["raw2"], str)  # the text kept, read or not
        assert line["probs1"] and line["probs2"]  # the real first-token distribution
        assert 0.0 <= line["soft"] <= 1.0
    assert summary["position_consistency"] is not None
    assert summary["n_invalid"] == sum((line["call1"] == "invalid") + (line["call2"] == "invalid") for line in lines)

    sent = llama.requests()
    again = run_here(tmp_path / "again", *overrides)
    assert sent == llama.requests()
    assert (0, 4) == (again["calls_live"], again["calls_cached"])
    assert decisions(tmp_path / "first") == decisions(tmp_path / "again")

    llama.stop()  # left stopped: the next test that asks for the server starts it (this is the last one in the file)
    offline = run_here(tmp_path / "offline", *overrides, "cache.mode=only")
    assert 4 == offline["calls_cached"]
    assert decisions(tmp_path / "first") == decisions(tmp_path / "offline")
