"""report.html: one run's headline figures, pictures and searchable verdicts, self-contained and offline.

This module turns a summary and the verdicts digest into what templates/report.html.j2 shows (cards, panels,
rows); pages.py renders it with escaping and redaction.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judgebias.core.redaction import Redactor
from judgebias.core.style import FEATURES
from judgebias.core.summary import Summary
from judgebias.core.verdict import item_winner
from judgebias.figures import formatting
from judgebias.figures.catalogue import WIN_RATE, Figure, shown_in
from judgebias.figures.formatting import counted, p_text, pct
from judgebias.figures.headline import models_text
from judgebias.figures.metrics import ONE_ORDER_NOTE
from judgebias.io.run_dir import RunDir
from judgebias.report import svg
from judgebias.report.digest import MAX_TABLE_ROWS, VerdictDigest, length_label, read_verdicts, style_label, styles
from judgebias.report.pages import (
    Cell,
    Column,
    Figures,
    Row,
    Table,
    ci_text,
    number,
    point,
    position_bar,
    render_page,
    shortened_reply,
    shown,
    text,
    with_ci,
    write_page,
)
from judgebias.report.svg import POSITION_SEGMENTS, VERDICT_SEGMENTS, Bar, Point

__all__ = ["MAX_TABLE_ROWS", "render_report", "write_report"]

VERDICT_KEYS = ("1", "tie", "2", "error")  # in the order of VERDICT_SEGMENTS


@dataclass(frozen=True)
class Card:
    """One headline figure: its name, value, interval and a hint of what it means."""

    name: str
    value: str
    ci: str = ""
    hint: str = ""


@dataclass(frozen=True)
class ReplyBlock:
    """One reply block under a verdict row: a call's reply, its error, or a judge's verdict (ensembles)."""

    title: str
    origin: str = ""
    text: str | None = None
    error: str | None = None
    verdict: str | None = None  # set for an ensemble judge's heading line


@dataclass(frozen=True)
class VerdictRow(Row):
    """A row of the verdict table, with the replies shown under it."""

    replies: Sequence[ReplyBlock] = ()


@dataclass(frozen=True)
class Note:
    """A warning (red) or a note (grey) above the figures."""

    text: str
    warn: bool = False


@dataclass(frozen=True)
class Panel:
    """A picture with its legend and caption, or only a note when the picture cannot be drawn."""

    chart: svg.BarChart | svg.IntervalChart | None = None
    caption: str = ""
    legend: Sequence[tuple[str, str]] = ()
    note: str = ""


def summary_cards(s: Figures) -> list[Card]:
    """The headline figures at the top of report.html, one card per figure the catalogue shows there (an optional one
    only when the run has it, or says a fit could not identify it), then the counts, calls and cost."""
    cards = [card for entry in shown_in("card") if (card := figure_card(s, entry)) is not None]
    cards += [
        Card(
            "wins / ties / losses of a",
            " / ".join(shown(s.get(k)) for k in ("wins", "ties", "losses")),
            hint=f"invalid replies: {shown(s.get('n_invalid', 0))}, failed calls: {shown(s.get('failed_calls', 0))}",
        ),
        _calls_card(s),
        Card(
            "cost",
            f"${float(s.get('cost_usd') or 0):.4f}",
            f"saved by the cache: ${float(s.get('saved_usd') or 0):.4f}"
            + (
                f"; by the server's prompt cache: ${float(s.get('prompt_cache_saved_usd') or 0):.4f}"
                if s.get("prompt_tokens_cached")
                else ""
            ),
            "at the judge config's prices",
        ),
    ]
    return cards


def figure_card(s: Figures, entry: Figure) -> Card | None:
    """A figure's card: its value and interval, its hint filled from the summary; None when it has no card here."""
    value = s.get(entry.name)
    identifiable = s.get(entry.identifiable_key) if entry.identifiable_key else None
    if value is None and identifiable is False:
        return Card(entry.label, "not identifiable", "", str(s.get(entry.note_key)))
    if entry.name not in s:  # an older or partial run: a dash where a headline figure would be
        return Card(entry.label, shown(None), "", filled_hint(entry.hint, s)) if entry.always else None
    if value is None and entry.optional:
        return None
    shown_value = pct(value) if entry.kind == "rate" else shown(value)
    hint = str(s.get(entry.note_key)) if value is None and s.get(entry.note_key) else filled_hint(entry.hint, s)
    return Card(entry.label, shown_value, ci_text(s, entry.name), hint)


