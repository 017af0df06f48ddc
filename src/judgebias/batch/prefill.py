"""Batch modes' pre-pass: the run's cache misses are filled by a batch (or an exported and imported file) first.

`judge.mode=batch` submits the misses to the endpoint's Batch API and waits; `export` writes them as an input
file for another machine (e.g. `vllm run-batch`) and stops; `import` reads that machine's output file. Either
way the replies go into the cache under the keys a live call would use, and the run then finishes exactly as a
live run does, from the cache: the same replies give byte-identical verdicts. A call the pre-pass could not fill
never goes live: the judge's `batch_gaps` make it fail with the provider's reason instead.
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from judgebias.backends import BatchGaps, Call, Judging
from judgebias.backends.base import BatchTransport
from judgebias.batch import files as batchfile
from judgebias.cache import ReplyStore
from judgebias.cache.age import stamped
from judgebias.config.schema import JudgeMode, ProgressMode
from judgebias.core.errors import BatchPending, UnusableReply, UserError
from judgebias.core.record import TRANSIENT_OUTCOMES, Request
from judgebias.io.run_dir import RunDir

# The spending cap's look at a batch-mode call before submission: None (it fits, or it is cached and was counted),
# else the reason it is left out. Given the call's cached reply (as JSON) or None for a miss.
Refusal = Callable[[Judging, Request, dict[str, Any] | None], str | None]


@dataclass
class Prefilled:
    """What the pre-pass did for the rest of the run: the calls it filled and the ones it could not."""

    batched: set[str] = field(default_factory=set)  # cache keys answered by batch in this run (batch price)
    errors: dict[str, str] = field(default_factory=dict)  # cache key -> why the batch has no reply for it
    batches: list[dict[str, Any]] = field(default_factory=list)  # id, status, counts of each batch touched


def prefill(
    judgings: list[Judging],
    calls: Iterable[Call],
    cache: ReplyStore,
    run: RunDir,
    *,
    progress: ProgressMode,
    refusal: Refusal | None = None,
) -> Prefilled:
    """Fill the cache for every call of a batch-mode judge that the cache lacks; record those judges' gaps.

    `refusal` (the spending cap) sees every call of those judges, cached ones with their reply, before anything
    is submitted; a miss it refuses is left out of the batch, a gap with the refusal's reason.
    """
    result = Prefilled()
    modes = {j.name: JudgeMode(j.config.mode) for j in judgings}
    batching = [j for j in judgings if modes[j.name] != JudgeMode.live and j.backend.paid]
    if not batching:
        return result
    misses: dict[str, dict[str, Request]] = {j.name: {} for j in batching}
    known: dict[str, set[str]] = {j.name: set() for j in batching}
    for judging, _item, request, key, hit in calls:
        if key is None or judging.name not in misses:
            continue
        known[judging.name].add(key)
        if key in misses[judging.name] or key in result.errors:
            continue
        refused = refusal(judging, request, hit) if refusal is not None else None
        if refused is not None:
            result.errors[key] = refused
        elif hit is None:
            misses[judging.name][key] = request
    submitted = [j for j in batching if modes[j.name] == JudgeMode.batch]
    line = StatusLine(progress)
    try:
        # Every judge's batches are submitted before any is waited on, so an ensemble's batches run side by side;
        # the second pass re-attaches to them through the ledger (nothing is uploaded twice).
        running = {j.name: _batch(j, misses[j.name], cache, result, show=line.show, wait=False) for j in submitted}
        for judging in submitted:
            if running[judging.name] and judging.config.batch_wait:
                left = _left(misses[judging.name], result)
                running[judging.name] = _batch(judging, left, cache, result, show=line.show, wait=True)
    finally:
        line.close()
    unfinished = [batch_id for ids in running.values() for batch_id in ids]
    if unfinished:
        raise BatchPending(
            f"{len(unfinished)} batch(es) submitted and not finished yet ({', '.join(unfinished)}); "
            "nothing more is sent: rerun the same command to collect them"
        )
    for judging in batching:
        mode = modes[judging.name]
        if mode == JudgeMode.export:
            _export(judging, misses[judging.name], run)
        elif mode == JudgeMode["import"]:
            _import(judging, misses[judging.name], known[judging.name], cache, result)
        reason = {
            JudgeMode.batch: "the batch returned no reply for this call",
            JudgeMode.export: "not exported",
            JudgeMode["import"]: f"no line for this call in judge.batch_file={judging.config.batch_file}",
        }[mode]
        judging.batch_gaps = BatchGaps(result.errors, reason)
    return result


def transport_of(judging: Judging) -> BatchTransport:
    """The judge's batch transport; a backend without one cannot run in a batch mode (one line)."""
    transport = judging.backend.batch_transport()
    if transport is None:
        raise UserError(
            f"judge {judging.name!r} (judge.backend={judging.config.backend}) cannot send batches: use judge.mode=live"
        )
    return transport


def _stored(judging: Judging, transport: BatchTransport, body: Mapping[str, Any], request: Request) -> dict[str, Any]:
    """A batch line's reply as the cache keeps it; one that looks transient (an error body, no choices) raises
    UnusableReply instead, so it is never cached and the next run asks it again, as a live call would."""
    reply = transport.reply_from_json(body, request)
    if reply.outcome in TRANSIENT_OUTCOMES:
        raise UnusableReply(reply)
    return stamped(judging.backend.stored(reply, request))


def _left(misses: dict[str, Request], result: Prefilled) -> dict[str, Request]:
    """The misses no batch has answered yet (neither a reply nor an error)."""
    return {key: request for key, request in misses.items() if key not in result.batched and key not in result.errors}


