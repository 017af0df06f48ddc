"""The files a run writes: verdict lines streamed as items are decided, summary.json, provenance.json, ratings.csv,
the dry run's estimate. Field names here are a contract other tools read.

verdicts.jsonl is streamed to `verdicts.jsonl.part` as items are decided and renamed when the run completes, so
a finished run's files are whole and an interrupted run's partial file says what it is.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import platform
import shutil
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence, Sized
from pathlib import Path
from typing import Any, cast

from judgebias.backends import Call, Judging
from judgebias.config.pricing import call_cost
from judgebias.config.schema import Config, judges_of
from judgebias.core.errors import RunFilesUnwritable
from judgebias.core.item import Item
from judgebias.core.judged import calls_by_order, majority_verdict
from judgebias.core.prefix import cacheable_tokens, prompt_text, shared_prefix
from judgebias.core.record import CallFields, CallResult, ItemResult, VerdictLine
from judgebias.core.redaction import Redactor, redact_tree
from judgebias.core.style import Style
from judgebias.core.summary import DryRunEstimate, Summary
from judgebias.core.tokens import estimate_prompt_tokens
from judgebias.core.verdict import item_pick, item_winner
from judgebias.figures.formatting import supported_ratings
from judgebias.io.files import keep_whole_lines, unwritable, write_csv, write_json
from judgebias.io.revision import git_revision
from judgebias.io.run_dir import RunDir
from judgebias.io.tokenizer import WORDS, load_tokenizer
from judgebias.io.versions import installed_versions

PACKAGES = ("judgebias", "hydra-core", "omegaconf", "openai", "tenacity", "diskcache", "numpy", "pyarrow", "datasets")


def _not_json(value: object) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# json.dumps(value, ensure_ascii=False, allow_nan=False) without what it builds anew for every call (the C encoder
# itself, and its check for cycles: a line is made of fresh dicts and shared read-only ones, never a cycle).
_MAKE_ENCODER = getattr(json.encoder, "c_make_encoder", None)  # None: Python without the C accelerator
_C_ENCODER = (
    None
    if _MAKE_ENCODER is None
    else _MAKE_ENCODER(None, _not_json, json.encoder.encode_basestring, None, ": ", ", ", False, False, False)
)
_PY_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


def _encoded(value: dict[str, Any]) -> str:
    """A JSON object's text as json.dumps(value, ensure_ascii=False, allow_nan=False) writes it."""
    return "".join(_C_ENCODER(value, 0)) if _C_ENCODER is not None else _PY_ENCODER.encode(value)


def _members(value: Mapping[str, Any]) -> str:
    """The members of a JSON object's text, without its braces ("" for none): objects written one after the other
    join with ", " into the text of the object holding all their members in that order."""
    return _encoded(dict(value))[1:-1]


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
        self.file = self.partial.open("w", encoding="utf-8")

    def write(
        self,
        item: Item,
        rows: dict[str, ItemResult],
        combined: ItemResult,
        calls: Mapping[str, Sequence[CallResult]] | None = None,
    ) -> None:
        """One item's line: the judge's row, or the ensemble's `combined` row with every judge's calls inside.

        `calls`: each judge's calls with their replies, when its row keeps them without (the rows a run keeps)."""
        cluster = self.clusters.pop(item.id, _NO_CLUSTER)  # wanted once: the run's memory of it goes
        if not self.ensemble:
            judged = None if calls is None else calls[next(iter(rows))]
            text = verdict_text(item, combined, judged, cluster)
        else:
            line = verdict_line(item, combined, with_calls=False)
            line["judges"] = {
                name: _judge_fields(row, None if calls is None else calls[name]) for name, row in rows.items()
            }
            if cluster is not _NO_CLUSTER:
                line["cluster"] = cluster
            text = _encoded(cast(dict[str, Any], line))
        try:
            self.file.write(text + "\n")
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
        self.file.seek(0, os.SEEK_END)  # the text file's own idea of where it is: after the bytes added
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

    def drop_clusters(self) -> None:
        """Take "cluster" out of every line written (always a line's last member: a JSON string cannot hold its
        text unescaped): the run turned out not to cluster by the field its items were read with."""
        self.close()
        bare = self.partial.with_name(self.partial.name + ".bare")
        marker = ', "cluster": '
        try:
            with self.partial.open(encoding="utf-8") as lines, bare.open("w", encoding="utf-8") as out:
                for line in lines:
                    at = line.rfind(marker)
                    out.write(line if at < 0 else line[:at] + "}\n")
        except OSError as error:
            bare.unlink(missing_ok=True)
            raise unwritable(self.partial, error) from None
        os.replace(bare, self.partial)
        self.file = self.partial.open("a", encoding="utf-8")

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
    item: Item, row: ItemResult, *, with_calls: bool = True, calls: Sequence[CallResult] | None = None
) -> VerdictLine:
    """The verdicts.jsonl object for one item; its calls' replies from `calls` when given, else from the row's."""
    replies = row.calls if calls is None else tuple(calls)
    line = _head(row)
    if with_calls:
        line.update(cast(VerdictLine, _calls_fields(row, replies)))  # call1/call2/consistent keep their places
    line.update(_item_fields(item, row))
    if row.style_a is not None and row.style_b is not None:
        line["style_a"] = _style_fields(row.style_a)
        line["style_b"] = _style_fields(row.style_b)
    line.update(_tail(row, replies, with_calls))
    return line


