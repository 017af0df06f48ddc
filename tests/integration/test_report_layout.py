"""The report's pictures at phone, laptop and desktop widths, measured in headless Chromium: every label and bar
inside its picture and its panel, no two labels on top of each other, readable text, no sideways scrolling."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from judgebias.devserver.server import RunningServer
from tests.helpers import InProcessCli
from tests.integration.test_report import QUICK, chromium

pytestmark = pytest.mark.browser

WIDTHS = (360, 800, 1400)
MIN_FONT_PX = 9.0  # chart text (12 px in the picture's own units) may shrink with its picture, not below this

# The page in a frame `width` px wide (headless Chromium keeps its own window at least 500 px wide), measured
# once laid out; the findings are written into the DOM that --dump-dom prints.
FRAME = """<!DOCTYPE html><html><body style="margin:0">
<iframe id="page" width="%(width)s" height="2000" style="border:0" srcdoc="%(page)s"></iframe>
<script>
document.getElementById('page').addEventListener('load', (event) => {
  const frame = event.target.contentWindow, document_ = frame.document;
  const problems = [];
  const inside = (r, box, slack = 0.5) =>
    r.left >= box.left - slack && r.right <= box.right + slack && r.top >= box.top - slack && r.bottom <= box.bottom + slack;
  const name = (el) => `${el.tagName} "${(el.textContent || '').trim().slice(0, 30)}"`;
  const figures = [...document_.querySelectorAll('figure')];
  for (const figure of figures) {
    const shown = [...figure.querySelectorAll('svg')].filter((svg) => svg.getClientRects().length > 0);
    if (shown.length !== 1) problems.push(`${figure.id}: ${shown.length} layouts shown`);
    const panel = figure.getBoundingClientRect();
    for (const svg of shown) {
      const view = svg.viewBox.baseVal;
      const box = svg.getBoundingClientRect();
      if (!inside(box, panel)) problems.push(`${figure.id}: picture past the panel (${box.right} > ${panel.right})`);
      const font = 12 * box.width / view.width;
      if (font < %(min_font)s) problems.push(`${figure.id}: text shown at ${font.toFixed(1)} px`);
      const texts = [];
      for (const el of svg.querySelectorAll('text, rect, line, circle')) {
        const b = el.getBBox();
        const slack = el.tagName === 'line' || el.tagName === 'circle' ? 6 : 0.5;
        if (b.x < -slack || b.y < -slack || b.x + b.width > view.width + slack || b.y + b.height > view.height + slack)
          problems.push(`${figure.id}: ${name(el)} outside the picture (${b.x},${b.y},${b.width},${b.height})`);
        if (!inside(el.getBoundingClientRect(), panel, slack)) problems.push(`${figure.id}: ${name(el)} past the panel`);
        if (el.tagName === 'text' && el.textContent.trim()) texts.push([el, el.getBoundingClientRect()]);
      }
      texts.forEach(([a, ra], i) => texts.slice(i + 1).forEach(([b, rb]) => {
        const overlap = Math.min(ra.right, rb.right) - Math.max(ra.left, rb.left) > 1 &&
          Math.min(ra.bottom, rb.bottom) - Math.max(ra.top, rb.top) > 1;
        if (overlap) problems.push(`${figure.id}: ${name(a)} overlaps ${name(b)}`);
      }));
    }
  }
  const page = document_.documentElement;
  const wide = [...document_.querySelectorAll('body *')].filter((el) => el.getBoundingClientRect().right > page.clientWidth + 0.5
    && !el.closest('.scroll, .fit')).map((el) => `${el.tagName}#${el.id}.${el.className} ${el.getBoundingClientRect().right}`).slice(0, 5);
  const banners = [...document_.querySelectorAll('.warn, .note')].map((el) => el.textContent.trim());
  const badges = [...document_.querySelectorAll('.badge')].map((el) =>
    [el.textContent.trim(), frame.getComputedStyle(el).backgroundColor]);
  const tables = [...document_.querySelectorAll('.scroll')].map((el) => [el.scrollWidth, el.clientWidth]);
  const fits = [...document_.querySelectorAll('.fit')].map((el) => [el.querySelector('table').id, el.scrollWidth, el.clientWidth]);
  const cut = [...document_.querySelectorAll('svg text')].filter((el) => el.getClientRects().length && el.textContent.includes('…')).map((el) => el.textContent);
  const broken = [];
  for (const dd of document_.querySelectorAll('dl.kv dd')) {
    const text = dd.firstChild;
    if (!text || text.nodeType !== 3) continue;
    for (const match of text.data.matchAll(/\\S+/g)) {
      if (match[0].length > 30) continue;  // a hash longer than a line must break
      const range = document_.createRange();
      range.setStart(text, match.index); range.setEnd(text, match.index + match[0].length);
      const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
      if (lines.size > 1) broken.push(match[0]);
    }
  }
  const displays = [...document_.querySelectorAll('table')].map((el) => [el.id, frame.getComputedStyle(el).display]);
  const aligned = [...document_.querySelectorAll('table')].filter((el) => el.tHead && el.tBodies[0] && el.tBodies[0].rows.length)
    .map((el) => [el.id, [...el.tHead.rows[0].cells].map((c) => Math.round(c.getBoundingClientRect().left)).join(),
      [...el.tBodies[0].rows[0].cells].map((c) => Math.round(c.getBoundingClientRect().left)).join()]);
  document.body.setAttribute('data-geometry', JSON.stringify({
    viewport: page.clientWidth, page: page.scrollWidth, figures: figures.length, problems, wide, banners, badges,
    tables, fits, cut, broken, displays, aligned }));
});
</script></body></html>
"""


def measured(tmp_path: Path, page: Path, width: int) -> dict[str, Any]:
    """The page's geometry in a frame `width` px wide."""
    frame = tmp_path / f"measure-{width}-{page.name}"
    source = html.escape(page.read_text(encoding="utf-8"), quote=True)
    frame.write_text(
        FRAME.replace("%(min_font)s", str(MIN_FONT_PX)) % {"width": width, "page": source}, encoding="utf-8"
    )
    dom = chromium(tmp_path, frame.as_uri(), "--dump-dom", "--window-size=1500,2000", "--virtual-time-budget=10000")
    found = re.search(r'data-geometry="([^"]*)"', dom)
    assert found, dom[-2000:]
    return dict(json.loads(html.unescape(found.group(1))))


