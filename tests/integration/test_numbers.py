"""Issue-4 figures that need the runner: soft verdicts from log-probabilities, normalisation, ratings, labels."""

from __future__ import annotations

import csv

import pytest

from tests.helpers import write_items
from tests.integration.helpers import KEY, local

pytestmark = pytest.mark.slow


def test_soft_verdicts_from_logprobs(cli_here, server):
    """With judge.logprobs=true each call records label probabilities and the summary has a soft win rate."""
    judge = server(policy="hash")
    result = cli_here(*local(judge.url, "data.limit=6", "judge.logprobs=true"), env=KEY)
    assert 0 == result.code, result
    lines = result.verdicts()
    assert all(set(line["probs1"]) <= {"A", "B", "tie"} for line in lines)
    assert all(0.0 <= line["soft"] <= 1.0 for line in lines)
    summary = result.summary()
    assert 6 == summary["soft_n"]
    assert summary["soft_win_rate"] == pytest.approx(sum(line["soft"] for line in lines) / 6)


def test_no_soft_note_when_no_logprobs_were_asked_for(cli_here, server):
    """Without judge.logprobs the soft win rate is absent and no note speaks of log-probabilities."""
    judge = server(policy="hash")
    result = cli_here(*local(judge.url, "data.limit=3"), env=KEY)
    assert result.summary()["soft_win_rate"] is None
    assert "soft_note" not in result.summary()


def test_normalisation_is_recorded_and_changes_the_cache_keys(cli_here, server, tmp_path):
    """Stripping fences is a different experiment: it is recorded in the summary and makes its own calls."""
    judge = server(policy="longer")
    items = [{"id": "f", "question": "Code?", "a": "```python\nprint(1)\n```", "b": "  print(2)   "}]
    data = write_items(tmp_path / "fenced.jsonl", items)
    plain = cli_here(*local(judge.url, "data=jsonl", f"data.path={data}"), env=KEY)
    stripped = cli_here(*local(judge.url, "data=jsonl", f"data.path={data}", "data.normalize.strip=true"), env=KEY)
    assert (0, 0) == (plain.code, stripped.code)
    assert 4 == judge.stats()["requests"]
    expected = {
        "strip": True,
        "truncate_words": None,
        "truncate_tokens": None,
        "tokenizer": "words",
        "strip_markdown": False,
    }
    assert expected == stripped.summary()["normalization"]
    assert (8, 8) == (stripped.verdicts()[0]["chars_a"], stripped.verdicts()[0]["chars_b"])


def test_ratings_for_several_models(cli_here):
    """q1 names five answering models, so the run writes Bradley–Terry ratings with intervals and ranks."""
    result = cli_here("bootstrap.resamples=100", "report=false")
    assert 0 == result.code, result
    with (result.run_dir / "ratings.csv").open() as file:
        rows = list(csv.DictReader(file))
    assert 5 == len(rows)
    assert ["1", "2", "3", "4", "5"] == [row["rank"] for row in rows]
    assert all(float(r["low"]) <= float(r["rating"]) <= float(r["high"]) for r in rows)


def test_random_tag_labels_are_recorded(cli_here, server):
    """With rubric.labels=tags each call shows neutral random labels, recorded per call in verdicts.jsonl."""
    judge = server(policy="longer")
    result = cli_here(*local(judge.url, "data.limit=4", "rubric.labels=tags"), env=KEY)
    assert 0 == result.code, result
    for line in result.verdicts():
        assert line["labels1"] != line["labels2"] or line["labels1"][0] != line["labels1"][1]
        assert line["call1"] in ("A", "B")


def test_self_preference_flagged_when_the_judge_family_answers(cli_here, server, tmp_path):
    """When the judge's own family wrote one of the answers, the summary reports its win rate apart."""
    judge = server(policy="longer")
    items = [
        {"id": str(i), "question": "Q", "a": "x" * (i + 1), "b": "y" * (5 - i), "model_a": "gpt-4o", "model_b": "llama"}
        for i in range(4)
    ]
    data = write_items(tmp_path / "self.jsonl", items)
    result = cli_here(*local(judge.url, "data=jsonl", f"data.path={data}", "judge.family=gpt-4"), env=KEY)
    assert 0 == result.code, result
    assert {"family": "gpt-4", "n": 4} == {k: result.summary()["self_preference"][k] for k in ("family", "n")}
