"""Files a run writes and the summary it prints. Field names here are a contract other tools read.

verdicts.jsonl is streamed to `verdicts.jsonl.part` as items are decided and renamed when the run completes, so
a finished run's files are whole and an interrupted run's partial file says what it is.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from judgebias.backends import Call, Judging
from judgebias.config.pricing import call_cost
from judgebias.config.schema import Config, judges_of
from judgebias.core.item import Item
from judgebias.core.record import (
    Agreement,
    Calibration,
    CallFields,
    CallResult,
    ItemResult,
    Summary,
    VerdictLine,
)
from judgebias.core.redaction import Redactor, redact_tree
from judgebias.core.terminal import escape_controls
from judgebias.core.tokens import estimate_prompt_tokens
from judgebias.core.verdict import item_pick, item_winner
from judgebias.figures.formatting import ci_text, counted, pct, supported_ratings
from judgebias.figures.metrics import majority_verdict, order_samples
from judgebias.io.files import write_csv, write_json
from judgebias.io.revision import git_revision
from judgebias.io.tokenizer import WORDS, load_tokenizer
from judgebias.io.versions import installed_versions

PACKAGES = ("judgebias", "hydra-core", "omegaconf", "openai", "tenacity", "diskcache", "numpy")


class VerdictWriter:
    """Streams one verdicts.jsonl line per item, in dataset order, as items are decided."""

    def __init__(self, out_dir: Path, *, ensemble: bool, clusters: Mapping[str, object] | None = None) -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        self.clusters = clusters or {}  # item id -> its value of bootstrap.cluster's field, when the run clusters
        self.final = out_dir / "verdicts.jsonl"
        self.partial = out_dir / "verdicts.jsonl.part"
        self.ensemble = ensemble
        self.lines = 0
        self.file = self.partial.open("w", encoding="utf-8")

    def write(self, item: Item, rows: dict[str, ItemResult], combined: ItemResult) -> None:
        """One item's line: the judge's row, or the ensemble's `combined` row with every judge's calls inside."""
        if not self.ensemble:
            line = verdict_line(item, combined)
        else:
            line = verdict_line(item, combined, with_calls=False)
            line["judges"] = {name: _judge_fields(row) for name, row in rows.items()}
        if item.id in self.clusters:
            line["cluster"] = self.clusters[item.id]
        self.file.write(json.dumps(line, ensure_ascii=False, allow_nan=False) + "\n")
        self.lines += 1

    def commit(self) -> None:
        """The run completed: the file becomes verdicts.jsonl."""
        self.file.close()
        os.replace(self.partial, self.final)

    def abandon(self) -> None:
        """The run stopped early: keep what was decided in verdicts.jsonl.part (no file when nothing was)."""
        self.file.close()
        if not self.lines:
            self.partial.unlink(missing_ok=True)


def verdict_line(item: Item, row: ItemResult, *, with_calls: bool = True) -> VerdictLine:
    """The verdicts.jsonl object for one item."""
    line: VerdictLine = {
        "id": row.id,
        "verdict": row.verdict,
        "winner": item_winner(row.verdict),
        "call1": row.call1,
        "call2": row.call2,
        "consistent": row.consistent,
    }
    if with_calls:
        line.update(cast(VerdictLine, _calls_fields(row)))  # call1/call2/consistent keep their places
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
    if row.style_a is not None and row.style_b is not None:
        line["style_a"] = row.style_a.as_dict()
        line["style_b"] = row.style_b.as_dict()
    if row.soft is not None:
        line["soft"] = row.soft
    if with_calls:
        line.update(cast(VerdictLine, _sample_fields(row)))
    return line


def _sample_fields(row: ItemResult) -> dict[str, Any]:
    """judge.samples > 1: every ask of each order (`samples`) and the verdict of their majority (`majority`)."""
    majority = majority_verdict(row)
    groups = order_samples(row)
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
_OPTIONAL_CALL_FIELDS = ("error", "probs", "labels", "outcome", "reason", "model", "answered_by", "origin")
# Each call's numbered keys (raw1, cached1, then error1, ... in the order above), spelled once per run.
_NUMBERED = tuple(
    (f"raw{index}", f"cached{index}", tuple((name, f"{name}{index}") for name in _OPTIONAL_CALL_FIELDS))
    for index in (1, 2)
)


def _calls_fields(row: ItemResult) -> CallFields:
    """raw1/raw2, cached1/cached2, and errors, probabilities and random tags where present."""
    fields: dict[str, Any] = {
        "call1": row.call1,
        "call2": row.call2,
        "consistent": row.consistent,
        "pick1": item_pick(row.call1, 1),
        "pick2": item_pick(row.call2, 2),
    }
    for (raw, cached, optional), call in zip(_NUMBERED, _padded(row.calls), strict=True):
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


def _judge_fields(row: ItemResult) -> CallFields:
    """One judge's entry in an ensemble line: its calls, then its own verdict."""
    fields = _calls_fields(row)
    fields["verdict"] = row.verdict
    return fields