_NO_CLUSTER = object()  # an item in no cluster (its line has no "cluster")


def verdict_text(
    item: Item, row: ItemResult, calls: Sequence[CallResult] | None = None, cluster: object = _NO_CLUSTER
) -> str:
    """One judge's verdicts.jsonl line (verdict_line's object, and the item's cluster) as json.dumps writes it, from
    pieces: the calls' fields and the styles are written once per distinct value (a free judge's million lines
    share a few of each)."""
    replies = row.calls if calls is None else tuple(calls)
    tail = _tail(row, replies, True)
    if cluster is not _NO_CLUSTER:
        tail["cluster"] = cluster
    pieces = (
        '"id": ' + _string(row.id) + _verdict_text(row.verdict),
        _calls_text(row, replies),
        _item_text(item, row),
        _styles_text(row.style_a, row.style_b) if row.style_a is not None and row.style_b is not None else "",
        _members(tail) if tail else "",
    )
    return "{" + ", ".join(piece for piece in pieces if piece) + "}"


_string = json.encoder.encode_basestring  # a JSON string as the line's encoder writes it (ensure_ascii=False)


@functools.lru_cache(maxsize=16)
def _verdict_text(verdict: str) -> str:
    """The verdict and winner members, after the id."""
    return ", " + _members({"verdict": verdict, "winner": item_winner(verdict)})


def _item_text(item: Item, row: ItemResult) -> str:
    """The members `_item_fields` makes, written directly when they are labels, names and counts (the usual line)."""
    if item.human_votes or item.human_voters:
        return _members(_item_fields(item, row))
    text = ""
    if item.human is not None:
        text = '"human": ' + _string(item.human) + ", "
    if item.model_a is not None or item.model_b is not None:
        text += '"model_a": ' + _string_or_null(item.model_a) + ', "model_b": ' + _string_or_null(item.model_b) + ", "
    text += f'"chars_a": {row.chars_a:d}, "chars_b": {row.chars_b:d}, '
    text += f'"words_a": {row.words_a:d}, "words_b": {row.words_b:d}'
    if row.tokens_a is not None and row.tokens_b is not None:
        text += f', "tokens_a": {row.tokens_a:d}, "tokens_b": {row.tokens_b:d}'
    return text


def _string_or_null(value: str | None) -> str:
    return "null" if value is None else _string(value)


def _head(row: ItemResult) -> VerdictLine:
    return {
        "id": row.id,
        "verdict": row.verdict,
        "winner": item_winner(row.verdict),
        "call1": row.call1,
        "call2": row.call2,
        "consistent": row.consistent,
    }


def _item_fields(item: Item, row: ItemResult) -> VerdictLine:
    """The item's labels, models and lengths, each only when known."""
    line: VerdictLine = {}
    if item.human is not None:
        line["human"] = item.human
    if item.human_votes:
        line["human_votes"] = list(item.human_votes)
    if item.human_voters:
        line["human_voters"] = list(item.human_voters)
    if item.model_a is not None or item.model_b is not None:
        line["model_a"] = item.model_a
        line["model_b"] = item.model_b
    line["chars_a"] = row.chars_a
    line["chars_b"] = row.chars_b
    line["words_a"] = row.words_a
    line["words_b"] = row.words_b
    if row.tokens_a is not None and row.tokens_b is not None:
        line["tokens_a"] = row.tokens_a
        line["tokens_b"] = row.tokens_b
    return line


def _tail(row: ItemResult, replies: tuple[CallResult, ...], with_calls: bool) -> VerdictLine:
    """The soft preference, and every sample's call with their majority (judge.samples > 1)."""
    line: VerdictLine = {}
    if row.soft is not None:
        line["soft"] = row.soft
    if with_calls:
        line.update(cast(VerdictLine, _sample_fields(row, replies)))
    return line


# The style members of a line by the two Style objects' identities (each entry keeps them alive, so an identity is
# never another's): answers share a few Style objects, and hashing two of them for every line cost more than the rest.
_STYLES_TEXT: dict[tuple[int, int], tuple[Style, Style, str]] = {}
_STYLES_TEXT_KEPT = 1024


