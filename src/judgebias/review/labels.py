"""Labels people return (the page's JSONL export, or a CSV filled in elsewhere), checked line by line, and
merged into a copy of the dataset as human_votes and human_voters.

Every problem is one UserError naming file, line and field. A label says a, b or tie (1 and 2 mean a and b);
`skip` is a label file's way to say "not labelled" and is left out. The same annotator labelling one item twice
is an error (which one would count?); labels for an id the dataset does not have are an error too.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgebias.core.errors import UserError
from judgebias.core.item import Item
from judgebias.core.labels import SPELLED, HumanLabel, human_label, majority
from judgebias.core.sampling import item_digest
from judgebias.io.dataset import JSONL, Reading, id_text, load_items, mapped_records
from judgebias.io.files import read_user_text, write_jsonl
from judgebias.io.jsonl import json_lines, text_lines
from judgebias.review.sample import SAMPLE_INFO

SKIP = "skip"


@dataclass(frozen=True)
class Label:
    """One person's label for one item, in the item's frame, and where it was read."""

    id: str
    label: HumanLabel
    annotator: str
    where: str  # FILE:LINE


@dataclass(frozen=True)
class Merged:
    """What a merge did."""

    out: Path
    labels: int
    annotators: list[str]
    items: int
    skipped: int
    human_set: int  # items given `human` (their votes' majority) because they had none


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) of a JSONL or CSV label file."""
    text = read_user_text(path, "labels file")
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(text.splitlines())
        names = [name.strip() for name in reader.fieldnames or []]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise UserError(f"{path}:1: column {repeated[0]!r} is in the header twice: keep one (which would count?)")
        missing = {"id", "label", "annotator"} - set(names)
        if missing:
            raise UserError(f"{path}:1: the header lacks {', '.join(sorted(missing))}: columns id, label, annotator")
        for row in reader:
            yield reader.line_num, dict(row)
        return
    for number, record in json_lines(text_lines(text), path, column=True):
        if not isinstance(record, dict):
            raise UserError(f"{path}:{number}: expected a JSON object, got {type(record).__name__}")
        yield number, record


def annotator_key(name: str) -> str:
    """Who an annotator is: the name without surrounding space, in any case (`Ann`, `ann `, `ANN` are one person)."""
    return name.strip().casefold()


@dataclass(frozen=True)
class Samples:
    """The samples labels may come from (their sample.json files): each one's items as they were sampled."""

    items: dict[str, dict[str, str]]  # sample id -> item id -> item_sha256
    files: dict[str, Path]  # sample id -> its sample.json
    unchecked: set[str] = field(default_factory=set)  # sample ids named by labels when no sample.json was found

    @classmethod
    def near(cls, paths: Sequence[Path], given: Sequence[Path] = ()) -> Samples:
        """The sample.json files given, beside the label files, and in a `review/` folder under the given folders."""
        items: dict[str, dict[str, str]] = {}
        files: dict[str, Path] = {}
        for place in paths:
            for candidate in (*given, place.parent / SAMPLE_INFO, place / "review" / SAMPLE_INFO, place / SAMPLE_INFO):
                if candidate.is_file():
                    try:
                        info = json.loads(candidate.read_text(encoding="utf-8"))
                    except (OSError, ValueError):
                        continue
                    if isinstance(info, dict) and isinstance(info.get("sample_id"), str):
                        items[info["sample_id"]] = dict(info.get("item_sha256") or {})
                        files[info["sample_id"]] = candidate
        return cls(items, files)

    def check(self, sample: Any, item: Item, where: str) -> None:
        """A label that names its sample must come from a known one, about the item as it was sampled. With no
        sample.json found at all, the label's sample cannot be told from another: it is counted in `unchecked`."""
        if sample in (None, ""):
            return
        if not self.items:
            self.unchecked.add(str(sample))
            return
        if sample not in self.items:
            known = ", ".join(sorted(self.items)) or "none found beside the labels or in the run's review/ folder"
            raise UserError(
                f"{where}: field 'sample': {sample!r} is not a sample of this data (known: {known}): these labels "
                "were given on another sample's items"
            )
        sampled = self.items[sample].get(item.id)
        if sampled is not None and sampled != item_digest(item.question, item.a, item.b):
            raise UserError(
                f"{where}: field 'id': item {item.id!r} changed since it was sampled ({self.files[sample]}): its "
                "question or answers differ, so the label may point at the other answer; sample it again"
            )