def screenshots(tmp_path: Path, page: Path) -> list[Path]:
    """The page at each width, as PNG files in tmp_path (to look at)."""
    shots = []
    for width in WIDTHS:
        shot = tmp_path / f"{page.stem}-{width}.png"
        chromium(tmp_path, page.as_uri(), f"--screenshot={shot}", f"--window-size={width},3000", "--hide-scrollbars")
        assert b"\x89PNG\r\n\x1a\n" == shot.read_bytes()[:8]
        shots.append(shot)
    return shots


def check_every_width(tmp_path: Path, page: Path) -> None:
    """Assert the geometry at every width, then keep the screenshots."""
    for width in WIDTHS:
        geometry = measured(tmp_path, page, width)
        assert geometry["figures"] > 0
        assert [] == geometry["problems"], (width, geometry["problems"])
        assert geometry["page"] <= geometry["viewport"], (width, geometry["wide"])
        assert_tables_laid_out(geometry, width)
    screenshots(tmp_path, page)


def assert_tables_laid_out(geometry: dict[str, Any], width: int) -> None:
    """Above the phone layout every table is a table whose body cells sit under its header cells."""
    if width <= 640:
        return
    assert all("table" == display for _, display in geometry["displays"]), (width, geometry["displays"])
    misaligned = [(name, head, body) for name, head, body in geometry["aligned"] if head != body]
    assert [] == misaligned, (width, misaligned)


def test_run_report_charts_fit_at_360_800_and_1400_px(cli_here: InProcessCli, tmp_path: Path) -> None:
    """The run report's charts show whole, inside their panels, at phone, laptop and desktop widths."""
    result = cli_here(*QUICK)
    assert 0 == result.code, result

    check_every_width(tmp_path, result.run_dir / "report.html")


def test_the_run_report_reads_on_a_390_px_phone(cli_here: InProcessCli, tmp_path: Path) -> None:
    """At 390 px: the verdicts table needs no sideways scrolling (each item a card), no chart label is cut short,
    and no word of the provenance (a package name) is broken across lines."""
    result = cli_here(*QUICK)
    assert 0 == result.code, result

    geometry = measured(tmp_path, result.run_dir / "report.html", 390)

    assert [] == geometry["problems"] and geometry["page"] <= geometry["viewport"]
    fits = {name: (scroll, client) for name, scroll, client in geometry["fits"]}
    assert fits["verdicts"][0] <= fits["verdicts"][1], fits
    assert [] == geometry["cut"]
    assert [] == geometry["broken"]


def test_a_sweep_reports_unreadable_job_is_said_in_words_and_colour_and_the_table_fits(
    cli_here: InProcessCli, tmp_path: Path, server: Callable[..., RunningServer]
) -> None:
    """A job whose replies carry no verdict: its banner says why, it counts as finished, its badge has a colour of
    its own, and the jobs table fits a 1400 px page (zero-width notes do not widen their columns)."""
    refusing = server(reply_shape="refusal")
    result = cli_here(
        "-m", "judge=noisy,longer,local", f"judge.base_url={refusing.url}", "judge.api_key_env=null", *QUICK
    )
    page = result.run_dir / "sweep_report.html"
    text = page.read_text(encoding="utf-8")

    assert "3 jobs: 3 finished (1 with a problem, below), 0 failed or missing" in text
    for width in WIDTHS:
        geometry = measured(tmp_path, page, width)
        (banner,) = geometry["banners"]
        assert banner.startswith("job 2 unreadable: 96 of 96 replies (100%) carry no readable verdict"), banner
        assert geometry["page"] <= geometry["viewport"], (width, geometry["wide"])
        colours = dict(geometry["badges"])
        assert colours["unreadable"] not in (colours["ok"], "rgba(0, 0, 0, 0)")
        if width == 1400:
            assert all(scroll <= client for scroll, client in geometry["tables"]), geometry["tables"]
    screenshots(tmp_path, page)


def test_sweep_report_charts_fit_at_360_800_and_1400_px(cli_here: InProcessCli, tmp_path: Path) -> None:
    """The sweep report's charts, with long job labels, show whole inside their panels at every width."""
    result = cli_here("-m", "judge=noisy,longer,always_a", "judge.first_bias=0.1,0.3", *QUICK, "data.limit=12")
    assert 0 == result.code, result

    check_every_width(tmp_path, result.run_dir / "sweep_report.html")
