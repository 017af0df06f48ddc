"""Two finished runs matched item by item: what compare reads of each (RunFiles, its verdicts as columns), which
items the two share and whether they are the same items (Coverage), the paired comparison of the shared ones
(Comparison), and the notes a reader must see before trusting it. Pure: the files are read by
judgebias.io.verdict_files; this module computes from what was read.

Nothing here holds a run's lines: two million-item runs are compared in the memory of their rows (a few dozen bytes
an item), ids matched by their hashes (checked id for id), the items that moved counted in full and listed with
their replies only for the first few of each kind (the command fetches those lines again).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgebias.core.errors import UserError
from judgebias.core.summary import SUMMARY_SCHEMA_VERSION, Summary
from judgebias.figures.metrics import IntArray, PeopleSettings, measure
from judgebias.figures.paired import (
    BETTER,
    MOVE_KINDS,
    Difference,
    moved_kinds,
    paired_differences,
    with_invalid_rate,
)
from judgebias.figures.rows import Rows

DEFAULT_RESAMPLES = 1000  # the fewest resamples a comparison draws: the base run's count only when larger
DEFAULT_LISTED = 50  # items listed by id (and, for the moved ones, with their replies) of each kind


@dataclass
class VerdictColumns:
    """One run's verdict lines as columns, in the file's order (io.verdict_files reads them)."""

    path: Path
    rows: Rows
    id_hashes: NDArray[np.int64]  # hash(id) of each row: matched against another run's without a dict of ids
    id_checks: NDArray[np.uint32]  # crc32 of each id's UTF-8: two ids whose hashes collide are still told apart
    line_numbers: NDArray[np.uint32]  # each row's line in the file (blank lines are skipped)
    clusters: NDArray[np.int32]  # each row's cluster value as an index into cluster_values (-1: none)
    cluster_values: list[object]

    def keep(self, rows: IntArray) -> None:
        """Keep only these rows, in this order, in every column (their former order is not needed again)."""
        if rows.size == len(self.rows) and bool((rows == np.arange(rows.size)).all()):
            return
        self.rows.keep(rows)
        self.id_hashes, self.id_checks = self.id_hashes[rows], self.id_checks[rows]
        self.line_numbers, self.clusters = self.line_numbers[rows], self.clusters[rows]


@dataclass(frozen=True)
class RunFiles:
    """One finished run as compare reads it: its summary, and its verdicts as columns."""

    folder: Path
    summary: Summary
    verdicts: VerdictColumns

    def describe(self) -> str:
        """'judge / rubric / data' as the summary names them."""
        return " / ".join(str(self.summary.get(key)) for key in ("judge", "rubric", "data"))


@dataclass(frozen=True)
class Coverage:
    """Which of the base run's items the candidate judged, and whether the shared ids are the same items."""

    base_items: int
    cand_items: int
    matched: int
    only_base: int
    only_cand: int
    changed: int  # matched items whose answers' lengths or human label differ: not the same item under one id
    only_base_ids: list[str]  # the first few of each, in their run's order
    only_cand_ids: list[str]
    changed_ids: list[str]
    dataset_hashes: tuple[str, str] | None = None  # what each run recorded of the matched items, when they differ

    @property
    def share(self) -> float:
        """The share of the base run's items the candidate judged too."""
        return self.matched / self.base_items if self.base_items else 0.0

    def statements(self) -> list[str]:
        """What a reader must see first, in the words the gate fails with: a partial candidate, changed items."""
        out = []
        if self.only_base:
            out.append(
                f"the candidate judged {self.matched} of the base's {self.base_items} items ({100 * self.share:.1f}%): "
                f"{self.only_base} base items are not in it ({_first(self.only_base_ids, self.only_base)}), so a "
                "change on them cannot show"
            )
        if self.changed:
            hashes = (
                f" (dataset hash {self.dataset_hashes[0]} vs {self.dataset_hashes[1]})" if self.dataset_hashes else ""
            )
            out.append(
                f"{self.changed} matched items differ between the runs in their answers' lengths or human label "
                f"({_first(self.changed_ids, self.changed)}){hashes}: these are not the same items under one id"
            )
        if self.only_cand:
            out.append(
                f"{self.only_cand} candidate items are not in the base ({_first(self.only_cand_ids, self.only_cand)}): "
                "left out of the comparison"
            )
        return out

    def as_json(self) -> dict[str, Any]:
        """compare.json's `coverage`."""
        return {
            "base_items": self.base_items,
            "cand_items": self.cand_items,
            "matched": self.matched,
            "share": self.share,
            "only_base": self.only_base,
            "only_cand": self.only_cand,
            "changed": self.changed,
            "changed_ids": self.changed_ids,
        }


