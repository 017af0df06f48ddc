"""The run: every item judged twice per judge, replies cached as they arrive, verdicts written as they are decided.

`run_experiment(config, run_dir)` is the whole job, callable without Hydra. Cache hits are resolved inline
(no thread hop: a cached rerun costs little more than start-up); misses go to a thread pool of
`max_concurrency` workers; the two calls of one item are independent tasks. Items are finalised in dataset
order behind a bounded window, so memory stays flat however long the dataset. When every judge is free (scripted,
replayed) and the items are many, each core judges a part of them (engine.parts), joined in order.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import itertools
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from judgebias.backends import Call, Judging, build_backend
from judgebias.backends.base import Backend
from judgebias.batch.prefill import prefill
from judgebias.cache import ReplyStore, open_cache, sample_key
from judgebias.cache.age import StoredTimes, stamped
from judgebias.cache.bundle import KeyLog
from judgebias.cache.disk import RESERVE_BYTES, free_space, megabytes
from judgebias.config.checks import check_settings, price_notes, unread_settings
from judgebias.config.schema import BackendKind, CacheMode, Config, LabelStyle, judges_of
from judgebias.core.errors import (
    CacheFull,
    CacheUnavailable,
    CallFailed,
    FailureKind,
    FatalJudgeError,
    NotSent,
    RunStopped,
    UserError,
)
from judgebias.core.item import Item, shared_name
from judgebias.core.judged import ensemble_results, item_result
from judgebias.core.prefix import layout_note, layout_share
from judgebias.core.prompt import context_block, render_messages, shown
from judgebias.core.reading import read_reply
from judgebias.core.record import CallResult, Reply, Request
from judgebias.core.redaction import public_endpoint
from judgebias.core.summary import DryRunEstimate, Summary
from judgebias.engine import outputs
from judgebias.engine.budget import Budget, Meter, Spend, UnusedAttempts, charged, metered, worst_case
from judgebias.engine.items import Part, RunItems
from judgebias.engine.parts import JudgePart, PartJudged, PartProcess, parts_wanted, started
from judgebias.engine.progress import Progress
from judgebias.figures.clustering import Clustering
from judgebias.figures.corrected import Design
from judgebias.figures.provenance import foreign_reason, judge_origin, routed_elsewhere
from judgebias.figures.rows import Rows
from judgebias.figures.summary import build_summary, ratings_for
from judgebias.io.dataset import resolve_path
from judgebias.io.design import read_design
from judgebias.io.files import write_json
from judgebias.io.run_dir import RunDir
from judgebias.process.command import say
from judgebias.report import console


@dataclasses.dataclass(slots=True)
class Pending:
    """A call whose reply is known (hit, free backend) or on its way (future)."""

    reply: Reply | None = None
    future: Future[tuple[Reply, bool]] | None = None  # the reply, and whether another process paid for it
    cached: bool = False  # answered without a request of its own
    error: str | None = None
    failure: FailureKind | None = None  # what went wrong, with `error`
    batched: bool = False  # answered by a batch collected in this run


BYTES_PER_REPLY = 8192  # what one stored reply costs the disk at most for short replies (a WAL frame, a page)


class FullCache:
    """The first reply the cache could not store: from then on no new call is sent (a full disk stops the spending).

    Calls already sent still land: their replies are used, counted, and kept in the cache folder's outbox.
    """

    def __init__(self) -> None:
        self.error: CacheFull | None = None
        self.lost = 0  # paid replies neither stored nor kept in the outbox
        self.unsent = 0  # calls not sent because the cache was full
        self._lock = threading.Lock()

    @property
    def full(self) -> bool:
        """Whether a reply could not be stored in this run."""
        return self.error is not None

    def record(self, error: CacheFull) -> None:
        """A reply the cache refused: stop sending; count it if it could not even be kept in the outbox."""
        with self._lock:
            self.error = self.error or error
            self.lost += not error.kept

    def not_sent(self) -> str:
        """Count a call left unsent; the reason its verdicts.jsonl line gives."""
        with self._lock:
            self.unsent += 1
        return "not sent: the cache is full (sending stopped at the first reply it could not store)"

    def ending(self, directory: Path, received: int) -> CacheFull:
        """The one line a run that filled its cache ends with (its files are written by then)."""
        assert self.error is not None
        needed = RESERVE_BYTES + self.unsent * BYTES_PER_REPLY
        lost = (
            f"; {self.lost} of them could not be kept at all (their verdicts are in verdicts.jsonl; a rerun pays "
            "for them again)"
            if self.lost
            else ""
        )
        ended = CacheFull(
            f"{self.error}: sending stopped there, {self.unsent} calls were not sent. Make at least "
            f"{megabytes(needed)} free there ({megabytes(free_space(directory))} now) or set "
            f"cache.dir=..., then rerun the same command: it sends only those {self.unsent} calls. The "
            f"{received} replies received are counted in summary.json and kept in the cache folder{lost}"
        )
        ended.run_written = True
        return ended


class ImportedReplies:
    """The replies of this run that came from imported bundles (marked by import), and which bundles."""

    def __init__(self) -> None:
        self.count = 0
        self.bundles: dict[str, dict[str, Any]] = {}  # by the file's sha256

    def add(self, hit: dict[str, Any]) -> None:
        """Count a cached reply if a bundle brought it."""
        origin = hit.get("bundle")
        if isinstance(origin, dict):
            self.count += 1
            self.bundles.setdefault(str(origin.get("sha256")), origin)

    def record(self) -> dict[str, Any]:
        """summary.json's `imported_replies`."""
        return {"replies": self.count, "bundles": list(self.bundles.values())}

    def mismatches(self, judges: dict[str, dict[str, Any]]) -> list[str]:
        """One warning per bundle whose manifest names judges (endpoint, model) this run's config does not."""
        ours = {(public_endpoint(judge.get("endpoint")), judge.get("model")) for judge in judges.values()}
        warnings = []
        for origin in self.bundles.values():
            theirs = {(j.get("endpoint"), j.get("model")) for j in origin.get("judges") or [] if isinstance(j, dict)}
            if theirs != ours:
                warnings.append(
                    f"warning: bundle {origin.get('file')} says its replies came from "
                    f"{sorted(map(str, theirs)) or 'no judge named'}, this run's judges are {sorted(map(str, ours))}"
                )
        return warnings


