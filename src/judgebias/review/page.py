"""The labelling page: one self-contained offline HTML file, rendered like report.html (autoescaped templates,
redacted text, its one script pinned by hash in the CSP), holding the sample's pairs and nothing about the judge."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from judgebias.core.item import Item
from judgebias.core.redaction import Redactor
from judgebias.report.pages import render_page, write_page

PAGE = "labelling.html"


def render_labelling(items: Sequence[Item], sample_id: str) -> str:
    """The page's HTML: the pairs (question, a, b), blinded: no verdict, no model names."""
    return render_page(
        "labelling.html.j2",
        Redactor(),
        script_file="labelling.js",
        css_file="labelling.css",
        title="judgebias: label pairs",
        sample_id=sample_id,
        pairs=[{"id": i.id, "question": i.question, "a": i.a, "b": i.b} for i in items],
    )


def write_labelling(out_dir: Path, items: Sequence[Item], sample_id: str) -> Path:
    """Write labelling.html beside the sample."""
    return write_page(out_dir / PAGE, render_labelling(items, sample_id))
