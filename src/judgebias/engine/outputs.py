"""The files a run writes: verdict lines streamed as items are decided, summary.json, provenance.json, ratings.csv,
the dry run's estimate. Field names here are a contract other tools read.

verdicts.jsonl is streamed to `verdicts.jsonl.part` as items are decided and renamed when the run completes, so
a finished run's files are whole and an interrupted run's partial file says what it is.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import platform
import shutil
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence, Sized
from pathlib import Path
from typing import Any

import msgspec

from judgebias.backends import Call, Judging
from judgebias.config.pricing import call_cost
from judgebias.config.schema import Config, judges_of
from judgebias.core.errors import RunFilesUnwritable
from judgebias.core.item import Item
from judgebias.core.prefix import cacheable_tokens, prompt_text, shared_prefix
from judgebias.core.record import CallResult, ItemResult
from judgebias.core.redaction import Redactor, redact_tree
from judgebias.core.summary import DryRunEstimate, Summary
from judgebias.core.tokens import estimate_prompt_tokens
from judgebias.core.verdict_lines import NO_CLUSTER, encoded, judge_of, line_of
from judgebias.figures.formatting import supported_ratings
from judgebias.io.files import keep_whole_lines, unwritable, write_csv, write_json
from judgebias.io.revision import git_revision
from judgebias.io.run_dir import RunDir
from judgebias.io.tokenizer import WORDS, load_tokenizer
from judgebias.io.versions import installed_versions

PACKAGES = ("judgebias", "hydra-core", "omegaconf", "openai", "tenacity", "diskcache", "numpy", "pyarrow", "datasets")


class VerdictWriter:
    """Streams one verdicts.jsonl line per item, in dataset order, as items are decided."""

    def __init__(
        self,
        run: RunDir,
        *,
        ensemble: bool,
        clusters: dict[str, object] | None = None,
        partial: Path | None = None,
    ) -> None:
        run.make()
        self.clusters = {} if clusters is None else clusters  # item id -> its value of the cluster field (popped)
        self.final = run.verdicts
        self.partial = partial or run.verdicts_partial  # a part of the run judged in another process: its own file
        self.ensemble = ensemble
        self.lines = 0
        self.file = self.partial.open("wb")

    def write(
        self,
        item: Item,
        rows: dict[str, ItemResult],
        combined: ItemResult,
        calls: Mapping[str, Sequence[CallResult]] | None = None,
    ) -> None:
        """One item's line: the judge's row, or the ensemble's `combined` row with every judge's calls inside.

        `calls`: each judge's calls with their replies, when its row keeps them without (the rows a run keeps)."""
        cluster = self.clusters.pop(item.id, NO_CLUSTER)  # wanted once: the run's memory of it goes
        if not self.ensemble:
            judged = None if calls is None else calls[next(iter(rows))]
            line = line_of(combined, judged, cluster=cluster)
        else:
            judges = {name: judge_of(row, None if calls is None else calls[name]) for name, row in rows.items()}
            line = line_of(combined, with_calls=False, cluster=cluster, judges=judges)
        text = encoded(line)
        try:
            self.file.write(text + b"\n")
        except OSError as error:
            raise self._stopped(error) from None
        self.lines += 1

    def append(self, lines: Path, count: int) -> None:
        """Add the `count` lines another process wrote for the items after these (a part of the run); a disk that
        fills meanwhile leaves the file as it was before (whole lines)."""
        try:
            self.file.flush()
        except OSError as error:
            raise self._stopped(error) from None
        before = os.fstat(self.file.fileno()).st_size
        try:
            with lines.open("rb") as part:
                _copy_bytes(part, self.file.fileno())
        except OSError as error:
            raise self._stopped(error, before, " (joining the parts judged on other cores)") from None
        self.file.seek(0, os.SEEK_END)  # the file object's own idea of where it is: after the bytes added
        self.lines += count

    def close(self) -> None:
        """The lines are all written: the file stays as it is (a part's, for the process that joins the parts; the
        run's, until its summary is written)."""
        try:
            self.file.close()
        except OSError as error:
            raise self._stopped(error) from None

    def commit(self) -> None:
        """The run completed and its summary is written: the file becomes verdicts.jsonl."""
        self.close()
        os.replace(self.partial, self.final)

    def discard(self) -> None:
        """The run cannot keep these lines (its data file has a problem found as it was judged): no file is left."""
        with contextlib.suppress(OSError):
            self.file.close()
        self.partial.unlink(missing_ok=True)
        self.lines = 0

    def abandon(self) -> None:
        """The run stopped early: keep what was decided in verdicts.jsonl.part as whole lines (no file when nothing
        was): a disk that filled meanwhile may have taken only part of what was buffered."""
        try:
            self.file.close()
        except OSError:
            keep_whole_lines(self.partial)
        if not self.lines:
            self.partial.unlink(missing_ok=True)

    def _stopped(self, error: OSError, before: int | None = None, doing: str = "") -> RunFilesUnwritable:
        """A write the disk refused: the file cut back to whole lines (to `before` bytes, the size it had before a
        failed append), and the one line the run ends with."""
        with contextlib.suppress(OSError):
            self.file.close()
        keep_whole_lines(self.partial, before)
        return unwritable(self.partial, error, doing=doing)