_PLACEHOLDER = re.compile(r"\{(\w+)(?:\|(\w+))?\}")


def filled_hint(hint: str, s: Figures) -> str:
    """A catalogue hint with its {key} placeholders read from the summary ({key|noun}: the count with its noun)."""

    def value(match: re.Match[str]) -> str:
        found = s.get(match.group(1))
        noun = match.group(2)
        return shown(found) if noun is None or found is None else counted(found, noun)

    return _PLACEHOLDER.sub(value, hint)


def _calls_card(s: Figures) -> Card:
    """Calls sent to an endpoint (with their tokens) and answered from the cache; offline judges' calls apart."""
    if s.get("calls_offline"):
        hint = "answered by an offline judge: no request sent, no tokens"
        return Card(
            "calls offline / cached", f"{shown(s.get('calls_offline'))} / {shown(s.get('calls_cached'))}", hint=hint
        )
    value = f"{shown(s.get('calls_live'))} / {shown(s.get('calls_cached'))}"
    cached = f" ({shown(s.get('prompt_tokens_cached'))} cached)" if s.get("prompt_tokens_cached") else ""
    hint = f"tokens {shown(s.get('prompt_tokens'))} in{cached} / {shown(s.get('completion_tokens'))} out"
    return Card("calls live / cached", value, hint=hint)


def notes(s: Figures) -> list[Note]:
    """Warnings (replies without verdicts, a judge that was not one judge, agreement below threshold, failed calls)
    and the run's notes; what makes every figure doubtful comes first."""
    out = []
    if s.get("unreadable_note"):
        out.append(Note(f"Unreadable: {s['unreadable_note']}", warn=True))
    if s.get("mixed_judge_note"):
        out.append(Note(f"Mixed judge: {s['mixed_judge_note']}", warn=True))
    imported = s.get("imported_replies")
    if imported:
        files = ", ".join(
            f"{b.get('file')} (sha256 {str(b.get('sha256'))[:12]})" for b in imported.get("bundles") or []
        )
        out.append(
            Note(
                f"IMPORTED: {imported.get('replies')} replies came from files handed in (bundles, batch output "
                f"files), not from a judge: {files}. Nothing proves a provider sent them.",
                warn=True,
            )
        )
    if s.get("agreement_message"):
        out.append(Note(str(s["agreement_message"]), warn=bool(s.get("agreement_warning"))))
    if s.get("failed_calls"):
        out.append(
            Note(
                f"{s['failed_calls']} calls failed after their retries; those items are left out of every figure "
                "(reasons in verdicts.jsonl). Rerun the same command to retry only those.",
                warn=True,
            )
        )
    out += [Note(str(note)) for note in s.get("notes") or [] if note != s.get("unreadable_note")]
    return out


def position_panel(s: Figures) -> Panel:
    """Consistent / first-biased / second-biased / other, for the run and for each judge of an ensemble."""
    judges = s.get("judges") or {}
    candidates = [position_bar("ensemble" if judges else str(s.get("judge")), s)]
    candidates += [position_bar(str(name), figures) for name, figures in judges.items()]
    bars = [bar for bar in candidates if bar]
    if not bars:
        return Panel(note="Only one order was recorded, so position bias cannot be measured.")
    sign = ""
    if s.get("first_position_p") is not None and s.get("first_position_n"):
        sign = (
            f" Of the {s.get('first_position_n')} items where the verdict followed the position, "
            f"{shown(s.get('first_position_k'))} followed the first slot (sign test {p_text(float(s['first_position_p']))})."
        )
    caption = (
        "Each item is judged in both orders. Consistent: the same verdict both times. First-biased: each time the "
        "answer shown first won. Second-biased: each time the answer shown second won. Other: the orders disagree "
        f"otherwise (e.g. a tie one way, a preference the other).{sign}"
    )
    chart = svg.stacked_bars(bars, POSITION_SEGMENTS, title="position-bias breakdown")
    return Panel(chart, caption, POSITION_SEGMENTS)


