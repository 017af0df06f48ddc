"""One run folder and the name of every file in it.

The run's writers (verdict lines, summary, provenance, ratings, the dry run, the report, the batch export, the
key log) and its readers (report, review, compare, the runs list, the audit) take a `RunDir` and ask it for a
path, instead of joining a folder and a file name of their own: each name is written here once. The names are a
contract with users and their scripts (docs/outputs.md): add, never rename.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

VERDICTS = "verdicts.jsonl"
SUMMARY = "summary.json"
PROVENANCE = "provenance.json"
RATINGS = "ratings.csv"
REPORT = "report.html"
DRY_RUN = "dry_run.json"
RUN_LOG = "run.log"
BATCH_INPUT = "batch_input.jsonl"
CACHE_KEYS = "cache_keys.json"
HYDRA = ".hydra"
MULTIRUN = "multirun.yaml"  # a sweep's record, in the folder above its jobs
PARTIAL = ".part"  # a file being written: renamed to its name once whole
TEMPORARY = ".tmp"


@dataclass(frozen=True)
class RunDir:
    """The folder of one run (`hydra.run.dir`, or a sweep's job folder)."""

    root: Path

    @property
    def verdicts(self) -> Path:
        """verdicts.jsonl: one line per item, written when the run completes."""
        return self.root / VERDICTS

    @property
    def verdicts_partial(self) -> Path:
        """The verdicts decided so far, streamed while the run works; kept when it stops early."""
        return self.root / (VERDICTS + PARTIAL)

    @property
    def summary(self) -> Path:
        return self.root / SUMMARY

    @property
    def provenance(self) -> Path:
        return self.root / PROVENANCE

    @property
    def ratings(self) -> Path:
        return self.root / RATINGS

    @property
    def report(self) -> Path:
        return self.root / REPORT

    @property
    def dry_run(self) -> Path:
        return self.root / DRY_RUN

    @property
    def batch_input(self) -> Path:
        """judge.mode=export's batch file, for the user to hand to a provider."""
        return self.root / BATCH_INPUT

    @property
    def cache_keys(self) -> Path:
        """The cache keys of the run's paid calls (what `cache export --run` bundles)."""
        return self.root / CACHE_KEYS

    @property
    def cache_keys_partial(self) -> Path:
        return self.root / (CACHE_KEYS + PARTIAL)

    @property
    def cache_keys_temporary(self) -> Path:
        return self.root / (CACHE_KEYS + TEMPORARY)

    @property
    def hydra_dumps(self) -> list[Path]:
        """The configuration Hydra saved (.hydra/*.yaml), and a sweep's multirun.yaml one folder up."""
        return [*sorted((self.root / HYDRA).glob("*.yaml")), self.root.parent / MULTIRUN]

    def make(self) -> RunDir:
        """The folder, created if it is not there yet."""
        self.root.mkdir(parents=True, exist_ok=True)
        return self


LEFTOVERS = frozenset({HYDRA, SUMMARY, RUN_LOG, VERDICTS + PARTIAL, CACHE_KEYS + PARTIAL})
"""What a run that stopped before its result leaves behind: none of it is read by a rerun."""


def is_leftover(name: str) -> bool:
    """Whether a file or folder of a run folder is one of LEFTOVERS, or a part's verdicts or rows
    (verdicts.jsonl.part.N, verdicts.jsonl.part.N.rows) that a run judged in parts and killed left."""
    prefix = VERDICTS + PARTIAL + "."
    number = name[len(prefix) :].removesuffix(".rows")
    return name in LEFTOVERS or (name.startswith(prefix) and number.isdigit())
