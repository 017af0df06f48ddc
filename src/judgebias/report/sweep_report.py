"""sweep_report.html: every job of one or more sweeps side by side, self-contained and offline.

What the sweep varied and when it started make the title; the jobs table shows every job's figures (a column
only when some job has it), and links each job's own report.html.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from judgebias.core.redaction import Redactor
from judgebias.core.summary import FINISHED_STATUSES, Summary, status_reason
from judgebias.figures import catalogue
from judgebias.figures.catalogue import Sweep
from judgebias.figures.formatting import pct
from judgebias.figures.headline import models_text, seen_from_side
from judgebias.report import svg
from judgebias.report.pages import (
    Cell,
    Column,
    Figures,
    Row,
    Table,
    ci_text,
    point,
    position_bar,
    read_json,
    render_page,
    shown,
    text,
    write_page,
    zero_width_why,
)
from judgebias.report.svg import POSITION_SEGMENTS


@dataclass
class SweepJob:
    """One job of a sweep as the sweep page shows it."""

    name: str
    summary: Summary
    overrides: str = ""
    report_href: str | None = None
    folder: Path | None = None  # the job's folder: its provenance.json names the key env vars to redact


CHOICES = ("judge", "rubric", "data")


def job_labels(jobs: Sequence[SweepJob]) -> dict[str, str]:
    """Each job as the charts name it: judge / rubric / data, or, when jobs have overrides, what the sweep varied.

    With overrides, a label is the varied choices and the overrides with their keys' last part (`strip_markdown=true`
    for `data.normalize.strip_markdown=true`), so the distinguishing values survive the label's length limit.
    """
    if not any(job.overrides for job in jobs):
        return {job.name: f"{job.name}: " + " / ".join(shown(job.summary.get(k)) for k in CHOICES) for job in jobs}
    varied = [k for k in CHOICES if len({shown(job.summary.get(k)) for job in jobs}) > 1]
    labels = {}
    for job in jobs:
        parts = [shown(job.summary.get(k)) for k in varied]
        parts += [o.partition("=")[0].rsplit(".", 1)[-1] + "=" + o.partition("=")[2] for o in job.overrides.split()]
        labels[job.name] = f"{job.name}: " + " · ".join(parts)
    return labels


def sweep_subject(jobs: Sequence[SweepJob]) -> str:
    """What a sweep varied, as `judge=a,b rubric=x,y` (values in job order); empty when nothing varied."""
    values: dict[str, list[str]] = {}
    for job in jobs:
        pairs = [(k, text(job.summary.get(k))) for k in CHOICES if job.summary.get(k) is not None]
        pairs += [(o.partition("=")[0], o.partition("=")[2]) for o in job.overrides.split() if "=" in o]
        for key, value in pairs:
            seen = values.setdefault(key, [])
            if value not in seen:
                seen.append(value)
    return " ".join(f"{key}={','.join(vals)}" for key, vals in values.items() if len(vals) > 1)


_STAMP = re.compile(r"(\d{4}-\d{2}-\d{2})/(\d{2})-(\d{2})-(\d{2})(?:-\d+)?$")  # DATE/HH-MM-SS[-N]


def sweep_time(folder: Path) -> str:
    """When the sweep started: from Hydra's `DATE/HH-MM-SS` folder name, else the folder's modification time."""
    match = _STAMP.search(folder.as_posix())
    if match:
        return f"{match.group(1)} {match.group(2)}:{match.group(3)}:{match.group(4)}"
    try:
        stamp = folder.stat().st_mtime
    except OSError:
        stamp = time.time()
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def _heading(sweep: Sweep) -> str:
    """A figure's heading on the page: the sweep table's, without its unit (the page shows it in the cells)."""
    return sweep.heading.replace(" % [95% CI]", " [95% CI]").replace(" % [CI]", " [CI]").replace(" %", "")


def sweep_columns(jobs: Sequence[SweepJob]) -> list[Column]:
    """The jobs table's columns: overrides, a figure and offline calls only when some job has them."""
    columns = [Column("job", "job"), Column("status", "status")]
    columns += [Column("judge", "judge"), Column("rubric", "rubric"), Column("data", "data")]
    if any(models_text(job.summary) for job in jobs):
        columns.append(Column("models", "models"))
    if any(job.overrides for job in jobs):
        columns.append(Column("overrides", "overrides"))
    columns.append(Column("n", "n", "num"))
    for entry, sweep in catalogue.in_sweep():  # a figure no job has (styled wins on plain answers) is left out
        if any(entry.name in job.summary for job in jobs):
            columns.append(Column(entry.name, _heading(sweep), "num"))
    columns += [
        Column("n_invalid", "invalid", "num"),
        Column("calls_live", "calls live", "num"),
    ]
    if any(job.summary.get("calls_offline") for job in jobs):
        columns.append(Column("calls_offline", "offline", "num"))
    columns += [
        Column("calls_cached", "cached", "num"),
        Column("tokens", "tokens in / out", "num"),
        Column("cost_usd", "cost $", "num"),
    ]
    return columns