def _first(ids: Sequence[str], count: int) -> str:
    shown = ", ".join(ids[:5])
    return f"first: {shown}, ..." if count > 5 else shown


@dataclass
class Comparison:
    """The paired comparison of two runs on their common items."""

    base: RunFiles
    cand: RunFiles
    coverage: Coverage
    resamples: int
    seed: int
    cluster: str | None  # the field both runs' intervals resampled by (None: items)
    clusters: int | None
    differences: dict[str, Difference]
    moved_counts: dict[str, int]  # items that moved in each way (an item may move in several), every item counted
    moved_total: int  # items that moved in any way
    moved: list[dict[str, Any]]  # the first `listed` of each kind: id, kinds, human, base and cand line numbers
    listed: int
    notes: list[str] = field(default_factory=list)

    @property
    def matched(self) -> int:
        """Items both runs judged."""
        return self.coverage.matched

    def as_json(self) -> dict[str, Any]:
        """compare.json."""
        c = self.coverage
        return {
            "base": _run_fields(self.base),
            "cand": _run_fields(self.cand),
            "matched": c.matched,
            "only_base": c.only_base,
            "only_cand": c.only_cand,
            "only_base_ids": c.only_base_ids,
            "only_cand_ids": c.only_cand_ids,
            "coverage": c.as_json(),
            "bootstrap": {
                "resamples": self.resamples,
                "seed": self.seed,
                "paired": True,
                "cluster": self.cluster,
                "clusters": self.clusters,
            },
            "differences": {name: difference.as_json() for name, difference in self.differences.items()},
            "better": {name: BETTER[name] for name in self.differences},
            "moved_counts": self.moved_counts,
            "moved_total": self.moved_total,
            "moved_listed_per_kind": self.listed,
            "moved": [{key: value for key, value in item.items() if not key.endswith("_line")} for item in self.moved],
            "notes": self.notes,
        }


def _run_fields(run: RunFiles) -> dict[str, Any]:
    s = run.summary
    keys = ("judge", "rubric", "data", "status", "n_items", "bootstrap_cluster")
    return {"folder": str(run.folder), **{key: s.get(key) for key in keys}}


@dataclass(frozen=True)
class Matching:
    """Where each base row's id is in the candidate: the matched rows of both, in the base's order."""

    base_rows: IntArray
    cand_rows: IntArray
    only_base: IntArray
    only_cand: IntArray


def match_ids(base: VerdictColumns, cand: VerdictColumns) -> Matching:
    """The rows whose ids both runs hold, paired, in the base's order: found through the ids' hashes (a keyed
    64-bit hash, and a crc32 beside it, so that two different ids match only if both collide)."""
    order = np.argsort(cand.id_hashes, kind="stable")
    ordered = cand.id_hashes[order]
    at = np.minimum(np.searchsorted(ordered, base.id_hashes), max(ordered.size - 1, 0))
    hit = ordered[at] == base.id_hashes if ordered.size else np.zeros(base.id_hashes.size, dtype=np.bool_)
    del ordered
    cand_of = order[at]
    del order, at
    hit &= cand.id_checks[cand_of] == base.id_checks
    base_rows = np.flatnonzero(hit)
    cand_rows = cand_of[base_rows]
    del cand_of
    in_base = np.zeros(cand.id_hashes.size, dtype=np.bool_)
    in_base[cand_rows] = True
    return Matching(base_rows, cand_rows, np.flatnonzero(~hit), np.flatnonzero(~in_base))


