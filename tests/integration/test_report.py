"""report.html and sweep_report.html as a person sees them (in headless Chromium), plus the progress bar."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from judgebias.engine.progress import Progress
from judgebias.io.run_dir import RunDir
from judgebias.report.run_report import MAX_TABLE_ROWS, write_report
from tests.helpers import InProcessCli, write_items

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
QUICK = ("bootstrap.resamples=200",)
PWNED = '<script>document.title="pwned"</script>'


def chromium(tmp_path: Path, url: str, *args: str) -> str:
    """Run headless Chromium on a local page (no network of its own) and return what it printed."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (make browser installs it)")
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
    ]
    completed = subprocess.run([CHROMIUM, *flags, *args, url], capture_output=True, text=True, timeout=120, check=False)
    assert 0 == completed.returncode, completed.stderr[-2000:]
    return completed.stdout


def visible_rows(dom: str, table_id: str) -> list[str]:
    """The <tr> elements of a table's body that the page's script left visible."""
    body = dom.split(f'id="{table_id}"', 1)[1].split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [row for row in re.findall(r"<tr[^>]*>.*?</tr>", body, flags=re.S) if not row.startswith("<tr hidden")]


def first_cells(rows: list[str], index: int) -> list[str]:
    """The text of cell `index` of each row."""
    return [re.sub(r"<[^>]+>", "", re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)[index]) for row in rows]


@pytest.mark.slow
def test_every_run_writes_a_self_contained_report(cli_here: InProcessCli) -> None:
    """A run writes report.html with the headline figures, the three pictures and every verdict, loading nothing."""
    result = cli_here(*QUICK)

    assert 0 == result.code, result
    page = (result.run_dir / "report.html").read_text(encoding="utf-8")
    summary = result.summary()
    for section in ('id="position-chart"', 'id="win-rate-chart"', 'id="agreement-chart"', 'id="length-chart"'):
        assert section in page
    assert f"{100 * summary['win_rate']:.1f}%" in page
    lo, hi = summary["ci"]["win_rate"]
    assert f"[{100 * lo:.1f}, {100 * hi:.1f}]" in page
    assert 48 == page.count("<details><summary>replies</summary>")
    assert [] == re.findall(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page)
    assert "@import" not in page and "url(" not in page
    assert "default-src 'none'" in page


@pytest.mark.slow
@pytest.mark.browser
def test_report_search_and_sort_work_in_a_browser(cli_here: InProcessCli, tmp_path: Path) -> None:
    """In Chromium the verdict table's script runs: ?q= filters the rows and ?sort= orders them."""
    result = cli_here(*QUICK)
    assert 0 == result.code, result
    url = (result.run_dir / "report.html").as_uri()

    plain = chromium(tmp_path, url, "--dump-dom")
    searched = chromium(tmp_path, url + "?q=q1-007", "--dump-dom")
    ordered = chromium(tmp_path, url + "?sort=len_a&dir=desc", "--dump-dom")

    assert 'data-ready="1"' in plain
    assert 48 == len(visible_rows(plain, "verdicts"))
    assert ["q1-007"] == first_cells(visible_rows(searched, "verdicts"), 1)
    assert '<span id="shown">1</span>' in searched
    longest = max(v["chars_a"] for v in result.verdicts())
    lengths = [int(x) for x in first_cells(visible_rows(ordered, "verdicts"), 7)]
    assert (longest, sorted(lengths, reverse=True)) == (lengths[0], lengths)
    assert 'data-sorted="len_a:desc"' in ordered


@pytest.mark.slow
@pytest.mark.browser
def test_html_in_replies_and_ids_is_shown_as_text(cli_here: InProcessCli, tmp_path: Path) -> None:
    """A reply or an id containing <script> or an onerror image is displayed as text and never runs."""
    data = write_items(
        tmp_path / "html.jsonl",
        [
            {"id": '<img src=x onerror="document.title=1">', "question": "Q?", "a": "one", "b": "two words"},
            {"id": "plain", "question": "Q?", "a": "<b>bold</b>", "b": "x"},
        ],
    )
    result = cli_here(
        *QUICK, "judge=always_a", "data=jsonl", f"data.path={data}", f"rubric.reply_format='{PWNED}{{label}}'"
    )
    assert 4 == result.code, result  # no reply is readable (exit 4); every file, the report too, is written
    page = (result.run_dir / "report.html").read_text(encoding="utf-8")

    dom = chromium(tmp_path, (result.run_dir / "report.html").as_uri(), "--dump-dom")

    assert PWNED in result.verdicts()[0]["raw1"]
    assert "&lt;script&gt;document.title=&#34;pwned&#34;&lt;/script&gt;" in page
    assert 1 == page.count("<script>")
    assert "<img" not in page
    assert 1 == dom.count("<script>")
    assert "<img" not in dom
    assert "<title>judgebias: always_a · default · jsonl</title>" in dom
    assert "&lt;img src=x onerror=" in dom


@pytest.mark.slow
def test_report_never_shows_the_api_key(cli_here: InProcessCli, server: Any) -> None:
    """The key a judge uses appears nowhere in the report, even when the endpoint echoes it in an error."""
    secret = "sk-report-secret-abcdef0123456789"
    judge = server(policy="hash", api_key=secret)
    overrides = ("judge=local", f"judge.base_url={judge.url}", "judge.api_key_env=JB_REPORT_KEY", "data.limit=3")

    result = cli_here(*QUICK, *overrides, env={"JB_REPORT_KEY": secret})

    assert 0 == result.code, result
    page = (result.run_dir / "report.html").read_text(encoding="utf-8")
    assert secret not in page
    assert "JB_REPORT_KEY" in page  # the config names the env var, which is not a secret


