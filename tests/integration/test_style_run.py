"""Style bias end to end: features in verdicts.jsonl, figures in summary.json and ratings.csv, strip_markdown."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import InProcessCli, write_items
from tests.integration.helpers import KEY, local

pytestmark = pytest.mark.slow

FORMATTED = "## Answer\n\n- **Preheat** the oven.\n- Bake for *20* minutes."
PLAIN = "Preheat the oven, then bake it for twenty minutes in total."
MODELS = ("m-fancy", "m-mixed", "m-plain")


def styled_items(tmp_path: Path) -> Path:
    """36 items among three models; people always prefer the plain answer; m-fancy formats most, m-plain never."""
    items: list[dict[str, Any]] = []
    for index in range(36):
        model_a, model_b = (MODELS[index % 3], MODELS[(index + 1) % 3])
        a_formatted = model_a == "m-fancy" or (model_a == "m-mixed" and index % 2 == 0)
        b_formatted = model_b == "m-fancy" or (model_b == "m-mixed" and index % 2 == 1)
        a, b = FORMATTED if a_formatted else PLAIN, FORMATTED if b_formatted else PLAIN
        human = "tie" if a_formatted == b_formatted else "2" if a_formatted else "1"
        items.append(
            {
                "id": f"s{index}",
                "question": "How?",
                "a": a,
                "b": b,
                "human": human,
                "model_a": model_a,
                "model_b": model_b,
            }
        )
    return write_items(tmp_path / "styled.jsonl", items)


def test_a_judge_that_rewards_formatting_is_measured_and_the_remedy_shows(
    cli_here: InProcessCli, tmp_path: Path
) -> None:
    """judge=formatted (style_bias 1) picks the formatted answer every time (styled_wins 1); with strip_markdown it
    sees plain text only and follows people, who chose the plain answer (styled_wins 0)."""
    data = styled_items(tmp_path)
    common = ("judge=formatted", "judge.style_bias=1.0", "data=jsonl", f"data.path={data}", "bootstrap.resamples=200")
    styled = cli_here(*common, "report=false")
    stripped = cli_here(*common, "report=false", "data.normalize.strip_markdown=true")
    assert (0, 0) == (styled.code, stripped.code), (styled, stripped)

    before, after = styled.summary(), stripped.summary()
    assert (1.0, 24) == (before["styled_wins"], before["styled_wins_n"])
    assert (0.0, 24) == (after["styled_wins"], after["styled_wins_n"])
    assert before["style_coefficients"]["list_items"] > 0 > after["style_coefficients"]["list_items"]
    expected = {
        "strip": False,
        "truncate_words": None,
        "truncate_tokens": None,
        "tokenizer": "words",
        "strip_markdown": True,
    }
    assert expected == after["normalization"]
    counts = {"headers": 1, "list_items": 2, "bold": 1, "italic": 1, "code_blocks": 0, "tables": 0}
    assert counts == stripped.verdicts()[0]["style_a"]  # the answer as written, though the judge saw plain text


def test_ratings_gain_style_controlled_columns(cli_here: InProcessCli, tmp_path: Path) -> None:
    """A judge that decides by formatting alone ranks the formatting model first; style control levels all three."""
    data = styled_items(tmp_path)
    result = cli_here("judge=formatted", "judge.style_bias=1.0", "data=jsonl", f"data.path={data}", "report=false")
    assert 0 == result.code, result
    with (result.run_dir / "ratings.csv").open(encoding="utf-8") as file:
        rows = {row["model"]: row for row in csv.DictReader(file)}
    assert "1" == rows["m-fancy"]["rank"]
    assert float(rows["m-fancy"]["rating"]) - float(rows["m-plain"]["rating"]) > 100
    assert pytest.approx([1000.0] * 3, abs=1.0) == [float(rows[model]["style_rating"]) for model in MODELS]
    assert all(float(r["style_low"]) <= float(r["style_rating"]) <= float(r["style_high"]) for r in rows.values())
    assert {"1", "2", "3"} == {r["style_rank"] for r in rows.values()}


def test_strip_markdown_sends_plain_text_with_its_own_cache_keys(
    cli_here: InProcessCli, server: Any, tmp_path: Path
) -> None:
    """A live judge sees the stripped answers: the formatted a is longer as written, shorter as plain text, so the
    server's `longer` policy flips its verdict; the stripped run makes its own two calls."""
    judge = server(policy="longer")
    items = [{"id": "f", "question": "How?", "a": "## Yes\n\n**It works, truly.**", "b": "Yes. It works, truly so."}]
    data = write_items(tmp_path / "one.jsonl", items)
    plain = cli_here(*local(judge.url, "data=jsonl", f"data.path={data}"), env=KEY)
    stripped = cli_here(
        *local(judge.url, "data=jsonl", f"data.path={data}", "data.normalize.strip_markdown=true"), env=KEY
    )
    assert (0, 0) == (plain.code, stripped.code), (plain, stripped)
    assert ("1", "2") == (plain.verdicts()[0]["verdict"], stripped.verdicts()[0]["verdict"])
    assert 4 == judge.stats()["requests"]
    again = cli_here(
        *local(judge.url, "data=jsonl", f"data.path={data}", "data.normalize.strip_markdown=true"), env=KEY
    )
    assert (0, 4) == (again.code, judge.stats()["requests"])  # a rerun is answered from its own cache entries
