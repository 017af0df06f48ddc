"""The run: every item judged twice per judge, replies cached as they arrive, verdicts written as they are decided.

`run_experiment(config, out_dir)` is the whole job, callable without Hydra. Cache hits are resolved inline
(no thread hop: a cached rerun costs little more than start-up); misses go to a thread pool of
`max_concurrency` workers; the two calls of one item are independent tasks. Items are finalised in dataset
order behind a bounded window, so memory stays flat however long the dataset.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import itertools
import re
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

from judgebias import output
from judgebias.cache import ReplyCache, call_key
from judgebias.config import Config, JudgeConfig
from judgebias.console import Progress
from judgebias.dataset import load_items, normalize_answer, resolve_path
from judgebias.errors import FatalJudgeError, SecretInConfig, UserError
from judgebias.item import Item
from judgebias.judges import Backend, PaidBackend, Reply, Request, build_backend, missing_recordings
from judgebias.metrics import bradley_terry_ratings, ensemble_results, soft_preference, summarize
from judgebias.parsing import parse_reply
from judgebias.prompt import render_messages, shown, unknown_placeholders
from judgebias.record import CallResult, ItemResult
from judgebias.verdict import is_consistent, reconcile

ENV_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SHORT_REPLY = 64  # replies up to this length are parsed once and remembered


@dataclasses.dataclass
class Judging:
    """One judge taking part in the run."""

    name: str
    config: JudgeConfig
    backend: Backend
    key_checked: bool = False
    paid: bool = dataclasses.field(init=False)  # checked once: isinstance on a runtime Protocol is slow per call

    def __post_init__(self) -> None:
        self.paid = isinstance(self.backend, PaidBackend)


@dataclasses.dataclass
class Pending:
    """A call whose reply is known (hit, free backend) or on its way (future)."""

    reply: Reply | None = None
    future: Future[Reply] | None = None
    cached: bool = False  # answered without a request of its own
    error: str | None = None


def prepare_items(config: Config) -> list[Item]:
    """The dataset's items, checked in full, normalised and limited as configured (before any call)."""
    data = config.data
    items = load_items(resolve_path(data.path, data.root))
    if data.limit is not None:
        if data.limit < 1:
            raise UserError(f"data.limit={data.limit} must be at least 1 (or null for all items)")
        items = items[: data.limit]
    norm = data.normalize
    if norm.truncate_words is not None and norm.truncate_words < 1:
        raise UserError(f"data.normalize.truncate_words={norm.truncate_words} must be at least 1 (or null)")
    if norm.strip or norm.truncate_words is not None:
        items = [
            dataclasses.replace(
                item,
                a=normalize_answer(item.a, strip=norm.strip, truncate_words=norm.truncate_words),
                b=normalize_answer(item.b, strip=norm.strip, truncate_words=norm.truncate_words),
            )
            for item in items
        ]
    return items


def judges_of(config: Config) -> dict[str, JudgeConfig]:
    """The run's judges: the ensemble when one is configured, else the single `judge`."""
    return dict(config.ensemble) if config.ensemble else {config.judge.name: config.judge}


def check_settings(config: Config) -> None:
    """Settings that the schema's types cannot check."""
    if config.max_concurrency < 1:
        raise UserError(f"max_concurrency={config.max_concurrency} must be at least 1 (default 16)")
    if config.bootstrap.resamples < 0:
        raise UserError(f"bootstrap.resamples={config.bootstrap.resamples} must be 0 (no intervals) or more")
    for template in (config.rubric.system, config.rubric.user):
        unknown = unknown_placeholders(template)
        if unknown:
            raise UserError(f"rubric {config.rubric.name!r} uses unknown placeholder {{{unknown[0]}}}")
    if config.rubric.labels not in ("letters", "numbers", "tags"):
        raise UserError(f"rubric.labels={config.rubric.labels!r}: use letters, numbers or tags")
    for judge in judges_of(config).values():
        if judge.backend == "openai":
            _check_openai_settings(judge)