def run_experiment(
    config: Config, run_dir: RunDir | Path, *, echo: Callable[[str], None] = say, overrides: Sequence[str] = ()
) -> Summary | DryRunEstimate:
    """Judge the dataset, write verdicts.jsonl, summary.json and the rest into `run_dir`; return the summary.

    `overrides` (the command line's) are named in the printed header, so what makes the run different shows.
    """
    run = run_dir if isinstance(run_dir, RunDir) else RunDir(run_dir)
    check_settings(config)
    design = _design(config)  # a sample of another dataset stops the run here, before any judge call
    items, judgings, notes = _judges_and_items(config)
    clustering, clusters = items.clustering()  # a wrong field stops the run here
    items.release_check()
    for note in notes:
        echo(f"note: {note}")
    cache = open_cache(config.cache)  # an unreachable Redis stops the run here, before any judge call
    for judging in judgings:
        judging.backend.share_pacing(cache.fleet)
    used = KeyLog(run, [judging.name for judging in judgings if judging.backend.paid])
    try:
        if config.dry_run:
            calls = _looked_up(_requests(config, judgings, items), cache)
            estimate = outputs.dry_run_estimate(config, judgings, items, calls)
            write_json(run.dry_run, estimate)
            echo(console.format_dry_run(estimate))
            return estimate
        judged = _judge(_Job(config, judgings, items, cache, run, used, clusters))
        if items.checked_as_judged:
            clustering, _ = items.clustering()  # known now that every part is read
        items.release()
        used.finish(_paid_judges(judgings))
    except CacheUnavailable as error:
        raise CacheUnavailable(
            f"{error}: the run stopped; every reply received is kept (on this node's disk when Redis missed it, "
            "pushed to Redis by the next run): rerun the same command to send only the calls never answered"
        ) from None
    finally:
        cache.close()
        used.abandon()  # a run that stopped early leaves no half-written key list
    summary = _summarise(config, judgings, judged, notes, clustering, echo, design)
    ratings = ratings_for(judged.combined, config, clustering, design)
    outputs.write_run(run, config, summary, ratings, judged.verdicts)
    echo(console.format_summary(summary, overrides))
    if judged.full.full:
        raise judged.full.ending(cache.directory, int(summary.get("calls_live") or 0))
    return summary


def _design(config: Config) -> Design | None:
    """The sampling design the labels were drawn by (calibration.sample), checked against the run's dataset."""
    sample = config.calibration.sample
    if sample is None:
        return None
    return read_design(Path(sample), resolve_path(config.data.path, config.data.root))


def _judges_and_items(config: Config) -> tuple[RunItems, list[Judging], list[str]]:
    """The items every judge can judge, the judges with their backends, and the notes to print before calling."""
    items = RunItems(config, check_as_judged=_checked_as_judged(config))
    judgments = resolve_path(config.data.judgments, config.data.root) if config.data.judgments else None
    judgings = [
        Judging(name, judge, build_backend(judge, config.rubric, judgments))
        for name, judge in judges_of(config).items()
    ]
    notes: list[str] = [
        note for judge in judges_of(config).values() for note in [*price_notes(judge), *unread_settings(judge)]
    ]
    rubric = config.rubric
    if any(judging.backend.paid for judging in judgings):
        share = layout_share(rubric.system, rubric.user, rubric.labels, rubric.tie_label)
        notes += [note] if (note := layout_note(rubric.name, share)) is not None else []
    for judging in judgings:
        left_out = items.retain(judging.backend.has) if judging.backend.selective else 0
        if left_out:
            notes.append(f"judge {judging.name!r} has no recording for {left_out} items: judged the other {len(items)}")
    if not len(items) and not items.checked_as_judged:
        raise UserError("no item is left to judge (the replayed judges share no recorded item)")
    return items, judgings, notes


def _checked_as_judged(config: Config) -> bool:
    """Whether a large data file is checked as it is judged, each part of it read once, in its own process: when
    every judge is scripted (judging costs nothing and waits on nothing, and every item is judged)."""
    return not config.dry_run and all(judge.backend == BackendKind.scripted for judge in judges_of(config).values())


@dataclasses.dataclass
class _Judged:
    """What judging every item left for the summary: the rows, and the counts kept on the way."""

    per_judge: dict[str, Rows]
    combined: Rows
    failed_by_kind: collections.Counter[str]
    elapsed: float
    batches: list[dict[str, Any]]
    full: FullCache
    imported: ImportedReplies
    stored: StoredTimes
    spending: _Spending
    budget: Budget | None
    verdicts: outputs.VerdictWriter  # its lines written, kept as verdicts.jsonl.part until the summary is


