"""One audit: the tool's files converted, every judge configuration replayed (pooled and per model), and
DIR/audit.json written with judgebias's figures beside the tool's own.

Folders: DIR/items.jsonl and DIR/judgments.jsonl (everything read), DIR/runs/<judge>/ (the pooled replay, its own
judgments.jsonl beside its outputs) and DIR/runs/<judge>/models/<model>/ (one replay per model). Folder names are
made safe and distinct from the names in the files (`.`/`..` never a name, a long name shortened with a hash,
two names that would share a folder numbered), and every stored command is quoted for a shell.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from judgebias.audit.formats import FORMATS
from judgebias.audit.formats.common import (
    Converted,
    Format,
    Options,
    constant_answers,
    digest,
    judgebias_table,
    order_summary,
)
from judgebias.audit.report import format_audit
from judgebias.config.schema import ProgressMode
from judgebias.core.errors import UserError
from judgebias.figures import catalogue
from judgebias.io.files import write_json, write_jsonl, write_text_atomic
from judgebias.io.run_dir import RunDir

# The figures of each replay shown in audit.json and audit.md, with their intervals (the catalogue's), where a summary
# says why each is missing, and those that need both orders (withheld when the order shown is not known).
FIGURES = tuple(entry.name for entry in catalogue.shown_in("audit"))
NOTE_OF = {entry.name: entry.note_key for entry in catalogue.shown_in("audit")}
POSITIONAL = tuple(entry.name for entry in catalogue.shown_in("audit") if entry.positional)
# The figures read from the answers' text (their length, their formatting): not the judge's on a record whose prompt
# showed it other answers than the files give.
TEXTUAL = tuple(name for name in FIGURES if name.startswith(("longer_", "length_", "styled_", "style_")))
AUDIT_OUTPUTS = frozenset({"items.jsonl", "judgments.jsonl", "audit.json", "audit.md", "runs"})
NAME_CHARS = 60  # the longest folder name made from a judge's or model's name (longer ones end in a hash)


class SafeNames:
    """Folder names for names read from files: only [A-Za-z0-9._-], never `.` or `..`, at most NAME_CHARS (then a
    hash of the whole name), and distinct: a second name that would share a folder is numbered."""

    def __init__(self) -> None:
        self.given: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        if name in self.given:
            return self.given[name]
        base = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip(".") or "_"
        if len(base) > NAME_CHARS:
            base = f"{base[:NAME_CHARS]}-{digest(name)[:8]}"
        taken = set(self.given.values())
        folder, number = base, 1
        while folder in taken:
            number += 1
            folder = f"{base}-{number}"
        self.given[name] = folder
        return folder


def check_out_folder(out: Path, *, reuse: bool) -> None:
    """The audit writes only into a folder that is new, empty, or an earlier audit's (or with `reuse`, anyway)."""
    if not out.exists():
        return
    if not out.is_dir():
        raise UserError(f"--out {out}: is a file, not a folder")
    entries = sorted(entry.name for entry in out.iterdir())
    if not entries or reuse:
        return
    foreign = [name for name in entries if name not in AUDIT_OUTPUTS]
    if foreign or "audit.json" not in entries:
        named = foreign[0] if foreign else entries[0]
        raise UserError(
            f"--out {out}: holds {named!r}, which an audit did not write: choose a new or empty folder, or add "
            "--reuse-dir to write into it anyway (the audit's own files are replaced)"
        )


def replay_command(rubric: str, judge: str, items: Path, judgments: Path) -> str:
    """The judgebias command that replays one judge by hand, each word quoted for a shell and the judge's name for
    Hydra, so no name from a file can run anything when the command is pasted."""
    hydra_name = "'" + judge.replace("\\", "\\\\").replace("'", "\\'") + "'"
    words = ["python", "-m", "judgebias.run", "judge=replay", f"judge.name={hydra_name}", "data=jsonl"]
    words += [f"data.path={items.absolute()}", f"data.judgments={judgments.absolute()}", f"rubric={rubric}"]
    return shlex.join(words)