def _check_openai_settings(judge: JudgeConfig) -> None:
    """Numbers an HTTP judge needs in range: a negative backoff or quota would fail mid-run or silently mean none."""
    if judge.max_retries < 0 or judge.timeout <= 0:
        raise UserError(f"judge {judge.name!r}: judge.max_retries must be >= 0 and judge.timeout > 0")
    for key in ("retry_backoff", "retry_backoff_max"):
        if getattr(judge, key) < 0:
            raise UserError(f"judge {judge.name!r}: judge.{key}={getattr(judge, key)} must be >= 0 (seconds)")
    for key in ("requests_per_minute", "tokens_per_minute"):
        value = getattr(judge, key)
        if value is not None and value <= 0:
            raise UserError(f"judge {judge.name!r}: judge.{key}={value} must be > 0, or null for no client-side limit")
    if judge.max_tokens is not None and judge.max_tokens < 1:
        raise UserError(f"judge {judge.name!r}: judge.max_tokens={judge.max_tokens} must be at least 1 (or null)")
    _check_reasoning_settings(judge)
    if judge.api_key_env is not None and not ENV_VAR_NAME.fullmatch(judge.api_key_env):
        # Most likely the key itself: never echo it, and let the caller scrub it from Hydra's config dumps.
        raise SecretInConfig(
            f"judge {judge.name!r}: judge.api_key_env takes the NAME of an environment variable (e.g. "
            "OPENAI_API_KEY), not the key itself; the value was removed from this run's saved config",
            judge.api_key_env,
        )


REASONING_EFFORTS = ("minimal", "low", "medium", "high")
TOKEN_BUDGET_PARAMS = ("max_tokens", "max_completion_tokens")


def _check_reasoning_settings(judge: JudgeConfig) -> None:
    """What OpenAI's reasoning models refuse with a 400, caught before the first call instead of mid-run."""
    from judgebias.openai_judge import is_reasoning_model

    if judge.max_tokens_param not in TOKEN_BUDGET_PARAMS:
        raise UserError(
            f"judge {judge.name!r}: judge.max_tokens_param={judge.max_tokens_param!r}: use max_tokens or "
            "max_completion_tokens (the body field that carries judge.max_tokens)"
        )
    if judge.reasoning_effort is not None and judge.reasoning_effort not in REASONING_EFFORTS:
        raise UserError(
            f"judge {judge.name!r}: judge.reasoning_effort={judge.reasoning_effort!r}: use "
            f"{', '.join(REASONING_EFFORTS)}, or null to send none"
        )
    if judge.max_wait < 0:
        raise UserError(f"judge {judge.name!r}: judge.max_wait={judge.max_wait} must be >= 0 (seconds)")
    for header, variable in judge.extra_headers.items():
        if not ENV_VAR_NAME.fullmatch(str(variable)):
            raise SecretInConfig(
                f"judge {judge.name!r}: judge.extra_headers.{header} takes the NAME of an environment variable "
                "holding the header's value, not the value itself; the value was removed from this run's saved config",
                str(variable),
            )
    if not is_reasoning_model(judge):
        return
    refused = [
        f"judge.{key}={value}"
        for key, value, allowed in (
            ("temperature", judge.temperature, (None, 1, 1.0)),
            ("top_p", judge.top_p, (None, 1, 1.0)),
            ("logprobs", judge.logprobs, (False,)),
            ("max_tokens_param", judge.max_tokens_param, ("max_completion_tokens",)),
        )
        if value not in allowed
    ]
    if refused:
        raise UserError(
            f"judge {judge.name!r} ({judge.model}) is a reasoning model, which refuses {', '.join(refused)}: set "
            "judge.temperature=null judge.top_p=null judge.logprobs=false judge.max_tokens_param=max_completion_tokens "
            "(as the gpt5, gpt5_mini and o4_mini presets do)"
        )