def win_rate_panel(s: Figures) -> Panel:
    """The win rate of a, read several ways, with intervals."""
    points = [
        point(s, WIN_RATE.name, "win rate, ties count ½"),
        point(s, "decisive_win_rate", "decisive verdicts only"),
        point(s, "win_rate_consistent", "consistent items only"),
        point(s, "win_rate_pooled", "pooled over single calls"),
    ]
    if s.get("length_controlled_win_rate") is not None:
        points.append(point(s, "length_controlled_win_rate", "length-controlled"))
    if s.get("style_controlled_win_rate") is not None:
        points.append(point(s, "style_controlled_win_rate", "style-controlled"))
    if s.get("soft_win_rate") is not None:
        points.append(point(s, "soft_win_rate", "soft (probabilities)"))
    points += [point(figures, WIN_RATE.name, f"judge: {name}") for name, figures in (s.get("judges") or {}).items()]
    caption = (
        "Share of the comparisons won by answer a (ties count half), with 95% intervals. The dashed line is 50%: "
        "an interval that covers it means no detectable preference."
    )
    return Panel(svg.interval_plot(points, title="win rate of answer a with 95% intervals"), caption)


def people_panel(s: Figures) -> Panel | None:
    """The people's win rate beside the judge's own and the labels' own: three intervals and what each means (None
    when the run has no correction)."""
    corrected = s.get("corrected") or {}
    figures = corrected.get("figures") or {}
    if not figures:
        return None
    points = []
    # Row labels short enough to stand whole beside their interval on a 390 px phone.
    for name, prefix in ((WIN_RATE.name, ""), ("decisive_win_rate", "decisive: ")):
        record = figures.get(name)
        if not record:
            continue
        points += [
            svg.Point(f"{prefix}judge only", record.get("judge_only"), *(record.get("judge_only_ci") or (None, None))),
            svg.Point(
                f"{prefix}labels only", record.get("labels_only"), *(record.get("labels_only_ci") or (None, None))
            ),
            svg.Point(f"{prefix}corrected", record.get("estimate"), *(record.get("ci") or (None, None))),
        ]
    n, big_n = corrected.get("labelled"), corrected.get("unlabelled")
    worth = (figures.get(WIN_RATE.name) or {}).get("effective_labels")
    caption = (
        "Judge only: what the judge says, its interval covering only which items were drawn, not the judge's error. "
        "Labels only: what the labelled items alone say, honest but wide. Corrected: the judge's verdicts on every "
        "item corrected by its error where people looked (PPI++), an interval valid however biased the judge is "
        f"and never wider than the labels alone: {shown(n)} labels"
        + (f", worth {worth:.0f} labels alone" if isinstance(worth, int | float) and big_n else "")
        + f" ({corrected.get('design', {}).get('kind', 'uniform')} design; the judge's {corrected.get('prediction')} "
        "as its prediction)."
    )
    return Panel(svg.interval_plot(points, title="win rate of a: the judge's, the labels', corrected"), caption)


def agreement_panel(s: Figures) -> Panel | None:
    """Agreement with the human labels (None when the data has none)."""
    if "human_agreement" not in s:
        return None
    points = [point(s, "human_agreement", "agreement with the label")]
    for name, label in (
        ("human_agreement_decisive", "both decisive"),
        ("human_vote_agreement", "with a random human vote"),
        ("human_human_agreement", "human–human ceiling"),
    ):
        if s.get(name) is not None:
            points.append(point(s, name, label))
    kappa = s.get("cohen_kappa")
    caption = (
        f"On {shown(s.get('human_agreement_n'))} labelled items; Cohen's kappa {'n/a' if kappa is None else f'{kappa:.2f}'}. "
        f"The dashed line is the agreement threshold ({pct(s.get('agreement_threshold'), 0)})."
        + (f" Why kappa is so low: {s['cohen_kappa_note']}." if s.get("cohen_kappa_note") else "")
    )
    chart = svg.interval_plot(points, title="agreement with human labels", reference=s.get("agreement_threshold"))
    return Panel(chart, caption)


_PANEL_ANNOTATORS = 8  # more annotators than this: the panel shows the ceiling and the majority only


