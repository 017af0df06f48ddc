"""A review sample's design read back for a run (`calibration.sample=PATH/sample.json`): each item's probability of
being labelled, the items drawn, checked against the run's dataset before anything is judged.

A design that cannot stand behind the estimate is refused in one line: a sample.json of another dataset (an item
drawn that the data does not have, or whose question or answers changed since), an item with a probability of 0
or above 1, a sample written before samples recorded their design.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from judgebias.core.errors import UserError
from judgebias.core.sampling import item_digest
from judgebias.figures.corrected import Design
from judgebias.io.files import read_user_text

STRATEGIES = ("random", "stratified", "uncertain")


def read_design(path: Path, data_path: Path | None) -> Design:
    """The design a sample.json records; with `data_path`, its drawn items checked against that dataset."""
    where = f"calibration.sample={path}"
    text = read_user_text(path, "sample.json")
    try:
        record = json.loads(text)
    except ValueError as error:
        raise UserError(f"{where}: not valid JSON ({error})") from None
    if not isinstance(record, dict):
        raise UserError(f"{where}: not a review sample.json (a JSON object)")
    strategy, ids, probabilities = record.get("strategy"), record.get("ids"), record.get("probabilities")
    if strategy not in STRATEGIES or not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise UserError(f"{where}: not a review sample.json (it needs strategy and ids, as review sample writes)")
    if not isinstance(probabilities, dict):
        raise UserError(
            f"{where}: written before samples recorded their design (no `probabilities`): draw the sample again with "
            "python -m judgebias.review sample (the labels given so far stay valid for the same items)"
        )
    checked: dict[str, float] = {}
    for item_id, chance in probabilities.items():
        if isinstance(chance, bool) or not isinstance(chance, int | float) or not 0.0 < chance <= 1.0:
            raise UserError(
                f"{where}: field 'probabilities': item {item_id!r} has {chance!r}: a design must give every item a "
                "probability above 0 and at most 1 (an item that could not be drawn makes every estimate biased)"
            )
        checked[item_id] = float(chance)
    outside = [item_id for item_id in ids if item_id not in checked]
    if outside:
        raise UserError(f"{where}: item {outside[0]!r} was drawn but has no probability in the design")
    if data_path is not None:
        _check_items(where, record, data_path)
    return Design(str(strategy), str(path), checked, frozenset(ids))


def _check_items(where: str, record: dict[str, Any], data_path: Path) -> None:
    """Every drawn item is in the dataset, with the question and answers it was drawn with."""
    expected: dict[str, str] = record.get("item_sha256") or {}
    drawn = set(record["ids"])
    found: set[str] = set()
    try:
        with data_path.open(encoding="utf-8-sig") as lines:
            for line in lines:
                if not line.strip():
                    continue
                try:
                    value = json.loads(line)
                except ValueError:
                    continue  # the run's own check names a bad line
                item_id = value.get("id") if isinstance(value, dict) else None
                if isinstance(item_id, str) and item_id in drawn:
                    found.add(item_id)
                    question = value.get("question", value.get("prompt"))
                    digest = item_digest(str(question), str(value.get("a")), str(value.get("b")))
                    if item_id in expected and expected[item_id] != digest:
                        raise UserError(
                            f"{where}: item {item_id!r} of {data_path} is not the item that was drawn (its question "
                            "or answers changed since): the sample is of another dataset version"
                        )
    except OSError as error:
        raise UserError(f"{data_path}: cannot be read ({error.strerror or error})") from None
    missing = sorted(drawn - found)
    if missing:
        raise UserError(
            f"{where}: {len(missing)} drawn items are not in {data_path} (first {missing[0]!r}): labels on items the "
            "run does not have; judge the dataset the sample was drawn from"
        )