def read_labels(
    paths: Sequence[Path], known: set[str] | dict[str, Item], samples: Samples | None = None
) -> tuple[list[Label], int]:
    """Every label of the files (skips left out, counted), each line checked; ids must be in `known`; a label that
    names its sample is checked against that sample (`samples`)."""
    labels: list[Label] = []
    skipped = 0
    seen: dict[tuple[str, str], str] = {}
    for path in paths:
        for number, record in _rows(path):
            where = f"{path}:{number}"
            raw = record.get("label")
            if path.suffix.lower() == ".csv" and not str(raw or "").strip():
                continue  # a row of the template nobody filled in
            item_id = record.get("id")
            if not isinstance(item_id, str) or not item_id.strip():
                raise UserError(f"{where}: field 'id': missing or not a string")
            if item_id not in known:
                raise UserError(f"{where}: field 'id': {item_id!r} is not an item of the dataset")
            annotator = record.get("annotator")
            if not isinstance(annotator, str) or not annotator.strip():
                raise UserError(f"{where}: field 'annotator': missing: every label needs the name of who gave it")
            annotator = annotator.strip()
            if samples is not None and isinstance(known, dict):
                samples.check(record.get("sample"), known[item_id], where)
            if isinstance(raw, str) and raw.strip().lower() == SKIP:
                skipped += 1
                continue
            label = human_label(raw)
            if label is None:
                raise UserError(f"{where}: field 'label': must be {SPELLED}, or skip, got {json.dumps(raw)[:40]}")
            key = (annotator_key(annotator), item_id)
            if key in seen:
                raise UserError(f"{where}: field 'id': {annotator!r} labelled {item_id!r} twice (also {seen[key]})")
            seen[key] = where
            labels.append(Label(item_id, label, annotator, where))
    return labels, skipped


def merge_labels(
    label_files: Sequence[Path],
    data: Path,
    out: Path,
    *,
    add: bool = False,
    samples: Samples | None = None,
    reading: Reading = JSONL,
) -> Merged:
    """Write a copy of `data` with each item's new votes appended to human_votes (and names to human_voters): JSONL
    in judgebias's own field names and label words, whatever the format and names `reading` read `data` in.

    An existing `out` is never replaced: with `add` the labels are added to it (it is the base, so the labels it
    holds stay), else the merge is refused."""
    if out.resolve() == data.resolve():
        raise UserError(f"{out}: is the dataset itself: the merge writes a copy (pass another --out)")
    if out.exists() and not add:
        raise UserError(
            f"{out}: exists (an earlier merge's labelled copy?): it is not replaced; add these labels to it with "
            "--add, or write another file with --out"
        )
    base, read_as = (out, JSONL) if add and out.exists() else (data, reading)
    items = load_items(base, read_as)  # the whole dataset checked first, so the copy is a dataset the run reads
    labels, skipped = read_labels(label_files, {item.id: item for item in items}, samples)
    if not labels:
        raise UserError(f"{', '.join(map(str, label_files))}: no labels to merge (every line is a skip or empty)")
    by_item: dict[str, list[Label]] = {}
    for label in labels:
        by_item.setdefault(label.id, []).append(label)
    records, human_set = [], 0
    for number, record in enumerate(mapped_records(base, read_as), start=1):
        new = by_item.get(id_text(record.get("id")), [])
        if new:
            votes = [human_label(v) for v in record.get("human_votes") or []]
            voters = list(record.get("human_voters") or []) or [f"unnamed-{k + 1}" for k in range(len(votes))]
            for label in new:
                if annotator_key(label.annotator) in {annotator_key(voter) for voter in voters}:
                    raise UserError(
                        f"{label.where}: field 'annotator': {label.annotator!r} already voted on {label.id!r} in "
                        f"{base}:{number} (human_voters)"
                    )
                votes.append(label.label)
                voters.append(label.annotator)
            record["human_votes"] = votes
            record["human_voters"] = voters
            if record.get("human") is None:
                agreed = majority([v for v in votes if v is not None])
                if agreed is not None:
                    record["human"] = agreed
                    human_set += 1
        records.append(record)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(out, records)
    annotators = sorted(Counter(label.annotator for label in labels))
    return Merged(out, len(labels), annotators, len(by_item), skipped, human_set)