def _copy_bytes(source: Any, target: int) -> None:
    """The rest of a file's bytes added at the target's offset: copied by the kernel where it can (Linux
    copy_file_range: a part's hundreds of megabytes never pass through this process), else read and written."""
    copy_range = getattr(os, "copy_file_range", None)
    if copy_range is not None:
        try:
            while copy_range(source.fileno(), target, 1 << 30):
                pass
            return
        except OSError:  # not between these files (another file system, an old kernel): copied here instead
            pass
    with open(target, "wb", closefd=False) as out:
        shutil.copyfileobj(source, out, 1 << 20)


def verdict_line(
    row: ItemResult, *, with_calls: bool = True, calls: Sequence[CallResult] | None = None
) -> dict[str, Any]:
    """The verdicts.jsonl object for one item's row, as a reader of the file gets it; its calls' replies from
    `calls` when given, else from the row's."""
    decoded: dict[str, Any] = msgspec.json.decode(encoded(line_of(row, calls, with_calls=with_calls)))
    return decoded


def write_run(
    run: RunDir,
    config: Config,
    summary: Summary,
    ratings: list[dict[str, Any]],
    verdicts: VerdictWriter | None = None,
) -> None:
    """summary.json, then verdicts.jsonl (`verdicts`: its lines, kept as .part until the summary is written: a run
    that dies on its way there leaves no verdicts.jsonl without a summary), ratings.csv (when several models were
    compared), provenance.json and report.html. A file the disk refuses: one line, RunFilesUnwritable."""
    redact = Redactor.for_config(dataclasses.asdict(config))  # a server's text and the config's URLs may hold them
    path = run.summary
    try:
        write_json(path, redact_tree(summary, redact))
        if verdicts is not None:
            path = run.verdicts
            verdicts.commit()
        if ratings:
            path = run.ratings
            write_ratings(run.ratings, ratings)
        run_provenance = redact_tree(provenance(config, summary), redact)
        path = run.provenance
        write_json(run.provenance, run_provenance)
        if config.report:
            from judgebias.report.run_report import write_report  # its template machinery only when a report is wanted

            path = run.report
            write_report(run, summary, ratings, run_provenance)
    except OSError as error:
        if path == run.summary:
            raise unwritable(path, error) from None
        stopped = unwritable(path, error, "summary.json is written and the verdicts are in verdicts.jsonl")
        stopped.run_written = True  # a failure record must not replace the summary
        raise stopped from None


def write_ratings(path: Path, ratings: Iterable[dict[str, Any]]) -> None:
    """ratings.csv: model, rating, low, high, rank, n (the items the model appears in), then the same with style
    control (style_rating, style_low, style_high, style_rank; empty when the answers never differ in formatting);
    every rating rounded to what its interval supports, the step in rounded_to / style_rounded_to; where the data
    has labels, people_rating, people_low, people_high (prediction-powered, docs/calibration.md)."""
    columns = ["model", "rating", "low", "high", "rank", "n", "style_rating", "style_low", "style_high", "style_rank"]
    columns += ["rounded_to", "style_rounded_to"]
    rows = [supported_ratings(row) for row in ratings]
    if any("people_rating" in row for row in rows):  # the data has labels: the ratings as people would give them
        columns += ["people_rating", "people_low", "people_high", "people_rounded_to"]
    write_csv(path, columns, rows)


def config_hash(config: Config) -> str:
    """A hash of what defines the experiment (judges, rubric, data), to tell runs of the same setup apart."""
    plain = {
        "judges": {name: dataclasses.asdict(judge) for name, judge in judges_of(config).items()},
        "rubric": dataclasses.asdict(config.rubric),
        "data": dataclasses.asdict(config.data),
    }
    return hashlib.sha256(json.dumps(plain, sort_keys=True).encode()).hexdigest()[:16]