def calibration_panel(s: Figures) -> Panel | None:
    """The human ceiling beside the judge's agreement with the majority and with each annotator (None without
    human_votes): every row with ties and on decisive labels, the counts behind each in the caption."""
    c = s.get("calibration")
    if not c:
        return None

    def rows(label: str, figures: Mapping[str, Any]) -> list[Point]:
        return [
            Point(f"{label}, with ties", figures.get("agreement"), *(figures.get("agreement_ci") or (None, None))),
            Point(
                f"{label}, decisive",
                figures.get("decisive_agreement"),
                *(figures.get("decisive_agreement_ci") or (None, None)),
            ),
        ]

    ceiling, agreed = c["ceiling"], c["majority"]
    points = rows("people with each other", ceiling) + rows("judge vs majority", agreed)
    if len(c["per_annotator"]) <= _PANEL_ANNOTATORS:
        for a in c["per_annotator"]:
            points += rows(f"judge vs {a['annotator']}", a)
    chance = "Cohen's kappa" if ceiling.get("method") == "cohen_kappa" else "Krippendorff's alpha"
    caption = (
        f"{len(c['annotators']) or 'Anonymous'} annotators, {c['labels_n']} labels on {c['labelled_items_n']} items. "
        f"The human ceiling: people agree on {ceiling['agreement_n']} items labelled twice or more "
        f"({ceiling['decisive_agreement_n']} decisive; {counted(ceiling['ties_left_out'], 'tie')} left out), "
        f"{chance} {number(ceiling.get('kappa'), 2) or 'n/a'}. The judge against the majority: on "
        f"{agreed['agreement_n']} labels with ties, {agreed['decisive_agreement_n']} decisive labels "
        f"({agreed['ties_left_out']} ties and {agreed['split_left_out']} split items left out), Cohen's kappa "
        f"{number(agreed.get('kappa'), 2) or 'n/a'}. With ties a tie matches a tie; decisive keeps a and b labels "
        f"only, where a judge tie is a miss. The dashed line is the threshold ({pct(s.get('agreement_threshold'), 0)})."
    )
    chart = svg.interval_plot(points, title="calibration against people", reference=s.get("agreement_threshold"))
    return Panel(chart, caption)


def confusion_table(digest: VerdictDigest) -> tuple[list[str], list[tuple[str, list[int]]]]:
    """Human label (rows) against the judge's verdict (columns), counted over every labelled item."""
    verdicts = ["1", "2", "tie", "error"]
    header = [f"judge: {item_winner(v)}" for v in verdicts]
    rows = [
        (f"people: {item_winner(h)}", [digest.confusion.get((h, v), 0) for v in verdicts]) for h in ("1", "2", "tie")
    ]
    return header, rows


def _verdict_bars(bins: Sequence[Mapping[str, int]], label: Callable[[int], str]) -> list[Bar]:
    """One bar per non-empty bin: shares of a wins / tie / b wins / error, and the bin's item count."""
    bars = []
    for index, counts in enumerate(bins):
        n = sum(counts.values())
        if n:
            bars.append(Bar(label(index), [counts.get(k, 0) / n for k in VERDICT_KEYS], f"{n} item{'s' * (n != 1)}"))
    return bars


def length_panel(s: Figures, digest: VerdictDigest) -> Panel:
    """Verdicts grouped by how much longer answer a is than b."""
    if not digest.found:
        return Panel(note="verdicts.jsonl was not found, so the length picture is missing.")
    if not digest.has_lengths:
        return Panel(note="No answer lengths were recorded.")
    figures = (
        f"The longer answer won {with_ci(s, 'longer_wins')} of {shown(s.get('longer_wins_n'))} decisive verdicts between "
        f"answers of different length; the length-controlled win rate of a is "
        f"{with_ci(s, 'length_controlled_win_rate')}."
    )
    if s.get("length_controlled_note"):
        figures += f" ({s['length_controlled_note']})"
    caption = (
        f"Verdicts of all {digest.total} items grouped by how much longer answer a is than answer b (characters). "
        f"A judge without a length bias shows no drift from top to bottom. {figures}"
    )
    bars = _verdict_bars(digest.length_bins, length_label)
    chart = svg.stacked_bars(bars, VERDICT_SEGMENTS, title="verdicts by length difference (a minus b)")
    return Panel(chart, caption, VERDICT_SEGMENTS)


def has_style(s: Figures, digest: VerdictDigest) -> bool:
    """Whether the run measured formatting (style fields in summary.json or verdicts.jsonl)."""
    return digest.has_styles or "styled_wins" in s