@dataclasses.dataclass(frozen=True)
class _Job:
    """What every judging step of one run works on: its settings, judges, items, cache, folder and key log, and
    each item's cluster (by id) when the run clusters."""

    config: Config
    judgings: list[Judging]
    items: RunItems
    cache: ReplyStore
    run: RunDir
    used: KeyLog
    clusters: dict[str, object] | None = None


def _judge(job: _Job) -> _Judged:
    """The batch pre-pass (judge.mode=batch/export/import), then every call, under the spending cap."""
    config, judgings, items, cache, run = job.config, job.judgings, job.items, job.cache, job.run
    started = time.monotonic()
    budget = Budget.of(config)
    trial = budget.trial() if budget is not None else None  # the batch pre-pass's own count of the cap
    spending = _Spending(budget)
    prefilled = prefill(
        judgings,
        _looked_up(_requests(config, judgings, items), cache),
        cache,
        run,
        progress=config.progress,
        refusal=_Spending(trial).refusal if trial is not None else None,
    )
    if budget is not None and trial is not None:
        budget.take_refusals(trial)
    if prefilled.batched and cache.mode == CacheMode.refresh:
        cache.mode = CacheMode.use  # the batch refreshed every call: the rest of the run reads its replies
    full, imported, stored = FullCache(), ImportedReplies(), StoredTimes()
    # Every judge free (nothing sent, cached or paid): each core judges a part of the items.
    parts = job.items.parts(1 if any(j.backend.paid for j in judgings) else parts_wanted(items.expected()))
    per_judge, combined, failed_by_kind, verdicts = _judge_all(
        job, full, imported, prefilled.batched, stored, spending, parts
    )
    return _Judged(
        per_judge, combined, failed_by_kind, time.monotonic() - started, prefilled.batches, full, imported, stored,
        spending, budget, verdicts,
    )  # fmt: skip


def _summarise(
    config: Config,
    judgings: list[Judging],
    judged: _Judged,
    notes: list[str],
    clustering: Clustering | None,
    echo: Callable[[str], None],
    design: Design | None = None,
) -> Summary:
    """summary.json: the figures of the rows, then what the backends, the cap and the imports counted."""
    budget, full = judged.budget, judged.full
    if budget is not None and budget.reached:
        notes.append(budget.note())
    if full.full:
        notes.append(f"the cache filled up: {full.unsent} calls were not sent; rerun after freeing space")
    notes += [note for judging in judgings for note in judging.backend.notes()]
    live = cached = 0  # counted once per kind of row, not listed: a million items' calls
    for rows in judged.per_judge.values():
        for kind, times in rows.counted():
            for call in kind.calls:
                live += times * (not call.offline)
                cached += times * (not call.offline and call.cached)
    if live and cached == live:
        notes.append(judged.stored.note(live))
    summary = build_summary(
        config,
        judged.per_judge,
        judged.combined,
        notes,
        judged.failed_by_kind.total(),
        judged.elapsed,
        judged.batches,
        failed_by_kind=judged.failed_by_kind,
        retries=sum(judging.backend.retries for judging in judgings),
        timeouts=sum(judging.backend.timeouts for judging in judgings),
        clustering=clustering,
        design=design,
    )
    gateway_failed = sum(judging.backend.gateway_retries_failed for judging in judgings)
    summary["gateway_retries"] = int(summary.get("gateway_retries") or 0) + gateway_failed
    summary["gateway_errors_retries_unknown"] = sum(judging.backend.gateway_errors_unknown for judging in judgings)
    # Asked only when a name nobody declared answered through a gateway, and never under cache.mode=only, which
    # opens no connection: a plain or cached run without such a name loads no SDK and sends nothing for it.
    ask = summary.get("answered_unexpected") and config.cache.mode != CacheMode.only
    summary["routed_elsewhere"] = _routed_elsewhere(judgings, judged.per_judge) if ask else None
    _add_spending(summary, judged.spending, budget)
    if judged.imported.count:
        summary["imported_replies"] = judged.imported.record()
        for warning in judged.imported.mismatches(_paid_judges(judgings)):
            echo(warning)
    return summary


def _add_spending(summary: Summary, spending: _Spending, budget: Budget | None) -> None:
    """summary.json's billed_unused and budget, with their notes; the status `budget` when the cap was reached."""
    if spending.unused.attempts:
        unused = spending.unused.record()
        summary["billed_unused"] = unused
        summary["cost_usd"] = round(summary.get("cost_usd", 0.0) + unused["usd"], 6)
        summary["notes"].append(
            f"{unused['attempts']} attempts were billed but not used (no choices, cut off and asked again, or timed "
            f"out): ${unused['usd']:.4f} of cost_usd"
            + (
                f", {unused['at_bound']} of them counted at their bound (no usage reported)"
                if unused["at_bound"]
                else ""
            )
        )
    if budget is not None:
        summary["budget"] = budget.record()
        if budget.unmetered:
            summary["notes"].append(
                f"{budget.unmetered} replies reported no usage: the spending cap counted each at its bound (its "
                "prompt's bytes and a full judge.max_tokens), so budget.used_usd is an upper bound, and cost_usd "
                "(the usage servers reported) leaves them out"
            )
        if budget.reached:
            summary["status"] = "budget"


def _paid_judges(judgings: list[Judging]) -> dict[str, dict[str, Any]]:
    """Each paid judge's backend, endpoint and model, as its cache keys record them (for cache_keys.json)."""
    judges: dict[str, dict[str, Any]] = {}
    for judging in judgings:
        if judging.backend.paid:
            request = judging.backend.cache_request([])
            judges[judging.name] = {
                "backend": str(judging.config.backend),
                "endpoint": request.get("endpoint"),
                "model": request.get("model"),
            }
    return judges