def _batch(
    judging: Judging,
    misses: dict[str, Request],
    cache: ReplyStore,
    result: Prefilled,
    *,
    show: Callable[[str], None],
    wait: bool,
) -> list[str]:
    """Submit the misses as batches (or re-attach to those submitted), wait if told, cache the replies.

    Returns the ids of the batches still running (none after waiting).
    """
    from judgebias.batch.batcher import Batcher, Ledger

    backend = transport_of(judging)
    if not misses:
        return []
    judging.check_key_once()
    batcher = Batcher(
        backend,
        Ledger(cache.directory / "batches"),
        cache.put,
        lambda body, key: _stored(judging, backend, body, misses[key]),
        batch_size=judging.config.batch_size,
        poll_seconds=judging.config.batch_poll_seconds,
        show=show,
    )
    outcome = batcher.run(((key, backend.batch_body(r.messages, r.sample)) for key, r in misses.items()), wait=wait)
    result.batched |= outcome.filled
    result.errors |= outcome.errors
    seen = {entry["id"]: index for index, entry in enumerate(result.batches)}
    for record in outcome.batches:  # the second pass sees the same batches again: keep each once, latest state
        if record.batch_id in seen:
            result.batches[seen[record.batch_id]] = record.counts()
        else:
            result.batches.append(record.counts())
    return outcome.running


def _export(judging: Judging, misses: dict[str, Request], run: RunDir) -> None:
    """Write the misses as one input file in the provider's format in the run folder, say how to run it, and stop."""
    backend = transport_of(judging)
    if not misses:
        return
    path = run.make().batch_input
    with path.open("wb") as file:
        for key, request in misses.items():
            body = backend.batch_body(request.messages, request.sample)
            file.write(backend.encode(batchfile.custom_id(key), body))
    output = path.with_name("batch_output.jsonl")
    raise BatchPending(
        f"judge {judging.name!r}: {len(misses)} calls written to {path}\n"
        f"run them where the model is, e.g.:\n"
        f"  vllm run-batch -i {path} -o {output} --model {judging.config.batch_model or judging.config.model}\n"
        f"then load the replies and finish the run:\n"
        f"  {_command()} judge.mode=import judge.batch_file={output}"
    )


def _import(
    judging: Judging, misses: dict[str, Request], known: set[str], cache: ReplyStore, result: Prefilled
) -> None:
    """Load a results file in the provider's format into the cache; a line for no call of this run is refused by
    number."""
    transport = transport_of(judging)  # a backend without batch support is refused before the file is read
    assert judging.config.batch_file, "settings.check_batch refuses judge.mode=import without judge.batch_file"
    path = Path(judging.config.batch_file).expanduser()
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8")
    except OSError as error:
        raise UserError(f"judge.batch_file={path}: cannot read it ({error.strerror})") from None
    except UnicodeDecodeError as error:
        raise UserError(f"judge.batch_file={path}: not UTF-8 text (byte {error.start + 1})") from None
    lines = transport.read_output(text, str(path))
    # A file the user hands in proves no provider sent its replies (anyone can write one): each reply is marked in
    # the cache as imported, like a bundle's, so every later run, export and report says so.
    request = judging.backend.cache_request([])
    origin = {
        "file": path.name,
        "sha256": hashlib.sha256(raw).hexdigest(),
        "kind": "batch output file",
        "judges": [{"endpoint": request.get("endpoint"), "model": request.get("model")}],
    }
    for line in lines:
        key = batchfile.key_of(line.custom_id)
        if key is None or key not in known:
            raise UserError(
                f"{path}:{line.line}: custom_id {line.custom_id!r} belongs to no request of this run (a file of "
                "another run, judge or dataset?); nothing was imported"
            )
    for line in lines:
        key = batchfile.key_of(line.custom_id)
        assert key is not None
        if key not in misses:
            continue  # already in the cache
        if line.body is None:
            result.errors[key] = f"{path.name}:{line.line}: {line.error}"
            continue
        try:
            stored = _stored(judging, transport, line.body, misses[key])
        except UnusableReply as unusable:
            result.errors[key] = f"{path.name}:{line.line}: {unusable} (not cached)"
            continue
        cache.put(key, stored | {"bundle": origin})
        result.batched.add(key)
        result.errors.pop(key, None)


class StatusLine:
    """The batches' status line: redrawn in place on a terminal (or progress=on), else printed when it changes."""

    def __init__(self, mode: ProgressMode, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.redraw = mode == ProgressMode.on or (mode == ProgressMode.auto and self.stream.isatty())
        self.quiet = mode == ProgressMode.off
        self.last = ""

    def show(self, text: str) -> None:
        """Draw the batches' state; without a terminal, only a change of status is printed (not every count)."""
        if self.redraw:
            self.stream.write("\r" + text + " ")
        elif not self.quiet and re.sub(r"\d+/\d+( \(\d+ failed\))?", "", text) != re.sub(
            r"\d+/\d+( \(\d+ failed\))?", "", self.last
        ):
            self.stream.write(text + "\n")
        self.stream.flush()
        self.last = text

    def close(self) -> None:
        """End the redrawn line."""
        if self.redraw and self.last:
            self.stream.write("\n")
            self.stream.flush()


def _command() -> str:
    """The command line that started this run, without its mode and run folder (the import run gets its own)."""
    dropped = ("judge.mode=", "judge.batch_file=", "hydra.run.dir=", "hydra.sweep.dir=")
    args = [a for a in sys.argv[1:] if not a.startswith(dropped)]
    return " ".join(["python -m judgebias.run", *args])