def run_experiment(config: Config, out_dir: Path, *, echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Judge the dataset, write verdicts.jsonl, summary.json and the rest into `out_dir`; return the summary."""
    check_settings(config)
    items = prepare_items(config)
    judgments = resolve_path(config.data.judgments, config.data.root) if config.data.judgments else None
    judgings = [
        Judging(name, judge, build_backend(judge, config.rubric, judgments))
        for name, judge in judges_of(config).items()
    ]
    notes: list[str] = []
    for judging in judgings:
        missing = {item.id for item in missing_recordings(judging.backend, items)}
        if missing:
            items = [item for item in items if item.id not in missing]
            notes.append(
                f"judge {judging.name!r} has no recording for {len(missing)} items: judged the other {len(items)}"
            )
    if not items:
        raise UserError("no item is left to judge (the replayed judges share no recorded item)")
    for note in notes:
        echo(f"note: {note}")
    cache = ReplyCache(config.cache.dir, config.cache.mode)
    try:
        if config.dry_run:
            calls = _looked_up(_requests(config, judgings, items), cache)
            estimate = output.dry_run_estimate(config, judgings, items, calls)
            output.write_json(out_dir / "dry_run.json", estimate)
            echo(output.format_dry_run(estimate))
            return estimate
        started = time.monotonic()
        per_judge, failures = _judge_all(config, judgings, items, cache, out_dir)
        elapsed = time.monotonic() - started
    finally:
        cache.close()
    summary = output.build_summary(config, judgings, per_judge, items, notes, failures, elapsed)
    output.write_run(out_dir, config, summary, per_judge, judgings)
    echo(output.format_summary(summary))
    return summary


def _requests(config: Config, judgings: list[Judging], items: list[Item]) -> Iterator[tuple[Judging, Item, Request]]:
    """Every call of the run, item by item: for each judge, (a, b) then (b, a) when that order exists."""
    rubric = config.rubric
    for item in items:
        for judging in judgings:
            for order in _orders(judging.backend, item):
                view = shown(item, order, rubric.labels)
                messages = render_messages(item, view, rubric.system, rubric.user, rubric.tie_label)
                yield judging, item, Request(item, view, messages)


def _orders(backend: Backend, item: Item) -> tuple[int, ...]:
    one_order = getattr(backend, "one_order", None)
    return (1,) if one_order is not None and one_order(item) else (1, 2)


def _judge_all(
    config: Config, judgings: list[Judging], items: list[Item], cache: ReplyCache, out_dir: Path
) -> tuple[dict[str, list[ItemResult]], int]:
    """Run every call, finalise items in order as their calls complete, stream verdicts to disk."""
    per_judge: dict[str, list[ItemResult]] = {j.name: [] for j in judgings}
    window = max(64, 8 * config.max_concurrency)  # items in flight: enough to keep every worker busy
    progress = Progress(len(items), config.progress, judgings)
    inflight: dict[str, Pending] = {}
    slots: collections.deque[tuple[Item, list[tuple[Judging, Request, Pending]]]] = collections.deque()
    failures = 0
    writer = output.VerdictWriter(out_dir, ensemble=len(judgings) > 1)
    executor = ThreadPoolExecutor(max_workers=config.max_concurrency, thread_name_prefix="judge")
    try:
        current: Item | None = None
        calls: list[tuple[Judging, Request, Pending]] = []
        for judging, item, request, key, hit in _looked_up(_requests(config, judgings, items), cache):
            if item is not current:
                if current is not None:
                    slots.append((current, calls))
                current, calls = item, []
                while slots and (len(slots) >= window or _done(slots[0][1])):
                    failures += _finalise(config, *slots.popleft(), per_judge, writer, progress)
            calls.append((judging, request, _start(judging, request, key, hit, cache, inflight, executor)))
        if current is not None:
            slots.append((current, calls))
        while slots:
            failures += _finalise(config, *slots.popleft(), per_judge, writer, progress)
        writer.commit()
    except BaseException:
        # Ctrl-C or a fatal error: drop queued calls, let in-flight ones land in the cache, keep nothing half-written.
        for judging in judgings:
            stop = getattr(judging.backend, "stop", None)
            if stop is not None:
                stop("the run stopped before this call was sent")  # no new attempt; backoff sleeps end now
        executor.shutdown(wait=True, cancel_futures=True)
        writer.abandon()
        raise
    finally:
        progress.close()
    executor.shutdown(wait=True)
    return per_judge, failures


def _done(calls: list[tuple[Judging, Request, Pending]]) -> bool:
    return all(pending.future is None or pending.future.done() for _, _, pending in calls)


LOOKAHEAD = 256  # calls looked up in the cache with one query


def _looked_up(
    requests: Iterator[tuple[Judging, Item, Request]], cache: ReplyCache
) -> Iterator[tuple[Judging, Item, Request, str | None, dict[str, Any] | None]]:
    """Each call with its cache key and cached reply (None: a miss, or a free judge), looked up in batches.

    One query per batch instead of one per call: a SQLite read from this thread while 64 workers are busy
    waits for the interpreter lock each time, and those waits starved the workers of new calls.
    """
    while batch := list(itertools.islice(requests, LOOKAHEAD)):
        keys = [
            call_key(cast(PaidBackend, judging.backend).cache_request(request.messages)) if judging.paid else None
            for judging, _, request in batch
        ]
        hits = cache.get_many([key for key in keys if key is not None])
        for (judging, item, request), key in zip(batch, keys, strict=True):
            yield judging, item, request, key, hits.get(key) if key is not None else None


def _start(
    judging: Judging,
    request: Request,
    key: str | None,
    hit: dict[str, Any] | None,
    cache: ReplyCache,
    inflight: dict[str, Pending],
    executor: ThreadPoolExecutor,
) -> Pending:
    """Answer a call from the cache, or run a free backend inline, or send it to a worker."""
    backend = judging.backend
    if key is None:
        try:
            return Pending(reply=backend.complete(request))
        except UserError:
            raise
        except Exception as error:  # a scripted or replay judge failing is recorded, like a live failure
            return Pending(error=f"{type(error).__name__}: {error}")
    same = inflight.get(key)
    if same is not None:  # the same prompt twice in one run (e.g. identical answers): one paid call
        return Pending(reply=same.reply, future=same.future, cached=True, error=same.error)
    if hit is not None:  # not remembered in `inflight`: a repeat of this prompt is a cache hit again
        return Pending(reply=Reply.from_json(hit), cached=True)
    if cache.mode == "only":
        raise UserError(
            f"cache.mode=only: no cached reply for item {request.item.id!r} (order {request.view.order}) "
            f"of judge {judging.name!r}; nothing was sent. Run once with cache.mode=use to fill the cache"
        )
    if not judging.key_checked:
        cast(PaidBackend, backend).check_key()  # before the first call of this judge can be sent
        judging.key_checked = True
    pending = Pending(future=executor.submit(_live_call, backend, request, key, cache))
    inflight[key] = pending
    return pending


def _live_call(backend: Backend, request: Request, key: str, cache: ReplyCache) -> Reply:
    """One paid call, stored in the cache the moment it arrives."""
    reply = backend.complete(request)
    cache.put(key, reply.to_json())
    return reply


def _finalise(
    config: Config,
    item: Item,
    calls: list[tuple[Judging, Request, Pending]],
    per_judge: dict[str, list[ItemResult]],
    writer: output.VerdictWriter,
    progress: Progress,
) -> int:
    """Parse an item's replies into verdicts, write its line, keep a slim copy for the metrics; count failures."""
    by_judge: dict[str, list[CallResult]] = {}
    failures = 0
    for judging, request, pending in calls:
        result = _call_result(config, request, pending)
        failures += result.label == "error"
        by_judge.setdefault(judging.name, []).append(result)
    rows = {name: item_result(item, results) for name, results in by_judge.items()}
    writer.write(item, rows)
    for name, row in rows.items():
        slim = tuple(dataclasses.replace(call, raw=None) for call in row.calls)
        per_judge[name].append(dataclasses.replace(row, calls=slim))
    progress.advance(calls=len(calls), cached=sum(call.cached for results in by_judge.values() for call in results))
    return failures


def _call_result(config: Config, request: Request, pending: Pending) -> CallResult:
    """The parsed result of one call, or an explicit error state with its reason."""
    view = request.view
    tags = (view.label_first, view.label_second) if config.rubric.labels == "tags" else (None, None)
    reply = pending.reply
    if pending.future is not None:
        try:
            reply = pending.future.result()
        except FatalJudgeError:
            raise
        except Exception as error:
            return CallResult(
                "error",
                None,
                False,
                error=str(error) or type(error).__name__,
                tag_first=tags[0],
                tag_second=tags[1],
            )
    if reply is None:
        return CallResult("error", None, False, error=pending.error, tag_first=tags[0], tag_second=tags[1])
    rubric = config.rubric
    labels = (view.label_first, view.label_second)
    if reply.text is not None and len(reply.text) <= SHORT_REPLY:
        label = _parse_short(reply.text, rubric.parser, labels, rubric.tie_label)
    else:
        label = parse_reply(reply.text, style=rubric.parser, labels=labels, tie_label=rubric.tie_label)
    probs = None
    if reply.probs:
        positional = {view.label_first: "A", view.label_second: "B", rubric.tie_label: "tie"}
        probs = {positional[k]: v for k, v in reply.probs.items() if k in positional}
    return CallResult(
        label,
        reply.text,
        pending.cached,
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        model=reply.model,
        probs=probs,
        tag_first=tags[0],
        tag_second=tags[1],
    )


@functools.lru_cache(maxsize=4096)
def _parse_short(text: str, style: str, labels: tuple[str, str], tie_label: str) -> str:
    """parse_reply of a short reply, remembered: a label rubric's replies are a few strings, parsed once each."""
    return parse_reply(text, style=style, labels=labels, tie_label=tie_label)


def item_result(item: Item, calls: list[CallResult]) -> ItemResult:
    """One judge's row for one item from its one or two calls."""
    call1 = calls[0].label
    call2 = calls[1].label if len(calls) > 1 else None
    return ItemResult(
        id=item.id,
        verdict=reconcile(call1, call2),
        call1=call1,
        call2=call2,
        consistent=is_consistent(call1, call2),
        human=item.human,
        human_votes=item.human_votes,
        model_a=item.model_a,
        model_b=item.model_b,
        chars_a=len(item.a),
        chars_b=len(item.b),
        words_a=len(item.a.split()),
        words_b=len(item.b.split()),
        soft=soft_preference(calls[0].probs, calls[1].probs if len(calls) > 1 else None),
        calls=tuple(calls),
    )


def ratings_for(per_judge: dict[str, list[ItemResult]], config: Config) -> list[dict[str, Any]]:
    """Bradley–Terry ratings of the answering models from the run's (ensemble) verdicts."""
    rows = ensemble_results(per_judge) if len(per_judge) > 1 else next(iter(per_judge.values()))
    return bradley_terry_ratings(rows, resamples=config.bootstrap.resamples, seed=config.bootstrap.seed)


def summarize_run(config: Config, per_judge: dict[str, list[ItemResult]]) -> dict[str, Any]:
    """The metrics of the run: the ensemble's figures with each judge's own beside them, or the one judge's."""
    settings: dict[str, Any] = {
        "resamples": config.bootstrap.resamples,
        "seed": config.bootstrap.seed,
        "agreement_threshold": config.agreement_threshold,
    }
    judges = judges_of(config)
    if len(per_judge) == 1:
        ((name, rows),) = per_judge.items()
        return summarize(rows, judge_family=judges[name].family, **settings)
    combined = summarize(ensemble_results(per_judge), **settings)
    combined["judges"] = {
        name: summarize(rows, judge_family=judges[name].family, **settings) for name, rows in per_judge.items()
    }
    return combined