def provenance(config: Config, summary: Summary) -> dict[str, Any]:
    """Where the numbers came from: resolved config (it holds env var names, never keys), versions, git revision."""
    versions = installed_versions(PACKAGES)
    return {
        "config": dataclasses.asdict(config),  # the typed, resolved Config: as OmegaConf.to_container gives it
        "config_hash": config_hash(config),
        "models_reported": summary.get("models_reported", []),
        # The config is what was asked and sent; these are the settings its replies show were not honoured.
        "settings_not_honoured": summary.get("settings_not_honoured", {}),
        "imported_replies": summary.get("imported_replies"),  # None: no reply came from a bundle
        "python": platform.python_version(),
        "packages": versions,
        "git_revision": git_revision(Path(__file__).resolve().parent),
        "argv": sys.argv[1:],
    }


def prompt_counter(config: Config) -> Callable[[str], int] | None:
    """The tokenizer count that prompt estimates use (dry run, spending cap); None: characters / 4."""
    name = config.data.normalize.tokenizer
    return None if name == WORDS else load_tokenizer(name, config.judge.base_url, config.judge.timeout).count


def dry_run_estimate(
    config: Config,
    judgings: list[Judging],
    items: Sized,
    calls: Iterable[Call],
) -> DryRunEstimate:
    """Calls that would go live (cache misses), estimated tokens and cost; nothing is called.

    `calls` are the run's calls with their cache keys and hits, as the runner looks them up (a None key: a free
    judge, never cached).
    """
    per_judge: dict[str, dict[str, Any]] = {
        j.name: {
            "calls": 0,
            "calls_live": 0,
            "calls_cached": 0,
            "calls_offline": 0,
            "prompt_tokens_est": 0,
            "prompt_tokens_shared_est": 0,
            "cost_usd_est": 0.0,
            "cost_usd_est_cached": 0.0,
            "cost_usd_est_batch": 0.0,
        }
        for j in judgings
    }
    seen: set[str] = set()
    previous: dict[str, str] = {}  # each judge's last live prompt: the one a call is sent right after
    name = config.data.normalize.tokenizer
    count = prompt_counter(config)
    for judging, _item, request, key, hit in calls:
        entry = per_judge[judging.name]
        entry["calls"] += 1
        if key is None:  # a judge that sends no request: nothing goes live, nothing costs
            entry["calls_offline"] += 1
            continue
        if key in seen or hit is not None:
            entry["calls_cached"] += 1
            continue
        seen.add(key)
        tokens = estimate_prompt_tokens(request.messages, count)
        text = prompt_text(request.messages)
        shared = cacheable_tokens(tokens, shared_prefix(previous.get(judging.name, ""), text) / max(1, len(text)))
        previous[judging.name] = text
        entry["calls_live"] += 1
        entry["prompt_tokens_est"] += tokens
        entry["prompt_tokens_shared_est"] += shared
        budget = judging.config.max_tokens or 0  # the most a reply can cost
        entry["cost_usd_est"] += call_cost(judging.config, tokens, budget)
        entry["cost_usd_est_cached"] += call_cost(judging.config, tokens, budget, cached=shared)
        entry["cost_usd_est_batch"] += call_cost(judging.config, tokens, budget, batched=True)
    return {
        "dry_run": True,
        "judge": judgings[0].name if len(judgings) == 1 else "ensemble",
        "rubric": config.rubric.name,
        "data": config.data.name,
        "n_items": len(items),
        "tokenizer": name if count is not None else "chars/4",  # what counted prompt_tokens_est
        "calls_total": sum(e["calls"] for e in per_judge.values()),
        "calls_live": sum(e["calls_live"] for e in per_judge.values()),
        "calls_cached": sum(e["calls_cached"] for e in per_judge.values()),
        "calls_offline": sum(e["calls_offline"] for e in per_judge.values()),
        "prompt_tokens_est": sum(e["prompt_tokens_est"] for e in per_judge.values()),
        "prompt_tokens_shared_est": sum(e["prompt_tokens_shared_est"] for e in per_judge.values()),
        "cost_usd_est": round(sum(e["cost_usd_est"] for e in per_judge.values()), 6),
        "cost_usd_est_cached": round(sum(e["cost_usd_est_cached"] for e in per_judge.values()), 6),
        "cost_usd_est_batch": round(sum(e["cost_usd_est_batch"] for e in per_judge.values()), 6),
        "judges": per_judge,
    }
