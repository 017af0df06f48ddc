"""Judging when no judge sends anything (scripted, replayed): every reply is made here, at once, so there is no
cache, no window of items in flight and nothing to pay. The items are cut into one part per core, each later part
judged in a forked process (engine.parts) and its lines joined in order; a scripted judge's large file is checked
as it is judged, each part by the process that reads it (engine.items), and any problem found stops the run before
a verdict file is kept. A repeated reply object is parsed once (engine.judging.ParsedReplies).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from judgebias.core.errors import UserError
from judgebias.core.item import Item
from judgebias.engine import outputs
from judgebias.engine.items import ItemsCheckedAsJudged, Part
from judgebias.engine.judging import (
    Job,
    JudgedRows,
    ParsedReplies,
    answered_here,
    finalise,
    item_requests,
    new_rows,
    rendered_for,
)
from judgebias.engine.parts import JudgePart, PartJudged, PartProcess, parts_wanted, started
from judgebias.engine.progress import Progress


def judge_free(job: Job) -> tuple[JudgedRows, outputs.VerdictWriter]:
    """Judge every item, its lines streamed to verdicts.jsonl.part in dataset order: the first part here and each
    later one in a forked process, whose lines and rows are joined in order (the same lines and rows one process
    makes). Items checked as judged are concluded once every part is read."""
    parts = job.items.parts(parts_wanted(job.items.expected()))
    helpers = _started_parts(job, parts[1:])
    waiting = list(helpers)
    writer = outputs.VerdictWriter(job.run, ensemble=len(job.judgings) > 1, clusters=job.clusters)
    progress = Progress(
        job.items.expected(), job.config.progress, job.judgings, elsewhere=lambda: sum(h.done for h in waiting)
    )
    read_elsewhere = []  # what each part's process found in its lines, when the items are checked as judged
    try:
        items = job.items.part(parts[0]) if helpers else job.items
        per_judge, combined, failures = _judge_items(job, items, writer, progress)
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
        if isinstance(job.items, ItemsCheckedAsJudged):
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
    return (per_judge, combined, failures), writer


def _conclude_check(items: ItemsCheckedAsJudged, read_elsewhere: list[Any], writer: outputs.VerdictWriter) -> None:
    """Items checked as judged: any problem of the file stops the run now, its lines thrown away (a free judge
    loses nothing)."""
    try:
        items.conclude(read_elsewhere)
    except UserError:
        writer.discard()
        raise


def _started_parts(job: Job, parts: Sequence[Part]) -> list[PartProcess]:
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


def _part_judge(job: Job, part: Part) -> JudgePart:
    """What a part's process does: judge the part's items into its own lines' file, return its rows."""

    def judge(lines: Path, done: Any) -> PartJudged:
        ensemble = len(job.judgings) > 1
        writer = outputs.VerdictWriter(job.run, ensemble=ensemble, clusters=job.clusters, partial=lines)
        progress = Progress(part.stop - part.start, "off", job.judgings, shared=done)
        per_judge, combined, failures = _judge_items(job, job.items.part(part), writer, progress)
        writer.close()
        calls = progress.live + progress.cached
        read = job.items.read_here(part) if isinstance(job.items, ItemsCheckedAsJudged) else None
        return PartJudged(
            per_judge, combined if ensemble else None, failures, writer.lines, calls, progress.cached, read
        )

    return judge


def _judge_items(job: Job, items: Iterable[Item], writer: outputs.VerdictWriter, progress: Progress) -> JudgedRows:
    """Judge these items (all of the run's, or a part), each call answered here: their lines to `writer`, their
    rows and failed calls returned."""
    config, judgings = job.config, job.judgings
    judged = new_rows(judgings)
    parsed = ParsedReplies(config)
    rendered = rendered_for(judgings)
    for item in items:
        decided = [
            (judging, request, answered_here(judging.backend, request))
            for judging, request in item_requests(config, judgings, item, rendered)
        ]
        finalise(parsed, item, decided, judged, writer, progress)
    return judged
