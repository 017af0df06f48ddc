"""The run: check, judge, summarise, write. `run_experiment(config, run_dir)` is the whole job, callable without
Hydra.

The judging strategy is chosen once, by whether any judge sends anything: judges that send nothing (scripted,
replayed) are judged on every core by engine.free; any other run is judged here, through the cache. Cache hits are
resolved inline (no thread hop: a cached rerun costs little more than start-up); misses go to a thread pool of
`max_concurrency` workers; the two calls of one item are independent tasks. Items are finalised in dataset order
behind a bounded window, so memory stays flat however long the dataset, under the spending cap, after the batch
pre-pass when a judge batches. What both strategies share is engine.judging.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import hashlib
import itertools
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from judgebias.backends import Call, Judging, build_backend
from judgebias.backends.base import Backend
from judgebias.batch.prefill import Prefilled, prefill
from judgebias.cache import ReplyStore, open_cache, sample_key
from judgebias.cache.age import StoredTimes, stamped
from judgebias.cache.bundle import KeyLog
from judgebias.cache.disk import RESERVE_BYTES, free_space, megabytes
from judgebias.config.checks import capabilities_of, check_settings, price_notes, unread_settings
from judgebias.config.schema import CacheMode, Config, judges_of
from judgebias.core.errors import CacheFull, CacheUnavailable, FailureKind, NotSent, RunStopped, UserError
from judgebias.core.item import Item
from judgebias.core.prefix import layout_note, layout_share
from judgebias.core.prompt import context_block
from judgebias.core.record import Reply, Request
from judgebias.core.redaction import public_endpoint
from judgebias.core.summary import DryRunEstimate, Summary
from judgebias.engine import outputs
from judgebias.engine.budget import Budget, Meter, Spend, UnusedAttempts, charged, metered, worst_case
from judgebias.engine.free import judge_free
from judgebias.engine.items import ItemsCheckedAsJudged, RunItems, run_items
from judgebias.engine.judging import (
    Job,
    JudgedRows,
    ParsedReplies,
    Pending,
    answered_here,
    finalise,
    new_rows,
    run_requests,
)
from judgebias.engine.progress import Progress
from judgebias.figures.clustering import Clustering
from judgebias.figures.corrected import Design
from judgebias.figures.provenance import foreign_reason, judge_origin, routed_elsewhere
from judgebias.figures.rows import Rows
from judgebias.figures.summary import Counted, build_summary, ratings_for
from judgebias.io.dataset import resolve_path
from judgebias.io.design import read_design
from judgebias.io.files import write_json
from judgebias.io.run_dir import RunDir
from judgebias.process.command import say
from judgebias.report import console

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

    Check, judge, summarise, write. `overrides` (the command line's) are named in the printed header, so what makes
    the run different shows.
    """
    run = run_dir if isinstance(run_dir, RunDir) else RunDir(run_dir)
    ready = _check(config)
    for note in ready.notes:
        echo(f"note: {note}")
    with _cache_open(config, ready.judgings, run) as (cache, used):
        if config.dry_run:
            return _dry_run(config, ready, cache, run, echo)
        judged = _judge(Job(config, ready.judgings, ready.items, cache, run, used, ready.clusters))
        used.finish(_paid_judges(ready.judgings))
    summary = _summarise(config, ready, judged, echo)
    ratings = ratings_for(judged.combined, config, judged.clustering, ready.design)
    outputs.write_run(run, config, summary, ratings, judged.verdicts)
    echo(console.format_summary(summary, overrides))
    if judged.full.full:
        raise judged.full.ending(cache.directory, int(summary.get("calls_live") or 0))
    return summary


@dataclasses.dataclass(frozen=True)
class _Ready:
    """What the checks before any call leave: the sampling design of the labels, the items every judge can judge,
    the judges with their backends, the notes to print, and each item's value of the cluster field (by id)."""

    design: Design | None
    items: RunItems
    judgings: list[Judging]
    notes: list[str]
    clusters: dict[str, object]


def _check(config: Config) -> _Ready:
    """Every check a run makes before any call; each stops the run with one line: the settings, a sample of another
    dataset, the data file (unless it is checked as it is judged), a cluster field no item has."""
    check_settings(config)
    design = _design(config)
    items, judgings, notes = _judges_and_items(config)
    return _Ready(design, items, judgings, notes, items.cluster_values())