def _requests(
    config: Config, judgings: list[Judging], items: Iterable[Item]
) -> Iterator[tuple[Judging, Item, Request]]:
    """Every call of the run, item by item: for each judge, (a, b) then (b, a) when that order exists."""
    rendered = _rendered(judgings)
    for item in items:
        for judging, request in _item_requests(config, judgings, item, rendered):
            yield judging, item, request


def _rendered(judgings: list[Judging]) -> dict[str, bool]:
    """Whether each judge reads its calls' chat messages (else they are not rendered)."""
    return {j.name: j.backend.paid or j.backend.reads_messages for j in judgings}


def _item_requests(
    config: Config, judgings: list[Judging], item: Item, rendered: Mapping[str, bool]
) -> Iterator[tuple[Judging, Request]]:
    """One item's calls: for each judge, (a, b) then (b, a) when that order exists, each of judge.samples."""
    rubric = config.rubric
    for judging in judgings:
        for order in _orders(judging.backend, item):
            view = shown(item, order, rubric.labels)
            messages = (
                render_messages(item, view, rubric.system, rubric.user, rubric.tie_label)
                if rendered[judging.name]
                else []
            )
            for sample in range(judging.config.samples):  # judge.samples asks of this order, in a row
                yield judging, Request(item, view, messages, sample)


def _orders(backend: Backend, item: Item) -> tuple[int, ...]:
    return (1,) if backend.one_order(item) else (1, 2)


GATEWAY_ORIGIN = frozenset({"deployment", "deployment_id", "api_base"})  # origin fields only a gateway reports


def _through_a_gateway(rows: Rows) -> bool:
    """Whether a reply of these rows (sent now or cached) named a gateway's deployment."""
    return any(GATEWAY_ORIGIN & (call.origin or {}).keys() for kind in rows.kinds for call in kind.calls)


def _routed_elsewhere(judgings: Sequence[Judging], per_judge: Mapping[str, Rows]) -> dict[str, Any] | None:
    """For each judge whose calls a name nobody declared answered through a gateway, whether its model is one the
    gateway itself serves (its model list, asked once now): then the gateway routed the run elsewhere (an
    alias shadowing it)."""
    found = {}
    for judging in judgings:
        config, rows = judging.config, per_judge[judging.name]
        if not _through_a_gateway(rows):  # no gateway named a deployment: nothing to ask, no SDK import
            continue
        names = judge_origin(rows, config.model, config.other_models())["answered_unexpected"]
        routed = routed_elsewhere(config.model, names, judging.backend.gateway_routes()) if names else None
        if routed is not None:
            found[judging.name] = routed
    if not found:
        return None
    return next(iter(found.values())) if len(judgings) == 1 else found


JudgedRows = tuple[dict[str, Rows], Rows, collections.Counter[str]]  # each judge's rows, the combined, failed calls
Judged = tuple[dict[str, Rows], Rows, collections.Counter[str], outputs.VerdictWriter]  # and the verdicts' writer


def _judge_all(
    job: _Job,
    full: FullCache,
    imported: ImportedReplies,
    batched: AbstractSet[str] = frozenset(),
    stored: StoredTimes | None = None,
    spending: _Spending | None = None,
    parts: Sequence[Part] = (),
) -> Judged:
    """Run every call, finalise items in order as their calls complete, stream verdicts to disk.

    Returns each judge's rows, the run's combined rows (the ensemble's merge, made once per item as it is
    written; the one judge's rows otherwise) and the number of failed calls. `stored` collects the stored times
    of the cached replies used. With several `parts` (free judges only) the first is judged here and each later
    one in a forked process: the same lines, joined in order into verdicts.jsonl, and the same rows.
    """
    helpers = _started_parts(job, parts[1:])
    waiting = list(helpers)
    writer = outputs.VerdictWriter(job.run, ensemble=len(job.judgings) > 1, clusters=job.clusters)
    progress = Progress(
        job.items.expected(), job.config.progress, job.judgings, elsewhere=lambda: sum(h.done for h in waiting)
    )
    read_elsewhere = []  # what each part's process found in its lines, when the items are checked as judged
    try:
        items = job.items.part(parts[0]) if helpers else job.items
        per_judge, combined, failures = _judge_items(
            job, items, writer, progress, full, imported, batched, stored, spending
        )
        for helper in helpers:
            judged = helper.result()
            waiting.remove(helper)
            writer.append(helper.lines, judged.lines)
            for name, rows in judged.per_judge.items():
                per_judge[name].extend(rows)
            if judged.combined is not None:
                combined.extend(judged.combined)
            failures.update(judged.failures)
            progress.absorb(judged.lines, judged.calls, judged.cached)
            read_elsewhere.append(judged.read)
        if job.items.checked_as_judged:
            _conclude_check(job.items, read_elsewhere, writer)
            progress.settle()
        writer.close()  # verdicts.jsonl.part: renamed once the summary is written (outputs.write_run)
    except BaseException:
        writer.abandon()  # keep what was decided in verdicts.jsonl.part (of the first part, when there are parts)
        raise
    finally:
        for helper in helpers:
            helper.stop()
        progress.close()
    return per_judge, combined, failures, writer


def _conclude_check(items: RunItems, read_elsewhere: list[Any], writer: outputs.VerdictWriter) -> None:
    """Items checked as judged: any problem of the file stops the run now, its lines thrown away (a free judge
    loses nothing); lines that name a cluster the run turns out not to have lose it."""
    try:
        drop_clusters = items.conclude(read_elsewhere)
    except UserError:
        writer.discard()
        raise
    if drop_clusters:
        writer.drop_clusters()


