"""How a paired comparison reads in text: a figure's value, a difference with its interval, a p-value, and the
tables `python -m judgebias.compare` prints (one comparison, or a sweep's jobs against one job). Pure."""

from __future__ import annotations

from collections.abc import Sequence

from judgebias.figures.catalogue import percent, shown_in
from judgebias.figures.comparison import Comparison
from judgebias.figures.formatting import p_text
from judgebias.figures.paired import BETTER, Difference


def value_text(name: str, value: float | None) -> str:
    """A figure's value as the table shows it: percent for rates, a number for scores, dollars for cost."""
    if value is None:
        return "n/a"
    if name == "cost_usd":
        return f"${value:.4f}"
    return f"{100 * value:.1f}%" if percent(name) else f"{value:.3f}"


def diff_text(name: str, difference: Difference) -> str:
    """The difference with its interval: percent points for rates (`+3.1 [-1.2, 7.5] pts`)."""
    if difference.diff is None:
        return "n/a"
    if name == "cost_usd":
        return f"{difference.diff:+.4f}"
    scale, unit = (100.0, " pts") if percent(name) else (1.0, "")
    digits = 1 if percent(name) else 3
    text = f"{scale * difference.diff:+.{digits}f}"
    if difference.ci is not None:
        low, high = difference.ci
        text += f" [{scale * low:+.{digits}f}, {scale * high:+.{digits}f}]"
    return text + unit


def exact_test_text(difference: Difference) -> str:
    """The exact test's p and name (`p = 0.0225 (McNemar exact)`), or "" when none applies."""
    return f"{p_text(difference.p)} ({difference.test})" if difference.test else ""


def moved_text(comparison: Comparison) -> str:
    """How many items moved in each way: `became consistent 0, became inconsistent 11, ...`."""
    return ", ".join(f"{kind.replace('_', ' ')} {count}" for kind, count in comparison.moved_counts.items())


def format_comparison(comparison: Comparison) -> str:
    """The printed table: first what the comparison does not cover (a partial candidate, changed items), then one
    row per figure both runs have, then what moved and the notes."""
    c = comparison
    how = f"clusters of {c.cluster} ({c.clusters})" if c.cluster else "items"
    lines = [f"WARNING: {statement}" for statement in c.coverage.statements()]
    lines += [
        f"base: {c.base.folder} ({c.base.describe()})",
        f"cand: {c.cand.folder} ({c.cand.describe()})",
        f"matched {c.matched} items ({c.coverage.only_base} only in base, {c.coverage.only_cand} only in cand); "
        f"paired bootstrap over {how}, {c.resamples} resamples; diff = cand - base, 95% interval",
    ]
    rows = [("figure", "base", "cand", "diff [95% CI]", "test")]
    for name, d in c.differences.items():
        if d.base is None and d.cand is None:
            continue
        rows.append((name, value_text(name, d.base), value_text(name, d.cand), diff_text(name, d), exact_test_text(d)))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    for row in rows:
        lines.append("  " + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    lines.append(f"moved: {c.moved_total} items ({moved_text(c)})")
    lines += [f"note: {note}" for note in c.notes]
    return "\n".join(lines)


SWEEP_COLUMNS = tuple(figure.name for figure in shown_in("sweep") if figure.name in BETTER and figure.kind == "rate")


def format_sweep(baseline_job: str, comparisons: Sequence[tuple[str, Comparison]]) -> str:
    """One row per job: the paired difference from the baseline job of each main figure."""
    shown = [
        name
        for name in SWEEP_COLUMNS
        if any(c.differences.get(name) and c.differences[name].diff is not None for _, c in comparisons)
    ]
    rows = [("job", "judge / rubric / data", "matched", *shown)]
    for job, c in comparisons:
        rows.append((job, c.cand.describe(), str(c.matched), *(diff_text(name, c.differences[name]) for name in shown)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [f"every job against job {baseline_job}: diff = job - baseline, 95% paired interval"]
    lines += ["  " + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    return "\n".join(lines)
