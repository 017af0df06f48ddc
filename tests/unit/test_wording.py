"""Printed and written words read as English: counts agree with their nouns, articles with theirs, no -0.0."""

from __future__ import annotations

import json
import math

import pytest

from judgebias.audit.report import format_audit
from judgebias.core.sampling import position_entropy
from judgebias.figures.formatting import counted
from judgebias.report.console import agreement_text


@pytest.mark.parametrize(("n", "expected"), [(0, "0 ties"), (1, "1 tie"), (2, "2 ties")])
def test_a_count_takes_the_number_of_its_noun(n: int, expected: str) -> None:
    """One tie, two ties, no ties."""
    assert expected == counted(n, "tie")


def test_the_agreement_line_says_one_tie() -> None:
    """'1 tie left out', not '1 ties left out'."""
    figures = {"decisive_agreement": 0.8, "decisive_agreement_ci": [0.6, 0.9], "decisive_agreement_n": 5}
    assert agreement_text(figures | {"ties_left_out": 1}).endswith("on 5 decisive labels; 1 tie left out")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("tool", "title"), [("alpacaeval", "# Audit of an alpacaeval run"), ("fastchat", "# Audit of a fastchat run")]
)
def test_the_audit_title_takes_the_right_article(tool: str, title: str) -> None:
    """'an alpacaeval run', 'a fastchat run'."""
    report = {"tool": tool, "items": 0, "judgment_lines": 0, "notes": [], "judges": {}, "tool_figures": {}}
    report["readings"] = {"note": "no readings"}
    assert title == format_audit(report).splitlines()[0]


def test_a_certain_item_has_entropy_zero_not_minus_zero() -> None:
    """Both orders sure of the same answer: entropy 0.0, written as 0.0 (sample.json), not -0.0."""
    value = position_entropy({"a": 1.0}, {"a": 1.0})
    assert 0.0 == value and not math.copysign(1.0, value) < 0
    assert "0.0" == json.dumps(value)