def _started_parts(job: _Job, parts: Sequence[Part]) -> list[PartProcess]:
    """A forked process judging each of these parts (numbered from 1); none when a process cannot be made now:
    then this process judges every item."""
    if not parts:
        return []
    job.run.make()  # the parts write into it
    partial = job.run.verdicts_partial

    def start(numbered: tuple[int, Part]) -> PartProcess:
        number, part = numbered
        return PartProcess(_part_judge(job, part), partial.with_name(f"{partial.name}.{number}"))

    return started(start, enumerate(parts, start=1))


def _part_judge(job: _Job, part: Part) -> JudgePart:
    """What a part's process does: judge the part's items into its own lines' file, return its rows."""

    def judge(lines: Path, done: Any) -> PartJudged:
        ensemble = len(job.judgings) > 1
        writer = outputs.VerdictWriter(job.run, ensemble=ensemble, clusters=job.clusters, partial=lines)
        progress = Progress(part.stop - part.start, "off", job.judgings, shared=done)
        per_judge, combined, failures = _judge_items(
            job, job.items.part(part), writer, progress, FullCache(), ImportedReplies()
        )
        writer.close()
        calls = progress.live + progress.cached
        read = job.items.read_here(part) if job.items.checked_as_judged else None
        return PartJudged(
            per_judge, combined if ensemble else None, failures, writer.lines, calls, progress.cached, read
        )

    return judge


def _judge_items(
    job: _Job,
    items: Iterable[Item],
    writer: outputs.VerdictWriter,
    progress: Progress,
    full: FullCache,
    imported: ImportedReplies,
    batched: AbstractSet[str] = frozenset(),
    stored: StoredTimes | None = None,
    spending: _Spending | None = None,
) -> JudgedRows:
    """Judge these items (all of the run's, or a part): their lines to `writer`, their rows and failed calls
    returned."""
    config, judgings, cache, used = job.config, job.judgings, job.cache, job.used
    per_judge: dict[str, Rows] = {j.name: Rows() for j in judgings}
    combined = Rows() if len(judgings) > 1 else per_judge[judgings[0].name]
    failures: collections.Counter[str] = collections.Counter()  # failed calls by FailureKind
    parsed = _ParsedReplies(config)
    if not any(judging.backend.paid for judging in judgings):  # every reply is made here, at once: no window
        rendered = _rendered(judgings)
        for item in items:
            decided = [
                (judging, request, _answered_here(judging.backend, request))
                for judging, request in _item_requests(config, judgings, item, rendered)
            ]
            _finalise(parsed, item, decided, per_judge, combined, writer, progress, failures)
        return per_judge, combined, failures
    window = max(64, 8 * config.max_concurrency)  # items in flight: enough to keep every worker busy
    inflight: dict[str, Pending] = {}
    slots: collections.deque[tuple[Item, list[tuple[Judging, Request, Pending]]]] = collections.deque()
    executor = ThreadPoolExecutor(max_workers=config.max_concurrency, thread_name_prefix="judge")
    reask = frozenset(config.cache.reask)
    stopping = threading.Event()  # ends the waits for calls that other processes sharing the cache are sending
    queued: list[_Queued] = []  # the current item's calls to send, sent together once the item's are all known
    warming = _Warming(config.max_concurrency > 1)  # one at a time, each call already follows the one before
    try:
        current: Item | None = None
        calls: list[tuple[Judging, Request, Pending]] = []
        calls_of_items = _requests(config, judgings, items)
        for judging, item, request, key, hit in _looked_up(calls_of_items, cache, used):
            if hit is not None and stored is not None:
                stored.add(hit)
            if item is not current:
                if current is not None:
                    _send(queued, executor, stopping, warming.after(current, queued))
                    slots.append((current, calls))
                current, calls = item, []
                while slots and (len(slots) >= window or _done(slots[0][1])):
                    _finalise(parsed, *slots.popleft(), per_judge, combined, writer, progress, failures)
            if hit is not None:
                imported.add(hit)
            pending = _start(
                judging, request, key, hit, cache, inflight, queued, stopping, full, batched, reask, spending
            )
            calls.append((judging, request, pending))
        if current is not None:
            _send(queued, executor, stopping, warming.after(current, queued))
            slots.append((current, calls))
        while slots:
            _finalise(parsed, *slots.popleft(), per_judge, combined, writer, progress, failures)
    except BaseException:
        # Ctrl-C or a fatal error: drop queued calls, let in-flight ones land in the cache, keep nothing half-written.
        for judging in judgings:
            judging.backend.stop("the run stopped before this call was sent")  # no new attempt; sleeps end now
        stopping.set()
        executor.shutdown(wait=True, cancel_futures=True)
        raise
    executor.shutdown(wait=True)
    return per_judge, combined, failures


def _done(calls: list[tuple[Judging, Request, Pending]]) -> bool:
    return all(pending.future is None or pending.future.done() for _, _, pending in calls)


LOOKAHEAD = 256  # calls looked up in the cache with one query


