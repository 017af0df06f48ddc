"""The geometry of the report's pictures: stacked bars and interval plots, laid out for inline SVG.

Pure layout (coordinates, shares, labels as text): the markup is written by templates/charts.html.j2, so every
label is escaped by the template engine like any other text on the page. No plotting library, no network.

Every chart comes in two layouts: a wide one (labels left of the axis, notes right of it) and, as its `narrow`, one
for phones and narrow windows (label and note above each row, the axis the full width). The page shows one of them
by the width of its panel (report.css) and scales it down to fit, never past the panel's edge.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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
NARROW_W = 320  # the narrow layout's width: a 360 px phone shows it at about its natural size
NARROW_PAD = 18  # room left and right of the narrow axis for half of "0%" and "100%"
CHAR_W = 6.5  # a generous width of one 12 px character, for fitting a label beside its note


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
class Caption:
    """A row's label or note: where it is written and which end of it sits there (start or end)."""

    text: str
    x: float
    y: float
    anchor: str


@dataclass(frozen=True)
class BarRow:
    """One laid-out bar: its label, segments and note."""

    y: float
    label: Caption
    segments: Sequence[Segment]
    note: Caption


@dataclass(frozen=True)
class Frame:
    """Where a chart's parts go: room for the labels left of the axis, the axis, room for the notes right of it; the
    rows' height and count, the margin above the first row and the one below the last (for the tick labels)."""

    label_w: int
    axis_w: int
    note_w: int
    row_h: int
    rows: int
    top: int
    bottom: int

    def row_y(self, index: int) -> int:
        """The height at which row `index` is drawn."""
        return self.top + index * self.row_h

    def x(self, share: float) -> float:
        """Where a share of the axis (0 to 1) lies."""
        return _r(self.label_w + self.axis_w * share)


@dataclass(frozen=True)
class Chart:
    """What every chart has: a title and a frame, and what follows from the frame (its size and axis marks)."""

    title: str
    frame: Frame

    @property
    def width(self) -> int:
        """The picture's width: labels, axis and notes."""
        return self.frame.label_w + self.frame.axis_w + self.frame.note_w

    @property
    def height(self) -> int:
        """The picture's height: the rows and the margins above and below them."""
        return self.frame.row_h * self.frame.rows + self.frame.top + self.frame.bottom

    @property
    def label_w(self) -> int:
        """Where the axis starts."""
        return self.frame.label_w

    @property
    def ticks(self) -> list[Tick]:
        """The 0–100% axis marks."""
        return [Tick(_r(self.frame.label_w + self.frame.axis_w * t / 100), f"{t}%") for t in TICKS]


@dataclass(frozen=True)
class BarChart(Chart):
    """Horizontal 100% bars, one per row, on a 0–100% axis."""

    rows: Sequence[BarRow]
    narrow: BarChart | None = None  # the same chart laid out for a narrow panel

    @property
    def bar_w(self) -> int:
        """The width of a whole (100%) bar."""
        return self.frame.axis_w


@dataclass(frozen=True)
class Whisker:
    """A laid-out point: the dot (None: not measured), its interval line (None: no interval) and its note."""

    y: float
    label: Caption
    x: float | None
    low_x: float | None
    high_x: float | None
    tooltip: str
    note: Caption  # the value and interval, or "n/a"


@dataclass(frozen=True)
class IntervalChart(Chart):
    """Dots with 95% intervals on a 0–100% axis; `reference_x` is a dashed line (e.g. 50%) or None."""

    reference_x: float | None
    rows: Sequence[Whisker]
    narrow: IntervalChart | None = None  # the same chart laid out for a narrow panel

    @property
    def plot_w(self) -> int:
        """The width of the 0–100% axis."""
        return self.frame.axis_w


def stacked_bars(bars: Sequence[Bar], segments: Sequence[tuple[str, str]], *, title: str) -> BarChart:
    """Lay out one bar per row, wide and narrow; each segment carries a tooltip of its exact share."""
    return _stacked_bars(bars, segments, title, narrow=False)


