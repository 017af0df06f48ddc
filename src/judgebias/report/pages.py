"""What both pages share: the template engine, the page frame, figures as text, tables.

The pages are Jinja2 templates (templates/) with autoescaping on: judge replies, ids, errors and config reach
them, and every one is escaped by the engine, not by hand. Every value a template prints also passes through
the page's redactor (the engine's `finalize` hook), so nothing shaped like a credential and no value of a key env
var reaches a page. CSS and JS are package files (static/) inlined into each page, pictures are inline SVG
(svg.py lays them out), and a Content-Security-Policy lets only the page's own script run: a page loads nothing.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from judgebias.figures import formatting
from judgebias.figures.formatting import pct
from judgebias.io.files import write_text_atomic
from judgebias.report import svg
from judgebias.report.svg import Bar, Point

# A summary.json (Summary) or one judge's part of it, read by figure name: the pages look figures up by names
# held in variables (cards, points, columns), which a TypedDict cannot check; the entry points take Summary.
Figures = Mapping[str, Any]


DASH = "—"  # a figure this summary does not have (an older run, or one that did not measure it)


def shown(value: Any) -> str:
    """A value as text, or a dash when it is missing."""
    return DASH if value is None else str(value)


def rate(summary: Figures, name: str) -> str:
    """A rate of the summary as a percentage: n/a when it could not be measured, a dash when it is absent."""
    return DASH if name not in summary else pct(summary[name])


def interval(summary: Figures, name: str) -> tuple[float, float] | None:
    """The 95% bootstrap interval of a figure, when the run has one."""
    pair = (summary.get("ci") or {}).get(name)
    if not pair or pair[0] is None or pair[1] is None:
        return None
    return float(pair[0]), float(pair[1])


def ci_text(summary: Figures, name: str, *, with_why: bool = True) -> str:
    """'[low, high]' in percent (and why, when it has zero width and `with_why`), or empty."""
    why = zero_width_why(summary, name) if with_why else None
    return formatting.ci_text(interval(summary, name), why=why).strip()


def zero_width_why(summary: Figures, name: str) -> str | None:
    """Why a figure's interval has zero width (the summary's ci_degenerate reason), or None."""
    return (summary.get("ci_degenerate") or {}).get(name)


def with_ci(summary: Figures, name: str) -> str:
    """'44.8% [32.3, 57.3]', or '44.8%', or 'n/a' (not measurable), or '—' (not in this summary)."""
    return " ".join(part for part in (rate(summary, name), ci_text(summary, name)) if part)


def number(value: Any, digits: int = 3) -> str:
    """A number with fixed decimals, or empty."""
    return "" if value is None else f"{float(value):.{digits}f}"


def point(summary: Figures, name: str, label: str) -> Point:
    """A figure of the summary with its interval."""
    pair = interval(summary, name)
    return Point(label, summary.get(name), *(pair if pair else (None, None)))


def position_bar(label: str, figures: Figures) -> Bar | None:
    """consistent / first-biased / second-biased / other shares of a run's items with both orders readable."""
    consistent = figures.get("position_consistency")
    if consistent is None:
        return None
    first = figures.get("biased_first") or 0.0
    second = figures.get("biased_second") or 0.0
    other = max(0.0, 1.0 - consistent - first - second)
    n = figures.get("position_consistency_n")
    return Bar(label, [consistent, first, second, other], f"n = {n}" if n is not None else "")


def text(value: Any) -> str:
    """A value as text, None as empty."""
    return "" if value is None else str(value)


MAX_REPLY_CHARS = 4000  # a reply on a page is cut here; the whole reply stays in verdicts.jsonl


def shortened_reply(raw: Any) -> str | None:
    """A judge's reply as a page shows it: cut to MAX_REPLY_CHARS, saying how much more verdicts.jsonl holds."""
    if raw is None:
        return None
    reply = str(raw)
    if len(reply) <= MAX_REPLY_CHARS:
        return reply
    return reply[:MAX_REPLY_CHARS] + f"… ({len(reply) - MAX_REPLY_CHARS} more characters in verdicts.jsonl)"


# ---------------------------------------------------------------- tables


@dataclass(frozen=True)
class Cell:
    """One table cell: its text, and how it sorts (`sort`) when that differs from the text."""

    text: str
    numeric: bool = False
    sort: Any = None
    detail: str = ""  # a second, muted line (an interval)
    why: str = ""  # why the interval has zero width: a short mark under it, the reason on hover and for readers
    href: str | None = None
    badge: bool = False
    wrap: bool = False  # long settings break anywhere instead of widening the table
    nowrap: bool = False  # identifiers stay on one line (q1-007, not q1- / 007)


@dataclass(frozen=True)
class Column:
    """A table column: its key (for ?sort=), heading, and kind (num, text, or none: not sortable)."""

    key: str
    name: str
    kind: str = "text"


@dataclass(frozen=True)
class Row:
    """One table row: its cells."""

    cells: Sequence[Cell]


@dataclass(frozen=True)
class Table:
    """A sortable, searchable table."""

    columns: Sequence[Column]
    rows: Sequence[Row]


# ---------------------------------------------------------------- rendering


@jinja2.pass_context
def _finalize(context: jinja2.runtime.Context, value: Any) -> Any:
    """Every printed value: None prints as nothing, text is redacted (the engine then escapes it)."""
    if value is None:
        return ""
    if isinstance(value, Markup) or not isinstance(value, str):
        return value
    redact = context.resolve_or_missing("redact")
    if not callable(redact):
        raise RuntimeError("a report template printed text without a redactor in its context")
    return redact(value)


@functools.cache
def environment() -> jinja2.Environment:
    """The template engine: package templates, HTML autoescaping, undefined names are errors."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("judgebias.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals |= {"BLUE": svg.BLUE, "VERMILLION": svg.VERMILLION}
    env.filters["zero_width_mark"] = formatting.zero_width_mark
    return env


@functools.cache
def asset(name: str) -> str:
    """A file of static/ (the page's CSS or JS), read from the installed package."""
    return (resources.files("judgebias.report") / "static" / name).read_text(encoding="utf-8")


def render_page(
    template: str,
    redactor: Callable[[str], str],
    *,
    script_file: str = "report.js",
    css_file: str = "report.css",
    **context: Any,
) -> str:
    """A complete page whose only script is ours (pinned by hash in the CSP) and which loads nothing."""
    script = asset(script_file)
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    csp = f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{digest}'"
    page = (
        environment()
        .get_template(template)
        .render(redact=redactor, csp=Markup(csp), css=Markup(asset(css_file)), script=Markup(script), **context)
    )
    return page if page.endswith("\n") else page + "\n"


def write_page(path: Path, page: str) -> Path:
    """Write a page atomically, so a browser never shows half a page; return its path."""
    write_text_atomic(path, page)
    return path


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from a file, or {} when it is missing or unreadable (a page then leaves that part out)."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}
