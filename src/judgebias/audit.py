"""Audit a judge run made with another tool: `python -m judgebias.audit fastchat|arenahard|alpacaeval PATH... --out DIR`.

The tool's files become judgebias items and recorded replies (DIR/items.jsonl, DIR/judgments.jsonl); each judge
configuration found is replayed through the normal path (`judge=replay`, its run in DIR/runs/<judge>/); and
DIR/audit.json holds, per judge, judgebias's figures next to what the tool itself reports, computed the tool's
way, plus the side-by-side reading of every raw judgment. The module is named for what it does: `import` is a
Python keyword, so `judgebias.import` could not be imported or type-checked.

Exit codes: 0 done, 2 a mistake in the input (one line naming file, line and field).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from judgebias.cli.command import run_command
from judgebias.config.schema import ProgressMode
from judgebias.core import toolformats
from judgebias.core.errors import UserError
from judgebias.core.toolformats import Converted
from judgebias.figures import toolfigures
from judgebias.figures.formatting import ci_text, pct
from judgebias.io import toolfiles
from judgebias.io.files import write_json, write_text_atomic

TOOLS = ("fastchat", "arenahard", "alpacaeval")
RUBRIC = {"fastchat": "brackets", "arenahard": "arenahard", "alpacaeval": "brackets"}
# The figures of each judge's run shown in audit.json and the printed table, with their intervals.
FIGURES = (
    "n_items",
    "win_rate",
    "position_consistency",
    "biased_first",
    "biased_second",
    "first_position_p",
    "invalid_rate",
    "longer_wins",
    "length_controlled_win_rate",
    "styled_wins",
    "style_controlled_win_rate",
    "human_agreement",
    "cohen_kappa",
    "human_vote_agreement",
    "position_consistency_note",
)


NOT_RATES = ("first_position_p", "cohen_kappa")


def convert(tool: str, paths: Sequence[Path], human: Path | None = None) -> Converted:
    """The tool's files as judgebias items and judgments (every record checked)."""
    if tool == "fastchat":
        found = toolfiles.fastchat_inputs(paths)
        answers = toolformats.fastchat_answers(found["answers"])
        references = toolformats.fastchat_answers(found["references"]) if found["references"] else {}
        votes = toolformats.fastchat_human_votes(toolfiles.read_records(human)) if human else None
        return toolformats.convert_fastchat(
            found["judgments"], toolformats.fastchat_questions(found["questions"]), answers, references, votes
        )
    if human is not None:
        raise UserError(f"--human reads FastChat's mt_bench_human_judgments votes; {tool} files have no such votes")
    if tool == "arenahard":
        found = toolfiles.arenahard_inputs(paths)
        return toolformats.convert_arenahard(
            found["judgments"],
            toolformats.arenahard_questions(found["questions"]),
            toolformats.arenahard_answers(found["answers"]),
        )
    return toolformats.convert_alpacaeval(toolfiles.alpacaeval_inputs(paths))