def _padded(calls: tuple[CallResult, ...]) -> list[CallResult | None]:
    calls = tuple(call for call in calls if call.sample == 0)  # the single-sample calls; `samples` holds the rest
    return [*calls, None][:2] if len(calls) < 2 else list(calls[:2])


def write_run(out_dir: Path, config: Config, summary: Summary, ratings: list[dict[str, Any]]) -> None:
    """summary.json, ratings.csv (when several models were compared), provenance.json and report.html."""
    redact = Redactor.for_config(dataclasses.asdict(config))  # a server's text and the config's URLs may hold them
    write_json(out_dir / "summary.json", redact_tree(summary, redact))
    if ratings:
        write_ratings(out_dir / "ratings.csv", ratings)
    write_json(out_dir / "provenance.json", redact_tree(provenance(config, summary), redact))
    if config.report:
        from judgebias.report.run_report import write_report  # its template machinery only when a report is wanted

        write_report(out_dir, summary, ratings)


def write_ratings(path: Path, ratings: Iterable[dict[str, Any]]) -> None:
    """ratings.csv: model, rating, low, high, rank, n (the items the model appears in), then the same with style
    control (style_rating, style_low, style_high, style_rank; empty when the answers never differ in formatting);
    every rating rounded to what its interval supports, the step in rounded_to / style_rounded_to."""
    columns = ["model", "rating", "low", "high", "rank", "n", "style_rating", "style_low", "style_high", "style_rank"]
    columns += ["rounded_to", "style_rounded_to"]
    write_csv(path, columns, [supported_ratings(row) for row in ratings])


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
    items: list[Item],
    calls: Iterable[Call],
) -> dict[str, Any]:
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
            "cost_usd_est": 0.0,
            "cost_usd_est_batch": 0.0,
        }
        for j in judgings
    }
    seen: set[str] = set()
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
        entry["calls_live"] += 1
        entry["prompt_tokens_est"] += tokens
        budget = judging.config.max_tokens or 0  # the most a reply can cost
        entry["cost_usd_est"] += call_cost(judging.config, tokens, budget)
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
        "cost_usd_est": round(sum(e["cost_usd_est"] for e in per_judge.values()), 6),
        "cost_usd_est_batch": round(sum(e["cost_usd_est_batch"] for e in per_judge.values()), 6),
        "judges": per_judge,
    }


def format_dry_run(estimate: dict[str, Any]) -> str:
    """The dry run's one-screen account."""
    return (
        f"dry run: {estimate['judge']} / {estimate['rubric']} / {estimate['data']}: {estimate['n_items']} items, "
        f"{estimate['calls_total']} calls: {estimate['calls_live']} would go live, {estimate['calls_cached']} cached, "
        f"{estimate['calls_offline']} answered offline; "
        f"about {estimate['prompt_tokens_est']} prompt tokens, about ${estimate['cost_usd_est']:.4f} live or "
        f"${estimate['cost_usd_est_batch']:.4f} as a batch (judge.mode=batch). Nothing was called."
    )


def interval_header(summary: Summary) -> str:
    """What the bracketed intervals are: a 95% bootstrap over items, or over clusters of one item field."""
    resamples = summary.get("bootstrap_resamples", 0)
    if not resamples:
        return "  intervals: none (bootstrap.resamples=0)"
    cluster = summary.get("bootstrap_cluster")
    unit = "items" if cluster is None else f"{summary.get('bootstrap_clusters')} clusters by {cluster}"
    return f"  [intervals: 95% bootstrap over {unit}, {resamples} resamples]"


def changed_settings(summary: Summary, overrides: Sequence[str]) -> list[str]:
    """The command line's overrides that make this run differ from the defaults, without the judge, rubric and
    data choices the header already names and without Hydra's own settings (run folders, launchers)."""
    named = {f"{group}={summary.get(group)}" for group in ("judge", "rubric", "data")}
    redact = Redactor()
    return [redact(o) for o in overrides if o not in named and not o.lstrip("+~").startswith(("hydra.", "hydra/"))]


