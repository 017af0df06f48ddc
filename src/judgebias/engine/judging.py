"""What every judging strategy shares: the job (settings, judges, items, cache, folder), each item's calls in
order, a call's reply parsed into its CallResult (a free judge's repeated replies parsed once), and an item
finalised: its rows made, its line written, its calls counted.

The strategies are engine.free (judges that send nothing: forked parts, the file checked as it is judged) and the
paid one in engine.runner (the cache, a window of items in flight, the spending cap).
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future
from typing import Any

from judgebias.backends import Judging
from judgebias.backends.base import Backend
from judgebias.cache import ReplyStore
from judgebias.cache.bundle import KeyLog
from judgebias.config.schema import Config, LabelStyle
from judgebias.core.errors import CacheUnavailable, CallFailed, FailureKind, FatalJudgeError, UserError
from judgebias.core.item import Item, shared_name
from judgebias.core.judged import ensemble_results, item_result
from judgebias.core.prompt import render_messages, shown
from judgebias.core.reading import read_reply
from judgebias.core.record import CallResult, Reply, Request
from judgebias.engine import outputs
from judgebias.engine.items import RunItems
from judgebias.engine.progress import Progress
from judgebias.figures.rows import Rows
from judgebias.io.run_dir import RunDir


@dataclasses.dataclass(slots=True)
class Pending:
    """A call whose reply is known (hit, free backend) or on its way (future)."""

    reply: Reply | None = None
    future: Future[tuple[Reply, bool]] | None = None  # the reply, and whether another process paid for it
    cached: bool = False  # answered without a request of its own
    error: str | None = None
    failure: FailureKind | None = None  # what went wrong, with `error`
    batched: bool = False  # answered by a batch collected in this run


@dataclasses.dataclass(frozen=True)
class Job:
    """What every judging step of one run works on: its settings, judges, items, cache, folder and key log, and
    each item's value of the cluster field (by id: its line records it)."""

    config: Config
    judgings: list[Judging]
    items: RunItems
    cache: ReplyStore
    run: RunDir
    used: KeyLog
    clusters: dict[str, object] | None = None


def run_requests(
    config: Config, judgings: list[Judging], items: Iterable[Item]
) -> Iterator[tuple[Judging, Item, Request]]:
    """Every call of the run, item by item: for each judge, (a, b) then (b, a) when that order exists."""
    rendered = rendered_for(judgings)
    for item in items:
        for judging, request in item_requests(config, judgings, item, rendered):
            yield judging, item, request


def rendered_for(judgings: list[Judging]) -> dict[str, bool]:
    """Whether each judge reads its calls' chat messages (else they are not rendered)."""
    return {j.name: j.backend.paid or j.backend.reads_messages for j in judgings}


def item_requests(
    config: Config, judgings: list[Judging], item: Item, rendered: Mapping[str, bool]
) -> Iterator[tuple[Judging, Request]]:
    """One item's calls: for each judge, (a, b) then (b, a) when that order exists, each of judge.samples."""
    rubric = config.rubric
    for judging in judgings:
        for order in orders(judging.backend, item):
            view = shown(item, order, rubric.labels)
            messages = (
                render_messages(item, view, rubric.system, rubric.user, rubric.tie_label)
                if rendered[judging.name]
                else []
            )
            for sample in range(judging.config.samples):  # judge.samples asks of this order, in a row
                yield judging, Request(item, view, messages, sample)


def orders(backend: Backend, item: Item) -> tuple[int, ...]:
    return (1,) if backend.one_order(item) else (1, 2)


JudgedRows = tuple[dict[str, Rows], Rows, collections.Counter[str]]  # each judge's rows, the combined, failed calls


def new_rows(judgings: list[Judging]) -> JudgedRows:
    """No row yet: each judge's, the combined (an ensemble's merge; the one judge's own rows otherwise), no failure."""
    per_judge: dict[str, Rows] = {j.name: Rows() for j in judgings}
    combined = Rows() if len(judgings) > 1 else per_judge[judgings[0].name]
    return per_judge, combined, collections.Counter()


class ParsedReplies:
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
            return call_result(self.config, request, pending, offline=offline, first_token=backend.first_token)
        view = request.view
        key = (id(reply), view.label_first, view.label_second, request.sample, pending.cached, backend.first_token)
        found = self._found.get(key)
        if found is not None and found[0] is reply:
            return found[1]
        result = call_result(self.config, request, pending, offline=True, first_token=backend.first_token)
        if len(self._found) >= self._KEPT:
            self._found.clear()
        self._found[key] = (reply, result)
        return result


def finalise(
    parsed: ParsedReplies,
    item: Item,
    calls: list[tuple[Judging, Request, Pending]],
    judged: JudgedRows,
    writer: outputs.VerdictWriter,
    progress: Progress,
) -> None:
    """Parse an item's replies into verdicts, write its line, keep a slim copy of its rows for the metrics; count
    its failed calls by kind."""
    per_judge, combined, failures = judged
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


def call_result(
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


def answered_here(backend: Backend, request: Request) -> Pending:
    """A free judge's reply (scripted, replayed), made in this thread; its failure recorded as a live one is."""
    try:
        return Pending(reply=backend.complete(request))
    except UserError:
        raise
    except Exception as error:
        failure = backend.classify(error)
        return Pending(error=failure.reason, failure=failure.kind)
