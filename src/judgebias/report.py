"""Pages a person reads: report.html for a run and sweep_report.html for a sweep, self-contained and offline.

Pictures are inline SVG drawn here (no plotting library, no network): each page is one file with no external
CSS, JS, fonts or images, and a Content-Security-Policy that only lets its own script run. Every piece of text
from a run (ids, replies, errors, notes, config) is HTML-escaped and scrubbed of anything that looks like a
credential. The verdicts are streamed from verdicts.jsonl: the pictures count every row, the table shows the
first MAX_TABLE_ROWS.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_TABLE_ROWS = 2000
MAX_REPLY_CHARS = 4000

# Okabe–Ito colours: distinguishable with the common colour-vision deficiencies.
BLUE, ORANGE, GREEN, VERMILLION, GREY, SKY, PURPLE = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#D55E00",
    "#9a9a9a",
    "#56B4E9",
    "#CC79A7",
)
POSITION_SEGMENTS = (
    ("consistent", GREEN),
    ("first-biased", ORANGE),
    ("second-biased", SKY),
    ("other", GREY),
)
VERDICT_SEGMENTS = (("a wins", BLUE), ("tie", GREY), ("b wins", VERMILLION), ("error", "#444444"))
VERDICT_NAMES = {"1": "a", "2": "b", "tie": "tie", "error": "error"}
LENGTH_EDGES = (30, 100, 300, 1000)  # |chars a - chars b| bin edges, mirrored for a shorter / a longer

_SECRET_PATTERNS = (
    (re.compile(r"\b(?:sk|rk)-[A-Za-z0-9_\-]{12,}"), "[redacted]"),
    (re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9_\-.=]{12,}"), r"\1[redacted]"),
    (
        re.compile(r"(?i)\b((?:api[-_]?key|access[-_]?token|token|secret|password)[\"']?\s*[=:]\s*[\"']?)[^\s&\"',}]+"),
        r"\1[redacted]",
    ),
    (re.compile(r"(?<=://)[^/\s@]+@"), "[redacted]@"),
)

STYLE = """
:root{color-scheme:light;--ink:#1d1d1f;--muted:#5f6368;--line:#dadce0;--bg:#fafafa;--card:#fff}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
color:var(--ink);background:var(--bg)}
main{max-width:1100px;margin:0 auto;padding:24px 20px 48px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:32px 0 8px;border-bottom:1px solid var(--line);
padding-bottom:4px}
.sub{color:var(--muted);margin:0 0 16px}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:13px;font-weight:600;vertical-align:middle}
.ok{background:#e6f4ea;color:#137333}.errors{background:#fef7e0;color:#8a5a00}.failed,.missing{background:#fce8e6;
color:#a50e0e}.dry-run{background:#e8f0fe;color:#174ea6}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(200px,1fr));gap:10px}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:10px 12px}
.card .k{color:var(--muted);font-size:13px}.card .v{font-size:22px;font-weight:600}
.card .ci{color:var(--muted);font-size:13px}.card .h{color:var(--muted);font-size:12px;margin-top:4px}
.warn{background:#fce8e6;border:1px solid #f4b4ae;border-radius:8px;padding:8px 12px;margin:8px 0}
.note{background:#f1f3f4;border-radius:8px;padding:6px 12px;margin:6px 0;color:#3c4043}
figure{margin:8px 0 4px;background:var(--card);border:1px solid var(--line);border-radius:8px;padding:8px;
overflow-x:auto}
figcaption{color:var(--muted);font-size:13px;margin-top:4px}
svg text{font:12px system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif;fill:#1d1d1f}
table{border-collapse:collapse;width:100%;background:var(--card);font-size:13px}
th,td{border:1px solid var(--line);padding:4px 6px;text-align:left;vertical-align:top}
th{background:#f1f3f4;position:sticky;top:0}
th button{all:unset;cursor:pointer;font-weight:600}th button::after{content:" \\2195";color:var(--muted)}
th[aria-sort=ascending] button::after{content:" \\2191"}th[aria-sort=descending] button::after{content:" \\2193"}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
details summary{cursor:pointer;color:#1a73e8}
pre{white-space:pre-wrap;word-break:break-word;margin:4px 0;padding:6px;background:#f8f9fa;border-radius:4px;
max-height:320px;overflow:auto;font-size:12px}
.tools{display:flex;gap:12px;align-items:center;margin:8px 0}
.tools input{font:inherit;padding:5px 8px;border:1px solid var(--line);border-radius:6px;min-width:280px}
.legend span{display:inline-block;margin-right:14px;font-size:13px}
.legend i{display:inline-block;width:11px;height:11px;margin-right:5px;border-radius:2px;vertical-align:-1px}
.muted{color:var(--muted)}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;font-size:13px}dl.kv dt{color:var(--muted)}
dl.kv dd{margin:0;word-break:break-all}
.scroll{overflow-x:auto}
"""

SCRIPT = """
(function () {
  "use strict";
  var table = document.querySelector("table[data-interactive]");
  var root = document.documentElement;
  if (!table) { root.setAttribute("data-ready", "1"); return; }
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var input = document.getElementById("search");
  var shown = document.getElementById("shown");
  var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
  function cellValue(row, index, numeric) {
    var cell = row.cells[index];
    var raw = cell.hasAttribute("data-v") ? cell.getAttribute("data-v") : cell.textContent;
    if (!numeric) { return raw.toLowerCase(); }
    var value = parseFloat(raw);
    return isNaN(value) ? -Infinity : value;
  }
  function filter() {
    var query = input.value.trim().toLowerCase();
    var count = 0;
    rows.forEach(function (row) {
      var hit = !query || row.textContent.toLowerCase().indexOf(query) !== -1;
      row.hidden = !hit;
      if (hit) { count += 1; }
    });
    shown.textContent = String(count);
    table.setAttribute("data-filter", query);
  }
  function sortBy(index, descending) {
    var numeric = headers[index].getAttribute("data-type") === "num";
    var keyed = rows.map(function (row, position) {
      return { row: row, key: cellValue(row, index, numeric), position: position };
    });
    keyed.sort(function (x, y) {
      var order = x.key < y.key ? -1 : x.key > y.key ? 1 : 0;
      return (descending ? -order : order) || x.position - y.position;
    });
    keyed.forEach(function (entry) { body.appendChild(entry.row); });
    rows = keyed.map(function (entry) { return entry.row; });
    headers.forEach(function (th) { th.removeAttribute("aria-sort"); });
    headers[index].setAttribute("aria-sort", descending ? "descending" : "ascending");
    table.setAttribute("data-sorted", headers[index].getAttribute("data-key") + (descending ? ":desc" : ":asc"));
  }
  headers.forEach(function (th, index) {
    var button = th.querySelector("button");
    if (!button) { return; }
    button.addEventListener("click", function () {
      sortBy(index, th.getAttribute("aria-sort") === "ascending");
    });
  });
  input.addEventListener("input", filter);
  var params = new URLSearchParams(window.location.search);
  if (params.get("q")) { input.value = params.get("q"); }
  var key = params.get("sort");
  if (key) {
    headers.forEach(function (th, index) {
      if (th.getAttribute("data-key") === key) { sortBy(index, params.get("dir") === "desc"); }
    });
  }
  filter();
  root.setAttribute("data-ready", "1");
})();
"""


def esc(value: Any) -> str:
    """Text made safe to place in HTML (elements and quoted attributes), with credentials removed."""
    return html.escape(redact("" if value is None else str(value)), quote=True)


def redact(text: str) -> str:
    """The text without API keys: the values of the key env vars in use, and anything shaped like a key."""
    for secret in _secret_values():
        text = text.replace(secret, "[redacted]")
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


_KEY_ENV_NAMES: set[str] = {"OPENAI_API_KEY"}


def _secret_values() -> list[str]:
    """The values of every env var a judge reads its key from (only long enough ones, to avoid false hits)."""
    values = {os.environ.get(name, "") for name in _KEY_ENV_NAMES}
    return sorted((v for v in values if len(v) >= 8), key=len, reverse=True)


def _remember_key_envs(config: Any) -> None:
    """Collect the api_key_env names of a resolved config (judge and ensemble) so their values are redacted."""
    if isinstance(config, dict):
        for key, value in config.items():
            if key == "api_key_env" and isinstance(value, str) and value:
                _KEY_ENV_NAMES.add(value)
            else:
                _remember_key_envs(value)
    elif isinstance(config, list):
        for value in config:
            _remember_key_envs(value)


def pct(value: Any, digits: int = 1) -> str:
    """A fraction as a percentage, or n/a."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{100 * float(value):.{digits}f}%"


def interval(summary: dict[str, Any], name: str) -> tuple[float, float] | None:
    """The 95% bootstrap interval of a figure, when the run has one."""
    pair = (summary.get("ci") or {}).get(name)
    if not pair or pair[0] is None or pair[1] is None:
        return None
    return float(pair[0]), float(pair[1])


def _with_ci(summary: dict[str, Any], name: str) -> str:
    """'44.8% [32.3, 57.3]', or '44.8%', or 'n/a'."""
    return " ".join(part for part in (pct(summary.get(name)), ci_text(summary, name)) if part)


def ci_text(summary: dict[str, Any], name: str) -> str:
    """'[low, high]' in percent, or empty."""
    pair = interval(summary, name)
    return "" if pair is None else f"[{100 * pair[0]:.1f}, {100 * pair[1]:.1f}]"


# ---------------------------------------------------------------- pictures (inline SVG)


@dataclass
class Bar:
    """One row of a stacked bar chart: fractions per segment (summing to at most 1) and a note on the right."""

    label: str
    parts: list[float]
    note: str = ""


def legend(segments: Sequence[tuple[str, str]]) -> str:
    """An HTML legend for the colours of a chart."""
    items = "".join(f'<span><i style="background:{colour}"></i>{esc(name)}</span>' for name, colour in segments)
    return f'<div class="legend">{items}</div>'


def stacked_bars(bars: Sequence[Bar], segments: Sequence[tuple[str, str]], *, title: str) -> str:
    """Horizontal 100% bars, one per row, each segment labelled and with a tooltip of its exact share."""
    label_w, bar_w, note_w, row_h = 280, 520, 110, 28
    width = label_w + bar_w + note_w
    height = row_h * len(bars) + 24
    out = [
        f'<svg role="img" aria-label="{esc(title)}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg"><title>{esc(title)}</title>'
    ]
    for tick in (0, 25, 50, 75, 100):
        x = label_w + bar_w * tick / 100
        out.append(f'<line x1="{x:.1f}" y1="4" x2="{x:.1f}" y2="{height - 18}" stroke="#e0e0e0"/>')
        out.append(f'<text x="{x:.1f}" y="{height - 4}" text-anchor="middle">{tick}%</text>')
    for row, bar in enumerate(bars):
        y = 6 + row * row_h
        out.append(f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end">{esc(_short(bar.label, 44))}</text>')
        x = float(label_w)
        for (name, colour), share in zip(segments, bar.parts, strict=False):
            if share <= 0:
                continue
            w = bar_w * min(1.0, share)
            out.append(
                f'<rect class="seg" data-segment="{esc(name)}" x="{x:.1f}" y="{y}" width="{w:.1f}" height="20" '
                f'fill="{colour}"><title>{esc(bar.label)}: {esc(name)} {pct(share)}</title></rect>'
            )
            if w >= 34:
                out.append(
                    f'<text x="{x + w / 2:.1f}" y="{y + 14}" text-anchor="middle" style="fill:#fff;font-weight:600">'
                    f"{100 * share:.0f}%</text>"
                )
            x += w
        out.append(f'<text x="{label_w + bar_w + 8}" y="{y + 15}" class="muted">{esc(bar.note)}</text>')
    out.append("</svg>")
    return "".join(out)


@dataclass
class Point:
    """One row of an interval plot: a figure's value and its 95% interval."""

    label: str
    value: float | None
    low: float | None = None
    high: float | None = None


def interval_plot(points: Sequence[Point], *, title: str, reference: float | None = 0.5) -> str:
    """Each figure as a dot with its 95% interval on a 0–100% axis (a dashed line marks `reference`)."""
    label_w, plot_w, note_w, row_h = 280, 480, 170, 26
    width = label_w + plot_w + note_w
    height = row_h * len(points) + 30
    out = [
        f'<svg role="img" aria-label="{esc(title)}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg"><title>{esc(title)}</title>'
    ]
    for tick in (0, 25, 50, 75, 100):
        x = label_w + plot_w * tick / 100
        out.append(f'<line x1="{x:.1f}" y1="4" x2="{x:.1f}" y2="{height - 22}" stroke="#e0e0e0"/>')
        out.append(f'<text x="{x:.1f}" y="{height - 8}" text-anchor="middle">{tick}%</text>')
    if reference is not None:
        x = label_w + plot_w * reference
        out.append(f'<line x1="{x:.1f}" y1="4" x2="{x:.1f}" y2="{height - 22}" stroke="#888" stroke-dasharray="4 3"/>')
    for row, point in enumerate(points):
        y = 8 + row * row_h + 9
        out.append(f'<text x="{label_w - 8}" y="{y + 4}" text-anchor="end">{esc(_short(point.label, 44))}</text>')
        if point.value is None:
            out.append(f'<text x="{label_w + 6}" y="{y + 4}" class="muted">n/a</text>')
            continue
        tip = f"{point.label}: {pct(point.value)}"
        if point.low is not None and point.high is not None:
            x1 = label_w + plot_w * _clamp(point.low)
            x2 = label_w + plot_w * _clamp(point.high)
            out.append(f'<line x1="{x1:.1f}" y1="{y}" x2="{x2:.1f}" y2="{y}" stroke="{BLUE}" stroke-width="3"/>')
            for xe in (x1, x2):
                out.append(f'<line x1="{xe:.1f}" y1="{y - 5}" x2="{xe:.1f}" y2="{y + 5}" stroke="{BLUE}"/>')
            tip += f" [{100 * point.low:.1f}, {100 * point.high:.1f}]"
        cx = label_w + plot_w * _clamp(point.value)
        out.append(
            f'<circle class="pt" cx="{cx:.1f}" cy="{y}" r="5" fill="{VERMILLION}"><title>{esc(tip)}</title></circle>'
        )
        note = pct(point.value) + (
            f" [{100 * point.low:.1f}, {100 * point.high:.1f}]"
            if point.low is not None and point.high is not None
            else ""
        )
        out.append(f'<text x="{label_w + plot_w + 10}" y="{y + 4}">{esc(note)}</text>')
    out.append("</svg>")
    return "".join(out)


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, float(value)))


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def position_bar(label: str, figures: dict[str, Any]) -> Bar | None:
    """consistent / first-biased / second-biased / other shares of a run's items with both orders readable."""
    consistent = figures.get("position_consistency")
    if consistent is None:
        return None
    first = figures.get("biased_first") or 0.0
    second = figures.get("biased_second") or 0.0
    other = max(0.0, 1.0 - consistent - first - second)
    n = figures.get("position_consistency_n")
    return Bar(label, [consistent, first, second, other], f"n = {n}" if n is not None else "")


def point(summary: dict[str, Any], name: str, label: str) -> Point:
    """A figure of the summary with its interval."""
    pair = interval(summary, name)
    return Point(label, summary.get(name), *(pair if pair else (None, None)))


# ---------------------------------------------------------------- reading verdicts.jsonl


@dataclass
class VerdictDigest:
    """What the page needs from verdicts.jsonl, read in one pass: counts over every row, the first rows in full."""

    total: int = 0
    rows: list[dict[str, Any]] = field(default_factory=list)
    length_bins: list[Counter[str]] = field(
        default_factory=lambda: [Counter() for _ in range(2 * len(LENGTH_EDGES) + 1)]
    )
    confusion: Counter[tuple[str, str]] = field(default_factory=Counter)
    has_lengths: bool = False
    unreadable: int = 0
    found: bool = True


def read_verdicts(path: Path, limit: int = MAX_TABLE_ROWS) -> VerdictDigest:
    """Stream verdicts.jsonl once: pictures from all rows, the first `limit` rows kept for the table."""
    digest = VerdictDigest()
    if not path.exists():
        digest.found = False
        return digest
    with path.open(encoding="utf-8") as file:
        for line in file:
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                digest.unreadable += 1
                continue
            if not isinstance(row, dict):
                digest.unreadable += 1
                continue
            digest.total += 1
            verdict = str(row.get("verdict"))
            chars_a, chars_b = _int(row.get("chars_a")), _int(row.get("chars_b"))
            digest.has_lengths |= bool(chars_a or chars_b)
            digest.length_bins[_length_bin(chars_a - chars_b)][verdict] += 1
            human = row.get("human")
            if human is not None:
                digest.confusion[(str(human), verdict)] += 1
            if len(digest.rows) < limit:
                digest.rows.append(row)
    return digest


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _length_bin(difference: int) -> int:
    """Bin of chars a - chars b: the middle bin is 'about equal', lower bins a shorter, higher bins a longer."""
    step = sum(abs(difference) > edge for edge in LENGTH_EDGES)
    return len(LENGTH_EDGES) + (step if difference > 0 else -step)


def _length_label(index: int) -> str:
    """'a shorter by 100–300 chars', 'within ±30 chars', 'a longer by >1000 chars'."""
    step = index - len(LENGTH_EDGES)
    if step == 0:
        return f"within ±{LENGTH_EDGES[0]} chars"
    side = "a longer" if step > 0 else "a shorter"
    size = abs(step)
    if size == len(LENGTH_EDGES):
        return f"{side} by >{LENGTH_EDGES[-1]} chars"
    return f"{side} by {LENGTH_EDGES[size - 1]}–{LENGTH_EDGES[size]} chars"


# ---------------------------------------------------------------- the run page


def write_report(out_dir: Path, summary: dict[str, Any], ratings: Sequence[dict[str, Any]]) -> Path:
    """Write report.html for a finished run: headline figures, pictures, and a searchable verdict table."""
    provenance = _read_json(out_dir / "provenance.json")
    _remember_key_envs(provenance.get("config"))
    digest = read_verdicts(out_dir / "verdicts.jsonl")
    page = render_report(summary, ratings, digest, provenance)
    path = out_dir / "report.html"
    temp = path.with_name(path.name + ".tmp")
    temp.write_text(page, encoding="utf-8")
    os.replace(temp, path)
    return path


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def render_report(
    summary: dict[str, Any],
    ratings: Sequence[dict[str, Any]],
    digest: VerdictDigest,
    provenance: dict[str, Any] | None = None,
) -> str:
    """The whole report.html text."""
    s = summary
    title = f"{s.get('judge')} · {s.get('rubric')} · {s.get('data')}"
    parts = [
        f"<h1>judgebias report: {esc(title)} {_badge(s.get('status', 'ok'))}</h1>",
        f'<p class="sub">{esc(s.get("n_items"))} items, each judged twice (a shown first, then b shown first); '
        f"a preference counts only when both orders agree. Intervals are 95% item-bootstrap intervals "
        f"({esc(s.get('bootstrap_resamples'))} resamples).</p>",
        _warnings(s),
        _cards(s),
        _position_section(s),
        _win_rate_section(s),
        _agreement_section(s, digest),
        _length_section(s, digest),
        _ratings_section(ratings),
        _verdicts_section(s, digest),
        _provenance_section(s, provenance or {}),
    ]
    return _page(f"judgebias: {title}", "".join(parts))


def _page(title: str, body: str) -> str:
    """A complete page whose only script is ours (pinned by hash in the CSP) and which loads nothing."""
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii")
    csp = f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{digest}'"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{STYLE}</style></head>"
        f"<body><main>{body}</main><script>{SCRIPT}</script></body></html>\n"
    )


def _badge(status: Any) -> str:
    name = str(status)
    return f'<span class="badge {esc(name)}">{esc(name)}</span>'


def _warnings(s: dict[str, Any]) -> str:
    out = []
    if s.get("agreement_warning") and s.get("agreement_message"):
        out.append(f'<div class="warn">{esc(s["agreement_message"])}</div>')
    if s.get("failed_calls"):
        out.append(
            f'<div class="warn">{esc(s["failed_calls"])} calls failed after their retries; those items are left '
            f"out of every figure (reasons in verdicts.jsonl). Rerun the same command to retry only those.</div>"
        )
    for note in s.get("notes") or []:
        out.append(f'<div class="note">{esc(note)}</div>')
    return "".join(out)


def _card(name: str, value: str, ci: str = "", hint: str = "") -> str:
    return (
        f'<div class="card"><div class="k">{esc(name)}</div><div class="v">{esc(value)}</div>'
        f'<div class="ci">{esc(ci)}</div><div class="h">{esc(hint)}</div></div>'
    )


def _cards(s: dict[str, Any]) -> str:
    cards = [
        _card("win rate of a", pct(s.get("win_rate")), ci_text(s, "win_rate"), "a win counts 1, a tie ½"),
        _card(
            "position consistency",
            pct(s.get("position_consistency")),
            ci_text(s, "position_consistency"),
            "both orders give the same verdict",
        ),
        _card(
            "biased to first",
            pct(s.get("biased_first")),
            ci_text(s, "biased_first"),
            "picked whichever was shown first",
        ),
        _card(
            "biased to second",
            pct(s.get("biased_second")),
            ci_text(s, "biased_second"),
            "picked whichever was shown second",
        ),
    ]
    if "human_agreement" in s:
        cards.append(
            _card(
                "agreement with people",
                pct(s.get("human_agreement")),
                ci_text(s, "human_agreement"),
                f"on {s.get('human_agreement_n')} labelled items",
            )
        )
    if s.get("longer_wins") is not None:
        cards.append(
            _card(
                "longer answer wins",
                pct(s.get("longer_wins")),
                ci_text(s, "longer_wins"),
                f"of {s.get('longer_wins_n')} decisive verdicts",
            )
        )
    if s.get("length_controlled_win_rate") is not None:
        cards.append(
            _card(
                "length-controlled win rate",
                pct(s.get("length_controlled_win_rate")),
                ci_text(s, "length_controlled_win_rate"),
                "win rate of a at equal lengths",
            )
        )
    cards.append(
        _card(
            "wins / ties / losses of a",
            f"{s.get('wins')} / {s.get('ties')} / {s.get('losses')}",
            hint=f"invalid replies: {s.get('n_invalid', 0)}, failed calls: {s.get('failed_calls', 0)}",
        )
    )
    cards.append(
        _card(
            "calls live / cached",
            f"{s.get('calls_live')} / {s.get('calls_cached')}",
            hint=f"tokens {s.get('prompt_tokens', 0)} in / {s.get('completion_tokens', 0)} out",
        )
    )
    cards.append(
        _card(
            "cost",
            f"${float(s.get('cost_usd') or 0):.4f}",
            f"saved by the cache: ${float(s.get('saved_usd') or 0):.4f}",
            "at the judge config's prices",
        )
    )
    return f'<div class="cards">{"".join(cards)}</div>'


def _position_section(s: dict[str, Any]) -> str:
    bars = []
    judges = s.get("judges") or {}
    main = position_bar("ensemble" if judges else str(s.get("judge")), s)
    if main:
        bars.append(main)
    for name, figures in judges.items():
        bar = position_bar(str(name), figures)
        if bar:
            bars.append(bar)
    head = "<h2>Position bias</h2>"
    if not bars:
        return head + '<p class="note">Only one order was recorded, so position bias cannot be measured.</p>'
    sign = ""
    if s.get("first_position_p") is not None and s.get("first_position_n"):
        sign = (
            f" Of the {esc(s.get('first_position_n'))} items where the verdict followed the position, "
            f"{esc(s.get('first_position_k'))} followed the first slot (sign test p = {float(s['first_position_p']):.3g})."
        )
    return (
        head
        + f'<figure id="position-chart">{legend(POSITION_SEGMENTS)}'
        + stacked_bars(bars, POSITION_SEGMENTS, title="position-bias breakdown")
        + "<figcaption>Each item is judged in both orders. Consistent: the same verdict both times. First-biased: "
        "each time the answer shown first won. Second-biased: each time the answer shown second won. Other: the "
        f"orders disagree otherwise (e.g. a tie one way, a preference the other).{sign}</figcaption></figure>"
    )


def _win_rate_section(s: dict[str, Any]) -> str:
    points = [
        point(s, "win_rate", "win rate (both orders agree)"),
        point(s, "decisive_win_rate", "decisive verdicts only"),
        point(s, "win_rate_consistent", "consistent items only"),
        point(s, "win_rate_pooled", "pooled over single calls"),
    ]
    if s.get("length_controlled_win_rate") is not None:
        points.append(point(s, "length_controlled_win_rate", "length-controlled"))
    if s.get("soft_win_rate") is not None:
        points.append(point(s, "soft_win_rate", "soft (label probabilities)"))
    for name, figures in (s.get("judges") or {}).items():
        points.append(point(figures, "win_rate", f"judge: {name}"))
    return (
        "<h2>Win rate</h2>"
        + '<figure id="win-rate-chart">'
        + interval_plot(points, title="win rate of answer a with 95% intervals")
        + "<figcaption>Share of the comparisons won by answer a (ties count half), with 95% intervals. The dashed "
        "line is 50%: an interval that covers it means no detectable preference.</figcaption></figure>"
    )


def _agreement_section(s: dict[str, Any], digest: VerdictDigest) -> str:
    if "human_agreement" not in s:
        return ""
    points = [point(s, "human_agreement", "agreement with the label")]
    if s.get("human_agreement_decisive") is not None:
        points.append(point(s, "human_agreement_decisive", "both decisive"))
    if s.get("human_vote_agreement") is not None:
        points.append(point(s, "human_vote_agreement", "with a random human vote"))
    if s.get("human_human_agreement") is not None:
        points.append(point(s, "human_human_agreement", "human–human ceiling"))
    kappa = s.get("cohen_kappa")
    kappa_text = "n/a" if kappa is None else f"{float(kappa):.2f}"
    labels = ["1", "2", "tie"]
    verdicts = ["1", "2", "tie", "error"]
    header = "".join(f"<th>judge: {VERDICT_NAMES[v]}</th>" for v in verdicts)
    body = "".join(
        f"<tr><th>people: {VERDICT_NAMES[h]}</th>"
        + "".join(f'<td class="num">{digest.confusion.get((h, v), 0)}</td>' for v in verdicts)
        + "</tr>"
        for h in labels
    )
    return (
        "<h2>Agreement with people</h2>"
        + '<figure id="agreement-chart">'
        + interval_plot(points, title="agreement with human labels", reference=s.get("agreement_threshold"))
        + f"<figcaption>On {esc(s.get('human_agreement_n'))} labelled items; Cohen's kappa {esc(kappa_text)}. "
        f"The dashed line is the agreement threshold ({pct(s.get('agreement_threshold'), 0)}).</figcaption></figure>"
        + f'<table id="confusion" style="max-width:560px"><thead><tr><th></th>{header}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


def _length_section(s: dict[str, Any], digest: VerdictDigest) -> str:
    head = "<h2>Length</h2>"
    if not digest.found:
        return head + '<p class="note">verdicts.jsonl was not found, so the length picture is missing.</p>'
    if not digest.has_lengths:
        return head + '<p class="note">No answer lengths were recorded.</p>'
    bars = []
    for index, counts in enumerate(digest.length_bins):
        n = sum(counts.values())
        if not n:
            continue
        keys = ("1", "tie", "2", "error")
        bars.append(Bar(_length_label(index), [counts.get(k, 0) / n for k in keys], f"{n} item{'s' * (n != 1)}"))
    summary = (
        f"The longer answer won {_with_ci(s, 'longer_wins')} of {s.get('longer_wins_n')} decisive verdicts between "
        f"answers of different length; the length-controlled win rate of a is "
        f"{_with_ci(s, 'length_controlled_win_rate')}."
    )
    if s.get("length_controlled_note"):
        summary += f" ({s['length_controlled_note']})"
    return (
        head
        + '<figure id="length-chart">'
        + legend(VERDICT_SEGMENTS)
        + stacked_bars(bars, VERDICT_SEGMENTS, title="verdicts by length difference (a minus b)")
        + f"<figcaption>Verdicts of all {digest.total} items grouped by how much longer answer a is than answer b "
        f"(characters). A judge without a length bias shows no drift from top to bottom. {esc(summary)}"
        "</figcaption></figure>"
    )


def _ratings_section(ratings: Sequence[dict[str, Any]]) -> str:
    if not ratings:
        return ""
    rows = "".join(
        f"<tr><td>{esc(r.get('rank'))}</td><td>{esc(r.get('model'))}</td>"
        f'<td class="num">{_num(r.get("rating"))}</td>'
        f'<td class="num">{_num(r.get("low"))} – {_num(r.get("high"))}</td><td class="num">{esc(r.get("n"))}</td></tr>'
        for r in ratings
    )
    return (
        '<h2>Model ratings</h2><p class="sub">Bradley–Terry ratings of the answering models from this run\'s '
        "verdicts, with 95% intervals.</p>"
        f'<table id="ratings" style="max-width:700px"><thead><tr><th>rank</th><th>model</th><th>rating</th>'
        f"<th>95% interval</th><th>items</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _num(value: Any) -> str:
    return "" if value is None else f"{float(value):.3f}"


def _reply_block(title: str, raw: Any, error: Any, cached: Any) -> str:
    text = "" if raw is None else str(raw)
    if len(text) > MAX_REPLY_CHARS:
        text = text[:MAX_REPLY_CHARS] + f"… ({len(str(raw)) - MAX_REPLY_CHARS} more characters in verdicts.jsonl)"
    origin = " (from the cache)" if cached else ""
    body = f"<pre>{esc(text)}</pre>" if raw is not None else ""
    if error:
        body += f'<pre class="error">error: {esc(error)}</pre>'
    if not body:
        body = '<span class="muted">no reply</span>'
    return f"<div><b>{esc(title)}</b>{esc(origin)}{body}</div>"


def _replies(row: dict[str, Any]) -> str:
    blocks = []
    judges = row.get("judges")
    sources = judges.items() if isinstance(judges, dict) else [(None, row)]
    for name, calls in sources:
        if not isinstance(calls, dict):
            continue
        prefix = f"{name}: " if name is not None else ""
        if name is not None:
            blocks.append(
                f"<div><b>{esc(name)}</b> verdict {esc(VERDICT_NAMES.get(str(calls.get('verdict')), calls.get('verdict')))}</div>"
            )
        blocks.append(
            _reply_block(
                f"{prefix}call 1 (a shown first)", calls.get("raw1"), calls.get("error1"), calls.get("cached1")
            )
        )
        if calls.get("call2") is not None or calls.get("raw2") is not None or calls.get("error2"):
            blocks.append(
                _reply_block(
                    f"{prefix}call 2 (b shown first)", calls.get("raw2"), calls.get("error2"), calls.get("cached2")
                )
            )
    return f"<details><summary>replies</summary>{''.join(blocks)}</details>"


def _verdicts_section(s: dict[str, Any], digest: VerdictDigest) -> str:
    head = "<h2>Verdicts</h2>"
    if not digest.found:
        return head + '<p class="note">verdicts.jsonl was not found next to this report.</p>'
    has_models = any(r.get("model_a") or r.get("model_b") for r in digest.rows)
    has_human = any(r.get("human") is not None for r in digest.rows)
    columns: list[tuple[str, str, str]] = [("n", "#", "num"), ("id", "id", "text"), ("verdict", "verdict", "text")]
    columns += [("call1", "call 1 (a first)", "text"), ("call2", "call 2 (b first)", "text")]
    columns += [("consistent", "consistent", "text")]
    if has_human:
        columns.append(("human", "people", "text"))
    columns += [("len_a", "chars a", "num"), ("len_b", "chars b", "num")]
    if has_models:
        columns.append(("models", "models (a vs b)", "text"))
    columns.append(("replies", "replies", "none"))
    header = "".join(
        f'<th data-key="{key}" data-type="{kind}" scope="col">'
        + (f'<button type="button">{esc(name)}</button>' if kind != "none" else esc(name))
        + "</th>"
        for key, name, kind in columns
    )
    lines = []
    for index, row in enumerate(digest.rows, start=1):
        consistent = row.get("consistent")
        cells = {
            "n": f'<td class="num">{index}</td>',
            "id": f"<td>{esc(row.get('id'))}</td>",
            "verdict": f"<td>{esc(VERDICT_NAMES.get(str(row.get('verdict')), row.get('verdict')))}</td>",
            "call1": f"<td>{esc(row.get('call1'))}</td>",
            "call2": f"<td>{esc(row.get('call2') if row.get('call2') is not None else '–')}</td>",
            "consistent": f"<td>{'yes' if consistent else 'no' if consistent is False else '–'}</td>",
            "human": f"<td>{esc(VERDICT_NAMES.get(str(row.get('human')), row.get('human') or '–'))}</td>",
            "len_a": f'<td class="num">{esc(row.get("chars_a"))}</td>',
            "len_b": f'<td class="num">{esc(row.get("chars_b"))}</td>',
            "models": f"<td>{esc(row.get('model_a'))} vs {esc(row.get('model_b'))}</td>",
            "replies": f"<td>{_replies(row)}</td>",
        }
        lines.append("<tr>" + "".join(cells[key] for key, _, _ in columns) + "</tr>")
    capped = ""
    if digest.total > len(digest.rows):
        capped = (
            f'<p class="note" id="capped">The table shows the first {len(digest.rows):,} of {digest.total:,} items; '
            f"every item is in verdicts.jsonl, and every figure and picture above counts all of them.</p>"
        )
    if digest.unreadable:
        capped += f'<p class="note">{digest.unreadable} lines of verdicts.jsonl could not be read.</p>'
    return (
        head
        + '<p class="sub">Verdicts are in the item\'s frame: a or b wins, or tie. Calls are as the judge saw them: '
        "A is the answer shown first. Click a column to sort; the search matches any text in a row, replies "
        "included (also as <code>report.html?q=text</code>).</p>"
        + capped
        + '<div class="tools"><input id="search" type="search" placeholder="search verdicts, ids, replies…" '
        'aria-label="search the verdicts">'
        + f'<span class="muted"><span id="shown">{len(digest.rows)}</span> of {len(digest.rows)} rows shown</span></div>'
        + f'<table id="verdicts" data-interactive="1"><thead><tr>{header}</tr></thead><tbody>{"".join(lines)}'
        "</tbody></table>"
    )


def _provenance_section(s: dict[str, Any], provenance: dict[str, Any]) -> str:
    entries: list[tuple[str, Any]] = [
        ("models reported", ", ".join(map(str, s.get("models_reported") or [])) or "–"),
        ("labels", s.get("labels")),
        ("judging time", f"{s.get('judging_seconds')} s"),
    ]
    if provenance:
        entries += [
            ("config hash", provenance.get("config_hash")),
            ("git revision", provenance.get("git_revision") or "–"),
            ("python", provenance.get("python")),
            (
                "packages",
                ", ".join(f"{k} {v}" for k, v in (provenance.get("packages") or {}).items() if v is not None),
            ),
        ]
    items = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in entries)
    config = ""
    if isinstance(provenance.get("config"), dict):
        text = json.dumps(provenance["config"], indent=2, ensure_ascii=False)
        config = f"<details><summary>resolved configuration</summary><pre>{esc(text)}</pre></details>"
    return f'<h2>Provenance</h2><dl class="kv">{items}</dl>{config}'


# ---------------------------------------------------------------- the sweep page


@dataclass
class SweepJob:
    """One job of a sweep as the sweep page shows it."""

    name: str
    summary: dict[str, Any]
    overrides: str = ""
    report_href: str | None = None


def write_sweep_report(out_dir: Path, jobs: Sequence[SweepJob]) -> Path:
    """Write sweep_report.html comparing every job of one or more sweeps side by side."""
    page = render_sweep_report(jobs, title=str(out_dir.name))
    path = out_dir / "sweep_report.html"
    temp = path.with_name(path.name + ".tmp")
    temp.write_text(page, encoding="utf-8")
    os.replace(temp, path)
    return path


def _job_label(job: SweepJob) -> str:
    """A job as the charts name it: what the sweep varied when known, else judge / rubric / data."""
    s = job.summary
    what = job.overrides or f"{s.get('judge')} / {s.get('rubric')} / {s.get('data')}"
    return f"{job.name}: {what}"


def render_sweep_report(jobs: Sequence[SweepJob], *, title: str) -> str:
    """The whole sweep_report.html text."""
    ok = [j for j in jobs if j.summary.get("status") in ("ok", "errors")]
    failed = [j for j in jobs if j.summary.get("status") not in ("ok", "errors", "dry-run")]
    parts = [
        f"<h1>judgebias sweep: {esc(title)}</h1>",
        f'<p class="sub">{len(jobs)} jobs: {len(ok)} finished, {len(failed)} failed or missing. '
        "Intervals are 95% item-bootstrap intervals.</p>",
    ]
    for job in failed:
        parts.append(
            f'<div class="warn">job {esc(job.name)} {esc(job.summary.get("status"))}: {esc(job.summary.get("error"))}</div>'
        )
    if ok:
        parts.append('<h2>Win rate</h2><figure id="win-rate-chart">')
        parts.append(interval_plot([point(j.summary, "win_rate", _job_label(j)) for j in ok], title="win rate per job"))
        parts.append("<figcaption>Win rate of answer a per job, with 95% intervals.</figcaption></figure>")
        bars = [b for b in (position_bar(_job_label(j), j.summary) for j in ok) if b]
        if bars:
            parts.append('<h2>Position bias</h2><figure id="position-chart">' + legend(POSITION_SEGMENTS))
            parts.append(stacked_bars(bars, POSITION_SEGMENTS, title="position-bias breakdown per job"))
            parts.append(
                "<figcaption>Consistent / first-biased / second-biased / other, per job.</figcaption></figure>"
            )
        labelled = [j for j in ok if "human_agreement" in j.summary]
        if labelled:
            parts.append('<h2>Agreement with people</h2><figure id="agreement-chart">')
            parts.append(
                interval_plot(
                    [point(j.summary, "human_agreement", _job_label(j)) for j in labelled],
                    title="agreement with human labels per job",
                    reference=labelled[0].summary.get("agreement_threshold"),
                )
            )
            parts.append(
                "<figcaption>Agreement with the human label, on the labelled items of each job.</figcaption></figure>"
            )
    parts.append(_jobs_table(jobs))
    return _page(f"judgebias sweep: {title}", "".join(parts))


def _jobs_table(jobs: Sequence[SweepJob]) -> str:
    columns: list[tuple[str, str, str]] = [
        ("job", "job", "text"),
        ("status", "status", "text"),
        ("judge", "judge", "text"),
        ("rubric", "rubric", "text"),
        ("data", "data", "text"),
        ("overrides", "overrides", "text"),
        ("n", "n", "num"),
        ("win_rate", "win rate [95% CI]", "num"),
        ("position_consistency", "consistency [CI]", "num"),
        ("biased_first", "biased first", "num"),
        ("biased_second", "biased second", "num"),
        ("human_agreement", "people [CI]", "num"),
        ("n_invalid", "invalid", "num"),
        ("calls_live", "calls live", "num"),
        ("calls_cached", "cached", "num"),
        ("tokens", "tokens in / out", "num"),
        ("cost_usd", "cost $", "num"),
    ]
    header = "".join(
        f'<th data-key="{key}" data-type="{kind}" scope="col"><button type="button">{esc(name)}</button></th>'
        for key, name, kind in columns
    )
    lines = []
    for job in jobs:
        s = job.summary
        name = esc(job.name)
        link = f'<a href="{esc(job.report_href)}">{name}</a>' if job.report_href else name

        def rate(key: str, s: dict[str, Any] = s, with_ci: bool = True) -> str:
            value = s.get(key)
            shown = _with_ci(s, key) if with_ci else pct(value)
            return f'<td class="num" data-v="{"" if value is None else value}">{esc(shown)}</td>'

        tokens = s.get("prompt_tokens")
        tokens_text = "" if tokens is None else f"{tokens} / {s.get('completion_tokens')}"
        cost = s.get("cost_usd")
        cost_text = "" if cost is None else f"{float(cost):.4f}"
        lines.append(
            "<tr>"
            f"<td>{link}</td><td>{_badge(s.get('status', 'ok'))}</td><td>{esc(s.get('judge'))}</td>"
            f"<td>{esc(s.get('rubric'))}</td><td>{esc(s.get('data'))}</td><td>{esc(job.overrides)}</td>"
            f'<td class="num">{esc(s.get("n_items", ""))}</td>'
            + rate("win_rate")
            + rate("position_consistency")
            + rate("biased_first", with_ci=False)
            + rate("biased_second", with_ci=False)
            + rate("human_agreement")
            + f'<td class="num">{esc(s.get("n_invalid", ""))}</td><td class="num">{esc(s.get("calls_live", ""))}</td>'
            f'<td class="num">{esc(s.get("calls_cached", ""))}</td>'
            f'<td class="num" data-v="{esc(tokens)}">{esc(tokens_text)}</td>'
            f'<td class="num">{esc(cost_text)}</td>'
            "</tr>"
        )
    return (
        "<h2>Jobs</h2>"
        '<div class="tools"><input id="search" type="search" placeholder="search jobs…" aria-label="search the jobs">'
        f'<span class="muted"><span id="shown">{len(jobs)}</span> of {len(jobs)} jobs shown</span></div>'
        f'<div class="scroll"><table id="jobs" data-interactive="1"><thead><tr>{header}</tr></thead>'
        f"<tbody>{''.join(lines)}</tbody></table></div>"
    )