@contextlib.contextmanager
def _cache_open(config: Config, judgings: list[Judging], run: RunDir) -> Iterator[tuple[ReplyStore, KeyLog]]:
    """The reply cache (an unreachable Redis stops the run here, before any judge call) and the run's key log,
    closed however judging ends; a Redis lost meanwhile ends the run with one line."""
    cache = open_cache(config.cache)
    for judging in judgings:
        judging.backend.share_pacing(cache.fleet)
    used = KeyLog(run, [judging.name for judging in judgings if judging.backend.paid])
    try:
        yield cache, used
    except CacheUnavailable as error:
        raise CacheUnavailable(
            f"{error}: the run stopped; every reply received is kept (on this node's disk when Redis missed it, "
            "pushed to Redis by the next run): rerun the same command to send only the calls never answered"
        ) from None
    finally:
        cache.close()
        used.abandon()  # a run that stopped early leaves no half-written key list


def _dry_run(
    config: Config, ready: _Ready, cache: ReplyStore, run: RunDir, echo: Callable[[str], None]
) -> DryRunEstimate:
    """The calls that would go live, their tokens and cost, written to dry_run.json; nothing is called."""
    calls = _looked_up(run_requests(config, ready.judgings, ready.items), cache)
    estimate = outputs.dry_run_estimate(config, ready.judgings, ready.items, calls)
    write_json(run.dry_run, estimate)
    echo(console.format_dry_run(estimate))
    return estimate


def _design(config: Config) -> Design | None:
    """The sampling design the labels were drawn by (calibration.sample), checked against the run's dataset."""
    sample = config.calibration.sample
    if sample is None:
        return None
    return read_design(Path(sample), resolve_path(config.data.path, config.data.root))


def _judges_and_items(config: Config) -> tuple[RunItems, list[Judging], list[str]]:
    """The items every judge can judge, the judges with their backends, and the notes to print before calling."""
    items = run_items(config, check_as_judged=_checked_as_judged(config))
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
    if not len(items) and not isinstance(items, ItemsCheckedAsJudged):
        raise UserError("no item is left to judge (the replayed judges share no recorded item)")
    return items, judgings, notes


def _checked_as_judged(config: Config) -> bool:
    """Whether a large data file is checked as it is judged, each part of it read once, in its own process: when
    every judge answers by a rule (judging costs nothing and waits on nothing, and every item is judged)."""
    return not config.dry_run and all(capabilities_of(judge).by_rule for judge in judges_of(config).values())


@dataclasses.dataclass
class _Judged:
    """What judging every item left for the summary: the rows, the clustering, and the counts kept on the way."""

    per_judge: dict[str, Rows]
    combined: Rows
    failed_by_kind: collections.Counter[str]
    clustering: Clustering | None  # known once every item is read (a file checked as it is judged)
    elapsed: float
    batches: list[dict[str, Any]]
    full: FullCache
    imported: ImportedReplies
    stored: StoredTimes
    spending: _Spending
    budget: Budget | None
    verdicts: outputs.VerdictWriter  # its lines written, kept as verdicts.jsonl.part until the summary is


def _judge(job: Job) -> _Judged:
    """Every call of the run, by the one strategy its judges call for, chosen here: judges that send nothing are
    judged on every core (engine.free); any that sends is judged through the cache, after the batch pre-pass
    (judge.mode=batch/export/import), under the spending cap. The items are not read again afterwards."""
    started = time.monotonic()
    budget = Budget.of(job.config)
    spending = _Spending(budget)
    full, imported, stored = FullCache(), ImportedReplies(), StoredTimes()
    batches: list[dict[str, Any]] = []
    if not any(judging.backend.paid for judging in job.judgings):
        (per_judge, combined, failed_by_kind), verdicts = judge_free(job)
    else:
        prefilled = _prefilled(job, budget)
        batches = prefilled.batches
        (per_judge, combined, failed_by_kind), verdicts = _judge_paid(
            job, full, imported, prefilled.batched, stored, spending
        )
    clustering = job.items.clustering()
    job.items.release()
    return _Judged(
        per_judge, combined, failed_by_kind, clustering, time.monotonic() - started, batches, full, imported,
        stored, spending, budget, verdicts,
    )  # fmt: skip


def _prefilled(job: Job, budget: Budget | None) -> Prefilled:
    """The batch pre-pass: every call of a batch-mode judge the cache lacks, sent as one batch (the cap counting
    them on its own trial count, then taking its refusals)."""
    config, judgings, cache = job.config, job.judgings, job.cache
    trial = budget.trial() if budget is not None else None  # the batch pre-pass's own count of the cap
    prefilled = prefill(
        judgings,
        _looked_up(run_requests(config, judgings, job.items), cache),
        cache,
        job.run,
        progress=config.progress,
        refusal=_Spending(trial).refusal if trial is not None else None,
    )
    if budget is not None and trial is not None:
        budget.take_refusals(trial)
    if prefilled.batched and cache.mode == CacheMode.refresh:
        cache.mode = CacheMode.use  # the batch refreshed every call: the rest of the run reads its replies
    return prefilled