def _styles_text(style_a: Style, style_b: Style) -> str:
    """The `style_a` and `style_b` members of a line, written once per pair of Style objects met."""
    known = _STYLES_TEXT.get((id(style_a), id(style_b)))
    if known is not None:
        return known[2]
    text = _members({"style_a": _style_fields(style_a), "style_b": _style_fields(style_b)})
    if len(_STYLES_TEXT) < _STYLES_TEXT_KEPT:
        _STYLES_TEXT[id(style_a), id(style_b)] = (style_a, style_b, text)
    return text


@functools.lru_cache(maxsize=1024)
def _style_fields(style: Style) -> dict[str, int]:
    """An answer's `style_a`/`style_b` object, made once per distinct style (most answers share a few); read only."""
    return style.as_dict()


def _sample_fields(row: ItemResult, calls: tuple[CallResult, ...]) -> dict[str, Any]:
    """judge.samples > 1: every ask of each order (`samples`) and the verdict of their majority (`majority`)."""
    if all(call.sample == 0 for call in calls):
        return {}  # one ask of each order: no majority (the common case, decided without grouping the calls)
    majority = majority_verdict(row)
    groups = calls_by_order(calls)
    if majority is None or groups is None:
        return {}
    samples = [
        {
            "order": order,
            "sample": call.sample,
            "call": call.label,
            "pick": item_pick(call.label, order),
            "raw": call.raw,
            "cached": call.cached,
        }
        for order, group in enumerate(groups, start=1)
        for call in group
    ]
    return {"samples": samples, "majority": majority}


# A call's fields in a line after raw and cached, each only when set, in this order (CallResult's attribute names).
_OPTIONAL_CALL_FIELDS = ("error", "failure", "probs", "labels", "outcome", "reason", "model", "answered_by", "origin")
# Each call's numbered keys (raw1, cached1, then error1, ... in the order above), spelled once per run.
_NUMBERED = tuple(
    (f"raw{index}", f"cached{index}", tuple((name, f"{name}{index}") for name in _OPTIONAL_CALL_FIELDS))
    for index in (1, 2)
)


# An offline judge's call fields by what they are made of (the row's labels, the calls by identity, which the entry
# keeps alive), with their text in a line: a scripted judge's million lines have a few; each entry is read only.
_OFFLINE_FIELDS: dict[tuple[Any, ...], tuple[tuple[CallResult, ...], CallFields, str]] = {}
_OFFLINE_FIELDS_KEPT = 1024


def _calls_fields(row: ItemResult, calls: tuple[CallResult, ...]) -> CallFields:
    """raw1/raw2, cached1/cached2, and errors, probabilities and random tags where present (read only: an offline
    judge's are shared between lines)."""
    if not all(call.offline for call in calls):
        return _made_calls_fields(row, calls)
    return _offline_calls(row, calls)[1]


def _calls_text(row: ItemResult, calls: tuple[CallResult, ...]) -> str:
    """The members those fields make in a line (call1 to the last call's)."""
    if not all(call.offline for call in calls):
        return _members(_made_calls_fields(row, calls))
    return _offline_calls(row, calls)[2]


def _offline_calls(row: ItemResult, calls: tuple[CallResult, ...]) -> tuple[tuple[CallResult, ...], CallFields, str]:
    """An offline judge's calls' fields and their text, made once for each (labels, calls) met."""
    key = (row.call1, row.call2, row.consistent, *map(id, calls))
    known = _OFFLINE_FIELDS.get(key)
    if known is not None:
        return known
    fields = _made_calls_fields(row, calls)
    entry = (calls, fields, _members(fields))
    if len(_OFFLINE_FIELDS) < _OFFLINE_FIELDS_KEPT:
        _OFFLINE_FIELDS[key] = entry
    return entry


def _made_calls_fields(row: ItemResult, calls: tuple[CallResult, ...]) -> CallFields:
    fields: dict[str, Any] = {
        "call1": row.call1,
        "call2": row.call2,
        "consistent": row.consistent,
        "pick1": item_pick(row.call1, 1),
        "pick2": item_pick(row.call2, 2),
    }
    for (raw, cached, optional), call in zip(_NUMBERED, _padded(calls), strict=True):
        if call is None:
            fields[raw] = fields[cached] = None
            continue
        fields[raw] = call.raw
        fields[cached] = call.cached
        for name, key in optional:
            value = getattr(call, name)
            if value:  # present only when set
                fields[key] = value
    return cast(CallFields, fields)  # the numbered keys are built in a loop; CallFields names each of them


def _judge_fields(row: ItemResult, calls: Sequence[CallResult] | None) -> CallFields:
    """One judge's entry in an ensemble line: its calls, then its own verdict."""
    fields = CallFields(**_calls_fields(row, row.calls if calls is None else tuple(calls)))  # a copy: it gains a key
    fields["verdict"] = row.verdict
    return fields


def _padded(calls: tuple[CallResult, ...]) -> list[CallResult | None]:
    calls = tuple(call for call in calls if call.sample == 0)  # the single-sample calls; `samples` holds the rest
    return [*calls, None][:2] if len(calls) < 2 else list(calls[:2])


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