def compare_runs(
    base: RunFiles,
    cand: RunFiles,
    *,
    resamples: int | None = None,
    seed: int | None = None,
    listed: int = DEFAULT_LISTED,
    people: PeopleSettings | None = None,
) -> Comparison:
    """The paired comparison on the items both runs judged (matched by id, in the base's order).

    The candidate's columns are kept for this comparison alone: its matched rows are put in the base's order in
    place (its other rows go), so two million-item runs are held once each. The base's are left as they are (a
    sweep compares every job with one base)."""
    b, c = base.verdicts, cand.verdicts
    matching = match_ids(b, c)
    if not matching.base_rows.size:
        raise UserError(
            f"{base.folder} and {cand.folder} have no item id in common ({len(b.rows)} and {len(c.rows)} items): a "
            "comparison needs the same items judged by both"
        )
    if resamples is None:  # at least DEFAULT_RESAMPLES: a comparison's interval from fewer draws says little
        resamples = max(DEFAULT_RESAMPLES, _setting(base, "bootstrap_resamples", 0))
    seed = _setting(base, "bootstrap_seed", 0) if seed is None else seed
    only_cand_ids = [c.rows.id(int(i)) for i in matching.only_cand[:listed]]
    c.keep(matching.cand_rows)  # the candidate's rows in the base's order: row i of both is one item
    base_rows, cand_rows = _taken(b.rows, matching.base_rows), c.rows
    coverage = _coverage(base, matching, base_rows, cand_rows, listed, only_cand_ids)
    notes = _notes(base, cand)
    groups, cluster = _clusters(base, cand, matching, notes)
    measured = [
        with_invalid_rate(
            measure(rows, resamples=0, agreement_threshold=_setting(run, "agreement_threshold", 0.75), people=people),
            rows,
        )
        for run, rows in ((base, base_rows), (cand, cand_rows))
    ]
    differences = paired_differences(measured[0], measured[1], resamples=resamples, seed=seed, groups=groups)
    differences["cost_usd"] = _cost(base, cand)
    kinds = moved_kinds(base_rows, cand_rows)
    return Comparison(
        base=base,
        cand=cand,
        coverage=coverage,
        resamples=resamples,
        seed=seed,
        cluster=cluster,
        clusters=None if groups is None else int(groups.max()) + 1,
        differences=differences,
        moved_counts={kind: int(kinds[:, j].sum()) for j, kind in enumerate(MOVE_KINDS)},
        moved_total=int(kinds.any(axis=1).sum()),
        moved=_listed_moves(kinds, matching, base, cand, base_rows, cand_rows, listed),
        listed=listed,
        notes=notes,
    )


def _taken(rows: Rows, chosen: IntArray) -> Rows:
    """These rows of a run, in this order: the run's own rows when they are all of them in their order (two runs of
    one dataset, the usual case: no copy)."""
    if chosen.size == len(rows) and bool((chosen == np.arange(chosen.size)).all()):
        return rows
    return rows.take(chosen)


def _setting(run: RunFiles, name: str, default: Any) -> Any:
    value = run.summary.get(name)
    return default if value is None or isinstance(value, bool) else value


def _coverage(
    base: RunFiles, matching: Matching, base_rows: Rows, cand_rows: Rows, listed: int, only_cand_ids: list[str]
) -> Coverage:
    """How much of the base the candidate covers, and which matched ids hold other items."""
    changed = np.zeros(len(base_rows), dtype=np.bool_)
    for name in ("chars_a", "chars_b", "words_a", "words_b"):
        changed |= base_rows.column(name) != cand_rows.column(name)
    human = {None: 0, "1": 1, "2": 2, "tie": 3}
    changed |= base_rows.per_kind(lambda r: human[r.human], np.int8) != cand_rows.per_kind(
        lambda r: human[r.human], np.int8
    )
    changed_at = np.flatnonzero(changed)
    b = base.verdicts
    return Coverage(
        base_items=len(b.rows),
        cand_items=int(matching.cand_rows.size + matching.only_cand.size),
        matched=int(matching.base_rows.size),
        only_base=int(matching.only_base.size),
        only_cand=int(matching.only_cand.size),
        changed=int(changed_at.size),
        only_base_ids=[b.rows.id(int(i)) for i in matching.only_base[:listed]],
        only_cand_ids=only_cand_ids,
        changed_ids=[base_rows.id(int(i)) for i in changed_at[:listed]],
        dataset_hashes=(_dataset_hash(base_rows), _dataset_hash(cand_rows)) if changed_at.size else None,
    )