def _summarise(config: Config, ready: _Ready, judged: _Judged, echo: Callable[[str], None]) -> Summary:
    """summary.json (figures.summary.build_summary): the rows, the notes, and what the backends, the cap and the
    imports counted; a bundle's judges that are not this run's are warned of."""
    judgings, notes, budget, full = ready.judgings, ready.notes, judged.budget, judged.full
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
    # Asked of a gateway only when a name nobody declared answered through it, and never under cache.mode=only,
    # which opens no connection: a plain or cached run without such a name loads no SDK and sends nothing for it.
    routed = _routed_elsewhere(judgings, judged.per_judge) if config.cache.mode != CacheMode.only else None
    unused, budget = judged.spending.unused, judged.budget
    counted = Counted(
        retries=sum(judging.backend.retries for judging in judgings),
        timeouts=sum(judging.backend.timeouts for judging in judgings),
        gateway_retries_failed=sum(judging.backend.gateway_retries_failed for judging in judgings),
        gateway_errors_unknown=sum(judging.backend.gateway_errors_unknown for judging in judgings),
        routed_elsewhere=routed,
        billed_unused=unused.record() if unused.attempts else None,
        budget=budget.record() if budget is not None else None,
        imported=judged.imported.record() if judged.imported.count else None,
    )
    summary = build_summary(
        config,
        judged.per_judge,
        judged.combined,
        notes,
        judged.failed_by_kind.total(),
        judged.elapsed,
        judged.batches,
        counted=counted,
        failed_by_kind=judged.failed_by_kind,
        clustering=judged.clustering,
        design=ready.design,
    )
    if judged.imported.count:
        for warning in judged.imported.mismatches(_paid_judges(judgings)):
            echo(warning)
    return summary


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


def _judge_paid(
    job: Job,
    full: FullCache,
    imported: ImportedReplies,
    batched: AbstractSet[str],
    stored: StoredTimes,
    spending: _Spending,
) -> tuple[JudgedRows, outputs.VerdictWriter]:
    """Judge every item through the cache: hits inline, misses sent by `max_concurrency` workers, items finalised
    in dataset order behind a bounded window as their calls complete, their lines streamed to verdicts.jsonl.part.
    `stored` collects the stored times of the cached replies used."""
    config, judgings = job.config, job.judgings
    writer = outputs.VerdictWriter(job.run, ensemble=len(judgings) > 1, clusters=job.clusters)
    progress = Progress(job.items.expected(), config.progress, judgings)
    try:
        judged = _judge_paid_items(job, writer, progress, full, imported, batched, stored, spending)
        writer.close()  # verdicts.jsonl.part: renamed once the summary is written (outputs.write_run)
    except BaseException:
        writer.abandon()  # keep what was decided in verdicts.jsonl.part
        raise
    finally:
        progress.close()
    return judged, writer


def _judge_paid_items(
    job: Job,
    writer: outputs.VerdictWriter,
    progress: Progress,
    full: FullCache,
    imported: ImportedReplies,
    batched: AbstractSet[str],
    stored: StoredTimes,
    spending: _Spending,
) -> JudgedRows:
    """The window of items in flight: each item's calls started as it is read, the oldest finalised once its calls
    are done or the window is full."""
    config, judgings, cache, used = job.config, job.judgings, job.cache, job.used
    judged = new_rows(judgings)
    parsed = ParsedReplies(config)
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
        calls_of_items = run_requests(config, judgings, job.items)
        for judging, item, request, key, hit in _looked_up(calls_of_items, cache, used):
            if hit is not None:
                stored.add(hit)
            if item is not current:
                if current is not None:
                    _send(queued, executor, stopping, warming.after(current, queued))
                    slots.append((current, calls))
                current, calls = item, []
                while slots and (len(slots) >= window or _done(slots[0][1])):
                    finalise(parsed, *slots.popleft(), judged, writer, progress)
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
            finalise(parsed, *slots.popleft(), judged, writer, progress)
    except BaseException:
        # Ctrl-C or a fatal error: drop queued calls, let in-flight ones land in the cache, keep nothing half-written.
        for judging in judgings:
            judging.backend.stop("the run stopped before this call was sent")  # no new attempt; sleeps end now
        stopping.set()
        executor.shutdown(wait=True, cancel_futures=True)
        raise
    executor.shutdown(wait=True)
    return judged


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
        return answered_here(backend, request)
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
