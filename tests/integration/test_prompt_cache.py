"""Shared prompt prefixes paid once: every shipped rubric puts what an item's two orders share first, the two calls go
out back to back (and items of one context after the first of them is answered), the cached tokens a server reports
are read in each provider's usage shape and priced at the cached rate, and the spending cap never counts on it.

The expected values come from outside the code under test: the prompt text itself (where the question ends), and
the devserver's own count of what it served from its prefix cache and what it billed (GET /stats `billing`)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from judgebias.core.item import Item
from judgebias.core.prefix import layout_note, layout_share, prompt_text, shared_prefix
from judgebias.core.prompt import render_messages, shown
from judgebias.devserver.server import RunningServer, ServerOptions, start_server
from tests.helpers import REPO, write_items
from tests.reliability.helpers import KEY, KEY_ENV, local, run_here

pytestmark = pytest.mark.slow

RUBRICS = sorted((REPO / "src" / "judgebias" / "conf" / "rubric").glob("*.yaml"))
PRICES = {"price_input": 2.5, "price_cached": 1.25, "price_output": 10.0}
JUDGE_PRICES = (
    "judge.price_input_per_mtok=2.5",
    "judge.price_cached_input_per_mtok=1.25",
    "judge.price_output_per_mtok=10",
)
ANSWERS_FIRST = {
    "name": "answers_first",
    "system": "You are a judge. Reply with exactly one of: {label_first}, {label_second}, or {tie_label}.",
    "user": "{first}\n\n{second}\n\n{context}[Question]\n{question}\n\nWhich answer is better?",
}


def rag_items(documents: int, questions: int, words: int = 1500) -> list[dict[str, Any]]:
    """Items judged against a long shared document (a RAG evaluation's): `questions` short ones per document."""
    vocabulary = ["the", "river", "council", "budget", "school", "water", "road", "park", "library", "tax", "vote"]
    items = []
    for d in range(documents):
        document = " ".join(vocabulary[(d * 7 + k * k) % len(vocabulary)] for k in range(words))
        for q in range(questions):
            items.append({
                "id": f"doc{d}-q{q}",
                "context": document,
                "question": f"Question {q}: what does document {d} say about item {q}?",
                "a": f"It says the budget grew {'a lot ' * (q + 1)}",
                "b": f"It says the council voted {'twice ' * (3 - q % 3)}",
                "human": "1",
            })  # fmt: skip
    return items


@pytest.fixture
def billing(request: pytest.FixtureRequest) -> Iterator[RunningServer]:
    """A devserver that caches prefixes as OpenAI does and keeps its own bill; options from the test's param."""
    options = {"policy": "hash", "prefix_cache": True, "latency": 0.02, **PRICES, **getattr(request, "param", {})}
    with start_server(ServerOptions(**options)) as server:
        yield server


@pytest.mark.parametrize("path", RUBRICS, ids=[path.stem for path in RUBRICS])
def test_every_shipped_rubric_puts_what_both_orders_share_first(path: Path) -> None:
    """Rendered in both orders for an item with a 1,500-word context, the two prompts are the same text up to the end
    of the question (located in the prompt itself), so a prefix cache can serve all of it to the second call; the
    run says nothing of the layout."""
    rubric = yaml.safe_load(path.read_text(encoding="utf-8"))
    labels, tie = rubric.get("labels", "letters"), rubric.get("tie_label", "tie")
    (item_fields,) = rag_items(1, 1)
    item = Item(item_fields["id"], item_fields["question"], item_fields["a"], item_fields["b"],
                extra={"context": item_fields["context"]})  # fmt: skip
    first, second = (
        prompt_text(render_messages(item, shown(item, order, labels), rubric["system"], rubric["user"], tie))
        for order in (1, 2)
    )
    question_ends = second.index(item.question) + len(item.question)
    assert shared_prefix(first, second) >= question_ends
    assert item_fields["context"] in second[:question_ends]
    share = layout_share(rubric["system"], rubric["user"], labels, tie)
    print(f"\n{path.stem}: {100 * shared_prefix(first, second) / len(second):.0f}% shared with a long context, "
          f"{100 * share:.0f}% on a typical item")  # fmt: skip
    assert layout_note(rubric["name"], share) is None


def test_a_rubric_that_shows_an_answer_first_is_told_at_the_start(tmp_path: Path, billing: RunningServer) -> None:
    """A user's rubric with the answers before the question: the run's first lines say how little its two orders
    share, and the server's own count shows its cache served nothing."""
    (tmp_path / "conf" / "rubric").mkdir(parents=True)
    (tmp_path / "conf" / "rubric" / "answers_first.yaml").write_text(yaml.safe_dump(ANSWERS_FIRST), encoding="utf-8")
    data = write_items(tmp_path / "rag.jsonl", rag_items(1, 3))
    command = [sys.executable, "-m", "judgebias.run", "--config-dir", str(tmp_path / "conf"), "rubric=answers_first",
               *local(billing.url, "data=jsonl", f"data.path={data}", f"cache.dir={tmp_path / 'cache'}",
                      f"hydra.run.dir={tmp_path / 'run'}")]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=120)
    assert 0 == done.returncode, done.stderr
    note = next(line for line in done.stdout.splitlines() if line.startswith("note: rubric 'answers_first'"))
    assert "share only" in note and "{context} and {question} before {first} and {second}" in note
    assert 0 == billing.stats()["billing"]["cached_tokens"]