def _looked_up(
    requests: Iterator[tuple[Judging, Item, Request]], cache: ReplyStore, used: KeyLog | None = None
) -> Iterator[Call]:
    """Each call with its cache key and cached reply (None: a miss, or a free judge), looked up in batches.

    One query per batch instead of one per call: a SQLite read from this thread while 64 workers are busy
    waits for the interpreter lock each time, and those waits starved the workers of new calls.
    """
    while batch := list(itertools.islice(requests, LOOKAHEAD)):
        keys = [
            sample_key(judging.backend.cache_request(request.messages), request.sample)
            if judging.backend.paid
            else None
            for judging, _, request in batch
        ]
        hits = cache.get_many([key for key in keys if key is not None], requests=False)
        for (judging, item, request), key in zip(batch, keys, strict=True):
            if used is not None and key is not None:
                used.add(judging.name, key)  # recorded in the run folder, so a bundle can hold exactly this run
            yield Call(judging, item, request, key, hits.get(key) if key is not None else None)


def _start(
    judging: Judging,
    request: Request,
    key: str | None,
    hit: dict[str, Any] | None,
    cache: ReplyStore,
    inflight: dict[str, Pending],
    queued: list[_Queued],
    stopping: threading.Event,
    full: FullCache,
    batched: AbstractSet[str],
    reask: AbstractSet[str] = frozenset(),
    spending: _Spending | None = None,
) -> Pending:
    """Answer a call from the cache, or run a free backend inline, or queue it to be sent (`_send`, with the item's
    other calls).

    A reply a batch brought in this run counts as paid by this run (not cached) the first time it is used.
    """
    backend = judging.backend
    if key is None:
        return _answered_here(backend, request)
    same = inflight.get(key)
    if same is not None:  # the same prompt twice in one run (e.g. identical answers): one paid call
        return Pending(  # never batched twice
            reply=same.reply, future=same.future, cached=True, error=same.error, failure=same.failure
        )
    if hit is not None and _reasked(hit, judging, reask):
        hit = None  # a cached outcome (or a foreign reply) the user asked to ask again: sent as a miss
    if hit is not None and key in batched:  # remembered: a repeat of this prompt is a cache hit, as live
        inflight[key] = Pending(reply=Reply.from_json(hit), batched=True)
        if spending is not None:
            spending.used(judging, inflight[key], request, judging.config.batch_discount)
        return inflight[key]
    if hit is not None:  # not remembered in `inflight`: a repeat of this prompt is a cache hit again
        pending = Pending(reply=Reply.from_json(hit), cached=True)
        if spending is not None:
            spending.used(judging, pending, request)
        return pending
    if judging.batch_gaps is not None:  # the batch pre-pass owns this judge's calls: a gap fails, never sent live
        inflight[key] = Pending(error=judging.batch_gaps.reason(key), failure=FailureKind.batch)
        return inflight[key]
    if not cache.mode.sends:
        raise UserError(
            f"cache.mode=only: no cached reply for item {request.item.id!r} (order {request.view.order}) "
            f"of judge {judging.name!r}; nothing was sent. Run once with cache.mode=use to fill the cache"
        )
    if full.full:
        return Pending(error=full.not_sent(), failure=FailureKind.not_sent)
    estimate = spending.reserve(judging, request) if spending is not None else None
    if spending is not None and estimate is None:
        return Pending(error=spending.refused(), failure=FailureKind.not_sent)
    judging.check_key_once()  # before the first call of this judge can be sent
    meter = spending.meter(judging, request) if spending is not None else None
    future: Future[tuple[Reply, bool]] = Future()
    queued.append(_Queued(judging, request, future, (backend, request, key, cache, stopping, full, meter)))
    pending = Pending(future=future)
    if spending is not None and estimate is not None:
        spending.settle_when_done(judging, pending, estimate)
    inflight[key] = pending
    return pending


@dataclasses.dataclass(frozen=True)
class _Queued:
    """A call to send: its judge, request, the future its reply lands in, and _live_call's arguments."""

    judging: Judging
    request: Request
    future: Future[tuple[Reply, bool]]
    arguments: tuple[Any, ...]


def _send(
    queued: list[_Queued], executor: ThreadPoolExecutor, stopping: threading.Event, after: Future[Any] | None = None
) -> None:
    """Send an item's queued calls (and empty the queue): each judge's two orders of one ask back to back on one
    worker, the second once the first's reply is in, so the server's prompt cache can serve the second from the
    first (they share the rubric, the context and the question); judge.orders_together=false sends each alone.
    `after`: a call whose prompt starts as these do (an earlier item of the same context), still on its way: these
    go once it is answered, when the server has cached that prefix."""
    groups: dict[tuple[str, int], list[_Queued]] = {}
    for call in queued:
        together = call.judging.config.orders_together
        groups.setdefault((call.judging.name, call.request.sample) if together else (str(id(call)), 0), []).append(call)
    queued.clear()

    def submit(_: object = None) -> None:
        for group in groups.values():
            if stopping.is_set():
                for call in group:
                    call.future.set_exception(RunStopped("the run stopped before this call was sent"))
                continue
            try:
                executor.submit(_live_calls, group, stopping)
            except RuntimeError:  # the pool was shut down (the run stopped) while this item waited
                for call in group:
                    call.future.set_exception(RunStopped("the run stopped before this call was sent"))

    if after is None:
        submit()
    else:
        after.add_done_callback(submit)


