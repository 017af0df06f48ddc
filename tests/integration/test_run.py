"""The runner end to end: `python -m judgebias.run` as a subprocess, the real openai SDK over HTTP to 127.0.0.1."""

from __future__ import annotations

import json

import pytest

from tests.helpers import write_items
from tests.integration.helpers import KEY, local

pytestmark = pytest.mark.slow

FIELDS = {"id", "verdict", "call1", "call2", "consistent", "raw1", "raw2", "cached1", "cached2"}
SUMMARY = {
    "n_items", "win_rate", "position_consistency", "wins", "losses", "ties", "biased_first", "biased_second",
    "n_invalid", "calls_total", "calls_cached", "calls_live", "prompt_tokens", "completion_tokens", "judge",
    "rubric", "data", "human_agreement", "human_agreement_n",
}  # fmt: skip


def test_default_run_is_offline_and_complete(cli_here):
    """With no arguments the run judges the embedded q1 offline and writes verdicts and summary."""
    result = cli_here()
    assert 0 == result.code, result
    summary = result.summary()
    verdicts = result.verdicts()
    assert SUMMARY <= set(summary)
    assert summary["n_items"] == len(verdicts) >= 30
    assert 2 * summary["n_items"] == summary["calls_total"]
    assert all(FIELDS <= set(line) for line in verdicts)
    assert "calls_offline: 96" in result.stdout and "win_rate:" in result.stdout


def test_two_requests_per_item_then_a_free_rerun(cli_here, server):
    """Exactly two requests per item reach the endpoint; the rerun sends none and reproduces every figure."""
    judge = server(policy="hash", first_bias=0.3)
    first = cli_here(*local(judge.url, "data.limit=12"), env=KEY)
    assert 0 == first.code, first
    assert 24 == judge.stats()["requests"]
    assert 24 == first.summary()["calls_live"]
    second = cli_here(*local(judge.url, "data.limit=12"), env=KEY)
    assert 0 == second.code, second
    assert 24 == judge.stats()["requests"]
    assert "calls_live: 0" in second.stdout
    assert [v | {"cached1": True, "cached2": True} for v in first.verdicts()] == second.verdicts()
    figures = ("win_rate", "position_consistency", "biased_first", "biased_second", "human_agreement", "ci")
    assert {k: first.summary()[k] for k in figures} == {k: second.summary()[k] for k in figures}


def test_orders_are_positional_and_untranslated(cli_here, server, tmp_path):
    """call1 shows a first and call2 shows b first; call2 "A" means the judge picked b."""
    judge = server(policy="longer")
    data = write_items(tmp_path / "d.jsonl", [{"id": "x", "question": "Q", "a": "short", "b": "a much longer answer"}])
    result = cli_here(*local(judge.url, "data=jsonl", f"data.path={data}"), env=KEY)
    assert 0 == result.code, result
    (line,) = result.verdicts()
    assert ("B", "A", "2", True) == (line["call1"], line["call2"], line["verdict"], line["consistent"])


def test_retries_429_and_500_to_the_same_verdicts(cli_here, server):
    """429 with Retry-After and 500 are retried and the run ends with the same verdicts as a clean run."""
    clean = server(policy="hash", first_bias=0.3)
    flaky = server(policy="hash", first_bias=0.3, p429=0.3, p500=0.2, fault_seed=7)
    calm = cli_here(*local(clean.url, "data.limit=10"), env=KEY)
    stormy = cli_here(*local(flaky.url, "data.limit=10", "cache.dir=" + str(cli_here.tmp_path / "other")), env=KEY)
    assert (0, 0) == (calm.code, stormy.code), stormy
    stats = flaky.stats()
    assert stats["by_status"].get("429", 0) + stats["by_status"].get("500", 0) > 0
    assert 20 == stats["completions_ok"]
    assert [v["verdict"] for v in calm.verdicts()] == [v["verdict"] for v in stormy.verdicts()]


def test_missing_key_stops_before_any_call(cli_here, server):
    """An OpenAI judge whose key variable is unset stops before any request, naming the variable and judge."""
    judge = server()
    result = cli_here(*local(judge.url))
    assert 2 == result.code
    assert "LOCAL_JUDGE_KEY" in result.stderr and "'local'" in result.stderr
    assert "Traceback" not in result.stderr
    assert 0 == judge.stats()["requests"]


def test_bad_data_names_file_line_and_field(cli_here, server, tmp_path):
    """A bad dataset line is refused with file, line and field before any call, leaving no verdicts behind."""
    judge = server()
    lines = [{"id": "1", "question": "Q", "a": "x", "b": "y"}, {"id": "2", "question": "Q", "a": 5, "b": "y"}]
    data = write_items(tmp_path / "bad.jsonl", lines)
    result = cli_here(*local(judge.url, "data=jsonl", f"data.path={data}"), env=KEY)
    assert 2 == result.code
    assert f"{data}:2: field 'a'" in result.stderr
    assert 0 == judge.stats()["requests"]
    assert not (result.run_dir / "verdicts.jsonl").exists()


def test_multirun_jobs_share_one_cache(cli_here, server):
    """A multirun gives one folder per cell; the second sweep over the same cells is served from the shared cache."""
    judge = server(policy="hash")
    sweep = ["-m", *local(judge.url, "data.limit=4"), "rubric=default,content_only", "judge.temperature=0.0,0.5"]
    first = cli_here(*sweep, env=KEY)
    assert 0 == first.code, first
    summaries = sorted(first.run_dir.glob("*/summary.json"))
    assert 4 == len(summaries)
    assert 4 * 4 * 2 == judge.stats()["requests"]
    again = cli_here(*sweep, env=KEY)
    assert 0 == again.code, again
    assert 32 == judge.stats()["requests"]
    assert all(json.loads(p.read_text())["calls_live"] == 0 for p in again.run_dir.glob("*/summary.json"))


def test_unknown_judge_option_is_a_clear_error(cli_here):
    """Choosing a judge that does not exist lists the available options instead of a traceback."""
    result = cli_here("judge=gpt9")
    assert 0 != result.code
    assert "gpt4o" in result.stderr and "Traceback" not in result.stderr


def test_key_typed_as_env_var_name_is_refused_and_scrubbed(cli_here, server):
    """A key pasted into judge.api_key_env is refused without echoing it, before Hydra saves any config dump."""
    judge = server()
    canary = "sk-canary-0123456789abcdef"
    result = cli_here(*local(judge.url), f"judge.api_key_env={canary}")
    assert 2 == result.code
    assert "NAME of an environment variable" in result.stderr
    assert canary not in result.stdout + result.stderr
    assert not result.run_dir.exists()  # refused before Hydra made the folder and wrote .hydra/ into it
    assert 0 == judge.stats()["requests"]