def _rate_cell(s: Figures, key: str, *, ci: bool = True) -> Cell:
    value = s.get(key)
    detail, why = (ci_text(s, key, with_why=False), zero_width_why(s, key)) if ci else ("", None)
    return Cell(
        pct(value),
        numeric=True,
        sort="" if value is None else value,
        detail=detail,
        why=why if why and detail else "",
    )


def sweep_row(job: SweepJob, columns: Sequence[Column]) -> Row:
    """One job's cells, in the order of `columns` (win rates of the side the job's headline reports)."""
    s = cast(Figures, seen_from_side(job.summary))
    tokens = s.get("prompt_tokens")
    cost = s.get("cost_usd")
    cells = {
        "job": Cell(job.name, href=job.report_href),
        "status": Cell(str(s.get("status", "ok")), badge=True),
        "judge": Cell(text(s.get("judge"))),
        "rubric": Cell(text(s.get("rubric"))),
        "data": Cell(text(s.get("data"))),
        "models": Cell(models_text(s)),
        "overrides": Cell(job.overrides, wrap=True),
        "n": Cell(text(s.get("n_items")), numeric=True),
        **{entry.name: _rate_cell(s, entry.name, ci=sweep.interval) for entry, sweep in catalogue.in_sweep()},
        "n_invalid": Cell(text(s.get("n_invalid")), numeric=True),
        "calls_live": Cell(text(s.get("calls_live")), numeric=True),
        "calls_offline": Cell(text(s.get("calls_offline")), numeric=True),
        "calls_cached": Cell(text(s.get("calls_cached")), numeric=True),
        "tokens": Cell("" if tokens is None else f"{tokens} / {s.get('completion_tokens')}", True, tokens),
        "cost_usd": Cell("" if cost is None else f"{float(cost):.4f}", numeric=True),
    }
    return Row([cells[column.key] for column in columns])


def render_sweep_report(
    jobs: Sequence[SweepJob], *, title: str, when: str = "", redactor: Callable[[str], str] | None = None
) -> str:
    """The whole sweep_report.html text; `title` names the sweep (its folder), `when` its start."""
    ok = [j for j in jobs if j.summary.get("status", "ok") in ("ok", "errors", "mixed_judge")]  # figures to chart
    finished = [j for j in jobs if j.summary.get("status", "ok") in FINISHED_STATUSES]
    failed = [j for j in jobs if j.summary.get("status", "ok") not in (*FINISHED_STATUSES, "dry-run")]
    flagged = [j for j in jobs if j.summary.get("status", "ok") != "ok"]
    subject = sweep_subject(jobs)
    heading = " · ".join(part for part in (subject or title, when) if part)
    label = job_labels(jobs)
    position = [b for b in (position_bar(label[j.name], j.summary) for j in ok) if b]
    labelled = [j for j in ok if "human_agreement" in j.summary]
    columns = sweep_columns(jobs)
    return render_page(
        "sweep_report.html.j2",
        redactor or Redactor(),
        title=f"judgebias sweep: {heading}",
        heading=heading,
        folder=title,
        jobs=jobs,
        n_finished=len(finished),
        n_finished_flagged=len([j for j in finished if j in flagged]),
        n_failed=len(failed),
        flagged=[(job.name, job.summary.get("status", "ok"), status_reason(job.summary)) for job in flagged],
        win_rate=svg.interval_plot(
            [point(j.summary, catalogue.WIN_RATE.name, label[j.name]) for j in ok], title="win rate per job"
        )
        if ok
        else None,
        position=svg.stacked_bars(position, POSITION_SEGMENTS, title="position-bias breakdown per job")
        if position
        else None,
        position_legend=POSITION_SEGMENTS,
        agreement=svg.interval_plot(
            [point(j.summary, "human_agreement", label[j.name]) for j in labelled],
            title="agreement with human labels per job",
            reference=labelled[0].summary.get("agreement_threshold"),
        )
        if labelled
        else None,
        table=Table(columns, [sweep_row(job, columns) for job in jobs]),
    )


def sweep_redactor(jobs: Sequence[SweepJob]) -> Redactor:
    """A redactor for the key env vars that any job's configuration names."""
    return Redactor.for_config(
        [read_json(job.folder / "provenance.json").get("config") for job in jobs if job.folder is not None]
    )


def write_sweep_report(out_dir: Path, jobs: Sequence[SweepJob]) -> Path:
    """Write sweep_report.html comparing every job of one or more sweeps side by side."""
    page = render_sweep_report(jobs, title=out_dir.as_posix(), when=sweep_time(out_dir), redactor=sweep_redactor(jobs))
    return write_page(out_dir / "sweep_report.html", page)
