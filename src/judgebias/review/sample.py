"""A sample of a run's items for people to label, written with the run's provenance beside it.

The sample holds what people need and nothing that would lead them: the question and the two answers, no
verdict, no model names. sample.json says where it came from (the run, its config hash and revision, the
dataset file and its sha256, the strategy and seed), so the labels can be traced back to the judged items.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judgebias.core.errors import UserError
from judgebias.core.item import Item
from judgebias.core.sampling import (
    Judged,
    Strategy,
    draw,
    item_digest,
    order_distribution,
    position_entropy,
    sample_size,
)
from judgebias.io.dataset import Reading, load_items, reading_of, resolve_path
from judgebias.io.files import write_csv, write_json, write_text_atomic
from judgebias.io.jsonl import json_lines
from judgebias.io.run_dir import RunDir

SAMPLE = "sample.jsonl"
SAMPLE_INFO = "sample.json"
CSV_TEMPLATE = "labels.csv"
CSV_COLUMNS = ["id", "question", "a", "b", "label", "annotator", "sample"]


@dataclass(frozen=True)
class JudgedRun:
    """A finished run as the review loop reads it: its dataset file, items and verdict lines."""

    folder: Path
    data_path: Path
    reading: Reading  # how the run read it (format, field names, label words)
    provenance: dict[str, Any]
    items: dict[str, Item]
    verdicts: list[dict[str, Any]]


def read_run(folder: Path) -> JudgedRun:
    """A run (or sweep job) folder's provenance, dataset and verdicts, or a UserError saying what is missing."""
    run = RunDir(folder)
    provenance_path, verdicts_path = run.provenance, run.verdicts
    for path in (provenance_path, verdicts_path):
        if not path.is_file():
            raise UserError(f"{path}: missing: point at a finished run folder (or one job folder of a sweep)")
    try:
        provenance = json.loads(provenance_path.read_text(encoding="utf-8"))
        data = provenance["config"]["data"]
        data_path = resolve_path(data["path"], data.get("root"))
        reading = reading_of(data, data_path)
    except (json.JSONDecodeError, KeyError, TypeError, ValueError):
        raise UserError(f"{provenance_path}: not a run's provenance (no config.data.path)") from None
    items = {item.id: item for item in load_items(data_path, reading)}
    with verdicts_path.open(encoding="utf-8") as lines:
        verdicts = [line for _, line in json_lines(lines, verdicts_path)]
    return JudgedRun(folder, data_path, reading, provenance, items, verdicts)


def judged(line: dict[str, Any], item: Item) -> Judged:
    """What sampling needs of one verdict line: verdict, consistency, category, position entropy."""
    first = order_distribution(line.get("pick1"), line.get("probs1"), 1)
    second = order_distribution(line.get("pick2"), line.get("probs2"), 2) if line.get("call2") is not None else None
    category = item.extra.get("category")
    return Judged(
        id=str(line["id"]),
        verdict=str(line.get("verdict")),
        consistent=line.get("consistent"),
        category=None if category is None else str(category),
        entropy=position_entropy(first, second),
    )


def _design_words(strategy: Strategy) -> str:
    """What the sample's design is, for a reader of sample.json."""
    return {
        Strategy.random: "simple random sample of the candidates",
        Strategy.stratified: "simple random sample in each stratum (verdict, category, consistent), sized in proportion",
        Strategy.uncertain: "Poisson sample: each candidate drawn on its own, with a probability that grows with the "
        "judge's uncertainty (never below a tenth of the average)",
    }[strategy]


def write_sample(
    run: JudgedRun,
    out_dir: Path,
    *,
    n: int | None,
    fraction: float | None,
    strategy: Strategy,
    seed: int,
    include_gold: bool,
) -> list[Item]:
    """Draw the sample and write sample.jsonl, sample.json and labels.csv (the route for labelling elsewhere)."""
    candidates, labelled = [], 0
    for line in run.verdicts:
        item = run.items.get(str(line.get("id")))
        if item is None or line.get("verdict") == "error":
            continue
        if item.human_votes or (item.human is not None and not include_gold):
            labelled += 1
            continue
        candidates.append(judged(line, item))
    if not candidates:
        raise UserError(
            f"{run.folder}: every judged item is labelled already ({labelled}): nothing to sample"
            + ("" if include_gold else " (--include-gold samples items whose only label is the dataset's `human`)")
        )
    drawn = draw(candidates, sample_size(len(candidates), n, fraction), strategy, seed)
    chosen = drawn.items
    items = [run.items[j.id] for j in chosen]
    body = "".join(
        json.dumps({"id": i.id, "question": i.question, "a": i.a, "b": i.b}, ensure_ascii=False) + "\n" for i in items
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out_dir / SAMPLE, body)
    provenance = run.provenance
    write_json(
        out_dir / SAMPLE_INFO,
        {
            "sample_id": hashlib.sha256(body.encode("utf-8")).hexdigest()[:16],
            "run": str(run.folder.absolute()),
            "data_path": str(run.data_path),
            "data_sha256": hashlib.sha256(run.data_path.read_bytes()).hexdigest(),
            "strategy": strategy.value,
            "seed": seed,
            "n": len(items),
            "candidates": len(candidates),
            "skipped_labelled": labelled,
            "include_gold": include_gold,
            "ids": [i.id for i in items],
            "design": _design_words(strategy),
            "probabilities": {item_id: round(chance, 12) for item_id, chance in drawn.probabilities.items()},
            "item_sha256": {i.id: item_digest(i.question, i.a, i.b) for i in items},
            "entropy": {j.id: round(j.entropy, 4) for j in chosen},
            "run_provenance": {
                k: provenance.get(k) for k in ("config_hash", "git_revision", "models_reported", "argv")
            },
            "judge": (provenance.get("config") or {}).get("judge", {}).get("name"),
        },
    )
    sample_id = hashlib.sha256(body.encode("utf-8")).hexdigest()[:16]
    write_csv(
        out_dir / CSV_TEMPLATE,
        CSV_COLUMNS,
        (
            {"id": i.id, "question": i.question, "a": i.a, "b": i.b, "label": "", "annotator": "", "sample": sample_id}
            for i in items
        ),
    )
    return items
