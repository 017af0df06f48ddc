"""The geometry of the report's pictures: stacked bars and interval plots, laid out for inline SVG.

Pure layout (coordinates, shares, labels as text): the markup is written by templates/charts.html.j2, so every
label is escaped by the template engine like any other text on the page. No plotting library, no network.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from judgebias.figures.formatting import ci_text, pct

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
TICKS = (0, 25, 50, 75, 100)
LABEL_CHARS = 40  # longer row labels are shortened to fit left of the axis (the tooltip keeps the whole label)


@dataclass(frozen=True)
class Bar:
    """One row of a stacked bar chart: fractions per segment (summing to at most 1) and a note on the right."""

    label: str
    parts: Sequence[float]
    note: str = ""


@dataclass(frozen=True)
class Point:
    """One row of an interval plot: a figure's value and its 95% interval."""

    label: str
    value: float | None
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class Tick:
    """A vertical grid line with its percent label under the axis."""

    x: float
    text: str


@dataclass(frozen=True)
class Segment:
    """One coloured piece of a bar; `text` is printed inside it when it is wide enough, else empty."""

    name: str
    colour: str
    x: float
    width: float
    tooltip: str
    text: str
    text_x: float


@dataclass(frozen=True)
class BarRow:
    """One laid-out bar: its label, segments and note."""

    y: float
    label: str
    segments: Sequence[Segment]
    note: str


@dataclass(frozen=True)
class BarChart:
    """Horizontal 100% bars, one per row, on a 0–100% axis."""

    title: str
    width: int
    height: int
    label_w: int
    bar_w: int
    ticks: Sequence[Tick]
    rows: Sequence[BarRow]


@dataclass(frozen=True)
class Whisker:
    """A laid-out point: the dot (None: not measured), its interval line (None: no interval) and its note."""

    y: float
    label: str
    x: float | None
    low_x: float | None
    high_x: float | None
    tooltip: str
    note: str


@dataclass(frozen=True)
class IntervalChart:
    """Dots with 95% intervals on a 0–100% axis; `reference_x` is a dashed line (e.g. 50%) or None."""

    title: str
    width: int
    height: int
    label_w: int
    plot_w: int
    ticks: Sequence[Tick]
    reference_x: float | None
    rows: Sequence[Whisker]


def stacked_bars(bars: Sequence[Bar], segments: Sequence[tuple[str, str]], *, title: str) -> BarChart:
    """Lay out one bar per row; each segment carries a tooltip of its exact share."""
    label_w, bar_w, note_w, row_h = 280, 520, 110, 28
    rows = []
    for index, bar in enumerate(bars):
        x = float(label_w)
        pieces = []
        for (name, colour), share in zip(segments, bar.parts, strict=False):
            if share <= 0:
                continue
            width = bar_w * min(1.0, share)
            pieces.append(
                Segment(
                    name=name,
                    colour=colour,
                    x=_r(x),
                    width=_r(width),
                    tooltip=f"{bar.label}: {name} {pct(share)}",
                    text=f"{100 * share:.0f}%" if width >= 34 else "",
                    text_x=_r(x + width / 2),
                )
            )
            x += width
        rows.append(BarRow(y=6 + index * row_h, label=shorten(bar.label), segments=pieces, note=bar.note))
    return BarChart(
        title=title,
        width=label_w + bar_w + note_w,
        height=row_h * len(bars) + 24,
        label_w=label_w,
        bar_w=bar_w,
        ticks=_ticks(label_w, bar_w),
        rows=rows,
    )


def interval_plot(points: Sequence[Point], *, title: str, reference: float | None = 0.5) -> IntervalChart:
    """Lay out each figure as a dot with its 95% interval (a dashed line marks `reference`)."""
    label_w, plot_w, note_w, row_h = 280, 480, 170, 26
    rows = []
    for index, p in enumerate(points):
        y = 8 + index * row_h + 9
        if p.value is None:
            rows.append(Whisker(y, shorten(p.label), None, None, None, "", ""))
            continue
        note = pct(p.value) + ci_text((p.low, p.high))
        low_x = high_x = None
        if p.low is not None and p.high is not None:
            low_x, high_x = _r(label_w + plot_w * clamp(p.low)), _r(label_w + plot_w * clamp(p.high))
        x = _r(label_w + plot_w * clamp(p.value))
        rows.append(Whisker(y, shorten(p.label), x, low_x, high_x, f"{p.label}: {note}", note))
    return IntervalChart(
        title=title,
        width=label_w + plot_w + note_w,
        height=row_h * len(points) + 30,
        label_w=label_w,
        plot_w=plot_w,
        ticks=_ticks(label_w, plot_w),
        reference_x=None if reference is None else _r(label_w + plot_w * float(reference)),
        rows=rows,
    )


def clamp(value: float) -> float:
    """A share kept inside the axis, [0, 1]."""
    return min(1.0, max(0.0, float(value)))


def shorten(text: str, limit: int = LABEL_CHARS) -> str:
    """The text cut to `limit` characters with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _ticks(left: int, width: int) -> list[Tick]:
    """The 0–100% axis marks of a plot `width` pixels wide starting `left` pixels in."""
    return [Tick(_r(left + width * t / 100), f"{t}%") for t in TICKS]


def _r(value: float) -> float:
    """A coordinate rounded to a tenth of a pixel, so the markup stays short."""
    return round(value, 1)