class _Warming:
    """The first call sent for each recent context (an item's `context`, references, a conversation: what its prompt
    shares with other items'), so that later items of that context are sent once that call is answered and the
    server's prompt cache holds the shared start, instead of all at once, each paying for it in full."""

    KEPT = 256  # contexts remembered (items of one context usually follow each other)

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._first: collections.OrderedDict[str, Future[tuple[Reply, bool]]] = collections.OrderedDict()

    def after(self, item: Item, queued: Sequence[_Queued]) -> Future[Any] | None:
        """The call these queued calls of `item` should wait for (None: send now); the first of a new context's
        calls is remembered."""
        if not self.enabled or not queued or not any(call.judging.config.orders_together for call in queued):
            return None
        context = context_block(item) if item.extra else ""
        if not context:
            return None
        key = hashlib.sha256(context.encode()).hexdigest()
        first = self._first.get(key)
        if first is not None and not first.done():
            return first
        self._first[key] = queued[0].future
        self._first.move_to_end(key)
        while len(self._first) > self.KEPT:
            self._first.popitem(last=False)
        return None


def _live_calls(calls: Sequence[_Queued], stopping: threading.Event) -> None:
    """Send these calls one after the other, each reply (or error) into its future; once the run stops, none more."""
    for index, call in enumerate(calls):
        if index and stopping.is_set():
            call.future.set_exception(RunStopped("the run stopped before this call was sent"))
            continue
        try:
            result = _live_call(*call.arguments)
        except BaseException as error:  # the worker's own: handed to whoever reads the future, as a pool would
            call.future.set_exception(error)
        else:
            call.future.set_result(result)


def _answered_here(backend: Backend, request: Request) -> Pending:
    """A free judge's reply (scripted, replayed), made in this thread; its failure recorded as a live one is."""
    try:
        return Pending(reply=backend.complete(request))
    except UserError:
        raise
    except Exception as error:
        failure = backend.classify(error)
        return Pending(error=failure.reason, failure=failure.kind)


@dataclasses.dataclass
class _Spending:
    """The run's spending cap as the sending loop meets it: cached replies counted, live calls admitted at their
    worst case first (engine.budget), every billed attempt a call does not use charged through its Meter."""

    budget: Budget | None
    unused: UnusedAttempts = dataclasses.field(default_factory=UnusedAttempts)

    def used(self, judging: Judging, pending: Pending, request: Request, discount: float = 1.0) -> None:
        """Count a reply the run uses without sending (cached, or collected by a batch): its usage, or its bound."""
        if self.budget is not None and pending.reply is not None:
            bound = worst_case(judging.config, request.messages, discount)
            spend = charged(judging.config, pending.reply, bound, discount)
            self.budget.add(spend, bound=not metered(pending.reply))

    def reserve(self, judging: Judging, request: Request) -> Spend | None:
        """The call's worst case, counted; None when it could pass the cap (and sending stops); Spend() uncapped."""
        if self.budget is None:
            return Spend()
        bound = worst_case(judging.config, request.messages)
        return bound if self.budget.reserve(bound) else None

    def meter(self, judging: Judging, request: Request) -> Meter:
        """The call's meter of billed attempts (against the cap when there is one)."""
        return Meter(self.budget, judging.config, worst_case(judging.config, request.messages), self.unused)

    def refused(self) -> str:
        """The reason a call the cap stopped gives in verdicts.jsonl."""
        assert self.budget is not None
        return self.budget.reason()

    def settle_when_done(self, judging: Judging, pending: Pending, estimate: Spend) -> None:
        """When the reply lands, count what it is charged (its usage, or its bound) instead of its worst case; a
        failed call keeps its worst case (it may have been billed)."""
        budget, future = self.budget, pending.future
        if budget is None or future is None:
            return

        def settle(done: Future[tuple[Reply, bool]]) -> None:
            if not done.cancelled() and done.exception() is None:
                reply = done.result()[0]
                budget.settle(estimate, charged(judging.config, reply, estimate), bound=not metered(reply))

        future.add_done_callback(settle)

    def refusal(self, judging: Judging, request: Request, hit: dict[str, Any] | None) -> str | None:
        """The batch pre-pass's check: a cached reply counted, a miss reserved at the batch price or refused."""
        assert self.budget is not None
        discount = judging.config.batch_discount
        bound = worst_case(judging.config, request.messages, discount)
        if hit is not None:
            reply = Reply.from_json(hit)
            self.budget.add(charged(judging.config, reply, bound, discount), bound=not metered(reply))
            return None
        if self.budget.reserve(bound):
            return None
        return self.budget.reason() + " (left out of the batch)"


def _reasked(hit: dict[str, Any], judging: Judging, reask: AbstractSet[str]) -> bool:
    """Whether a cached reply is one `cache.reask` names: its outcome, or "foreign" to the configured judge."""
    if not reask:
        return False
    reply = Reply.from_json(hit)
    if reply.outcome is not None and reply.outcome in reask:
        return True
    if "foreign" not in reask:
        return False
    config = judging.config
    return (
        foreign_reason(reply.model, reply.deployment, reply.fallbacks, config.model, config.other_models()) is not None
    )


LEASE_WAIT = 1.0  # seconds between two checks that the run goes on, while another process sends a call


def _live_call(
    backend: Backend,
    request: Request,
    key: str,
    cache: ReplyStore,
    stopping: threading.Event,
    full: FullCache,
    meter: Meter | None = None,
) -> tuple[Reply, bool]:
    """One paid call, stored the moment it arrives; (reply, True) when another process sharing the cache sent it.

    A call is sent only under its lease: if another process holds it, wait for that reply instead of paying
    again; if that process dies or its call fails, the lease goes and this one takes it. A reply the cache
    cannot store is still returned (paid, so used and counted) and stops the sending of later calls.
    """
    while not cache.claim(key):
        found = cache.wait_for(key, LEASE_WAIT)
        if found is not None:
            return Reply.from_json(found), True
        if stopping.is_set():
            raise RunStopped("the run stopped while another process was sending this call")
    try:
        if full.full:
            raise NotSent(full.not_sent())
        reply = backend.complete(request, meter)
        try:
            cache.put(key, stamped(backend.stored(reply, request)))
        except CacheFull as error:
            full.record(error)
    finally:
        cache.release(key)
    return reply, False


