"""What every audited tool's reader shares: the converted run, record checks that name file, line and field, and
the tables and readings the tools' own figures are built from. Pure: no files, no clock."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgebias.core.errors import UserError
from judgebias.core.parsing import parse_reply

Record = tuple[str, int, Any]  # (source file, line, parsed JSON value) as the caller read it
EXCERPT = 300  # characters of a disagreeing judgment's end shown in the list (where the verdict usually is)


@dataclass
class Converted:
    """What one tool's files become: judgebias items and the judgments replay reads, one judge per configuration.

    `single` holds single-answer grades (FastChat's `*_single.jsonl`), which have no pair to replay.
    """

    tool: str
    items: list[dict[str, Any]] = field(default_factory=list)
    judgments: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    single: list[dict[str, Any]] = field(default_factory=list)

    def judges(self) -> list[str]:
        """The judge configurations found, in the order first seen."""
        return list(dict.fromkeys(row["judge"] for row in self.judgments))


@dataclass(frozen=True)
class Options:
    """What the command line adds to the files: FastChat's human votes, an Arena-Hard v0.1 baseline."""

    human: Path | None = None  # FastChat mt_bench_human_judgments votes
    baseline: str | None = None  # Arena-Hard v0.1: the baseline model when the records do not show it

    def refuse(self, tool: str, *taken: str) -> None:
        """A UserError for each option given that `tool`'s files have no use for."""
        if self.human is not None and "human" not in taken:
            raise UserError(f"--human reads FastChat's mt_bench_human_judgments votes; {tool} files have no such votes")
        if self.baseline is not None and "baseline" not in taken:
            raise UserError(f"--baseline names Arena-Hard's baseline model; {tool} files name their own")


@dataclass(frozen=True)
class Format:
    """One tool's judgment files: how they are found and read, replayed, and what the tool itself reports.

    A new format is one module in this package with a FORMAT of this type, and one line in the registry.
    """

    name: str
    rubric: str  # the judgebias rubric whose parser reads the recorded judgments when they are replayed
    convert: Callable[[Sequence[Path], Options], Converted]  # paths and options -> items and judgments
    tool_figures: Callable[[Sequence[Mapping[str, Any]]], dict[str, Any]]  # one judge model's lines -> figures
    readings: Callable[[Sequence[Mapping[str, Any]]], dict[str, Any]]  # the tool's reading against judgebias's
    one_order: bool = False  # each record holds one call: position consistency cannot be measured
    per_model: bool = True  # report every model's figures beside the pooled ones


def where(source: str, line: int) -> str:
    """'SOURCE:LINE', the prefix of every error about one record."""
    return f"{source}:{line}"


def fail(source: str, line: int, name: str, problem: str) -> UserError:
    return UserError(f"{where(source, line)}: field {name!r}: {problem}")


def record_object(source: str, line: int, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise UserError(f"{where(source, line)}: expected a JSON object, got {type(value).__name__}")
    return value


def text_field(record: Mapping[str, Any], name: str, source: str, line: int) -> str:
    value = record.get(name)
    if not isinstance(value, str):
        got = "missing" if value is None else f"must be a string, got {type(value).__name__}"
        raise fail(source, line, name, got)
    return value


def key_field(record: Mapping[str, Any], name: str, source: str, line: int) -> str:
    """A question id as text: FastChat's are integers, Arena-Hard's strings."""
    value = record.get(name)
    if isinstance(value, bool) or not isinstance(value, int | str) or value == "":
        got = "missing" if value is None else f"must be an integer or a string, got {json.dumps(value)[:40]}"
        raise fail(source, line, name, got)
    return str(value)


class Items:
    """Items by id, each built once; a second record naming the same item must agree with the first."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}

    def add(self, item: dict[str, Any]) -> None:
        known = self.rows.setdefault(item["id"], item)
        if known is not item:
            for key in ("a", "b", "question"):
                assert known[key] == item[key], f"item {item['id']} built twice with different {key}"


class Seen:
    """(judge, item) pairs already recorded, so a second recording (a re-run appended) is named with the line of the
    first. An item is its question and its two answers, whichever way round: a pair recorded again with the models
    swapped is the same item judged twice (`pair`: the key that says so)."""

    def __init__(self) -> None:
        self.first: dict[tuple[str, Any], str] = {}

    def earlier(self, judge: str, item_id: str, source: str, line: int, pair: Any = None) -> str | None:
        """Where this judge judged this item first (None: this is the first time, now recorded)."""
        key = (judge, item_id if pair is None else pair)
        if key in self.first:
            return self.first[key]
        self.first[key] = where(source, line)
        return None


def named_verdicts(games: Sequence[tuple[str, str, str | None]]) -> dict[str, str]:
    """Each game's verdict by model name: the model shown first -> the model it preferred, "tie" or "error".
    `games` holds (model shown first, model shown second, positional verdict "A"/"B"/"tie" or None). Two
    recordings of one pair gave the same verdicts when these agree, whichever way round the models were named."""
    named = {}
    for first, second, verdict in games:
        named[first] = {"A": first, "B": second, "tie": "tie"}.get(str(verdict), "error")
    return named


def mark_repeat(row: dict[str, Any], first: str, counter: str) -> None:
    """Flag a line that judges a pair judged before (a re-run appended): the tool's `counter` counts every line,
    judgebias's figures count the pair once."""
    row["repeat_of"] = first
    row["left_out"] = f"a repeat of {first}: {counter} counts it; judgebias's figures count the pair once"


def counted_by_tool(row: Mapping[str, Any]) -> bool:
    """Whether the tool's own figures count this line: every line but those it leaves out itself (a repeat is
    left out of judgebias's figures only)."""
    return "left_out" not in row or "repeat_of" in row


ANSWER_START = 60  # characters of a constant answer quoted in audit.md
CONSTANT_MIN = 3  # the fewest questions one answer text must be given to before it is called a constant answer


def constant_answers(items: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Models that gave one and the same answer text to at least half of their questions (and to CONSTANT_MIN or
    more): a null model, which a judge that prefers it is not judging as an answer to the question."""
    texts: dict[str, dict[str, set[str]]] = {}
    for item in items:
        for side in ("a", "b"):
            model = item.get(f"model_{side}")
            if model:
                texts.setdefault(str(model), {}).setdefault(str(item[side]), set()).add(str(item["question"]))
    found = {}
    for model, by_text in sorted(texts.items()):
        questions = len(set().union(*by_text.values()))
        text, asked = max(by_text.items(), key=lambda pair: len(pair[1]))
        if len(asked) >= CONSTANT_MIN and 2 * len(asked) >= questions:
            found[model] = {"questions": len(asked), "of": questions, "answer_start": text[:ANSWER_START]}
    return found


def unordered(*models: str) -> tuple[str, ...]:
    """Two models of a pair in a fixed order: the same pair whichever was named first."""
    return tuple(sorted(models))


class Questions:
    """Questions by id, each given once: a second line with the same id and the same text is the same question
    (kept once); with another text it is refused, both lines named (which one did the judge see?)."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}
        self._where: dict[str, tuple[str, Any]] = {}

    def add(self, key: str, record: dict[str, Any], text: Any, source: str, line: int, name: str) -> None:
        """Record question `key` (`text`: what must agree between two lines of it; `name`: its field)."""
        if key in self._where:
            first, known = self._where[key]
            if known != text:
                raise fail(
                    source,
                    line,
                    name,
                    f"question {key} is given again with another text (first at {first}): keep the one the judge saw",
                )
            return
        self.rows[key] = record
        self._where[key] = (where(source, line), text)


def questions_by(
    records: Iterable[Record], key: str, check: Callable[[Mapping[str, Any], str, int], object], text: str
) -> dict[str, dict[str, Any]]:
    """The `key` field -> the question line, each line an object with that key and passing `check`; a question id
    given twice with two texts (field `text`) is refused."""
    questions = Questions()
    for source, line, value in records:
        record = record_object(source, line, value)
        qid = key_field(record, key, source, line)
        check(record, source, line)
        questions.add(qid, record, record.get(text), source, line, text)
    return questions.rows


# The section a pairwise template gives each answer: FastChat's "[The Start of Assistant A's Answer]" ...
# "[The End of Assistant A's Answer]" (and "... Conversation with User" for a second turn), Arena-Hard's
# "<|The Start of Assistant A's Answer|>": an answer is looked for there, never elsewhere in the prompt (a weak
# model's answer often repeats the question, which the prompt holds too).
ANSWER_SECTION = re.compile(
    r"[\[<]\|?The Start of Assistant ([AB])'s (Answer|Conversation with User)\|?[\]>]"
    r"(.*?)"
    r"[\[<]\|?The End of Assistant \1's \2\|?[\]>]",
    re.DOTALL,
)


def answer_sections(prompt: str) -> tuple[str, str] | None:
    """The text of Assistant A's section and of Assistant B's in a pairwise prompt (None: not both found)."""
    found: dict[str, str] = {}
    for match in ANSWER_SECTION.finditer(prompt):
        found.setdefault(match.group(1), match.group(3))
    return (found["A"], found["B"]) if "A" in found and "B" in found else None


def undecidable(first: str, second: str) -> bool:
    """Two answers a prompt cannot tell apart: identical, empty, or one inside the other."""
    return not first or not second or first in second or second in first


def shown_first(prompt: Any, first: str, second: str, *, one_enough: bool = False) -> bool | None:
    """Whether a recorded prompt shows answer `first` as Assistant A and `second` as B (True), the other way
    round (False), or cannot tell (None: no prompt, no answer sections, answers that cannot be told apart, an
    answer in both sections, or an answer in neither). With `one_enough`, one answer in one section is enough when
    the other is in neither (its text was not what the judge saw: `answers_not_shown` says so): the section still
    proves where the one the judge saw stood."""
    if not isinstance(prompt, str) or undecidable(first, second):
        return None
    sections = answer_sections(prompt)
    if sections is None:
        return None
    in_a, in_b = sections
    where_first, where_second = (first in in_a, first in in_b), (second in in_a, second in in_b)
    if not one_enough and (False, False) in (where_first, where_second):
        return None
    if where_first in ((True, False), (False, False)) and where_second in ((False, True), (False, False)):
        return None if where_first == where_second else True
    if where_first in ((False, True), (False, False)) and where_second in ((True, False), (False, False)):
        return None if where_first == where_second else False
    return None


def answers_not_shown(prompts: Sequence[Any], answers: Mapping[str, str]) -> list[str]:
    """The models (`answers`: model -> the answer the files give it for this question) whose answer is in neither
    answer section of a recorded prompt that has both: the judge was shown another text than the files hold (an
    answer to another question, another version). Empty when every answer is there, or no prompt can tell."""
    sections = [found for prompt in prompts if isinstance(prompt, str) and (found := answer_sections(prompt))]
    if not sections:
        return []
    return [
        model
        for model, answer in answers.items()
        if answer.strip() and not any(answer.strip() in a or answer.strip() in b for a, b in sections)
    ]


class AnswerOwners:
    """Which question of the files an answer text is a model's answer to: what a prompt that did not show the
    model's answer to its own question showed instead (a bench whose answers were joined to the wrong questions)."""

    def __init__(self, answers: Mapping[str, Mapping[str, Any]]) -> None:
        self.answers = answers
        self.by_text: dict[str, dict[str, str]] = {}

    def owners(self, prompts: Sequence[Any], models: Sequence[str]) -> dict[str, str | None]:
        """model -> the question whose answer by that model a prompt's answer section holds (None: not in the files)."""
        found: dict[str, str | None] = {}
        for model in models:
            if model not in self.by_text:
                self.by_text[model] = {
                    turn.strip(): key
                    for key, answer in self.answers.get(model, {}).items()
                    for turn in ([answer] if isinstance(answer, str) else answer)
                    if turn.strip()
                }
            sections = [answer_sections(prompt) if isinstance(prompt, str) else None for prompt in prompts]
            texts = [text.strip() for pair in sections if pair for text in pair]
            found[model] = next((self.by_text[model][t] for t in texts if t in self.by_text[model]), None)
        return found


def order_evidence(games: Sequence[tuple[Any, str, str]]) -> dict[str, Any]:
    """What a record proves of the order its answers were shown in, per game (recorded prompt, the answer the
    tool's rule says was shown first, the other), each answer looked for in its section of the judge's prompt:
    `order_source` "record" when any game's prompt tells, else "rule"; `order_checked` whether the rule could be
    checked; `order_agrees` whether every game that tells agrees; `order_undecidable` when the answers cannot be
    told apart (identical, or one inside the other), which is no evidence either way."""
    proofs = [shown_first(prompt, first, second, one_enough=True) for prompt, first, second in games]
    known = [proof for proof in proofs if proof is not None]
    if not known:
        cannot = any(undecidable(first, second) for _, first, second in games)
        return {"order_source": "rule", "order_checked": False} | ({"order_undecidable": True} if cannot else {})
    return {"order_source": "record", "order_checked": True, "order_agrees": all(known)}


ORDER_DISAGREEMENT_ALLOWED = 3  # records the rule may contradict (damaged or hand-edited lines) before it is distrusted


def order_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Over one judge's records: how the order shown was decided and how often the tool's rule matched the
    records' own evidence. `order_trusted` is False when it contradicted more than a handful (3, or 1%) of them:
    the positional figures of records decided by the rule alone are then not reported."""
    checked = [row for row in rows if row.get("order_checked")]
    contradicting = [row for row in checked if not row.get("order_agrees")]
    disagree = len(contradicting)
    from_record = sum(row.get("order_source") == "record" for row in rows)
    allowed = max(ORDER_DISAGREEMENT_ALLOWED, int(0.01 * len(checked)))
    return {
        "records": len(rows),
        "order_from_record": from_record,
        "order_from_rule": len(rows) - from_record,
        "order_checked": len(checked),
        "order_agrees": len(checked) - disagree,
        "order_agreement": (len(checked) - disagree) / len(checked) if checked else None,
        "order_undecidable": sum(bool(row.get("order_undecidable")) for row in rows),
        "order_contradicting": [str(row.get("source") or row.get("id")) for row in contradicting],
        "order_trusted": disagree <= allowed,
    }


def slug(text: str) -> str:
    """A name as it may stand in an item id."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:60]


def digest(text: str) -> str:
    """A short stable hash of a text, for ids."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def model_table(outcomes: Iterable[tuple[str, str, str]], baseline: str | None = None) -> dict[str, dict[str, Any]]:
    """FastChat show_result.py's pairwise table from (model_1, model_2, outcome "1" | "2" | "tie") triples.

    Per model: win, loss, tie, win_rate = win / n, loss_rate, win_rate_adjusted = (win + tie / 2) / n. With a
    baseline (pairwise-baseline mode) only pairs that include it count and the baseline's own row is left out.
    """
    table: dict[str, dict[str, Any]] = {}
    for model_1, model_2, outcome in outcomes:
        if baseline is not None and baseline not in (model_1, model_2):
            continue
        for model, won in ((model_1, "1"), (model_2, "2")):
            row = table.setdefault(model, {"win": 0, "loss": 0, "tie": 0})
            key = "tie" if outcome == "tie" else ("win" if outcome == won else "loss")
            row[key] += 1
    if baseline is not None:
        table.pop(baseline, None)
    for row in table.values():
        n = row["win"] + row["loss"] + row["tie"]
        row["win_rate"] = row["win"] / n
        row["loss_rate"] = row["loss"] / n
        row["win_rate_adjusted"] = (row["win"] + 0.5 * row["tie"]) / n
    return dict(sorted(table.items(), key=lambda kv: -kv[1]["win_rate_adjusted"]))


def common_model(pairs: Sequence[tuple[str, str]]) -> str | None:
    """The model in every pair, when there is exactly one (FastChat's pairwise-baseline mode), else None."""
    if not pairs:
        return None
    shared = set(pairs[0])
    for pair in pairs[1:]:
        shared &= set(pair)
    return next(iter(shared)) if len(shared) == 1 else None


def judgebias_table(verdicts: Iterable[Mapping[str, Any]], baseline: str | None = None) -> dict[str, Any]:
    """The same table from judgebias's verdicts (both orders must agree; an error item is left out, as FastChat
    leaves out an error game)."""
    outcomes = [
        (v.get("model_a") or "a", v.get("model_b") or "b", v["verdict"]) for v in verdicts if v["verdict"] != "error"
    ]
    baseline = baseline or common_model([(m1, m2) for m1, m2, _ in outcomes])
    return {"baseline": baseline, "models": model_table(outcomes, baseline)}


def compare_readings(
    rows: Sequence[Mapping[str, Any]], *, style: str, tie_label: str, tool_labels: bool = False
) -> dict[str, Any]:
    """The tool's reading of every recorded judgment next to judgebias's parser on the same text.

    Both unable to read a judgment counts as agreement (neither guessed); a failed call (no text) is left out.
    With `tool_labels` (Arena-Hard) the tool's five-point label is kept beside its direction.
    """
    compared, agree, both_unread = 0, 0, 0
    listed: list[dict[str, Any]] = []
    per_judge: dict[str, dict[str, Any]] = {}
    for row in rows:
        for order in (1, 2):
            raw = row.get(f"raw{order}")
            if raw is None or row.get(f"error{order}"):
                continue
            tool = row.get(f"call{order}")
            ours = parse_reply(raw, style=style, tie_label=tie_label)
            same = tool == ours or (tool is None and ours == "invalid")
            compared += 1
            agree += same
            both_unread += tool is None and ours == "invalid"
            counts = per_judge.setdefault(row["judge"], {"compared": 0, "agree": 0})
            counts["compared"] += 1
            counts["agree"] += same
            if not same:
                entry: dict[str, Any] = {
                    "id": row["id"],
                    "judge": row["judge"],
                    "order": order,
                    "tool": tool if tool is not None else "unread",
                    "judgebias": ours,
                    "source": row.get("source"),
                    "judgment_end": raw[-EXCERPT:],
                }
                if tool_labels:
                    entry["tool_label"] = row.get(f"score{order}")
                listed.append(entry)
    for counts in per_judge.values():
        counts["agreement"] = counts["agree"] / counts["compared"] if counts["compared"] else None
    return {
        "compared": compared,
        "agree": agree,
        "both_unread": both_unread,
        "agreement": agree / compared if compared else None,
        "judges": per_judge,
        "disagreements": listed,
    }