def style_panel(s: Figures, digest: VerdictDigest) -> Panel | None:
    """Verdicts grouped by how much more formatted answer a is than b (None when the run has no style fields)."""
    if not has_style(s, digest):
        return None
    figures = (
        f"The more formatted answer won {with_ci(s, 'styled_wins')} of {shown(s.get('styled_wins_n'))} decisive "
        f"verdicts between answers that differ in formatting; the style-controlled win rate of a is "
        f"{with_ci(s, 'style_controlled_win_rate')}."
    )
    if s.get("style_controlled_note"):
        figures += f" ({s['style_controlled_note']})"
    coefficients = s.get("style_coefficients") or {}
    if coefficients:
        ordered = sorted(coefficients, key=lambda k: FEATURES.index(k) if k in FEATURES else 99)
        figures += " Fitted coefficients: " + ", ".join(f"{k} {float(coefficients[k]):+.2f}" for k in ordered) + "."
    caption = (
        "Formatting counts the markdown elements of each answer (headers, list items, bold and italic spans, code "
        f"blocks, tables). {figures}"
    )
    if not digest.has_styles:
        return Panel(
            note="verdicts.jsonl carries no formatting counts, so the style picture is missing.", caption=caption
        )
    caption = (
        f"Verdicts of all {digest.total} items grouped by how many more markdown elements answer a has than "
        f"answer b. A judge without a style bias shows no drift from top to bottom. " + caption
    )
    bars = _verdict_bars(digest.style_bins, style_label)
    chart = svg.stacked_bars(bars, VERDICT_SEGMENTS, title="verdicts by formatting difference (a minus b)")
    return Panel(chart, caption, VERDICT_SEGMENTS)


