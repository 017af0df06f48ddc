"""The report pages rendered in-process from a summary and verdict lines (no run, no browser)."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest

from judgebias.report.digest import STYLE_EDGES, VerdictDigest, add_row, difference_bin, read_verdicts, style_label
from judgebias.report.run_report import render_report
from judgebias.report.svg import CHAR_W, NARROW_PAD, NARROW_W, VERDICT_SEGMENTS, Bar, Point, interval_plot, stacked_bars
from judgebias.report.sweep_report import SweepJob, render_sweep_report, write_sweep_report

FULL = {
    "judge": "j",
    "rubric": "r",
    "data": "d",
    "status": "ok",
    "n_items": 40,
    "bootstrap_resamples": 200,
    "win_rate": 0.55,
    "position_consistency": 0.8,
    "biased_first": 0.15,
    "biased_second": 0.05,
    "human_agreement": 0.7,
    "human_agreement_n": 30,
    "longer_wins": 0.6,
    "longer_wins_n": 25,
    "length_controlled_win_rate": 0.52,
    "wins": 20,
    "ties": 4,
    "losses": 16,
    "n_invalid": 0,
    "failed_calls": 0,
    "calls_live": 80,
    "calls_cached": 0,
    "prompt_tokens": 1000,
    "completion_tokens": 80,
    "cost_usd": 0.0123,
    "saved_usd": 0.0,
    "ci": {"win_rate": [0.4, 0.7], "position_consistency": [0.7, 0.9]},
}
STYLE = {
    "styled_wins": 0.75,
    "styled_wins_n": 12,
    "style_controlled_win_rate": 0.5,
    "style_coefficients": {"headers": 0.4, "list_items": 0.25, "bold": -0.1},
    "ci": FULL["ci"] | {"styled_wins": [0.6, 0.9], "style_controlled_win_rate": [0.4, 0.6]},
}


def digest_of(rows: list[dict[str, Any]]) -> VerdictDigest:
    """A digest of the given verdict lines, as the report reads them from verdicts.jsonl."""
    digest = VerdictDigest()
    for row in rows:
        add_row(digest, row, keep=True)
    return digest


def line(index: int, verdict: str = "1", **fields: Any) -> dict[str, Any]:
    """A verdicts.jsonl line."""
    row = {"id": f"i{index}", "verdict": verdict, "call1": "A", "call2": "B", "consistent": True}
    return row | {"raw1": "A", "raw2": "B", "chars_a": 100, "chars_b": 100} | fields


def style(total: int) -> dict[str, int]:
    """A style_a/style_b object with `total` markdown elements (as list items)."""
    return {"headers": 0, "list_items": total, "bold": 0, "italic": 0, "code_blocks": 0, "tables": 0}


def card(page: str, name: str) -> str:
    """The value shown on the card called `name`."""
    match = re.search(rf'<div class="k">{re.escape(name)}</div><div class="v">(.*?)</div>', page)
    assert match is not None, f"no card {name!r}"
    return match.group(1)


def test_html_in_a_reply_or_id_is_escaped_and_inert() -> None:
    """A reply, an id and an error carrying HTML are shown as text: the page's own script is its only script."""
    row = line(1, id='<img src=x onerror="alert(1)">', raw1="<script>alert(1)</script>A", error2="</pre><b>x</b>")

    page = render_report(FULL, [], digest_of([row]))

    assert 1 == page.count("<script")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;A" in page
    assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in page
    assert "error: &lt;/pre&gt;&lt;b&gt;x&lt;/b&gt;" in page
    assert "<img" not in page and "<b>x</b>" not in page


def test_every_summary_card_appears_with_its_value() -> None:
    """Each headline figure of a full summary has its card with the value formatted for people."""
    page = render_report(FULL | STYLE, [], digest_of([line(1)]))

    expected = {
        "win rate of a": "55.0%",
        "position consistency": "80.0%",
        "biased to first": "15.0%",
        "biased to second": "5.0%",
        "agreement with people": "70.0%",
        "longer answer wins": "60.0%",
        "length-controlled win rate": "52.0%",
        "more formatted answer wins": "75.0%",
        "style-controlled win rate": "50.0%",
        "wins / ties / losses of a": "20 / 4 / 16",
        "calls live / cached": "80 / 0",
        "cost": "$0.0123",
    }
    assert expected == {name: card(page, name) for name in expected}
    assert 12 == page.count('<div class="card">')
    assert '<div class="ci">[40.0, 70.0]</div><div class="h">a win counts 1, a tie ½</div>' in page


