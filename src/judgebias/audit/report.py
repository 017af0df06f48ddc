"""audit.md: what audit.json holds, for reading. Every figure is shown, or the reason it is missing. Pure."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from judgebias.figures import catalogue
from judgebias.figures.formatting import ci_text, counted, p_text, pct

POSITIONAL = frozenset(entry.name for entry in catalogue.FIGURES if entry.positional)  # need both orders

REASONS = {
    "human_agreement": "the files carry no human labels",
    "cohen_kappa": "the files carry no human labels",
    "human_vote_agreement": "the files carry no human votes",
    "styled_wins": "no decisive verdict between answers that differ in formatting",
    "style_controlled_win_rate": "not identifiable from these items",
    "length_controlled_win_rate": "not identifiable from these items",
}


def _figure(key: str, value: Any, bounds: Any) -> str:
    if isinstance(value, float) and catalogue.percent(key):
        return pct(value) + ci_text(bounds)
    if isinstance(value, float):
        return f"{value:.3g}" + (f" [{bounds[0]:.3g}, {bounds[1]:.3g}]" if bounds else "")
    return str(value)


LISTED = 5  # records named in a list of audit.md (audit.json holds every one)
_PLACE = re.compile(r"(?P<file>.+):(?P<line>\d+)(?P<rest>: .*)?", re.DOTALL)


def first_few(places: Sequence[str], joiner: str = ", ") -> str:
    """The first LISTED of a list of records ("file:line", perhaps with ": what"), each file named once ("f lines
    1, 2 ..."), and how many more audit.json holds."""
    parts: list[str] = []
    last_file = None
    for place in places[:LISTED]:
        match = _PLACE.fullmatch(place)
        if match is None:
            parts.append(place)
            last_file = None
            continue
        file, line, rest = match["file"], match["line"], match["rest"] or ""
        parts.append(f"line {line}{rest}" if file == last_file else f"{file} line {line}{rest}")
        last_file = file
    more = len(places) - LISTED
    return joiner.join(parts) + (f" and {more} more (audit.json)" if more > 0 else "")


def figure_lines(figures: Mapping[str, Any], *, one_order: bool, indent: str = "") -> list[str]:
    """One line per figure of a replay, with its interval, or with why it is missing."""
    ci, notes, marks = figures.get("ci", {}), figures.get("notes", {}), figures.get("marks", {})
    lines = []
    for key, value in figures.items():
        if key in ("ci", "notes", "marks", "run", "position", "tool"):
            continue
        if value is None:
            if one_order and key in POSITIONAL:
                reason = "one order recorded per item (the position figure is first-shown wins, below)"
            else:
                reason = notes.get(key) or REASONS.get(key, "not measurable on these items")
            lines.append(f"{indent}- {key}: n/a ({reason})")
        else:
            mark = f" ({marks[key]})" if key in marks else ""
            lines.append(f"{indent}- {key}: {_figure(key, value, ci.get(key))}{mark}")
    return lines


def _tool_text(row: Mapping[str, Any]) -> str:
    """A tool's per-model row in one line, its numbers as the tool reports them (fractions stay fractions)."""

    def shown(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.4g}"
        if isinstance(value, list):
            return "[" + ", ".join(shown(v) for v in value) + "]"
        return str(value)

    return ", ".join(f"{key} {shown(value)}" for key, value in row.items() if not isinstance(value, dict))


def _position_line(position: Mapping[str, Any], indent: str = "") -> str:
    share = position.get("first_shown_wins")
    if share is None:
        return f"{indent}- first-shown wins: n/a ({position.get('note') or 'no decisive record'})"
    return (
        f"{indent}- first-shown wins: {pct(share)}{ci_text(position.get('first_shown_ci'))} of "
        f"{counted(position['first_shown_n'], 'decisive record')}, sign test {p_text(position['first_shown_p'])}"
    )


def format_audit(report: Mapping[str, Any]) -> str:
    """audit.md: per judge, judgebias's figures (pooled, then per model) beside the tool's own, then the readings."""
    tool = str(report["tool"])
    lines = [
        f"# Audit of {'an' if tool[:1].lower() in 'aeiou' else 'a'} {tool} run",
        "",
        f"{counted(report['items'], 'item')}, {counted(report['judgment_lines'], 'judgment line')}.",
    ]
    lines += [f"- note: {note}" for note in report["notes"]]
    for judge, entry in report["judges"].items():
        lines += ["", f"## {judge}" + (" (reference-guided prompt)" if entry.get("reference_guided") else ""), ""]
        order = entry["order"]
        checked = order["order_checked"]
        lines.append(
            f"- order shown: {order['order_from_record']} of {order['records']} records by their own evidence, "
            f"{order['order_from_rule']} by the tool's rule"
            + (f"; the rule agrees with the evidence on {order['order_agrees']} of {checked}" if checked else "")
            + (
                f"; {order['order_undecidable']} records' answers cannot be told apart (identical, or one inside the "
                "other): no evidence either way"
                if order.get("order_undecidable")
                else ""
            )
            + ("" if order["order_trusted"] else " — too few: positional figures withheld")
        )
        shown = entry.get("answers_not_shown")
        if shown:
            files = ", ".join(f"{file} {n}" for file, n in shown["by_file"].items())
            lines.append(
                f"- answers not shown: {shown['records']} of {shown['of']} records' prompts hold other answers than "
                f"the files give (by file: {files}; first: {first_few(shown['sources'])})"
            )
            if shown.get("answers_of_other_questions"):
                instead = shown["shown_instead"]
                lines.append(
                    f"- of these, {len(instead)} showed the model's answer to another question of the files: "
                    + first_few(instead, "; ")
                )
        contradicting = order.get("order_contradicting") or []
        if contradicting:
            lines.append(
                f"- records whose prompt contradicts the tool's order rule: {len(contradicting)}: "
                + first_few(contradicting)
            )
        if entry.get("win_rate_is"):
            lines.append(f"- win_rate here is {entry['win_rate_is']}")
        repeats = entry.get("repeats")
        if repeats:
            lines.append(
                f"- re-runs appended: {repeats['lines']} lines judge a pair judged before "
                f"({first_few(repeats['sources'])}); the tool's "
                f"own figures count every line, judgebias's figures count each pair once; "
                f"{repeats['same_verdicts']} of {repeats['lines']} repeats gave the first's verdicts "
                f"(repetition stability {pct(repeats['stability'])})"
            )
        left_out = [left for left in entry.get("lines_left_out", []) if not left["why"].startswith("a repeat of ")]
        if left_out:
            reasons: dict[str, int] = {}
            for left in left_out:
                reasons[left["why"]] = reasons.get(left["why"], 0) + 1
            why = "; ".join(f"{n}: {reason}" for reason, n in reasons.items())
            first = ", ".join(left["id"] for left in left_out[:LISTED])
            more = (
                f" and {len(left_out) - LISTED} more (judges.<judge>.lines_left_out in audit.json)"
                if len(left_out) > LISTED
                else ""
            )
            lines.append(f"- left out of the pooled figures: {len(left_out)} lines ({why}): {first}{more}")
        ours = entry.get("judgebias")
        if ours:
            lines += figure_lines(ours, one_order=bool(report.get("one_order")))
        if entry.get("position"):
            lines.append(_position_line(entry["position"]))
        for model, figures in (entry.get("models") or {}).items():
            lines.append(f"- model {model}:")
            if figures.get("tool"):
                lines.append(f"  - the tool's own figures: {_tool_text(figures['tool'])}")
            lines += figure_lines(figures, one_order=bool(report.get("one_order")), indent="  ")
            if figures.get("position"):
                lines.append(_position_line(figures["position"], "  "))
        rule = "one recorded order per item" if report.get("one_order") else "a preference kept when both orders agree"
        several = sum(1 for other in report["judges"].values() if other["judge_model"] == entry["judge_model"]) > 1
        tool_label = (
            "the tool's own rule (show_result's counting) on this prompt's lines: judgebias's split, as show_result "
            "does not split by prompt"
            if several
            else "the tool's own show_result"
        )
        tables = (
            (f"judgebias's verdicts ({rule})", entry.get("judgebias_table")),
            (tool_label, entry.get("tool_table")),
        )
        for label, table in tables:
            if table is not None:
                lines.append(f"- {label}:" + ("" if table["models"] else " no line left (every one has an error game)"))
                for model, row in table["models"].items():
                    lines.append(
                        f"  - {model}: win {row['win']}, loss {row['loss']}, tie {row['tie']}, "
                        f"win_rate {pct(row['win_rate'])}, win_rate_adjusted {pct(row['win_rate_adjusted'])}"
                    )
    for name, figures in report["tool_figures"].items():
        lines += ["", f"## The tool's own figures: {name}", "", "```", json.dumps(figures, indent=2), "```"]
    if report.get("single"):
        lines += ["", "## Single-answer grades (the tool's show_result --mode single)", "", report["single"]["note"]]
        for judge, table in report["single"]["judges"].items():
            lines.append(f"- {judge}:")
            for model, row in table["models"].items():
                turns = ", ".join(
                    f"turn {turn} {row[f'turn{turn}']:.4f}" for turn in (1, 2) if row[f"turn{turn}"] is not None
                )
                lines.append(f"  - {model}: {turns}; average {row['average']:.4f} ({counted(row['n'], 'grade')})")
    readings = report["readings"]
    lines += ["", "## Readings: the tool's extraction against judgebias's parser", ""]
    if "note" in readings:
        lines.append(readings["note"])
    else:
        lines.append(
            f"{readings['agree']} of {readings['compared']} judgments read the same ({pct(readings['agreement'])})."
        )
        for entry in readings["disagreements"]:
            lines.append(
                f"- {entry['source']} order {entry['order']}: tool {entry['tool']}, judgebias {entry['judgebias']}"
            )
    return "\n".join(lines) + "\n"