def _stacked_bars(bars: Sequence[Bar], segments: Sequence[tuple[str, str]], title: str, *, narrow: bool) -> BarChart:
    frame = _frame([bar.label for bar in bars], narrow, wide=(520, 110, 28, 6), tall=(42, 22), bottom=18)
    rows = []
    for index, bar in enumerate(bars):
        x = float(frame.label_w)
        pieces = []
        for (name, colour), share in zip(segments, bar.parts, strict=False):
            if share <= 0:
                continue
            width = frame.axis_w * min(1.0, share)
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
        y = frame.row_y(index)
        note_x = frame.label_w + frame.axis_w + 8
        label, note = _captions(bar.label, bar.note, frame.label_w, note_x, (y + 15, y - 5), narrow=narrow)
        rows.append(BarRow(y=y, label=label, segments=pieces, note=note))
    narrow_layout = None if narrow else _stacked_bars(bars, segments, title, narrow=True)
    return BarChart(title, frame, rows, narrow=narrow_layout)


def interval_plot(points: Sequence[Point], *, title: str, reference: float | None = 0.5) -> IntervalChart:
    """Lay out each figure as a dot with its 95% interval, wide and narrow (a dashed line marks `reference`)."""
    return _interval_plot(points, title, reference, narrow=False)


def _interval_plot(points: Sequence[Point], title: str, reference: float | None, *, narrow: bool) -> IntervalChart:
    frame = _frame([p.label for p in points], narrow, wide=(480, 170, 26, 17), tall=(40, 34), bottom=13)
    rows = []
    for index, p in enumerate(points):
        y = frame.row_y(index)
        if p.value is None:
            label, note = _captions(p.label, "n/a", frame.label_w, frame.label_w + 6, (y + 4, y - 10), narrow=narrow)
            rows.append(Whisker(y, label, None, None, None, "", note))
            continue
        text = pct(p.value) + ci_text((p.low, p.high))
        note_x = frame.label_w + frame.axis_w + 10
        label, note = _captions(p.label, text, frame.label_w, note_x, (y + 4, y - 10), narrow=narrow)
        low_x = high_x = None
        if p.low is not None and p.high is not None:
            low_x, high_x = frame.x(clamp(p.low)), frame.x(clamp(p.high))
        rows.append(Whisker(y, label, frame.x(clamp(p.value)), low_x, high_x, f"{p.label}: {text}", note))
    reference_x = None if reference is None else frame.x(float(reference))
    narrow_layout = None if narrow else _interval_plot(points, title, reference, narrow=True)
    return IntervalChart(title, frame, reference_x, rows, narrow=narrow_layout)


def _frame(
    labels: Sequence[str], narrow: bool, *, wide: tuple[int, int, int, int], tall: tuple[int, int], bottom: int
) -> Frame:
    """The frame of a chart with these row labels. Wide: room for the longest label, then `wide`'s axis and note
    widths, row height and top margin; narrow: the axis spans the panel, `tall` gives the row height and top margin."""
    if narrow:
        row_h, top = tall
        return Frame(NARROW_PAD, NARROW_W - 2 * NARROW_PAD, NARROW_PAD, row_h, len(labels), top, bottom)
    axis_w, note_w, row_h, top = wide
    return Frame(_label_w(labels), axis_w, note_w, row_h, len(labels), top, bottom)


def _label_w(labels: Iterable[str]) -> int:
    """Room left of a wide axis for the longest (shortened) label, so short labels leave no empty margin."""
    longest = max((len(shorten(label)) for label in labels), default=0)
    return int(min(280, max(80, 16 + CHAR_W * longest)))


def _captions(
    label: str, note: str, axis_x: int, note_x: int, ys: tuple[float, float], *, narrow: bool
) -> tuple[Caption, Caption]:
    """Where a row's label and note go: the label ending left of the axis at `axis_x` and the note starting at
    `note_x`, at height ys[0] (wide); or both above the row at ys[1], the label shortened so they never overlap."""
    if not narrow:
        return Caption(shorten(label), axis_x - 8, ys[0], "end"), Caption(note, note_x, ys[0], "start")
    room = NARROW_W - 2 * NARROW_PAD - CHAR_W * (len(note) + 1)
    return (
        Caption(shorten(label, max(8, int(room / CHAR_W))), NARROW_PAD, ys[1], "start"),
        Caption(note, NARROW_W - NARROW_PAD, ys[1], "end"),
    )


def clamp(value: float) -> float:
    """A share kept inside the axis, [0, 1]."""
    return min(1.0, max(0.0, float(value)))


def shorten(text: str, limit: int = LABEL_CHARS) -> str:
    """The text cut to `limit` characters with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _r(value: float) -> float:
    """A coordinate rounded to a tenth of a pixel, so the markup stays short."""
    return round(value, 1)