class _ParsedReplies:
    """Each reply object a free judge gives, parsed once per view: a scripted judge answers every call with one of a
    few Reply objects (one per label), so a million calls parse and build a handful of results instead of two
    million. Keyed by the reply's identity, which its entry keeps alive (so the identity is never another reply's);
    a live or cached reply (a new object each time) is parsed as it comes."""

    _KEPT = 256  # entries before the table starts again (a replay judge's replies are each new)

    def __init__(self, config: Config) -> None:
        self.config = config
        self._found: dict[tuple[Any, ...], tuple[Reply, CallResult]] = {}

    def result(self, backend: Backend, request: Request, pending: Pending) -> CallResult:
        """The parsed result of one call."""
        reply, offline = pending.reply, not backend.paid
        if reply is None or not offline or pending.future is not None:
            return _call_result(self.config, request, pending, offline=offline, first_token=backend.first_token)
        view = request.view
        key = (id(reply), view.label_first, view.label_second, request.sample, pending.cached, backend.first_token)
        found = self._found.get(key)
        if found is not None and found[0] is reply:
            return found[1]
        result = _call_result(self.config, request, pending, offline=True, first_token=backend.first_token)
        if len(self._found) >= self._KEPT:
            self._found.clear()
        self._found[key] = (reply, result)
        return result


def _finalise(
    parsed: _ParsedReplies,
    item: Item,
    calls: list[tuple[Judging, Request, Pending]],
    per_judge: dict[str, Rows],
    combined: Rows,
    writer: outputs.VerdictWriter,
    progress: Progress,
    failures: collections.Counter[str],
) -> None:
    """Parse an item's replies into verdicts, write its line, keep a slim copy for the metrics; count failed calls
    into `failures` by kind."""
    by_judge: dict[str, list[CallResult]] = {}
    cached = 0
    for judging, request, pending in calls:
        result = parsed.result(judging.backend, request, pending)
        if result.label == "error":
            failures[result.failure or FailureKind.failed] += 1
        cached += result.cached
        by_judge.setdefault(judging.name, []).append(result)
    # The rows are built as the run keeps them, without the replies; the line takes the replies from the calls.
    rows = {name: item_result(item, results, slim=True) for name, results in by_judge.items()}
    ensemble = len(rows) > 1
    (merged,) = ensemble_results({name: [row] for name, row in rows.items()}) if ensemble else rows.values()
    writer.write(item, rows, merged, by_judge)
    for name, row in rows.items():
        per_judge[name].append(row)
    if ensemble:
        combined.append(merged.without_replies())  # its calls as one shared tuple
    progress.advance(calls=len(calls), cached=cached)


def _call_result(
    config: Config, request: Request, pending: Pending, *, offline: bool, first_token: bool = False
) -> CallResult:
    """The parsed result of one call, or an explicit error state with its reason."""
    view = request.view
    tags = (view.label_first, view.label_second) if config.rubric.labels == LabelStyle.tags else (None, None)
    reply = pending.reply
    cached = pending.cached
    if pending.future is not None:
        try:
            reply, shared = pending.future.result()
            cached = cached or shared
        except (FatalJudgeError, CacheUnavailable):
            raise
        except Exception as error:
            return CallResult(
                "error",
                None,
                False,
                error=str(error) or type(error).__name__,
                tag_first=tags[0],
                tag_second=tags[1],
                outcome=error.outcome if isinstance(error, CallFailed) else None,
                failure=error.kind if isinstance(error, CallFailed) else FailureKind.failed,
                sample=request.sample,
            )
    if reply is None:
        return CallResult(
            "error",
            None,
            False,
            error=pending.error,
            failure=pending.failure,
            tag_first=tags[0],
            tag_second=tags[1],
            sample=request.sample,
        )
    rubric = config.rubric
    label = "invalid" if reply.outcome is not None else read_reply(reply, view, rubric, first_token=first_token)
    probs = None
    if reply.probs:
        positional = view.positions(rubric.tie_label)
        probs = {positional[k]: v for k, v in reply.probs.items() if k in positional}
    return CallResult(
        label,
        reply.text,
        cached,
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        model=shared_name(reply.model),
        probs=probs,
        tag_first=tags[0],
        tag_second=tags[1],
        offline=offline,
        batched=pending.batched,
        outcome=shared_name(reply.outcome),
        reason=reply.reason,
        answered_by=shared_name(reply.answered_by),
        origin=_origin(reply),
        fallbacks=reply.fallbacks,
        gateway_retries=reply.gateway_retries,
        reasoning_tokens=reply.reasoning_tokens,
        sample=request.sample,
        prompt_tokens_cached=min(reply.prompt_tokens_cached, reply.prompt_tokens),
    )


ORIGIN_FIELDS = (
    "deployment",
    "deployment_id",
    "api_base",
    "provider",
    "system_fingerprint",
    "fallbacks",
    "gateway_retries",
    "gateway_cache",
)


def _origin(reply: Reply) -> dict[str, Any] | None:
    """What the server reported of a reply's origin beyond its model (verdicts.jsonl's origin1/origin2)."""
    origin = {name: value for name in ORIGIN_FIELDS if (value := getattr(reply, name))}
    return origin or None