def ratings_rows(ratings: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """rank, model, rating, interval, items per rated model; each rating shown to the digit its interval supports."""
    rows = []
    for r in map(formatting.supported_ratings, ratings):
        digits = formatting.step_decimals(r.get("rounded_to"))
        rows.append(
            [
                text(r.get("rank")),
                text(r.get("model")),
                number(r.get("rating"), digits),
                f"{number(r.get('low'), digits)} – {number(r.get('high'), digits)}",
                text(r.get("n")),
            ]
        )
    return rows


def _verdict_name(value: Any, missing: str = "") -> str:
    if value is None:
        return missing
    return item_winner(str(value))


def _reply(title: str, raw: Any, error: Any, cached: Any) -> ReplyBlock:
    """One call's block: its reply cut to MAX_REPLY_CHARS (the whole reply stays in verdicts.jsonl) and error."""
    reply = shortened_reply(raw)
    return ReplyBlock(title, " (from the cache)" if cached else "", reply, str(error) if error else None)


def replies(row: Mapping[str, Any]) -> list[ReplyBlock]:
    """The replies of one verdict line: both calls, for each judge of an ensemble."""
    blocks = []
    judges = row.get("judges")
    sources = judges.items() if isinstance(judges, dict) else [(None, row)]
    for name, calls in sources:
        if not isinstance(calls, dict):
            continue
        prefix = f"{name}: " if name is not None else ""
        if name is not None:
            blocks.append(ReplyBlock(str(name), verdict=_verdict_name(calls.get("verdict"))))
        blocks.append(
            _reply(f"{prefix}call 1 (a shown first)", calls.get("raw1"), calls.get("error1"), calls.get("cached1"))
        )
        if calls.get("call2") is not None or calls.get("raw2") is not None or calls.get("error2"):
            blocks.append(
                _reply(f"{prefix}call 2 (b shown first)", calls.get("raw2"), calls.get("error2"), calls.get("cached2"))
            )
    return blocks


def verdicts_table(digest: VerdictDigest) -> Table:
    """The first rows of verdicts.jsonl as a sortable table (people and models only when the data has them)."""
    has_models = any(r.get("model_a") or r.get("model_b") for r in digest.rows)
    has_human = any(r.get("human") is not None for r in digest.rows)
    columns = [Column("n", "#", "num"), Column("id", "id"), Column("verdict", "verdict")]
    columns += [
        Column("call1", "call 1 (a first)"),
        Column("call2", "call 2 (b first)"),
        Column("consistent", "consistent"),
    ]
    if has_human:
        columns.append(Column("human", "people"))
    columns += [Column("len_a", "chars a", "num"), Column("len_b", "chars b", "num")]
    if digest.has_styles:
        columns.append(Column("format", "format a / b", "num"))  # sorts by a minus b
    if has_models:
        columns.append(Column("models", "models (a vs b)"))
    columns.append(Column("replies", "replies", "none"))
    rows = []
    for index, row in enumerate(digest.rows, start=1):
        consistent = row.get("consistent")
        cells = {
            "n": Cell(str(index), numeric=True),
            "id": Cell(text(row.get("id")), nowrap=True),
            "verdict": Cell(_verdict_name(row.get("verdict"))),
            "call1": Cell(text(row.get("call1"))),
            "call2": Cell("–" if row.get("call2") is None else str(row.get("call2"))),
            "consistent": Cell("yes" if consistent else "no" if consistent is False else "–"),
            "human": Cell(_verdict_name(row.get("human"), "–")),
            "len_a": Cell(text(row.get("chars_a")), numeric=True),
            "len_b": Cell(text(row.get("chars_b")), numeric=True),
            "format": _format_cell(*styles(row)),
            "models": Cell(f"{text(row.get('model_a'))} vs {text(row.get('model_b'))}"),
        }
        rows.append(VerdictRow([cells[c.key] for c in columns if c.key in cells], replies(row)))
    return Table(columns, rows)


def _format_cell(a: int | None, b: int | None) -> Cell:
    """Markdown elements of answer a and of answer b, sorting by how much more formatted a is."""
    if a is None or b is None:
        return Cell("–", numeric=True, sort="")
    return Cell(f"{a} / {b}", numeric=True, sort=a - b)


def provenance_entries(s: Figures, provenance: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What produced the run: models, labels, time, config hash, revision, packages."""
    entries = [
        ("models reported", ", ".join(map(str, s.get("models_reported") or [])) or "–"),
        ("labels", text(s.get("labels"))),
        ("judging time", shown(s.get("judging_seconds")) + " s" * (s.get("judging_seconds") is not None)),
    ]
    if provenance:
        packages = provenance.get("packages") or {}
        entries += [
            ("config hash", text(provenance.get("config_hash"))),
            ("git revision", text(provenance.get("git_revision") or "–")),
            ("python", text(provenance.get("python"))),
            ("packages", ", ".join(f"{k} {v}" for k, v in packages.items() if v is not None)),
        ]
    return entries


def render_report(
    summary: Summary,
    ratings: Sequence[Mapping[str, Any]],
    digest: VerdictDigest,
    provenance: Mapping[str, Any] | None = None,
    *,
    redactor: Callable[[str], str] | None = None,
) -> str:
    """The whole report.html text."""
    s, provenance = summary, provenance or {}
    config = provenance.get("config")
    heading = " · ".join(shown(s.get(k)) for k in ("judge", "rubric", "data"))
    return render_page(
        "report.html.j2",
        redactor or Redactor.for_config(config),
        title=f"judgebias: {heading}",
        heading=heading,
        headline=(s.get("headline") or {}).get("text") if models_text(s) else None,
        n_items=shown(s.get("n_items")),
        one_order=s.get("position_consistency_note") == ONE_ORDER_NOTE,
        resamples=shown(s.get("bootstrap_resamples")),
        status=str(s.get("status", "ok")),
        notes=notes(s),
        cards=summary_cards(s),
        position=position_panel(s),
        win_rate=win_rate_panel(s),
        agreement=agreement_panel(s),
        people=people_panel(s),
        calibration=calibration_panel(s),
        confusion=confusion_table(digest),
        length=length_panel(s, digest),
        style=style_panel(s, digest),
        ratings=ratings_rows(ratings),
        digest=digest,
        verdicts=verdicts_table(digest),
        provenance=provenance_entries(s, provenance),
        config_text=json.dumps(config, indent=2, ensure_ascii=False) if isinstance(config, dict) else None,
    )


def write_report(
    run: RunDir, summary: Summary, ratings: Sequence[Mapping[str, Any]], provenance: Mapping[str, Any]
) -> Path:
    """Write report.html for a finished run: headline figures, pictures, and a searchable verdict table. The
    provenance is the one the run has just written, handed in rather than read back."""
    digest = read_verdicts(run.verdicts)
    return write_page(run.report, render_report(summary, ratings, digest, provenance))
