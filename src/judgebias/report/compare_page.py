"""compare.html: a paired comparison (or a sweep's jobs against one job) in the reports' style, self-contained.

The differences table per comparison, then one searchable table of every item that moved with both runs' calls
and replies, so a reviewer of a prompt change can read why a figure moved.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judgebias.core.redaction import Redactor
from judgebias.core.verdict import item_winner
from judgebias.figures.comparison import Comparison
from judgebias.figures.comparison_text import diff_text, exact_test_text, moved_text, value_text
from judgebias.figures.paired import Difference, worse_beyond, worse_side
from judgebias.report.pages import Cell, Column, Row, Table, render_page, shortened_reply, text, write_page

MAX_MOVED_ROWS = 2000  # the page lists at most this many moved items (compare.json lists those it chose too)


@dataclass(frozen=True)
class DifferenceRow:
    """One figure's line of a comparison's table."""

    name: str
    base: str
    cand: str
    diff: str
    test: str
    change: str  # "worse" / "better" when the interval leaves out 0 on that side, else ""


@dataclass(frozen=True)
class Section:
    """One comparison on the page."""

    title: str
    base: str
    cand: str
    base_what: str
    cand_what: str
    matched: str
    notes: Sequence[str]
    rows: Sequence[DifferenceRow]
    moved_text: str


@dataclass(frozen=True)
class MovedRow(Row):
    """A moved item's row, and both runs' replies under it."""

    replies: Sequence[tuple[str, str | None]] = ()


def change(name: str, difference: Difference) -> str:
    """'worse' or 'better' when the paired interval leaves out 0 on that side of what is better for a judge."""
    side = worse_side(name)
    if side is None:
        return ""
    if worse_beyond(difference, side, 0.0):
        return "worse"
    return "better" if worse_beyond(difference, "rise" if side == "drop" else "drop", 0.0) else ""


def section(title: str, comparison: Comparison) -> Section:
    """The differences table of one comparison."""
    c = comparison
    rows = [
        DifferenceRow(
            name,
            value_text(name, d.base),
            value_text(name, d.cand),
            diff_text(name, d),
            exact_test_text(d),
            change(name, d),
        )
        for name, d in c.differences.items()
        if d.base is not None or d.cand is not None
    ]
    how = f"clusters of {c.cluster}" if c.cluster else "items"
    return Section(
        title=title,
        base=str(c.base.folder),
        cand=str(c.cand.folder),
        base_what=c.base.describe(),
        cand_what=c.cand.describe(),
        matched=f"{c.matched} items matched ({c.coverage.only_base} only in base, {c.coverage.only_cand} only in the "
        f"candidate); {c.resamples} paired resamples over {how}",
        notes=[*c.coverage.statements(), *c.notes],
        rows=rows,
        moved_text=f"{c.moved_total} items ({moved_text(c)}); the first {c.listed} of each kind listed below",
    )


def moved_table(comparisons: Sequence[tuple[str, Sequence[dict[str, Any]]]]) -> Table:
    """The listed moved items (with their replies) of every comparison, the job first when there are several."""
    several = len(comparisons) > 1
    columns = [Column("job", "job")] if several else []
    columns += [
        Column("id", "id"),
        Column("kinds", "moved"),
        Column("human", "human"),
        Column("base", "base verdict (calls)"),
        Column("cand", "candidate verdict (calls)"),
        Column("replies", "replies", "none"),
    ]
    rows: list[Row] = []
    for job, moved in comparisons:
        for item in moved:
            if len(rows) >= MAX_MOVED_ROWS:
                break
            cells = [Cell(job, nowrap=True)] if several else []
            cells += [
                Cell(str(item["id"]), nowrap=True),
                Cell(", ".join(kind.replace("_", " ") for kind in item["kinds"]), wrap=True),
                Cell("" if item.get("human") is None else item_winner(str(item["human"]))),  # a, b or tie
                Cell(_verdict(item["base"])),
                Cell(_verdict(item["cand"])),
            ]
            replies = [
                (f"{side} call {n}", shortened_reply(item[key].get(f"raw{n}")))
                for side, key in (("base", "base"), ("candidate", "cand"))
                for n in (1, 2)
            ]
            rows.append(MovedRow(cells, replies))
    return Table(columns, rows)


def _verdict(side: dict[str, Any]) -> str:
    calls = " / ".join(text(side.get(key)) for key in ("call1", "call2") if side.get(key) is not None)
    return f"{text(side.get('winner') or side.get('verdict'))} ({calls})"


def render_compare_page(
    comparisons: Sequence[tuple[str, Comparison]], heading: str, moved: Sequence[Sequence[dict[str, Any]]]
) -> str:
    """The page for one comparison (`comparisons` of one) or a sweep's; `moved`: each one's listed moved items."""
    return render_page(
        "compare.html.j2",
        Redactor(),
        title=f"judgebias compare: {heading}",
        heading=heading,
        sections=[section(title, c) for title, c in comparisons],
        moved=moved_table([(title, items) for (title, _), items in zip(comparisons, moved, strict=True)]),
    )


def write_compare_page(
    path: Path,
    comparisons: Sequence[Comparison],
    jobs: Sequence[str] | None,
    moved: Sequence[Sequence[dict[str, Any]]],
) -> Path:
    """compare.html, written atomically (`moved`: each comparison's listed moved items with their replies)."""
    if jobs is None:
        titled = (
            [("Differences", comparisons[0])]
            if len(comparisons) == 1
            else [(str(i), c) for i, c in enumerate(comparisons)]
        )
    else:
        titled = [(f"job {job}", c) for job, c in zip(jobs, comparisons, strict=True)]
    first = comparisons[0]
    heading = (
        f"{first.base.describe()} vs {first.cand.describe()}"
        if len(comparisons) == 1
        else f"{len(comparisons)} jobs against {first.base.describe()}"
    )
    return write_page(path, render_compare_page(titled, heading, moved))
