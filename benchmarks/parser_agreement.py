"""Agreement of `parse_reply` with the verdicts recorded in the real datasets, as a Markdown table.

    python benchmarks/parser_agreement.py                  # the table
    python benchmarks/parser_agreement.py --disagreements  # the table, then every disagreement

Data: $JUDGEBIAS_DATA_ROOT, else ../shared/data next to the repository. Agreement is over calls with a
recorded verdict; a recorded-null call parsed as a verdict is a guess unless the reply is clearly readable;
"ambiguous" counts calls with a recorded verdict that the parser refuses ("invalid").

LLMBar's recorded calls come from two regexes tried in order, "(a)" first. When both match (a chain of
thought that quotes both verdicts, or PaLM2 opening with "Output (b) is better." then a line starting with
"Output (a) ..."), the recorded call was decided by that order, not by the reply; the "reference not
order-decided" row leaves those calls out.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from judgebias.core.parsing import parse_reply


@dataclass(frozen=True)
class Call:
    """One recorded judge call."""

    dataset: str
    row: int  # line of the judgments file
    id: str
    judge: str
    order: int
    recorded: str | None
    raw: str | None


@dataclass
class Tally:
    """Agreement counts of one table row."""

    rows: int = 0
    calls: int = 0
    recorded: int = 0
    agree: int = 0
    guesses: list[tuple[Call, str]] = field(default_factory=list)
    ambiguous: list[Call] = field(default_factory=list)
    disagreements: list[tuple[Call, str]] = field(default_factory=list)

    def add(self, call: Call, parsed: str) -> None:
        self.calls += 1
        if call.recorded is None:
            if parsed != "invalid":
                self.guesses.append((call, parsed))
            return
        self.recorded += 1
        if parsed == call.recorded:
            self.agree += 1
            return
        self.disagreements.append((call, parsed))
        if parsed == "invalid":
            self.ambiguous.append(call)


# LLMBar's own reading of a reply (its evaluator configs): CoT prompts except PaLM2's look for
# "Output (x) is better", the others for a line starting with "Output (x)"; "(a)" is tried first.
_LLMBAR_BETTER = (re.compile(r"Output \(a\) is better."), re.compile(r"Output \(b\) is better."))
_LLMBAR_LINE = (re.compile(r"(?:^|\n) ?Output \(a\)"), re.compile(r"(?:^|\n) ?Output \(b\)"))


def llmbar_order_decided(call: Call) -> bool:
    """Whether both of LLMBar's regexes match the reply, so its recorded call came from trying "(a)" first."""
    cot_phrase = call.judge.endswith("/CoT") and not call.judge.startswith("PaLM2/")
    first, second = _LLMBAR_BETTER if cot_phrase else _LLMBAR_LINE
    raw = (call.raw or "").strip()
    return bool(first.search(raw) and second.search(raw))


def data_root() -> Path:
    """$JUDGEBIAS_DATA_ROOT, else ../shared/data next to the repository."""
    configured = os.environ.get("JUDGEBIAS_DATA_ROOT")
    return Path(configured) if configured else Path(__file__).resolve().parents[2] / "shared" / "data"


def read_calls(root: Path, folder: str, file: str) -> list[Call]:
    """The calls of one judgments file (call2 skipped when that order was never asked)."""
    rows = [json.loads(line) for line in (root / folder / file).read_text(encoding="utf-8").splitlines() if line]
    calls = [
        Call(folder, index, row["id"], row["judge"], order, row[f"call{order}"], row[f"raw{order}"])
        for index, row in enumerate(rows)
        for order in (1, 2)
        if row[f"call{order}"] is not None or row[f"raw{order}"] is not None
    ]
    return calls


@dataclass(frozen=True)
class Row:
    """One line of the table: which calls, read with which style."""

    name: str
    folder: str
    file: str
    style: str
    keep: Callable[[Call], bool] = lambda call: True


ROWS = (
    Row("mtbench-human", "mtbench-human", "judgments.jsonl", "llmbar"),
    Row(
        "llmbar, Vanilla_NoRules + Metrics_Reference",
        "llmbar",
        "judgments.jsonl",
        "llmbar",
        lambda call: not call.judge.endswith("/CoT"),
    ),
    Row("llmbar, CoT", "llmbar", "judgments.jsonl", "llmbar", lambda call: call.judge.endswith("/CoT")),
    Row(
        "llmbar, CoT, reference not order-decided",
        "llmbar",
        "judgments.jsonl",
        "llmbar",
        lambda call: call.judge.endswith("/CoT") and not llmbar_order_decided(call),
    ),
    Row("jtj-mtbench (position_bias)", "jtj-mtbench", "judgments.jsonl", "brackets"),
    Row("jtj-mtbench (repetition)", "jtj-mtbench", "judgments_repetition.jsonl", "brackets"),
    Row("pandalm-test (call1 only)", "pandalm-test", "judgments.jsonl", "pandalm"),
)


def measure(root: Path) -> Iterator[tuple[Row, Tally]]:
    """Parse every call of every table row and tally agreement with the recorded verdicts."""
    cache: dict[tuple[str, str], list[Call]] = {}
    for row in ROWS:
        key = (row.folder, row.file)
        if key not in cache:
            cache[key] = read_calls(root, *key)
        kept = [call for call in cache[key] if row.keep(call)]
        tally = Tally()
        tally.rows = len({call.row for call in kept})
        for call in kept:
            tally.add(call, parse_reply(call.raw, style=row.style))
        yield row, tally


def table(results: list[tuple[Row, Tally]]) -> str:
    lines = [
        "| dataset | judge style | rows (calls) | agreement | recorded-null calls parsed as a verdict "
        "| ambiguous (recorded verdict, parsed invalid) | recorded verdict, parsed another verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for row, tally in results:
        percent = 100 * tally.agree / tally.recorded if tally.recorded else float("nan")
        guesses = ", ".join(sorted({parsed for _, parsed in tally.guesses}))
        lines.append(
            f"| {row.name} | `{row.style}` | {tally.rows} ({tally.calls}) "
            f"| {percent:.2f}% ({tally.agree}/{tally.recorded}) "
            f"| {len(tally.guesses)}{f' ({guesses})' if guesses else ''} | {len(tally.ambiguous)} "
            f"| {len(tally.disagreements) - len(tally.ambiguous)} |"
        )
    return "\n".join(lines)


def disagreements(results: list[tuple[Row, Tally]]) -> str:
    out: list[str] = []
    for row, tally in results:
        listed = [*tally.disagreements, *tally.guesses]
        if not listed:
            continue
        out.append(f"\n## {row.name}: {len(listed)}\n")
        for call, parsed in listed:
            reply = " ".join((call.raw or "").split())
            shown = reply if len(reply) <= 400 else f"{reply[:150]} ... {reply[-230:]}"
            out.append(f"- {call.id} {call.judge} call{call.order}: recorded {call.recorded}, parsed {parsed}")
            out.append(f"  > {shown}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--disagreements", action="store_true", help="list every disagreement after the table")
    args = parser.parse_args(argv)
    root = data_root()
    if not root.is_dir():
        print(f"no data at {root}; set JUDGEBIAS_DATA_ROOT", file=sys.stderr)
        return 2
    results = list(measure(root))
    print(table(results))
    if args.disagreements:
        print(disagreements(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