def _dataset_hash(rows: Rows) -> str:
    """A short hash of what the run recorded of the items (id, lengths, human label): equal for the same items."""
    digest = hashlib.sha256()
    columns = [rows.column(name) for name in ("chars_a", "chars_b", "words_a", "words_b")]
    humans = [kind.human for kind in rows.kinds]
    codes = rows.codes()
    for i in range(len(rows)):
        record = [rows.id(i), *(int(column[i]) for column in columns), humans[codes[i]]]
        digest.update(json.dumps(record).encode())
    return digest.hexdigest()[:12]


def _listed_moves(
    kinds: NDArray[np.bool_],
    matching: Matching,
    base: RunFiles,
    cand: RunFiles,
    base_rows: Rows,
    cand_rows: Rows,
    listed: int,
) -> list[dict[str, Any]]:
    """The first `listed` moved items of each kind, in the base's order, with the lines that hold their replies."""
    chosen = sorted({int(i) for j in range(kinds.shape[1]) for i in np.flatnonzero(kinds[:, j])[:listed]})
    out = []
    for i in chosen:
        human = cand_rows.kinds[cand_rows.codes()[i]].human
        human = base_rows.kinds[base_rows.codes()[i]].human if human is None else human
        out.append(
            {
                "id": base_rows.id(i),
                "kinds": [kind for j, kind in enumerate(MOVE_KINDS) if kinds[i, j]],
                "human": human,
                "base_line": int(base.verdicts.line_numbers[matching.base_rows[i]]),
                "cand_line": int(cand.verdicts.line_numbers[i]),
            }
        )
    return out


def _notes(base: RunFiles, cand: RunFiles) -> list[str]:
    """What a reader must know before trusting the differences beyond coverage: other data, unfinished runs."""
    notes = []
    if base.summary.get("data") != cand.summary.get("data"):
        notes.append(f"different datasets: base {base.summary.get('data')!r}, candidate {cand.summary.get('data')!r}")
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


def _clusters(
    base: RunFiles, cand: RunFiles, matching: Matching, notes: list[str]
) -> tuple[IntArray | None, str | None]:
    """The clusters both runs resampled by, when each line carries its `cluster` (else items, with a note): numbered
    by first appearance among the matched items, an item without a value a cluster of its own."""
    field_name = base.summary.get("bootstrap_cluster")
    if field_name is None:
        return None, None
    if cand.summary.get("bootstrap_cluster") != field_name:
        notes.append(
            f"the runs' intervals resampled by different clusters (base {field_name!r}, candidate "
            f"{cand.summary.get('bootstrap_cluster')!r}): the paired bootstrap resamples items"
        )
        return None, None
    codes = base.verdicts.clusters[matching.base_rows]
    if not (codes >= 0).any():
        notes.append(
            f"the base run resampled by {field_name!r}, but its verdict lines do not carry the cluster (a run "
            "of an earlier release): the paired bootstrap resamples items"
        )
        return None, None
    alone = codes < 0  # its own cluster: a number no value has
    keys = np.where(alone, len(base.verdicts.cluster_values) + np.arange(codes.size), codes)
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    number = np.empty_like(order)
    number[order] = np.arange(order.size)
    groups: IntArray = number[inverse.ravel()].astype(np.int64)
    return groups, str(field_name)


def _cost(base: RunFiles, cand: RunFiles) -> Difference:
    """The whole runs' cost: a run's cost is not recorded per item, so it has no paired interval."""
    b, c = base.summary.get("cost_usd"), cand.summary.get("cost_usd")
    b = float(b) if isinstance(b, int | float) else None
    c = float(c) if isinstance(c, int | float) else None
    return Difference(b, c, None if b is None or c is None else c - b, None, None, None, None)
