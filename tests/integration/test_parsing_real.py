"""parse_reply against the verdicts recorded with real judge replies (the shared datasets, not copied here).

Agreement is over calls with a recorded verdict. The goals: every recorded call of mtbench-human and
jtj-mtbench is read the same, except replies that really are ambiguous, which must be "invalid" (never a
different verdict); at least 98% on LLMBar chain-of-thought replies; recorded-null calls stay "invalid"
unless the reply is clearly readable.

LLMBar's recorded calls come from two regexes tried in order, "(a)" first. When both match (a reply that
quotes both verdicts, or PaLM2's "Output (b) is better." followed by a line starting "Output (a) ..."),
the recorded call was decided by that order, not by the reply; the chain-of-thought goal leaves those calls
out, and they are reported by benchmarks/parser_agreement.py.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache

import pytest

from judgebias.core.parsing import parse_reply
from tests.helpers import missing_shared_data, shared_data_root

DATA_ROOT = shared_data_root()
pytestmark = pytest.mark.skipif(DATA_ROOT is None, reason=missing_shared_data())


@dataclass(frozen=True)
class Call:
    id: str
    judge: str
    order: int
    recorded: str | None
    raw: str | None
    parsed: str

    def __str__(self) -> str:
        reply = " ".join((self.raw or "").split())
        shown = reply if len(reply) <= 160 else f"{reply[:60]} ... {reply[-90:]}"
        return f"{self.id} {self.judge} call{self.order}: recorded {self.recorded}, parsed {self.parsed}: {shown!r}"


@cache
def _calls(folder: str, file: str, style: str) -> tuple[Call, ...]:
    assert DATA_ROOT is not None
    lines = (DATA_ROOT / folder / file).read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line]
    return tuple(
        Call(
            row["id"],
            row["judge"],
            order,
            row[f"call{order}"],
            row[f"raw{order}"],
            parse_reply(row[f"raw{order}"], style=style),
        )
        for row in rows
        for order in (1, 2)
        if row[f"call{order}"] is not None or row[f"raw{order}"] is not None
    )


def _agreement(calls: tuple[Call, ...] | list[Call]) -> tuple[float, list[Call]]:
    recorded = [call for call in calls if call.recorded is not None]
    mismatches = [call for call in recorded if call.parsed != call.recorded]
    return 1 - len(mismatches) / len(recorded), mismatches


def _listing(calls: list[Call], limit: int = 5) -> str:
    return "\n".join(str(call) for call in calls[:limit])


_LLMBAR_BETTER = (re.compile(r"Output \(a\) is better."), re.compile(r"Output \(b\) is better."))
_LLMBAR_LINE = (re.compile(r"(?:^|\n) ?Output \(a\)"), re.compile(r"(?:^|\n) ?Output \(b\)"))


def _llmbar_order_decided(call: Call) -> bool:
    cot_phrase = call.judge.endswith("/CoT") and not call.judge.startswith("PaLM2/")
    first, second = _LLMBAR_BETTER if cot_phrase else _LLMBAR_LINE
    raw = (call.raw or "").strip()
    return bool(first.search(raw) and second.search(raw))


def test_mtbench_human_agrees_on_every_call() -> None:
    """Every recorded mtbench-human call is read as recorded and no unparsed reply becomes a verdict."""
    calls = _calls("mtbench-human", "judgments.jsonl", "llmbar")
    _, mismatches = _agreement(calls)
    guesses = [call for call in calls if call.recorded is None and call.parsed != "invalid"]
    assert not mismatches, _listing(mismatches)
    assert not guesses, _listing(guesses)


@pytest.mark.parametrize("file", ["judgments.jsonl", "judgments_repetition.jsonl"], ids=["main", "repetition"])
def test_jtj_mtbench_agrees_except_ambiguous_replies(file: str) -> None:
    """jtj-mtbench bracket verdicts are read as recorded, and the only exceptions are refused as invalid."""
    calls = _calls("jtj-mtbench", file, "brackets")
    agreement, mismatches = _agreement(calls)
    other_verdicts = [call for call in mismatches if call.parsed != "invalid"]
    guesses = [call for call in calls if call.recorded is None and call.parsed != "invalid"]
    assert not other_verdicts, _listing(other_verdicts)
    assert agreement >= 0.999, _listing(mismatches)
    assert not guesses, _listing(guesses)


def test_llmbar_chain_of_thought_agrees_where_the_reference_read_the_reply() -> None:
    """At least 98% of LLMBar CoT calls agree, leaving out calls the reference decided by regex order."""
    calls = [
        call
        for call in _calls("llmbar", "judgments.jsonl", "llmbar")
        if call.judge.endswith("/CoT") and not _llmbar_order_decided(call)
    ]
    agreement, mismatches = _agreement(calls)
    assert agreement >= 0.98, f"{agreement:.2%}\n{_listing(mismatches)}"


def test_llmbar_short_replies_agree() -> None:
    """LLMBar's Vanilla_NoRules and Metrics_Reference replies ("Output (a)") are read as recorded."""
    calls = [call for call in _calls("llmbar", "judgments.jsonl", "llmbar") if not call.judge.endswith("/CoT")]
    agreement, mismatches = _agreement(calls)
    assert agreement >= 0.999, _listing(mismatches)


def test_llmbar_unparsed_replies_become_at_most_clear_ties() -> None:
    """An LLMBar reply the reference left unparsed is read only as a tie that says both are equally good."""
    calls = _calls("llmbar", "judgments.jsonl", "llmbar")
    guesses = [call for call in calls if call.recorded is None and call.parsed != "invalid"]
    assert all("equally good" in (call.raw or "") and call.parsed == "tie" for call in guesses), _listing(guesses)
    assert len(guesses) <= 3, _listing(guesses)


def test_pandalm_agrees_and_refuses_garbage() -> None:
    """PandaLM first-line verdicts are read as recorded and the "garbage" replies stay invalid."""
    calls = _calls("pandalm-test", "judgments.jsonl", "pandalm")
    agreement, mismatches = _agreement(calls)
    guesses = [call for call in calls if call.recorded is None and call.parsed != "invalid"]
    assert agreement >= 0.995, _listing(mismatches)
    assert all(call.parsed == "invalid" for call in mismatches), _listing(mismatches)
    assert not guesses, _listing(guesses)