def test_a_missing_optional_figure_renders_as_a_dash() -> None:
    """A summary without optional figures (an older or partial run) renders, showing a dash where a figure is absent."""
    summary = {"judge": "j", "rubric": "r", "data": "d", "win_rate": 0.5}

    page = render_report(summary, [], read_verdicts(Path("/nonexistent/verdicts.jsonl")))

    assert "—" == card(page, "position consistency")
    assert "— / — / —" == card(page, "wins / ties / losses of a")
    assert "— / —" == card(page, "calls live / cached")
    assert "longer answer wins" not in page
    assert "verdicts.jsonl was not found next to this report." in page
    assert "None" not in page


def test_a_key_value_or_key_shaped_text_never_reaches_the_page(monkeypatch: pytest.MonkeyPatch) -> None:
    """The value of the key env var the run's config names, and anything shaped like a key, are redacted."""
    secret = "plain-looking-value-0123456789"
    monkeypatch.setenv("JB_RENDER_KEY", secret)
    provenance = {"config": {"judge": {"api_key_env": "JB_RENDER_KEY"}}}
    row = line(1, raw1=f"echo {secret}", error2="401: Bearer abcdefghijklmnopqrstuvwxyz rejected")

    page = render_report(FULL | {"notes": [f"key {secret}"]}, [], digest_of([row]), provenance)

    assert secret not in page
    assert "abcdefghijklmnopqrstuvwxyz" not in page
    assert "echo [redacted]" in page and "Bearer [redacted] rejected" in page
    assert "JB_RENDER_KEY" in page  # the env var's name is not a secret


def test_style_panel_groups_verdicts_by_formatting_difference() -> None:
    """With style counts, a Style panel shows verdicts by how much more formatted a is, and the style figures."""
    rows = [line(i, "1", style_a=style(2), style_b=style(0)) for i in range(3)]
    rows += [line(3, "2", style_a=style(0), style_b=style(7)), line(4, "tie", style_a=style(1), style_b=style(1))]

    page = render_report(FULL | STYLE, [], digest_of(rows))

    chart = wide_layout(page, "style-chart")
    labels = [html.unescape(text) for text in re.findall(r'text-anchor="end">([^<]+)</text>', chart)]
    assert ["a less formatted by >5 elements", "equally formatted", "a more formatted by 1–2 elements"] == labels
    assert ["1 item", "1 item", "3 items"] == re.findall(r'class="muted">([^<]+)</text>', chart)
    assert "The more formatted answer won 75.0% [60.0, 90.0] of 12 decisive verdicts" in chart
    assert "style-controlled win rate of a is 50.0% [40.0, 60.0]" in chart
    assert "Fitted coefficients: headers +0.40, list_items +0.25, bold -0.10." in chart
    assert "<h2>Style</h2>" in page
    assert '<th data-key="format" data-type="num" scope="col"><button type="button">format a / b</button></th>' in page
    assert '<td class="num" data-v="-7" data-label="format a / b">0 / 7</td>' in page


def test_style_panel_explains_a_style_controlled_rate_it_could_not_fit() -> None:
    """When the style-controlled win rate could not be fitted, the Style panel says n/a and why."""
    why = "a and b do not differ in any one formatting feature in 5 or more decisive items"
    unfitted = {"style_controlled_win_rate": None, "style_controlled_note": why, "style_coefficients": {}}
    summary = FULL | STYLE | unfitted | {"ci": STYLE["ci"] | {"style_controlled_win_rate": [None, None]}}

    page = render_report(summary, [], digest_of([line(1, style_a=style(1), style_b=style(0))]))

    chart = wide_layout(page, "style-chart")
    assert f"the style-controlled win rate of a is n/a. ({why})" in chart
    assert '<div class="k">style-controlled win rate</div>' not in page


