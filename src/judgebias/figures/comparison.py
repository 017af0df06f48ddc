"""Two finished runs matched item by item: what compare reads of each (RunFiles), the paired comparison of their
common items (Comparison), and the notes a reader must see before trusting it. Pure: the files are read by
judgebias.compare; this module computes from what was read."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgebias.core.errors import UserError
from judgebias.core.record import ItemResult
from judgebias.core.summary import SUMMARY_SCHEMA_VERSION, Summary
from judgebias.figures import stats
from judgebias.figures.clustering import cluster_labels
from judgebias.figures.metrics import IntArray, measure
from judgebias.figures.paired import (
    BETTER,
    MOVE_KINDS,
    Difference,
    moved_items,
    paired_differences,
    with_invalid_rate,
)

DEFAULT_RESAMPLES = 1000
FINGERPRINT_FIELDS = ("chars_a", "chars_b", "words_a", "words_b", "human")  # what says two runs saw the same item


@dataclass(frozen=True)
class RunFiles:
    """One finished run as compare reads it: its summary, and its verdict lines by id in the file's order."""

    folder: Path
    summary: Summary
    lines: dict[str, dict[str, Any]]
    rows: dict[str, ItemResult]

    def describe(self) -> str:
        """'judge / rubric / data' as the summary names them."""
        return " / ".join(str(self.summary.get(key)) for key in ("judge", "rubric", "data"))


@dataclass
class Comparison:
    """The paired comparison of two runs on their common items."""

    base: RunFiles
    cand: RunFiles
    matched: int
    only_base: list[str]
    only_cand: list[str]
    resamples: int
    seed: int
    cluster: str | None  # the field both runs' intervals resampled by (None: items)
    clusters: int | None
    differences: dict[str, Difference]
    moved: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)

    def moved_counts(self) -> dict[str, int]:
        """How many items moved in each way (an item may move in several)."""
        counts = Counter(kind for item in self.moved for kind in item["kinds"])
        return {kind: counts.get(kind, 0) for kind in MOVE_KINDS}

    def as_json(self) -> dict[str, Any]:
        """compare.json."""
        return {
            "base": _run_fields(self.base),
            "cand": _run_fields(self.cand),
            "matched": self.matched,
            "only_base": len(self.only_base),
            "only_cand": len(self.only_cand),
            "only_base_ids": self.only_base,
            "only_cand_ids": self.only_cand,
            "bootstrap": {
                "resamples": self.resamples,
                "seed": self.seed,
                "paired": True,
                "cluster": self.cluster,
                "clusters": self.clusters,
            },
            "differences": {name: difference.as_json() for name, difference in self.differences.items()},
            "better": {name: BETTER[name] for name in self.differences},
            "moved_counts": self.moved_counts(),
            "moved": self.moved,
            "notes": self.notes,
        }


def _run_fields(run: RunFiles) -> dict[str, Any]:
    s = run.summary
    keys = ("judge", "rubric", "data", "status", "n_items", "bootstrap_cluster")
    return {"folder": str(run.folder), **{key: s.get(key) for key in keys}}


def compare_runs(
    base: RunFiles, cand: RunFiles, *, resamples: int | None = None, seed: int | None = None
) -> Comparison:
    """The paired comparison on the items both runs judged (matched by id, in the base's order)."""
    common = [item_id for item_id in base.rows if item_id in cand.rows]
    only_base = [item_id for item_id in base.rows if item_id not in cand.rows]
    only_cand = [item_id for item_id in cand.rows if item_id not in base.rows]
    if not common:
        raise UserError(
            f"{base.folder} and {cand.folder} have no item id in common ({len(base.rows)} and {len(cand.rows)} "
            "items): a comparison needs the same items judged by both"
        )
    if resamples is None:  # the base run's, unless it drew none: a comparison without intervals says little
        resamples = _setting(base, "bootstrap_resamples", DEFAULT_RESAMPLES) or DEFAULT_RESAMPLES
    seed = _setting(base, "bootstrap_seed", 0) if seed is None else seed
    notes = _notes(base, cand, common, only_base, only_cand)
    groups, cluster = _clusters(base, cand, common, notes)
    measured = []
    for run in (base, cand):
        rows = [run.rows[item_id] for item_id in common]
        threshold = _setting(run, "agreement_threshold", 0.75)
        measured.append(with_invalid_rate(measure(rows, resamples=0, agreement_threshold=threshold), rows))
    differences = paired_differences(measured[0], measured[1], resamples=resamples, seed=seed, groups=groups)
    differences["cost_usd"] = _cost(base, cand)
    return Comparison(
        base=base,
        cand=cand,
        matched=len(common),
        only_base=only_base,
        only_cand=only_cand,
        resamples=resamples,
        seed=seed,
        cluster=cluster,
        clusters=None if groups is None else int(groups.max()) + 1,
        differences=differences,
        moved=moved_items(
            {item_id: base.lines[item_id] for item_id in common}, {item_id: cand.lines[item_id] for item_id in common}
        ),
        notes=notes,
    )


