"""The review loop's command line: sampling strategies, merge validation, and what the merged copy holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgebias.core.sampling import Judged, Strategy, draw, order_distribution, position_entropy
from judgebias.review.__main__ import main as review
from tests.helpers import write_items

PAIRS = [{"id": f"p{i}", "question": f"q{i}?", "a": f"x{i}", "b": f"y{i}"} for i in range(4)]


def test_uncertain_sampling_favours_inconsistent_then_high_entropy_items_and_never_excludes_any() -> None:
    """A Poisson design: an inconsistent item is likelier to be drawn than an unsure one, an unsure one than a sure
    one, none has probability 0, they sum to the size asked; what is drawn comes most uncertain first."""
    sure = position_entropy(
        order_distribution("a", {"A": 0.9, "B": 0.1}, 1), order_distribution("a", {"B": 0.9, "A": 0.1}, 2)
    )
    unsure = position_entropy(
        order_distribution("a", {"A": 0.5, "B": 0.5}, 1), order_distribution("b", {"A": 0.5, "B": 0.5}, 2)
    )
    items = [
        Judged("sure", "1", True, entropy=sure),
        Judged("flip", "tie", False),
        Judged("unsure", "1", True, entropy=unsure),
    ]
    items += [Judged(f"plain{k}", "1", True) for k in range(100)]

    drawn = draw(items, 6, Strategy.uncertain, seed=0)

    p = drawn.probabilities
    assert p["flip"] >= p["unsure"] > p["sure"] > p["plain0"] > 0 and min(p.values()) > 0
    assert 6.0 == pytest.approx(sum(p.values()))
    assert 1.0 == pytest.approx(unsure) and sure < 0.5
    order = [items[[i.id for i in items].index(j.id)] for j in drawn.items]
    assert order == sorted(order, key=lambda j: -(j.entropy + (j.consistent is False)))


def test_stratified_draws_each_stratum_in_proportion() -> None:
    """Half the items consistent, half not: a sample of 4 of 8 takes two of each, each item with probability 1/2."""
    items = [Judged(f"i{k}", "1", k % 2 == 0) for k in range(8)]
    drawn = draw(items, 4, Strategy.stratified, seed=5)
    assert 2 == sum(bool(j.consistent) for j in drawn.items)
    assert {item.id: 0.5 for item in items} == drawn.probabilities


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ({"id": "p0", "label": "c", "annotator": "ann"}, ":1: field 'label': must be a, b or tie"),
        ({"id": "nope", "label": "a", "annotator": "ann"}, ":1: field 'id': 'nope' is not an item of the dataset"),
        ({"id": "p0", "label": "a"}, ":1: field 'annotator': missing"),
    ],
)
def test_a_bad_label_line_is_named_by_file_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: dict[str, str], expected: str
) -> None:
    """One line on stderr naming the labels file, its line and field; exit 2; no copy written."""
    data = write_items(tmp_path / "data.jsonl", PAIRS)
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps(line) + "\n", encoding="utf-8")
    assert 2 == review(["merge", str(labels), "--into", str(data), "--out", str(tmp_path / "out.jsonl")])
    err = capsys.readouterr().err
    assert err.startswith("judgebias: error: ") and f"{labels}{expected}" in err, err
    assert not (tmp_path / "out.jsonl").exists()


def test_merge_writes_votes_voters_and_the_majority_from_jsonl_and_csv(tmp_path: Path) -> None:
    """A JSONL export and a filled CSV merge into human_votes/human_voters; `human` = majority; skips left out."""
    data = write_items(tmp_path / "data.jsonl", PAIRS)
    (tmp_path / "ann.jsonl").write_text(
        "".join(
            json.dumps({"id": i, "label": label, "annotator": "ann"}) + "\n"
            for i, label in [("p0", "a"), ("p1", "skip"), ("p2", "2")]
        ),
        encoding="utf-8",
    )
    (tmp_path / "bob.csv").write_text("id,label,annotator\np0,1,bob\np2,tie,bob\np3,,\n", encoding="utf-8")
    out = tmp_path / "labelled.jsonl"
    assert 0 == review(
        ["merge", str(tmp_path / "ann.jsonl"), str(tmp_path / "bob.csv"), "--into", str(data), "--out", str(out)]
    )
    merged = {r["id"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    assert (["1", "1"], ["ann", "bob"], "1") == (
        merged["p0"]["human_votes"],
        merged["p0"]["human_voters"],
        merged["p0"]["human"],
    )
    assert (["2", "tie"], None) == (merged["p2"]["human_votes"], merged["p2"].get("human"))
    assert "human_votes" not in merged["p1"] and "human_votes" not in merged["p3"]


def test_an_annotator_labelling_an_item_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same person on the same item twice: which label counts? An error naming both lines."""
    data = write_items(tmp_path / "data.jsonl", PAIRS)
    labels = tmp_path / "l.jsonl"
    labels.write_text(
        '{"id": "p0", "label": "a", "annotator": "ann"}\n{"id": "p0", "label": "b", "annotator": "ann"}\n'
    )
    assert 2 == review(["merge", str(labels), "--into", str(data), "--out", str(tmp_path / "o.jsonl")])
    assert f"{labels}:2: field 'id': 'ann' labelled 'p0' twice (also {labels}:1)" in capsys.readouterr().err