def test_no_style_panel_without_style_fields() -> None:
    """A run whose summary and verdicts carry no style fields shows no Style panel and no style cards."""
    page = render_report(FULL, [], digest_of([line(1)]))

    assert "<h2>Style</h2>" not in page
    assert "style-chart" not in page
    assert "more formatted" not in page
    assert 'data-key="format"' not in page


def test_style_labels_count_whole_elements() -> None:
    """Formatting differences fall into bins named by whole element counts, mirrored for a less formatted."""
    labels = {d: style_label(difference_bin(d, STYLE_EDGES)) for d in (-6, -3, -1, 0, 2, 5, 6)}

    assert {
        -6: "a less formatted by >5 elements",
        -3: "a less formatted by 3–5 elements",
        -1: "a less formatted by 1–2 elements",
        0: "equally formatted",
        2: "a more formatted by 1–2 elements",
        5: "a more formatted by 3–5 elements",
        6: "a more formatted by >5 elements",
    } == labels


def test_stacked_bar_segments_fill_the_bar_in_order() -> None:
    """Segments start where the previous one ends and shares summing to 1 fill the whole bar width."""
    chart = stacked_bars([Bar("x", [0.5, 0.25, 0.25, 0.0])], VERDICT_SEGMENTS, title="t")

    (row,) = chart.rows
    assert ["a wins", "tie", "b wins"] == [s.name for s in row.segments]
    assert [chart.label_w, chart.label_w + 260.0, chart.label_w + 390.0] == [s.x for s in row.segments]
    assert chart.bar_w == sum(s.width for s in row.segments)


def test_narrow_layout_puts_label_and_note_above_a_full_width_bar() -> None:
    """For a phone, the bar spans the narrow picture and its label (shortened) and note share the line above it."""
    label = "a longer by 300–1000 chars, in a sweep with a long label"
    chart = stacked_bars([Bar(label, [0.5, 0.5], "12 items")], VERDICT_SEGMENTS, title="t").narrow

    assert chart is not None and NARROW_W == chart.width
    (row,) = chart.rows
    assert (NARROW_PAD, NARROW_W - NARROW_PAD) == (row.segments[0].x, row.segments[-1].x + row.segments[-1].width)
    assert row.label.y == row.note.y < row.y
    assert ("start", "end", NARROW_W - NARROW_PAD) == (row.label.anchor, row.note.anchor, row.note.x)
    assert row.label.text.endswith("…") and CHAR_W * (len(row.label.text) + len(row.note.text) + 1) <= chart.bar_w


def test_wide_labels_take_only_the_room_they_need() -> None:
    """Short labels leave no wide empty margin left of the axis, so the picture scales down less."""
    short = interval_plot([Point("win rate", 0.5, 0.4, 0.6)], title="t")
    long = interval_plot([Point("x" * 60, 0.5, 0.4, 0.6)], title="t")

    assert short.label_w < 150 < 250 < long.label_w


def wide_layout(page: str, figure: str) -> str:
    """The markup of a figure without its narrow picture."""
    markup = page.split(f'id="{figure}"', 1)[1].split("</figure>", 1)[0]
    return re.sub(r'<svg class="chart narrow".*?</svg>', "", markup, flags=re.S)


def job(name: str, overrides: str = "", **figures: Any) -> SweepJob:
    """A finished sweep job with the given figures."""
    return SweepJob(name, {"status": "ok", "judge": f"judge{name}", "rubric": "r", "data": "d"} | figures, overrides)


def test_sweep_table_hides_an_empty_overrides_column() -> None:
    """The jobs table has an overrides column only when some job has overrides beyond judge/rubric/data."""
    plain = render_sweep_report([job("0"), job("1")], title="sweep")
    varied = render_sweep_report([job("0", "data.limit=5"), job("1", "data.limit=9")], title="sweep")

    assert 'data-key="overrides"' not in plain
    assert 'data-key="overrides"' in varied and '<td class="wrap">data.limit=9</td>' in varied


def test_sweep_table_shows_styled_wins_only_when_measured() -> None:
    """The styled-wins column appears when a job's summary has styled_wins, with its interval."""
    measured = [job("0", styled_wins=0.7, ci={"styled_wins": [0.6, 0.8]}), job("1")]

    with_style = render_sweep_report(measured, title="sweep")
    without = render_sweep_report([job("0"), job("1")], title="sweep")

    assert 'data-key="styled_wins"' in with_style
    assert '<td class="num" data-v="0.7">70.0%<span class="ci">[60.0, 80.0]</span></td>' in with_style
    assert "styled" not in without