def _setting(run: RunFiles, name: str, default: Any) -> Any:
    value = run.summary.get(name)
    return default if value is None or isinstance(value, bool) else value


def _notes(base: RunFiles, cand: RunFiles, common: list[str], only_base: list[str], only_cand: list[str]) -> list[str]:
    """What a reader must know before trusting the differences: other data, changed items, unfinished runs."""
    notes = []
    if base.summary.get("data") != cand.summary.get("data"):
        notes.append(f"different datasets: base {base.summary.get('data')!r}, candidate {cand.summary.get('data')!r}")
    if only_base or only_cand:
        notes.append(
            f"{len(only_base)} items only in base and {len(only_cand)} only in the candidate are left out; "
            f"the figures are on the {len(common)} items both judged"
        )
    changed = [i for i in common if _fingerprint(base.lines[i]) != _fingerprint(cand.lines[i])]
    if changed:
        shown = ", ".join(changed[:5]) + (", ..." if len(changed) > 5 else "")
        notes.append(
            f"{len(changed)} matched items differ between the runs in their answers' lengths or human label "
            f"({shown}): the dataset hash differs ({_dataset_hash(base, common)} vs {_dataset_hash(cand, common)}), "
            "so these are not the same items under one id"
        )
    for name, run in (("base", base), ("candidate", cand)):
        version = run.summary.get("schema_version")
        if isinstance(version, int) and version > SUMMARY_SCHEMA_VERSION:
            notes.append(
                f"the {name} run's summary.json has schema_version {version}, newer than this judgebias reads "
                f"({SUMMARY_SCHEMA_VERSION}): a field may mean something else there (docs/outputs.md)"
            )
        status = run.summary.get("status")
        if status not in (None, "ok"):
            notes.append(f"the {name} run's status is {status!r}: its figures may leave items out")
    return notes


def _fingerprint(line: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(line.get(key) for key in FINGERPRINT_FIELDS)


def _dataset_hash(run: RunFiles, ids: Sequence[str]) -> str:
    """A short hash of what the run recorded of the items (id, lengths, human label): equal for the same items."""
    digest = hashlib.sha256()
    for item_id in ids:
        digest.update(json.dumps([item_id, *_fingerprint(run.lines[item_id])]).encode())
    return digest.hexdigest()[:12]


def _clusters(
    base: RunFiles, cand: RunFiles, common: list[str], notes: list[str]
) -> tuple[IntArray | None, str | None]:
    """The clusters both runs resampled by, when each line carries its `cluster` (else items, with a note)."""
    field_name = base.summary.get("bootstrap_cluster")
    if field_name is None:
        return None, None
    if cand.summary.get("bootstrap_cluster") != field_name:
        notes.append(
            f"the runs' intervals resampled by different clusters (base {field_name!r}, candidate "
            f"{cand.summary.get('bootstrap_cluster')!r}): the paired bootstrap resamples items"
        )
        return None, None
    labels = [base.lines[item_id].get("cluster") for item_id in common]
    if all(label is None for label in labels):
        notes.append(
            f"the base run resampled by {field_name!r}, but its verdict lines do not carry the cluster (a run "
            "of an earlier release): the paired bootstrap resamples items"
        )
        return None, None
    return stats.cluster_index(cluster_labels(common, labels)), str(field_name)


def _cost(base: RunFiles, cand: RunFiles) -> Difference:
    """The whole runs' cost: a run's cost is not recorded per item, so it has no paired interval."""
    b, c = base.summary.get("cost_usd"), cand.summary.get("cost_usd")
    b = float(b) if isinstance(b, int | float) else None
    c = float(c) if isinstance(c, int | float) else None
    return Difference(b, c, None if b is None or c is None else c - b, None, None, None, None)