def format_summary(summary: Summary, overrides: Sequence[str] = ()) -> str:
    """The clean one-screen summary printed at the end of a run; its header names the run's `overrides`."""
    s = summary
    intervals = s.get("ci") or {}
    degenerate = s.get("ci_degenerate") or {}
    changed = changed_settings(s, overrides)
    # What makes the figures below doubtful comes first, before any figure or advice.
    warnings = [
        f"  {title}: {s[key]}"  # type: ignore[literal-required]
        for title, key in (("UNREADABLE", "unreadable_note"), ("MIXED JUDGE", "mixed_judge_note"))
        if s.get(key)
    ]
    lines = [
        f"judgebias  judge={s['judge']}  rubric={s['rubric']}  data={s['data']}  status={s['status']}"
        + (f"  overrides: {' '.join(changed)}" if changed else ""),
        *warnings,
        f"  items: {s['n_items']}   wins/ties/losses of a: {s['wins']}/{s['ties']}/{s['losses']}",
        interval_header(s),
        f"  win_rate: {pct(s['win_rate'])}{ci_text(intervals.get('win_rate'), why=degenerate.get('win_rate'))}   "
        f"consistent-only: {pct(s.get('win_rate_consistent'))}   pooled: {pct(s.get('win_rate_pooled'))}",
        f"  position_consistency: {pct(s['position_consistency'])}{ci_text(intervals.get('position_consistency'), why=degenerate.get('position_consistency'))}   "
        f"biased_first: {pct(s['biased_first'])}   biased_second: {pct(s['biased_second'])}",
    ]
    if s.get("first_position_p") is not None:
        score = "n/a" if s.get("preference_score") is None else f"{s['preference_score']:+.2f}"
        lines.append(
            f"  position preference: score {score} (negative = first slot), "
            f"sign test p = {s['first_position_p']:.3g} on {s.get('first_position_n')} position-following items"
        )
    if s.get("length_controlled_win_rate") is not None or s.get("longer_wins") is not None:
        lines.append(
            f"  length: longer answer wins {pct(s.get('longer_wins'))} of decisive verdicts; "
            "length-controlled win_rate "
            + controlled_text(
                s.get("length_controlled_win_rate"),
                intervals.get("length_controlled_win_rate"),
                s.get("length_controlled_identifiable"),
            )
        )
    if s.get("styled_wins") is not None:
        lines.append(
            f"  style: more formatted answer wins {pct(s['styled_wins'])}{ci_text(intervals.get('styled_wins'), why=degenerate.get('styled_wins'))} "
            f"of {s.get('styled_wins_n')} decisive verdicts; style-controlled win_rate "
            + controlled_text(
                s.get("style_controlled_win_rate"),
                intervals.get("style_controlled_win_rate"),
                s.get("style_controlled_identifiable"),
            )
        )
    lines.extend(unidentified_lines(s))
    if "human_agreement" in s:
        lines.append(
            f"  human_agreement: {pct(s['human_agreement'])}{ci_text(intervals.get('human_agreement'), why=degenerate.get('human_agreement'))} on {s['human_agreement_n']} "
            f"decisive labels; {counted(s.get('human_agreement_ties_left_out', 0), 'tie')} left out   "
            f"decisive-only: {pct(s.get('human_agreement_decisive'))}   kappa: "
            + ("n/a" if s.get("cohen_kappa") is None else f"{s['cohen_kappa']:.2f}")
        )
        if s.get("human_human_agreement") is not None:
            lines.append(
                f"  vs a random human vote: {pct(s.get('human_vote_agreement'))} "
                f"(human-human ceiling {pct(s['human_human_agreement'])})"
            )
    if s.get("calibration"):
        lines.extend(calibration_lines(s["calibration"]))
    if s.get("soft_win_rate") is not None:
        lines.append(f"  soft_win_rate: {pct(s['soft_win_rate'])}")
    offline = s.get("calls_offline", 0)
    answered = f"calls_offline: {offline}" if offline else f"calls_live: {s['calls_live']}"
    lines.append(
        f"  calls_total: {s['calls_total']}   {answered}   calls_cached: {s['calls_cached']}   "
        f"invalid replies: {s['n_invalid']}   failed calls: {s['failed_calls']}"
        + (f"   no verdict: {s['n_no_verdict']}" if s.get("n_no_verdict") else "")
        + (f"   calls_batched: {s['calls_batched']}" if s.get("calls_batched") else "")
    )
    if offline and offline == s["calls_total"]:
        lines.append("  tokens: none (an offline judge sends no request)   cost_usd: 0.0000")
    else:
        lines.append(
            f"  tokens: {s['prompt_tokens']} in / {s['completion_tokens']} out   cost_usd: {s['cost_usd']:.4f}   "
            f"saved_usd: {s['saved_usd']:.4f}"
        )
    for judge, figures in (s.get("judges") or {}).items():
        lines.append(
            f"  - {judge}: win_rate {pct(figures['win_rate'])}  consistency {pct(figures['position_consistency'])}  "
            f"first {pct(figures['biased_first'])}  second {pct(figures['biased_second'])}"
        )
    for note in s.get("notes", []):
        if note != s.get("unreadable_note"):  # said under the first line already
            lines.append(f"  note: {note}")
    if s.get("answered_unexpected"):
        names = ", ".join(s["answered_unexpected"])
        lines.append(
            f"  answered by {names}: neither judge.model nor judge.expect_models (a gateway's deployment behind judge "
            f"{s.get('judge')!r}?); if that is the judge you meant, name it in judge.expect_models"
        )
    routed = s.get("routed_elsewhere")
    per_judge: dict[str, Any] = {} if not routed else {"": routed} if "model" in routed else dict(routed)
    for routed_judge, where in per_judge.items():
        lines.append(
            f"  routed elsewhere{f' ({routed_judge})' if routed_judge else ''}: the gateway serves {where['model']!r} "
            f"({', '.join(where['gateway_deployments'])}), but {', '.join(where['answered_by'])} answered: an alias or a "
            "route took the calls elsewhere (the gate fails this run unless judge.expect_models names who answered)"
        )
    if s.get("soft_note"):  # log-probabilities asked for and dropped (a gateway's drop_params): said, not only kept
        lines.append(f"  note: {s['soft_note']}")
    imported = s.get("imported_replies")
    if imported:
        bundles = ", ".join(f"{b['file']} (sha256 {b['sha256'][:12]})" for b in imported["bundles"])
        lines.append(
            f"  IMPORTED: {imported['replies']} replies came from files handed in (bundles, batch output files), "
            f"not from a judge: {bundles}"
        )
    if s.get("agreement_warning"):
        lines.append(f"  WARNING: {s.get('agreement_message')}")
    elif s.get("agreement_message"):
        lines.append(f"  note: {s.get('agreement_message')}")
    return escape_controls("\n".join(lines))  # model names and notes of a server's choosing: shown, never acted on