def test_sweep_title_names_what_varied_and_when(tmp_path: Path) -> None:
    """The sweep page's title says what the sweep varied and when it started (from Hydra's folder name)."""
    folder = tmp_path / "multirun" / "2026-11-30" / "10-00-00"
    folder.mkdir(parents=True)

    path = write_sweep_report(folder, [job("0", "max_concurrency=4"), job("1", "max_concurrency=8")])

    page = path.read_text(encoding="utf-8")
    expected = "judgebias sweep: judge=judge0,judge1 max_concurrency=4,8 · 2026-11-30 10:00:00"
    assert f"<title>{expected}</title>" in page
    assert f"<h1>{expected}</h1>" in page


def test_sweep_chart_labels_name_what_each_job_varied() -> None:
    """With overrides, each chart label names the job's varied choices and settings, short enough to read whole."""
    jobs = [
        job("0", "data.normalize.strip_markdown=true", win_rate=0.5),
        job("1", "data.normalize.strip_markdown=false", win_rate=0.6),
    ]

    page = render_sweep_report(jobs, title="sweep")

    chart = wide_layout(page, "win-rate-chart")
    assert ["0: judge0 · strip_markdown=true", "1: judge1 · strip_markdown=false"] == re.findall(
        r'text-anchor="end">([^<]+)</text>', chart
    )


def test_sweep_page_redacts_the_keys_its_jobs_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed job's error never shows the value of a key env var that the job's own configuration names."""
    secret = "plain-looking-sweep-value-0123"
    monkeypatch.setenv("JB_SWEEP_KEY", secret)
    folder = tmp_path / "0"
    folder.mkdir()
    (folder / "provenance.json").write_text('{"config": {"judge": {"api_key_env": "JB_SWEEP_KEY"}}}', encoding="utf-8")
    failed = SweepJob("0", {"status": "failed", "error": f"endpoint said {secret}"}, folder=folder)

    page = write_sweep_report(tmp_path, [failed]).read_text(encoding="utf-8")

    assert secret not in page
    assert "job 0 failed: endpoint said [redacted]" in page


def test_an_offline_run_counts_its_calls_as_offline() -> None:
    """A run of an offline judge shows its calls as offline (no tokens), a live run its live calls and tokens."""
    offline = FULL | {"calls_live": 0, "calls_offline": 80, "prompt_tokens": 0, "completion_tokens": 0}

    offline_page = render_report(offline, [], digest_of([line(1)]))
    live_page = render_report(FULL, [], digest_of([line(1)]))

    assert "80 / 0" == card(offline_page, "calls offline / cached")
    assert "calls live / cached" not in offline_page
    assert "80 / 0" == card(live_page, "calls live / cached")
    assert "tokens 1000 in / 80 out" in live_page


def test_sweep_table_shows_offline_calls_only_when_a_job_had_them() -> None:
    """The offline column appears when some job was judged offline, and not for live-only sweeps."""
    mixed = render_sweep_report([job("0", calls_offline=96, calls_live=0), job("1", calls_live=96)], title="s")
    live = render_sweep_report([job("0", calls_live=96)], title="s")

    assert 'data-key="calls_offline"' in mixed
    assert 'data-key="calls_offline"' not in live


def test_a_mixed_judge_and_an_unreadable_run_are_warned_about_first() -> None:
    """A run whose judge was not one judge, or whose replies mostly had no verdict, says so before any other note."""
    summary = FULL | {
        "status": "mixed_judge",
        "mixed_judge_note": "judge 'j' was not one judge: calls answered by m1 3, m2 5",
        "unreadable_note": "7 of 8 replies (88%) carry no readable verdict",
        "notes": ["7 of 8 replies (88%) carry no readable verdict", "another note"],
    }

    page = render_report(summary, [], read_verdicts(Path("/nonexistent/verdicts.jsonl")))

    unreadable, mixed, other = (
        page.index(text) for text in ("Unreadable: 7 of 8", "Mixed judge: judge", "another note")
    )
    assert unreadable < mixed < other
    assert 1 == page.count("carry no readable verdict")