def test_redaction_removes_anything_shaped_like_a_key() -> None:
    """Text that looks like a credential (sk- keys, bearer tokens, key=value, URL passwords) is redacted."""
    from judgebias.core.redaction import Redactor

    text = "Bearer abcdefghijklmnop sk-abcdefghijklmnopqrst api_key=hunter2hunter2 https://user:pw@host/v1"

    assert "Bearer [redacted] [redacted] api_key=[redacted] https://[redacted]@host/v1" == Redactor()(text)


def test_table_is_capped_but_pictures_count_every_row(tmp_path: Path) -> None:
    """For a 50,000-item run the table shows the first rows with a note, while the pictures count all items."""
    total = 50_000
    with (tmp_path / "verdicts.jsonl").open("w", encoding="utf-8") as file:
        for index in range(total):
            row = {"id": f"i{index}", "verdict": "1" if index % 3 else "2", "call1": "A", "call2": "B"}
            row |= {"consistent": True, "raw1": "A", "raw2": "B", "chars_a": index % 700, "chars_b": 350}
            file.write(json.dumps(row) + "\n")
    summary = {"judge": "j", "rubric": "r", "data": "d", "n_items": total, "win_rate": 0.66, "ci": {}}

    page = write_report(RunDir(tmp_path), summary, [], {}).read_text(encoding="utf-8")

    assert MAX_TABLE_ROWS == page.count("<details><summary>replies</summary>")
    assert f"The table shows the first {MAX_TABLE_ROWS:,} of {total:,} items" in page
    assert f"Verdicts of all {total} items" in page
    wide = re.sub(r'<svg class="chart narrow".*?</svg>', "", page, flags=re.S)  # each picture is drawn twice
    shares = re.findall(r"<text [^>]*>(\d+) items</text>", wide)
    assert total == sum(int(n) for n in shares)


@pytest.mark.slow
@pytest.mark.browser
def test_sweep_report_compares_jobs_in_a_browser(cli_here: InProcessCli, tmp_path: Path) -> None:
    """A sweep writes sweep_report.html with one row per job, linking each job's own report."""
    result = cli_here("-m", *QUICK, "data.limit=5", "judge=noisy,always_a,longer")
    assert 0 == result.code, result

    dom = chromium(tmp_path, (result.run_dir / "sweep_report.html").as_uri() + "?q=always_a", "--dump-dom")
    full = chromium(tmp_path, (result.run_dir / "sweep_report.html").as_uri(), "--dump-dom")

    assert 'data-ready="1"' in dom
    assert ["1"] == first_cells(visible_rows(dom, "jobs"), 0)
    assert ["0", "1", "2"] == first_cells(visible_rows(full, "jobs"), 0)
    assert '<a href="0/report.html">0</a>' in full
    chart = full.split('id="position-chart"', 1)[1].split("</figure>", 1)[0]
    for label in ("0: noisy / default / q1", "1: always_a / default / q1", "2: longer / default / q1"):
        assert f">{label}</text>" in chart


@pytest.mark.slow
@pytest.mark.browser
def test_screenshot_of_a_report_renders(cli_here: InProcessCli, tmp_path: Path) -> None:
    """Chromium renders the q1 report to a non-trivial PNG (the picture the README shows)."""
    result = cli_here(*QUICK)
    shot = tmp_path / "report.png"

    chromium(tmp_path, (result.run_dir / "report.html").as_uri(), f"--screenshot={shot}", "--window-size=1200,1800")

    data = shot.read_bytes()
    assert b"\x89PNG\r\n\x1a\n" == data[:8]
    assert len(data) > 50_000


@pytest.mark.slow
def test_progress_is_quiet_when_output_is_not_a_terminal(cli_here: InProcessCli) -> None:
    """With progress=auto (the default) a run whose output is captured prints no progress bar."""
    result = cli_here(*QUICK, "report=false")

    assert 0 == result.code, result
    assert "items | calls live" not in result.stderr
    assert "\r" not in result.stderr


@pytest.mark.slow
def test_progress_on_draws_the_bar_anywhere(cli_here: InProcessCli) -> None:
    """progress=on draws items done, calls live / cached, retries and ETA even when output is captured."""
    result = cli_here(*QUICK, "report=false", "progress=on")

    assert 0 == result.code, result
    last = result.stderr.split("\r")[-1]
    assert re.search(r"\[#{24}\] 48/48 items \| calls live 96 cached 0 \| retries 0 \| ETA +0s", last), last


def test_progress_auto_draws_on_a_terminal() -> None:
    """progress=auto draws the bar when the stream is a terminal, and ends it with a newline."""

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    progress = Progress(2, "auto", [], stream=stream)
    progress.advance(calls=2, cached=2)
    progress.advance(calls=2, cached=0)
    progress.close()

    assert stream.getvalue().endswith("2/2 items | calls live 2 cached 2 | retries 0 | ETA     0s \n")


@pytest.mark.slow
def test_end_of_run_summary_fits_on_one_screen(cli_here: InProcessCli) -> None:
    """The summary printed at the end of a run is a handful of lines, with win rate, consistency and cost."""
    result = cli_here(*QUICK, "report=false")

    lines = result.stdout.strip().splitlines()
    assert len(lines) <= 20
    assert max(len(line) for line in lines) <= 200
    assert lines[0].startswith("judgebias  judge=noisy  rubric=default  data=q1  status=ok")
    assert any(line.strip().startswith("tokens:") and "cost_usd" in line for line in lines)