def tool_figures(converted: Converted, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What the tool itself reports for these judgment lines, computed its way."""
    if converted.tool == "fastchat":
        return {"show_result": toolfigures.fastchat_show_result(rows)}
    if converted.tool == "arenahard":
        return {"show_result": toolfigures.arenahard_show_result(rows)}
    return {"leaderboard": toolfigures.alpacaeval_leaderboard(rows)}


def readings(converted: Converted, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The tool's extraction against judgebias's parser on the same raw text (none for AlpacaEval)."""
    if converted.tool == "alpacaeval":
        return {"note": "AlpacaEval stores its parsed preference, not a judgment text to read again"}
    style, tie = ("brackets", "C") if converted.tool == "fastchat" else ("arenahard", "A=B")
    return toolfigures.compare_readings(rows, style=style, tie_label=tie, tool_labels=converted.tool == "arenahard")


def replay(
    tool: str, judge: str, out: Path, *, resamples: int, echo: Callable[[str], None]
) -> tuple[dict[str, Any], list[dict[str, Any]], Path]:
    """Replay one judge configuration through run_experiment; its summary, verdict lines and run folder."""
    from hydra import compose, initialize_config_module

    from judgebias.cli.schemas import register_schemas
    from judgebias.engine.runner import run_experiment
    from judgebias.run import to_config

    register_schemas()
    overrides = ["judge=replay", "judge.name=x", "data=jsonl", "data.path=x", f"rubric={RUBRIC[tool]}"]
    with initialize_config_module("judgebias.conf", version_base="1.3"):
        config = to_config(compose("config", overrides=overrides))
    run_dir = out / "runs" / _slug(judge)
    run_dir.mkdir(parents=True, exist_ok=True)
    config = dataclasses.replace(
        config,
        judge=dataclasses.replace(config.judge, name=judge),
        data=dataclasses.replace(
            config.data,
            name=f"audit-{tool}",
            path=str((out / "items.jsonl").absolute()),
            judgments=str((out / "judgments.jsonl").absolute()),
            root=None,
        ),
        cache=dataclasses.replace(config.cache, dir=str((out / "runs" / ".cache").absolute())),
        bootstrap=dataclasses.replace(config.bootstrap, resamples=resamples),
    )
    config.progress = ProgressMode.off
    summary = dict(run_experiment(config, run_dir, echo=echo))
    text = (run_dir / "verdicts.jsonl").read_text(encoding="utf-8")
    return summary, [json.loads(line) for line in text.splitlines() if line.strip()], run_dir


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def audit(
    tool: str,
    paths: Sequence[Path],
    out: Path,
    *,
    human: Path | None = None,
    run: bool = True,
    resamples: int = 1000,
    echo: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Convert, write, replay each judge, and write DIR/audit.json; return what it holds."""
    converted = convert(tool, paths, human)
    out.mkdir(parents=True, exist_ok=True)
    toolfiles.write_jsonl(out / "items.jsonl", converted.items)
    toolfiles.write_jsonl(out / "judgments.jsonl", converted.judgments)
    report: dict[str, Any] = {
        "tool": tool,
        "inputs": [str(path) for path in paths],
        "items": len(converted.items),
        "judgment_lines": len(converted.judgments),
        "rubric": RUBRIC[tool],
        "notes": converted.notes,
        "readings": readings(converted, converted.judgments),
        "judges": {},
    }
    groups = _tool_groups(converted)
    report["tool_figures"] = {name: tool_figures(converted, rows) for name, rows in groups.items()}
    baselines = {name: _baseline(figures) for name, figures in report["tool_figures"].items()}
    verdicts_of: dict[str, list[dict[str, Any]]] = {}
    for judge in converted.judges():
        rows = [row for row in converted.judgments if row["judge"] == judge]
        group = rows[0]["judge_model"]
        entry: dict[str, Any] = {
            "judge_model": group,
            "lines": len(rows),
            "reference_guided": any(row.get("reference_guided") for row in rows),
            "command": _command(tool, judge, out),
        }
        if run:
            summary, verdicts, run_dir = replay(tool, judge, out, resamples=resamples, echo=echo)
            verdicts_of.setdefault(group, []).extend(verdicts)
            entry["run"] = str(run_dir)
            entry["judgebias"] = {key: summary.get(key) for key in FIGURES} | {
                "ci": {key: value for key, value in summary.get("ci", {}).items() if key in FIGURES}
            }
            if tool in ("fastchat", "arenahard", "alpacaeval"):
                entry["judgebias_table"] = toolfigures.judgebias_table(verdicts, baselines[group])
            if tool == "fastchat":
                entry["tool_table"] = toolfigures.fastchat_show_result(rows, baselines[group])
        report["judges"][judge] = entry
    if run:
        for group, verdicts in verdicts_of.items():
            report["tool_figures"][group]["judgebias_table"] = toolfigures.judgebias_table(verdicts, baselines[group])
    write_json(out / "audit.json", report)
    write_text_atomic(out / "audit.md", format_audit(report))
    return report


def _baseline(figures: dict[str, Any]) -> str | None:
    """The baseline model the tool's own headline found (FastChat pairwise-baseline, Arena-Hard's baseline)."""
    if "leaderboard" in figures:
        baselines = {model["baseline"] for model in figures["leaderboard"]["models"].values()}
        return baselines.pop() if len(baselines) == 1 else None
    baseline = figures["show_result"].get("baseline")
    return baseline if isinstance(baseline, str) else None


def _tool_groups(converted: Converted) -> dict[str, list[dict[str, Any]]]:
    """The lines the tool's own headline is computed over: FastChat and Arena-Hard read one judge model's files
    whole (every prompt of that judge together), AlpacaEval one annotator's."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in converted.judgments:
        groups.setdefault(row["judge_model"], []).append(row)
    return groups


def _command(tool: str, judge: str, out: Path) -> str:
    """The judgebias command that replays this judge by hand (the same run the audit made)."""
    items, judgments = (out / "items.jsonl").absolute(), (out / "judgments.jsonl").absolute()
    return (
        f"python -m judgebias.run judge=replay \"judge.name='{judge}'\" data=jsonl data.path={items} "
        f"data.judgments={judgments} rubric={RUBRIC[tool]}"
    )


def format_audit(report: dict[str, Any]) -> str:
    """audit.md: per judge, judgebias's figures beside the tool's own, then the readings' agreement."""
    lines = [
        f"# Audit of {'an' if report['tool'][:1].lower() in 'aeiou' else 'a'} {report['tool']} run",
        "",
        f"{report['items']} items, {report['judgment_lines']} judgment lines.",
    ]
    for note in report["notes"]:
        lines.append(f"- note: {note}")
    for judge, entry in report["judges"].items():
        lines += ["", f"## {judge}" + (" (reference-guided prompt)" if entry["reference_guided"] else ""), ""]
        ours = entry.get("judgebias")
        if ours:
            ci = ours.get("ci", {})
            for key in FIGURES:
                value = ours.get(key)
                if value is None or key == "n_items":
                    continue
                shown = value if not isinstance(value, float) else f"{value:.3g}" if key in NOT_RATES else pct(value)
                bounds = ci.get(key)
                around = (
                    ""
                    if not bounds
                    else ci_text(bounds)
                    if key not in NOT_RATES
                    else f" [{bounds[0]:.3g}, {bounds[1]:.3g}]"
                )
                lines.append(f"- {key}: {shown}{around}")
        for label, table in (("judgebias's verdicts (a preference kept when both orders agree)", entry.get("judgebias_table")),
                             ("the tool's own show_result", entry.get("tool_table"))):  # fmt: skip
            if table is not None:
                lines.append(f"- {label}:" + ("" if table["models"] else " no line left (every one has an error game)"))
                for model, row in table["models"].items():
                    lines.append(
                        f"  - {model}: win {row['win']}, loss {row['loss']}, tie {row['tie']}, "
                        f"win_rate {pct(row['win_rate'])}, win_rate_adjusted {pct(row['win_rate_adjusted'])}"
                    )
    for name, figures in report["tool_figures"].items():
        lines += ["", f"## The tool's own figures: {name}", "", "```", json.dumps(figures, indent=2), "```"]
    readings_ = report["readings"]
    lines += ["", "## Readings: the tool's extraction against judgebias's parser", ""]
    if "note" in readings_:
        lines.append(readings_["note"])
    else:
        lines.append(
            f"{readings_['agree']} of {readings_['compared']} judgments read the same ({pct(readings_['agreement'])})."
        )
        for entry in readings_["disagreements"]:
            lines.append(
                f"- {entry['source']} order {entry['order']}: tool {entry['tool']}, judgebias {entry['judgebias']}"
            )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m judgebias.audit",
        description="Audit a judge run made with FastChat, Arena-Hard-Auto or AlpacaEval (see docs/audit.md).",
    )
    parser.add_argument("tool", choices=TOOLS)
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="bench folders or judgment files")
    parser.add_argument("--out", required=True, type=Path, help="folder for items, judgments, runs and audit.json")
    parser.add_argument("--human", type=Path, help="FastChat mt_bench_human_judgments votes (JSON or JSON lines)")
    parser.add_argument("--no-run", action="store_true", help="convert only; replay later with the printed command")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of every interval")
    args = parser.parse_args(argv)
    return run_command(lambda: _audit_and_say(args))


def _audit_and_say(args: argparse.Namespace) -> None:
    """Audit the files the options name and print the comparison and where audit.json went."""
    report = audit(
        args.tool,
        args.paths,
        args.out,
        human=args.human,
        run=not args.no_run,
        resamples=args.resamples,
        echo=lambda _: None,  # each replay's own summary is in its run folder; the audit prints the comparison
    )
    print(format_audit(report), end="")
    print(f"audit: {args.out / 'audit.json'}")


if __name__ == "__main__":
    sys.exit(main())