@pytest.mark.parametrize(
    "billing", [{"cached_usage": shape} for shape in ("openai", "anthropic", "deepseek")], indirect=True,
    ids=["openai", "anthropic", "deepseek"],
)  # fmt: skip
def test_cached_tokens_are_read_in_each_usage_shape_and_priced_as_billed(
    tmp_path: Path, billing: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OpenAI's `prompt_tokens_details.cached_tokens`, Anthropic's `cache_read_input_tokens`, DeepSeek's
    `prompt_cache_hit_tokens`: the run's cached tokens are the server's own count, and its cost_usd the server's own
    bill at the cached rate; prompt_cache_saved_usd is the difference from full price."""
    monkeypatch.setenv(KEY_ENV, KEY[KEY_ENV])
    data = write_items(tmp_path / "rag.jsonl", rag_items(2, 3))
    summary = run_here(tmp_path / "run", *local(billing.url, "data=jsonl", f"data.path={data}",
                                                f"cache.dir={tmp_path / 'cache'}", *JUDGE_PRICES))  # fmt: skip
    bill = billing.stats()["billing"]
    assert bill["cached_tokens"] > 0.5 * bill["prompt_tokens"]
    assert (summary["prompt_tokens"], summary["prompt_tokens_cached"]) == (bill["prompt_tokens"], bill["cached_tokens"])
    assert summary["cost_usd"] == pytest.approx(bill["billed_usd"], abs=1e-9)
    full = (bill["prompt_tokens"] * 2.5 + bill["completion_tokens"] * 10.0) / 1e6
    assert summary["prompt_cache_saved_usd"] == pytest.approx(full - bill["billed_usd"], abs=1e-9)


def test_an_items_two_orders_go_back_to_back_so_the_second_is_served_from_the_cache(
    tmp_path: Path, billing: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eight workers on 3 documents x 4 questions: with the orders sent together (and an item of a context sent
    after that context's first call is answered), the server served most prompt tokens from its cache; each call
    on its own, far fewer (a prompt still being read serves nothing to one sent at the same time)."""
    monkeypatch.setenv(KEY_ENV, KEY[KEY_ENV])
    data = write_items(tmp_path / "rag.jsonl", rag_items(3, 4))
    shares = {}
    for together in (True, False):
        billing.reset()
        run_here(tmp_path / f"run-{together}", *local(billing.url, "data=jsonl", f"data.path={data}",
                 f"cache.dir={tmp_path / f'cache-{together}'}", "max_concurrency=8",
                 f"judge.orders_together={str(together).lower()}"))  # fmt: skip
        bill = billing.stats()["billing"]
        assert 24 == bill["requests"]
        shares[together] = bill["cached_tokens"] / bill["prompt_tokens"]
    print(f"\nshare of prompt tokens served from the cache: together {shares[True]:.2f}, alone {shares[False]:.2f}")
    assert shares[True] >= 0.8 and shares[False] < shares[True] - 0.2


@pytest.mark.parametrize("billing", [{"bill_cached_in_full": True, "price_input": 100.0}], indirect=True)
def test_the_cap_holds_against_a_server_that_reports_cached_tokens_but_bills_them_in_full(
    tmp_path: Path, billing: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """max_cost_usd=8 at $100 per million prompt tokens (cached: $1.25) on 60 items of one document: the server
    reports most prompt tokens as cached and bills them in full. Its own bill stays within the cap, and the run
    stops with status budget, its own cost_usd (at the cached rate) below the bill."""
    monkeypatch.setenv(KEY_ENV, KEY[KEY_ENV])
    data = write_items(tmp_path / "rag.jsonl", rag_items(1, 60))
    summary = run_here(tmp_path / "run", *local(billing.url, "data=jsonl", f"data.path={data}",
                       f"cache.dir={tmp_path / 'cache'}", "max_concurrency=1", "max_cost_usd=8",
                       "judge.price_input_per_mtok=100", "judge.price_cached_input_per_mtok=1.25",
                       "judge.price_output_per_mtok=10"))  # fmt: skip
    bill = billing.stats()["billing"]
    assert "budget" == summary["status"]
    assert bill["cached_tokens"] > 0 and bill["billed_usd"] <= 8
    assert summary["cost_usd"] < bill["billed_usd"]  # the run's own cost counts the discount the server did not give


def test_cache_marker_marks_every_call_and_changes_neither_verdict_nor_cache_key(
    tmp_path: Path, billing: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """judge.cache_marker=true: the server counts a cache_control breakpoint on every request, and judges as it did
    unmarked; the marked run's cache answers an unmarked rerun in strict replay (the key is the same)."""
    monkeypatch.setenv(KEY_ENV, KEY[KEY_ENV])
    data = write_items(tmp_path / "rag.jsonl", rag_items(1, 3))
    args = local(billing.url, "data=jsonl", f"data.path={data}", f"cache.dir={tmp_path / 'cache'}")
    marked = run_here(tmp_path / "marked", *args, "judge.cache_marker=true")
    assert 6 == billing.stats()["billing"]["marked"] == billing.stats()["billing"]["requests"]
    plain = run_here(tmp_path / "plain", *args, "cache.mode=only")
    assert 0 == plain["calls_live"] and 6 == plain["calls_cached"]
    assert (marked["wins"], marked["ties"], marked["losses"]) == (plain["wins"], plain["ties"], plain["losses"])


def test_the_dry_run_says_what_a_prompt_cache_could_serve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The dry run counts the prompt tokens each call shares with the one before and prices them at the cached rate
    (never less than the cached price of every prompt token); the answers-first layout shares none."""
    monkeypatch.setenv(KEY_ENV, KEY[KEY_ENV])
    data = write_items(tmp_path / "rag.jsonl", rag_items(2, 3))
    (tmp_path / "dry").mkdir()
    estimate = run_here(tmp_path / "dry", *local("http://127.0.0.1:9/v1", "data=jsonl", f"data.path={data}",
                        f"cache.dir={tmp_path / 'cache'}", "dry_run=true", *JUDGE_PRICES))  # fmt: skip
    shared, total = estimate["prompt_tokens_shared_est"], estimate["prompt_tokens_est"]
    assert 0.5 * total < shared < total
    assert estimate["cost_usd_est_cached"] < estimate["cost_usd_est"]


def test_ctrl_c_with_items_waiting_on_their_context_and_a_rerun_pay_nothing_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGINT while items of one context wait for its first call: exit 130 in one line, every reply received kept;
    the rerun sends only the calls never answered (the server's count of each prompt is at most one)."""
    data = write_items(tmp_path / "rag.jsonl", rag_items(2, 8))
    with start_server(ServerOptions(policy="hash", prefix_cache=True, latency=0.3)) as server:
        args = local(server.url, "data=jsonl", f"data.path={data}", f"cache.dir={tmp_path / 'cache'}",
                     "max_concurrency=4")  # fmt: skip
        command = [sys.executable, "-m", "judgebias.run", *args, f"hydra.run.dir={tmp_path / 'killed'}"]
        process = subprocess.Popen(command, cwd=tmp_path, env=_env(), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)  # fmt: skip
        deadline = time.monotonic() + 60
        while server.stats()["completions_ok"] < 3:
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
        assert 130 == process.returncode and "Traceback" not in stderr, stderr
        answered = server.stats()["completions_ok"]
        assert answered < 32
        monkeypatch.setenv(KEY_ENV, KEY[KEY_ENV])
        summary = run_here(tmp_path / "rerun", *args)
        stats = server.stats()
        assert 32 - answered == summary["calls_live"] == stats["completions_ok"] - answered
        assert 1 == stats["max_per_body"]


def _env() -> dict[str, str]:
    import os

    return {**os.environ, **KEY}