def replay(
    fmt: Format,
    judge: str,
    rows: Sequence[Mapping[str, Any]],
    items: Path,
    run_dir: Path,
    *,
    resamples: int,
    echo: Callable[[str], None],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Replay one judge configuration on `rows` (written to run_dir/judgments.jsonl) through run_experiment."""
    from hydra import compose, initialize_config_module

    from judgebias.cli.schemas import register_schemas
    from judgebias.engine.runner import run_experiment
    from judgebias.run import to_config

    register_schemas()
    run_dir.mkdir(parents=True, exist_ok=True)
    judgments = run_dir / "judgments.jsonl"
    write_jsonl(judgments, rows)
    overrides = ["judge=replay", "judge.name=x", "data=jsonl", "data.path=x", f"rubric={fmt.rubric}"]
    with initialize_config_module("judgebias.conf", version_base="1.3"):
        config = to_config(compose("config", overrides=overrides))
    config = dataclasses.replace(
        config,
        judge=dataclasses.replace(config.judge, name=judge),
        data=dataclasses.replace(
            config.data,
            name=f"audit-{fmt.name}",
            path=str(items.absolute()),
            judgments=str(judgments.absolute()),
            root=None,
        ),
        cache=dataclasses.replace(config.cache, dir=str((run_dir.parent / ".cache").absolute())),
        bootstrap=dataclasses.replace(config.bootstrap, resamples=resamples),
    )
    config.progress = ProgressMode.off
    run = RunDir(run_dir)
    summary = dict(run_experiment(config, run, echo=echo))
    text = run.verdicts.read_text(encoding="utf-8")
    return summary, [json.loads(line) for line in text.splitlines() if line.strip()]


def figures_of(summary: Mapping[str, Any], *, trusted: bool) -> dict[str, Any]:
    """A replay's headline figures with their intervals; the positional ones withheld when the order is not."""
    ci = summary.get("ci", {})
    out: dict[str, Any] = {key: summary.get(key) for key in FIGURES}
    out["ci"] = {key: value for key, value in ci.items() if key in FIGURES}
    notes = {key: summary[NOTE_OF[key]] for key in FIGURES if summary.get(NOTE_OF[key])}
    if not trusted:
        for key in POSITIONAL:
            out[key] = None
            out["ci"].pop(key, None)
            notes[key] = "withheld: the tool's order rule contradicts the records' own evidence (see order)"
    if notes:
        out["notes"] = notes
    return out


def audit(
    tool: str,
    paths: Sequence[Path],
    out: Path,
    *,
    options: Options | None = None,
    run: bool = True,
    resamples: int = 1000,
    reuse: bool = False,
    echo: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Convert, write, replay each judge (pooled and per model), and write DIR/audit.json and audit.md."""
    fmt = FORMATS[tool]
    check_out_folder(out, reuse=reuse)
    converted = fmt.convert(paths, options or Options())
    if not converted.judgments and not converted.single:
        raise UserError(f"no judgment records in {', '.join(map(str, paths))}: nothing to audit")
    out.mkdir(parents=True, exist_ok=True)
    items = out / "items.jsonl"
    write_jsonl(items, converted.items)
    write_jsonl(out / "judgments.jsonl", converted.judgments)
    report: dict[str, Any] = {
        "tool": tool,
        "inputs": [str(path) for path in paths],
        "items": len(converted.items),
        "judgment_lines": len(converted.judgments),
        "rubric": fmt.rubric,
        "one_order": fmt.one_order,
        "notes": converted.notes,
        "readings": fmt.readings(converted.judgments) if converted.judgments else {"note": "no pairwise judgments"},
        "judges": {},
        "tool_figures": {},
    }
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in converted.judgments:
        groups.setdefault(row["judge_model"], []).append(row)
    report["tool_figures"] = {name: fmt.tool_figures(rows) for name, rows in groups.items()}
    if converted.single:
        report["single"] = _single(tool, converted)
    names = SafeNames()
    for judge in converted.judges():
        report["judges"][judge] = _judge_entry(
            fmt, converted, judge, items, out / "runs" / names(judge), run, resamples, echo
        )
    if run:
        for group in groups:
            verdicts = [
                v
                for entry in report["judges"].values()
                if entry["judge_model"] == group
                for v in entry.pop("_verdicts", [])
            ]
            baseline = _baseline(report["tool_figures"][group])
            report["tool_figures"][group]["judgebias_table"] = judgebias_table(verdicts, baseline)
    for judge, entry in report["judges"].items():
        shown = entry.get("answers_not_shown")
        if shown:
            models = ", ".join(f"{model} {n}" for model, n in shown["by_model"].items())
            report["notes"].insert(
                0,
                f"{judge}: {shown['records']} of {shown['of']} records showed the judge answers other than the files "
                f"give for that question and model ({models}): the win rate is the judge's verdict on what it was "
                "shown, and length and style figures leave those records out (answers_not_shown in audit.json)",
            )
    constant = constant_answers(converted.items)
    if constant:
        report["constant_answers"] = constant
    for model, found in reversed(constant.items()):
        report["notes"].insert(
            0,
            f"{model} gave one and the same answer to {found['questions']} of its {found['of']} questions "
            f"({json.dumps(found['answer_start'], ensure_ascii=False)}...): a judge that prefers it is not judging "
            "an answer to the question (a null model); its win rate measures the judge, not the model "
            "(constant_answers in audit.json)",
        )
    for entry in report["judges"].values():
        entry.pop("_verdicts", None)
        tool_models = _tool_models(report["tool_figures"].get(entry["judge_model"], {}))
        for model, figures in (entry.get("models") or {}).items():
            if model in tool_models:
                figures["tool"] = tool_models[model]
    write_json(out / "audit.json", report)
    write_text_atomic(out / "audit.md", format_audit(report))
    return report


def _judge_entry(
    fmt: Format,
    converted: Converted,
    judge: str,
    items: Path,
    run_dir: Path,
    run: bool,
    resamples: int,
    echo: Callable[[str], None],
) -> dict[str, Any]:
    """One judge configuration: its order evidence, its pooled replay and one replay per model."""
    rows = [row for row in converted.judgments if row["judge"] == judge]
    pooled = [row for row in rows if "left_out" not in row]
    order = order_summary(rows)
    entry: dict[str, Any] = {
        "judge_model": rows[0]["judge_model"],
        "lines": len(rows),
        "lines_left_out": [{"id": row["id"], "why": row["left_out"]} for row in rows if "left_out" in row],
        "reference_guided": any(row.get("reference_guided") for row in rows),
        "order": order,
        "run": str(run_dir),
        "command": replay_command(fmt.rubric, judge, items, run_dir / "judgments.jsonl"),
    }
    if fmt.one_order:
        entry["win_rate_is"] = (
            "the share won by the answer shown first (ties count half): each record holds one call, so item a is "
            "the answer shown first; the tool's win rate of each model against its baseline is under tool_figures"
        )
    repeats = _repeats(rows)
    if repeats:
        entry["repeats"] = repeats
    other = [row for row in rows if row.get("answers_not_shown")]
    if other:
        entry["answers_not_shown"] = _not_shown(other, len(rows))
    if not run or not pooled:
        return entry
    summary, verdicts = replay(fmt, judge, pooled, items, run_dir, resamples=resamples, echo=echo)
    entry["_verdicts"] = verdicts
    entry["judgebias"] = figures_of(summary, trusted=order["order_trusted"])
    if other:
        shown = [row for row in pooled if not row.get("answers_not_shown")]
        clean = None
        if shown:
            clean, _ = replay(fmt, judge, shown, items, run_dir / "answers-shown", resamples=resamples, echo=echo)
        _textual_from(entry["judgebias"], clean, len(pooled) - len(shown), len(pooled))
    if fmt.one_order:
        entry["position"] = _first_shown(fmt, pooled, order["order_trusted"])
    if converted.tool == "fastchat":
        from judgebias.audit.formats.fastchat import fastchat_show_result

        entry["judgebias_table"] = judgebias_table(verdicts, _baseline({"show_result": fastchat_show_result(rows)}))
        entry["tool_table"] = fastchat_show_result(rows)
    models = sorted({str(row.get("model")) for row in pooled if row.get("model")})
    if fmt.per_model and len(models) > 1:
        folders = SafeNames()
        entry["models"] = {}
        for model in models:
            mine = [row for row in pooled if row.get("model") == model]
            model_dir = run_dir / "models" / folders(model)
            model_summary, _ = replay(fmt, judge, mine, items, model_dir, resamples=resamples, echo=echo)
            figures = figures_of(model_summary, trusted=order["order_trusted"])
            mine_shown = [row for row in mine if not row.get("answers_not_shown")]
            if len(mine_shown) < len(mine):
                clean = None
                if mine_shown:
                    where = model_dir / "answers-shown"
                    clean, _ = replay(fmt, judge, mine_shown, items, where, resamples=resamples, echo=echo)
                _textual_from(figures, clean, len(mine) - len(mine_shown), len(mine))
            figures["run"] = str(model_dir)
            if fmt.one_order:
                figures["position"] = _first_shown(fmt, mine, order["order_trusted"])
            entry["models"][model] = figures
    return entry


def _repeats(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Judgments given again for a pair already judged (a re-run appended to the file): how many, and how often the
    repeat gave the verdicts of the first (each game's, as the tool read them): a repetition stability for free."""
    first = {str(row["source"]): row for row in rows if "repeat_of" not in row}
    repeated = [row for row in rows if "repeat_of" in row]
    if not repeated:
        return None
    same = sum(_same_verdicts(first[str(row["repeat_of"])], row) for row in repeated if str(row["repeat_of"]) in first)
    return {
        "lines": len(repeated),
        "same_verdicts": same,
        "stability": same / len(repeated),
        "sources": [str(row["source"]) for row in repeated],
    }


def _same_verdicts(first: Mapping[str, Any], repeat: Mapping[str, Any]) -> bool:
    """Whether a repeat gave the first line's verdicts: each game's winner by model name, the game that showed the
    same model first compared (a repeat with the models the other way round swaps the games)."""
    return bool(first["named_verdicts"] == repeat["named_verdicts"])


def _not_shown(rows: Sequence[Mapping[str, Any]], total: int) -> dict[str, Any]:
    """The records whose prompt showed the judge other answers than the files give, per model and per file."""
    by_model: dict[str, int] = {}
    by_file: dict[str, int] = {}
    for row in rows:
        for model in row["answers_not_shown"]:
            by_model[model] = by_model.get(model, 0) + 1
        file = str(row.get("source", "")).rsplit(":", 1)[0]
        by_file[file] = by_file.get(file, 0) + 1
    elsewhere = [
        f"{row.get('source')}: {model}'s answer to question {owner}"
        for row in rows
        for model, owner in (row.get("shown_instead") or {}).items()
        if owner is not None
    ]
    return {
        "records": len(rows),
        "of": total,
        "by_model": dict(sorted(by_model.items())),
        "by_file": dict(sorted(by_file.items())),
        "sources": [str(row.get("source")) for row in rows],
        "answers_of_other_questions": len(elsewhere),
        "shown_instead": elsewhere,
    }


def _textual_from(figures: dict[str, Any], clean: Mapping[str, Any] | None, other: int, total: int) -> None:
    """The length and style figures of the records whose prompts showed the files' answers (`clean`, their replay),
    none when there are none; the win rate marked as judged, on `other` records, on other answers."""
    notes, marks = figures.setdefault("notes", {}), figures.setdefault("marks", {})
    on = (
        f"on the {total - other} records whose prompts show the files' answers ({other} showed the judge other "
        "answers, whose length and style the files do not hold)"
    )
    for key in TEXTUAL:
        figures["ci"].pop(key, None)
        notes.pop(key, None)
        if clean is None:
            figures[key] = None
            notes[key] = "withheld: every record's prompt showed the judge other answers than the files give"
            continue
        figures[key] = clean.get(key)
        interval = (clean.get("ci") or {}).get(key)
        if interval is not None:
            figures["ci"][key] = interval
        if figures[key] is None:
            notes[key] = f"{clean.get(NOTE_OF[key]) or 'not measurable'}, {on}"
        else:
            marks[key] = on
    marks["win_rate"] = (
        f"judged on other answers than the files give in {other} of {total} records: the judge's verdict on what it "
        "was shown, not on these models' answers"
    )


def _first_shown(fmt: Format, rows: Sequence[Mapping[str, Any]], trusted: bool) -> dict[str, Any]:
    """A one-order run's position figure: how often the first-shown answer won, or why it is withheld."""
    from judgebias.audit.formats.alpacaeval import first_shown

    if not trusted:
        return {"first_shown_wins": None, "note": "withheld: the order rule contradicts the records' own evidence"}
    return first_shown(rows) | {"label": "first-shown wins (decisive records; 50% = no position effect)"}


def _single(tool: str, converted: Converted) -> dict[str, Any]:
    """Single-answer grades per judge model, as the tool's show_result single mode prints them."""
    from judgebias.audit.formats.fastchat import single_show_result

    by_judge: dict[str, list[dict[str, Any]]] = {}
    for grade in converted.single:
        by_judge.setdefault(grade["judge"][0], []).append(grade)  # show_result reads one judge model's file whole
    return {
        "note": f"{tool} single-answer grading scores one answer per call: position bias does not apply",
        "judges": {judge: single_show_result(grades) for judge, grades in by_judge.items()},
    }


def _tool_models(figures: Mapping[str, Any]) -> dict[str, Any]:
    """The tool's own figures per model (show_result's or the leaderboard's table)."""
    for name in ("show_result", "leaderboard"):
        if name in figures:
            return dict(figures[name].get("models") or {})
    return {}


def _baseline(figures: Mapping[str, Any]) -> str | None:
    """The baseline model the tool's own headline found (FastChat pairwise-baseline, Arena-Hard's baseline)."""
    if "leaderboard" in figures:
        baselines = {model["baseline"] for model in figures["leaderboard"]["models"].values()}
        return baselines.pop() if len(baselines) == 1 else None
    baseline = figures["show_result"].get("baseline")
    return baseline if isinstance(baseline, str) else None