def controlled_text(value: float | None, interval: Any, identifiable: bool | None) -> str:
    """A controlled win rate with its interval, 'not identifiable' (the reason follows on its own line), or n/a."""
    if value is not None:
        return pct(value) + ci_text(interval)
    return "not identifiable (why: below)" if identifiable is False else "n/a"


def unidentified_lines(s: Summary) -> list[str]:
    """One line per controlled win rate the data cannot identify, with the reason."""
    lines = []
    if s.get("length_controlled_identifiable") is False and s.get("length_controlled_note"):
        lines.append(f"    length-controlled not identifiable: {s['length_controlled_note']}")
    if s.get("style_controlled_identifiable") is False and s.get("style_controlled_note"):
        lines.append(f"    style-controlled not identifiable: {s['style_controlled_note']}")
    return lines


_SHOWN_ANNOTATORS = 5  # more annotators than this: the per-annotator lines are in summary.json only


def calibration_lines(c: Calibration) -> list[str]:
    """The human ceiling and the judge against the majority and each annotator, ties stated every time."""
    ceiling, chance = c["ceiling"], "kappa" if c["ceiling"]["method"] == "cohen_kappa" else "alpha"
    people = len(c["annotators"]) or "anonymous"
    lines = [
        f"  human ceiling ({people} annotators, {c['labels_n']} labels): people agree "
        f"{pct(ceiling['agreement'])}{ci_text(ceiling['agreement_ci'])} on {ceiling['agreement_n']} items labelled "
        f"twice or more; {agreement_text(ceiling)}   {chance}: {kappa_text(ceiling)}",
        f"  judge vs majority: {pct(c['majority']['agreement'])}{ci_text(c['majority']['agreement_ci'])} on "
        f"{c['majority']['agreement_n']} labels with ties; {agreement_text(c['majority'])}   "
        f"kappa: {kappa_text(c['majority'])}   ({c['majority']['split_left_out']} split items left out)",
    ]
    if len(c["per_annotator"]) <= _SHOWN_ANNOTATORS:
        lines.extend(
            f"  judge vs {a['annotator']}: {pct(a['agreement'])}{ci_text(a['agreement_ci'])} on {a['agreement_n']} "
            f"labels with ties; {agreement_text(a)}   kappa: {kappa_text(a)}"
            for a in c["per_annotator"]
        )
    return lines


def agreement_text(figures: Agreement) -> str:
    """'80.0% [62.5, 93.8] on 16 decisive labels; 4 ties left out'."""
    return (
        f"{pct(figures['decisive_agreement'])}{ci_text(figures['decisive_agreement_ci'])} on "
        f"{figures['decisive_agreement_n']} decisive labels; {counted(figures['ties_left_out'], 'tie')} left out"
    )


def kappa_text(figures: Agreement) -> str:
    """'0.62 [0.41, 0.80]', or 'n/a'."""
    value, interval = figures["kappa"], figures["kappa_ci"]
    if value is None:
        return "n/a"
    return f"{value:.2f}" + (f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else "")
