"""compare.html in headless Chromium at phone, laptop and desktop widths: no sideways scrolling of the page, the
moved items laid out as cards on a phone, the search finding an item by the text of its reply, and a reply that
carries markup shown as text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgebias import compare
from tests.integration.test_report import chromium, visible_rows
from tests.integration.test_report_layout import WIDTHS, assert_tables_laid_out, measured, screenshots
from tests.reliability.helpers import run_here

pytestmark = pytest.mark.browser

QUICK = ("bootstrap.resamples=100", "report=false", "progress=off")


@pytest.fixture
def page(tmp_path: Path) -> Path:
    """compare.html of a judge pushed to the first slot; one candidate reply rewritten to carry markup."""
    base, cand = tmp_path / "base", tmp_path / "cand"
    run_here(base, *QUICK)
    run_here(cand, *QUICK, "judge.first_bias=0.6")
    path = cand / "verdicts.jsonl"
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    base_lines = {line["id"]: line for line in map(json.loads, (base / "verdicts.jsonl").read_text().splitlines())}
    moved = next(line for line in lines if line["consistent"] != base_lines[line["id"]]["consistent"])
    moved["raw1"] = "A <script>alert(1)</script> needle-in-the-reply"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    assert 0 == compare.main([str(base), str(cand), "--out", str(tmp_path / "c")], echo=lambda _: None)
    return tmp_path / "c" / "compare.html"


def test_the_compare_page_fits_at_360_800_and_1400_px(tmp_path: Path, page: Path) -> None:
    for width in WIDTHS:
        geometry = measured(tmp_path, page, width)
        assert geometry["page"] <= geometry["viewport"], (width, geometry["wide"])
        fits = {name: (scroll, client) for name, scroll, client in geometry["fits"]}
        if width == 360:
            assert fits["moved"][0] <= fits["moved"][1], fits  # each moved item a card: no sideways scrolling
        assert_tables_laid_out(geometry, width)
        colours = dict(geometry["badges"])
        assert colours["worse"] not in ("rgba(0, 0, 0, 0)",)
    screenshots(tmp_path, page)


def test_the_search_finds_a_moved_item_by_its_reply_and_shows_markup_as_text(tmp_path: Path, page: Path) -> None:
    dom = chromium(tmp_path, page.as_uri() + "?q=needle-in-the-reply", "--dump-dom", "--virtual-time-budget=5000")
    (row,) = visible_rows(dom, "moved")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in row and "<script>alert" not in row
