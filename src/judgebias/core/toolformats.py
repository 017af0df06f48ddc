"""Other judging tools' records turned into judgebias items and recorded replies. Pure: no files, no clock.

Each reader takes the tool's records as (source, line, object) triples, read by the caller, and returns the
`items.jsonl` and `judgments.jsonl` lines that `judge=replay` replays. Every field is checked, and an error names
the source, the line and the field. The fields judgebias does not use are kept (`tool` in a judgments line, the
item's extra fields), and so are the raw judgments, so the replies can be read again by judgebias's own parser.

The frames, as each tool writes them:

- FastChat `llm_judge` (`gen_judgment.py --mode pairwise-*`): game 1 shows model_1 as Assistant A, game 2 shows
  model_2 as Assistant A; `g1_winner`/`g2_winner` are already in the model frame. Item a = model_1, b = model_2,
  so call1 = game 1 and call2 = game 2, as judgebias orders its two calls.
- Arena-Hard-Auto (v2 `gen_judgment.py`): game 1 (`games[0]`) shows the baseline as Assistant A, game 2 the
  model. Item a = the model, b = the baseline: call1 = games[1], call2 = games[0].
- AlpacaEval: one call per item, its order randomised by the annotator and the stored preference turned back to
  output_1/output_2. The order shown is recomputed from AlpacaEval's seeded rule; item a = the answer shown
  first, so the one recorded call is call1 and consistency cannot be measured.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from judgebias.core.errors import UserError

Record = tuple[str, int, Any]  # (source file, line, parsed JSON value) as the caller read it

FASTCHAT_ERROR_OUTPUT = "$ERROR$"  # what FastChat's API helpers return when every retry failed
FASTCHAT_WINNERS = ("model_1", "model_2", "tie", "error")
# Arena-Hard's show_result.py: each verdict's score for Assistant A, a strong one counted `weight` times.
ARENAHARD_LABELS = ("A>>B", "A>B", "A=B", "B>A", "B>>A", "A<<B", "A<B", "B=A", "B<<A", "B<A")
ARENAHARD_PATTERNS = (r"\[\[([AB<>=]+)\]\]", r"\[([AB<>=]+)\]")  # the regex_patterns of its shipped configs
ALPACAEVAL_SWITCH_SEED = ("is_switched_outputs", "123")  # RandomSwitchTwoColumnsProcessor's column and seed
HUMAN_WINNERS = {"model_a": "a", "model_b": "b", "tie": "tie", "tie (bothbad)": "tie"}


@dataclass
class Converted:
    """What one tool's files become: judgebias items and the judgments replay reads, one judge per configuration."""

    tool: str
    items: list[dict[str, Any]] = field(default_factory=list)
    judgments: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def judges(self) -> list[str]:
        """The judge configurations found, in the order first seen."""
        return list(dict.fromkeys(row["judge"] for row in self.judgments))


def where(source: str, line: int) -> str:
    """'SOURCE:LINE', the prefix of every error about one record."""
    return f"{source}:{line}"


def _fail(source: str, line: int, name: str, problem: str) -> UserError:
    return UserError(f"{where(source, line)}: field {name!r}: {problem}")


def _object(source: str, line: int, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise UserError(f"{where(source, line)}: expected a JSON object, got {type(value).__name__}")
    return value


def _text(record: Mapping[str, Any], name: str, source: str, line: int) -> str:
    value = record.get(name)
    if not isinstance(value, str):
        got = "missing" if value is None else f"must be a string, got {type(value).__name__}"
        raise _fail(source, line, name, got)
    return value


def _key(record: Mapping[str, Any], name: str, source: str, line: int) -> str:
    """A question id as text: FastChat's are integers, Arena-Hard's strings."""
    value = record.get(name)
    if isinstance(value, bool) or not isinstance(value, int | str) or value == "":
        got = "missing" if value is None else f"must be an integer or a string, got {json.dumps(value)[:40]}"
        raise _fail(source, line, name, got)
    return str(value)


class _Items:
    """Items by id, each built once; a second record naming the same item must agree with the first."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}

    def add(self, item: dict[str, Any]) -> None:
        known = self.rows.setdefault(item["id"], item)
        if known is not item:
            for key in ("a", "b", "question"):
                assert known[key] == item[key], f"item {item['id']} built twice with different {key}"


class _Seen:
    """(judge, item) pairs already recorded, so a second recording is named with the line of the first."""

    def __init__(self) -> None:
        self.first: dict[tuple[str, str], str] = {}

    def check(self, judge: str, item_id: str, source: str, line: int) -> None:
        key = (judge, item_id)
        if key in self.first:
            raise UserError(
                f"{where(source, line)}: judge {judge!r} judged {item_id!r} twice (first at {self.first[key]}): "
                "keep one of the two lines"
            )
        self.first[key] = where(source, line)


# ---------------------------------------------------------------- FastChat


def fastchat_tool_reading(judgment: str) -> str:
    """FastChat's own extraction for output_format "[[A]]": the first of [[A]], [[B]], [[C]] *tested*, in that
    order, that occurs anywhere in the text (so a judgment quoting "[[A]]" and concluding "[[B]]" reads "A")."""
    if "[[A]]" in judgment:
        return "A"
    if "[[B]]" in judgment:
        return "B"
    if "[[C]]" in judgment:
        return "tie"
    return "error"


def _fastchat_positional(winner: str, game: int) -> str | None:
    """A g1/g2 winner (model frame) as the positional reply of its game; None for FastChat's "error"."""
    shown_first = "model_1" if game == 1 else "model_2"
    if winner == "error":
        return None
    if winner == "tie":
        return "tie"
    return "A" if winner == shown_first else "B"


def fastchat_answers(records: Iterable[Record]) -> dict[str, dict[str, list[str]]]:
    """model -> question id -> the answer's turns, from `model_answer/<model>.jsonl` lines (model from the file name
    unless `model_id` is given, as FastChat's load_model_answers does: the file name wins)."""
    answers: dict[str, dict[str, list[str]]] = {}
    for source, line, value in records:
        record = _object(source, line, value)
        model = source.rsplit("/", 1)[-1].removesuffix(".jsonl")
        qid = _key(record, "question_id", source, line)
        choices = record.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise _fail(source, line, "choices", "must be a non-empty list of {'turns': [...]} objects")
        turns = choices[0].get("turns")
        if not isinstance(turns, list) or not all(isinstance(turn, str) for turn in turns):
            raise _fail(source, line, "choices[0].turns", "must be a list of strings")
        answers.setdefault(model, {})[qid] = list(turns)
    return answers


def fastchat_questions(records: Iterable[Record]) -> dict[str, dict[str, Any]]:
    """question id -> the question line (turns checked), from `question.jsonl`."""
    return _questions(records, "question_id", _check_turns)


def _check_turns(record: Mapping[str, Any], source: str, line: int) -> None:
    turns = record.get("turns")
    if not isinstance(turns, list) or not turns or not all(isinstance(turn, str) for turn in turns):
        raise _fail(source, line, "turns", "must be a non-empty list of strings")


def _questions(
    records: Iterable[Record], key: str, check: Callable[[Mapping[str, Any], str, int], object]
) -> dict[str, dict[str, Any]]:
    """The `key` field -> the question line, each line an object with that key and passing `check`."""
    questions: dict[str, dict[str, Any]] = {}
    for source, line, value in records:
        record = _object(source, line, value)
        qid = _key(record, key, source, line)
        check(record, source, line)
        questions[qid] = record
    return questions


def fastchat_human_votes(records: Iterable[Record]) -> dict[tuple[str, int, str, str], list[str]]:
    """(question id, turn, model_a, model_b) -> winners ("a", "b", "tie") from FastChat's mt_bench_human_judgments
    votes (`winner`: model_a, model_b, tie, "tie (bothbad)"), the pair as each vote names it."""
    votes: dict[tuple[str, int, str, str], list[str]] = {}
    for source, line, value in records:
        record = _object(source, line, value)
        qid = _key(record, "question_id", source, line)
        model_a, model_b = _text(record, "model_a", source, line), _text(record, "model_b", source, line)
        winner = record.get("winner")
        if winner not in HUMAN_WINNERS:
            raise _fail(source, line, "winner", f"must be one of {', '.join(HUMAN_WINNERS)}, got {winner!r}")
        turn = record.get("turn", 1)
        if turn not in (1, 2):
            raise _fail(source, line, "turn", f"must be 1 or 2, got {turn!r}")
        votes.setdefault((qid, turn, model_a, model_b), []).append(HUMAN_WINNERS[winner])
    return votes


def _votes_for(
    votes: Mapping[tuple[str, int, str, str], list[str]], qid: str, turn: int, model_1: str, model_2: str
) -> list[str]:
    """The human votes on this pair in the item's frame ("1" = model_1), whichever way round each vote named it."""
    frame = {"a": "1", "b": "2", "tie": "tie"}
    mirrored = {"a": "2", "b": "1", "tie": "tie"}
    return [frame[v] for v in votes.get((qid, turn, model_1, model_2), [])] + [
        mirrored[v] for v in votes.get((qid, turn, model_2, model_1), [])
    ]


def majority(votes: Sequence[str]) -> str | None:
    """The most frequent vote ("1", "2", "tie"); a 1-against-2 draw is "tie"; None without votes."""
    if not votes:
        return None
    counts = {label: votes.count(label) for label in ("1", "2", "tie")}
    best = max(counts.values())
    leaders = [label for label, count in counts.items() if count == best]
    return leaders[0] if len(leaders) == 1 else "tie"


def convert_fastchat(
    judgments: Iterable[Record],
    questions: Mapping[str, dict[str, Any]],
    answers: Mapping[str, Mapping[str, list[str]]],
    references: Mapping[str, Mapping[str, list[str]]] | None = None,
    human: Mapping[tuple[str, int, str, str], list[str]] | None = None,
) -> Converted:
    """FastChat `<judge>_pair.jsonl` lines as items (question, turn, model pair) and both games' judgments."""
    out = Converted("fastchat")
    items, seen = _Items(), _Seen()
    references = references or {}
    for source, line, value in judgments:
        record = _object(source, line, value)
        qid = _key(record, "question_id", source, line)
        model_1, model_2 = _text(record, "model_1", source, line), _text(record, "model_2", source, line)
        if "g1_winner" not in record and "winner" in record:
            raise _fail(source, line, "g1_winner", "missing: this is a single-game line (`winner`), not a pairwise one")
        for name in ("g1_winner", "g2_winner"):
            if record.get(name) not in FASTCHAT_WINNERS:
                raise _fail(
                    source, line, name, f"must be one of {', '.join(FASTCHAT_WINNERS)}, got {record.get(name)!r}"
                )
        judge = record.get("judge")
        if not (isinstance(judge, list) and len(judge) == 2 and all(isinstance(part, str) for part in judge)):
            raise _fail(source, line, "judge", f"must be [judge model, prompt name], got {json.dumps(judge)[:60]}")
        judge_model, prompt = judge
        turn = record.get("turn", 1)
        if turn not in (1, 2):
            raise _fail(source, line, "turn", f"must be 1 or 2, got {turn!r}")
        raws = [_text(record, name, source, line) for name in ("g1_judgment", "g2_judgment")]
        if qid not in questions:
            raise _fail(source, line, "question_id", f"question {qid} is not in question.jsonl")
        question = questions[qid]
        if len(question["turns"]) < turn:
            raise _fail(source, line, "turn", f"question {qid} has {len(question['turns'])} turn(s), not {turn}")
        turns = {}
        for name, model in (("model_1", model_1), ("model_2", model_2)):
            answer = answers.get(model, {}).get(qid)
            if answer is None or len(answer) < turn:
                raise _fail(
                    source, line, name, f"no turn-{turn} answer of {model!r} to question {qid} in model_answer/"
                )
            turns[name] = answer
        item_id = f"fastchat-q{qid}-t{turn}-{model_1}-vs-{model_2}"
        name = f"{judge_model}/{prompt}"
        seen.check(name, item_id, source, line)
        reference_guided = "math" in prompt  # FastChat's pair-math-v1 prompts are the ones shown reference answers
        item: dict[str, Any] = {
            "id": item_id,
            "question": question["turns"][turn - 1],
            "a": turns["model_1"][turn - 1],
            "b": turns["model_2"][turn - 1],
            "model_a": model_1,
            "model_b": model_2,
            "question_id": question["question_id"],
            "turn": turn,
            "category": question.get("category"),
        }
        if turn == 2:
            item |= {
                "question_turn1": question["turns"][0],
                "a_turn1": turns["model_1"][0],
                "b_turn1": turns["model_2"][0],
            }
        reference = references.get(judge_model, {}).get(qid) if reference_guided else None
        if reference is None and reference_guided and isinstance(question.get("reference"), list):
            reference = [str(part) for part in question["reference"]]
        if reference:
            for number, text in enumerate(reference[:turn], start=1):
                item[f"reference_turn{number}"] = text
        votes = _votes_for(human or {}, qid, turn, model_1, model_2)
        if votes:
            item["human_votes"] = votes
            item["human"] = majority(votes)
        items.add(item)
        row: dict[str, Any] = {
            "id": item_id,
            "judge": name,
            "judge_model": judge_model,
            "prompt": prompt,
            "reference_guided": reference_guided,
            "call1": _fastchat_positional(record["g1_winner"], 1),
            "call2": _fastchat_positional(record["g2_winner"], 2),
            "raw1": raws[0],
            "raw2": raws[1],
            "source": where(source, line),
            "tool": {k: v for k, v in record.items() if k not in ("g1_judgment", "g2_judgment")},
        }
        for order, raw in enumerate(raws, start=1):
            if raw == FASTCHAT_ERROR_OUTPUT:
                row[f"error{order}"] = f"FastChat recorded {FASTCHAT_ERROR_OUTPUT} (every API retry failed)"
        out.judgments.append(row)
    out.items = list(items.rows.values())
    if references and not any(row["reference_guided"] for row in out.judgments):
        out.notes.append("reference answers were given but no judgment used a reference-guided (math) prompt")
    return out


def export_fastchat(
    items: Sequence[Mapping[str, Any]], verdicts: Sequence[Mapping[str, Any]], judge: tuple[str, str]
) -> dict[str, list[dict[str, Any]]]:
    """A judgebias run as a FastChat bench: relative path -> JSON lines (question.jsonl, model_answer/<model>.jsonl,
    model_judgment/<judge model>_pair.jsonl). Each game's winner is read from the raw reply by FastChat's own rule;
    a failed call is written as FastChat writes one ($ERROR$, winner "error")."""
    by_id = {item["id"]: item for item in items}
    questions: dict[str, dict[str, Any]] = {}
    answers: dict[str, dict[str, dict[str, Any]]] = {}
    lines = []
    for number, verdict in enumerate(verdicts, start=1):
        item = by_id[verdict["id"]]
        qid = item.get("question_id", number)
        turn = int(item.get("turn", 1))
        model_1, model_2 = item.get("model_a") or "model_a", item.get("model_b") or "model_b"
        earlier = [item.get("question_turn1", "")] if turn == 2 else []
        questions.setdefault(str(qid), {"question_id": qid, "category": item.get("category"), "turns": []})
        questions[str(qid)]["turns"] = [*earlier, item["question"]]
        for model, which in ((model_1, "a"), (model_2, "b")):
            turns = ([item.get(f"{which}_turn1", "")] if turn == 2 else []) + [item[which]]
            answers.setdefault(model, {})[str(qid)] = {
                "question_id": qid,
                "answer_id": f"{model}-{qid}",
                "model_id": model,
                "choices": [{"index": 0, "turns": turns}],
                "tstamp": 0.0,
            }
        raws = [
            FASTCHAT_ERROR_OUTPUT if verdict.get(f"call{order}") == "error" else str(verdict.get(f"raw{order}") or "")
            for order in (1, 2)
        ]
        first, second = (fastchat_tool_reading(raw) for raw in raws)
        lines.append(
            {
                "question_id": qid,
                "model_1": model_1,
                "model_2": model_2,
                "g1_winner": {"A": "model_1", "B": "model_2"}.get(first, first),
                "g2_winner": {"A": "model_2", "B": "model_1"}.get(second, second),
                "judge": list(judge),
                "g1_user_prompt": "",
                "g1_judgment": raws[0],
                "g2_user_prompt": "",
                "g2_judgment": raws[1],
                "turn": turn,
                "tstamp": 0.0,
            }
        )
    files = {"question.jsonl": list(questions.values())}
    files |= {f"model_answer/{model}.jsonl": list(rows.values()) for model, rows in answers.items()}
    files[f"model_judgment/{judge[0]}_pair.jsonl"] = lines
    return files


# ---------------------------------------------------------------- Arena-Hard-Auto


def arenahard_tool_reading(judgment: str, patterns: Sequence[str] = ARENAHARD_PATTERNS) -> str | None:
    """Arena-Hard's own extraction (v2 get_score): the *last* match of the first pattern that matches the upper-cased
    text; None when none does."""
    for pattern in patterns:
        matches = [m for m in re.findall(pattern, judgment.upper()) if m != ""]
        if matches:
            return str(matches[-1]).strip("\n")
    return None


def arenahard_side(label: str | None) -> str | None:
    """The positional side ("A", "B", "tie") of a five-point label as Arena-Hard scores it; None if it has none."""
    if label is None:
        return None
    scores = {"A>B": "A", "A>>B": "A", "A=B": "tie", "A<<B": "B", "A<B": "B"}
    scores |= {"B>A": "B", "B>>A": "B", "B=A": "tie", "B<<A": "A", "B<A": "A"}
    return scores.get(label)


def arenahard_answers(records: Iterable[Record]) -> dict[str, dict[str, str]]:
    """model -> uid -> the answer text, from v2 `model_answer/<model>.jsonl` lines (`messages[-1].content.answer`)."""
    answers: dict[str, dict[str, str]] = {}
    for source, line, value in records:
        record = _object(source, line, value)
        uid = _key(record, "uid", source, line)
        model = _text(record, "model", source, line)
        messages = record.get("messages")
        last = messages[-1] if isinstance(messages, list) and messages else None
        content = last.get("content") if isinstance(last, dict) else None
        answer = content.get("answer") if isinstance(content, dict) else content
        if not isinstance(answer, str):
            raise _fail(source, line, "messages", "the last message needs content.answer (or content) as a string")
        answers.setdefault(model, {})[uid] = answer
    return answers


def arenahard_questions(records: Iterable[Record]) -> dict[str, dict[str, Any]]:
    """uid -> the question line (`prompt` checked), from v2 `question.jsonl`."""
    return _questions(records, "uid", lambda record, source, line: _text(record, "prompt", source, line))


def _game_text(game: Mapping[str, Any], source: str, line: int, name: str) -> str:
    judgment = game.get("judgment")
    text = judgment.get("answer") if isinstance(judgment, dict) else judgment
    if not isinstance(text, str):
        raise _fail(source, line, f"{name}.judgment", "must be a string or an object with an 'answer' string")
    return text


def convert_arenahard(
    judgments: Iterable[Record], questions: Mapping[str, dict[str, Any]], answers: Mapping[str, Mapping[str, str]]
) -> Converted:
    """Arena-Hard-Auto v2 `model_judgment/<judge>/<model>.jsonl` lines as items (model vs baseline) and both games."""
    out = Converted("arenahard")
    items, seen = _Items(), _Seen()
    for source, line, value in judgments:
        record = _object(source, line, value)
        if "uid" not in record and "question_id" in record:
            raise _fail(
                source, line, "uid", "missing: this reads Arena-Hard-Auto v2 files (v0.1 lines have question_id)"
            )
        uid = _key(record, "uid", source, line)
        model, baseline = _text(record, "model", source, line), _text(record, "baseline", source, line)
        judge = _text(record, "judge", source, line)
        games = record.get("games")
        if not isinstance(games, list) or len(games) != 2:
            raise _fail(source, line, "games", "must be a list of two games (baseline shown first, then the model)")
        texts: list[str | None] = []
        labels: list[str | None] = []
        for index, game in enumerate(games):
            name = f"games[{index}]"
            if game is None:  # the judge call failed: gen_judgment.py stores null
                texts.append(None)
                labels.append(None)
                continue
            if not isinstance(game, dict):
                raise _fail(source, line, name, f"must be an object or null, got {type(game).__name__}")
            texts.append(_game_text(game, source, line, name))
            score = game.get("score")
            if score is not None and not isinstance(score, str):
                raise _fail(source, line, f"{name}.score", f"must be a verdict label or null, got {json.dumps(score)}")
            labels.append(score)
        if uid not in questions:
            raise _fail(source, line, "uid", f"question {uid} is not in question.jsonl")
        for name, who in (("model", model), ("baseline", baseline)):
            if uid not in answers.get(who, {}):
                raise _fail(source, line, name, f"no answer of {who!r} to question {uid} in model_answer/")
        item_id = f"arenahard-{uid}-{model}-vs-{baseline}"
        seen.check(judge, item_id, source, line)
        question = questions[uid]
        item = {
            "id": item_id,
            "question": question["prompt"],
            "a": answers[model][uid],
            "b": answers[baseline][uid],
            "model_a": model,
            "model_b": baseline,
            "uid": uid,
            "category": question.get("category", record.get("category")),
        } | {k: v for k, v in question.items() if k not in ("uid", "prompt", "category")}
        items.add(item)
        row: dict[str, Any] = {
            "id": item_id,
            "judge": judge,
            "judge_model": judge,
            "call1": arenahard_side(labels[1]),  # games[1]: the model (a) shown first
            "call2": arenahard_side(labels[0]),  # games[0]: the baseline (b) shown first
            "score1": labels[1],
            "score2": labels[0],
            "raw1": texts[1],
            "raw2": texts[0],
            "source": where(source, line),
            "tool": {k: v for k, v in record.items() if k != "games"} | {"games": games},
        }
        for order, game_index in ((1, 1), (2, 0)):
            if games[game_index] is None:
                row[f"error{order}"] = f"Arena-Hard recorded no game {game_index + 1} (the judge call failed)"
        out.judgments.append(row)
    out.items = list(items.rows.values())
    return out


# ---------------------------------------------------------------- AlpacaEval


def alpacaeval_switched(instruction: str) -> bool:
    """Whether AlpacaEval showed output_2 first for this instruction (its seeded per-instruction coin)."""
    column, seed = ALPACAEVAL_SWITCH_SEED
    return bool(random.Random(column + instruction + seed).choices([False, True], k=1)[0])


def _preference(value: Any, source: str, line: int) -> float | None:
    """AlpacaEval's preference: 1 (output_1), 2 (output_2), 1.5 or 0 (a draw), a soft value in [1, 2], or null."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(source, line, "preference", f"must be a number in [1, 2], 0, or null, got {json.dumps(value)[:40]}")
    number = float(value)
    if number == 0.0:
        return 1.5
    if not 1.0 <= number <= 2.0:
        raise _fail(source, line, "preference", f"must be in [1, 2] (or 0 for a draw), got {value}")
    return number


def convert_alpacaeval(annotations: Iterable[Record]) -> Converted:
    """AlpacaEval `annotations.json` entries as items (answer shown first = a) and their one recorded call."""
    out = Converted("alpacaeval")
    items, seen = _Items(), _Seen()
    for source, line, value in annotations:
        record = _object(source, line, value)
        instruction = _text(record, "instruction", source, line)
        outputs = [_text(record, name, source, line) for name in ("output_1", "output_2")]
        generators = [_text(record, name, source, line) for name in ("generator_1", "generator_2")]
        annotator = record.get("annotator")
        if not isinstance(annotator, str) or not annotator:
            raise _fail(source, line, "annotator", "missing: AlpacaEval annotations name their annotator")
        preference = _preference(record.get("preference"), source, line)
        switched = alpacaeval_switched(instruction)
        first, second = (1, 0) if switched else (0, 1)
        item_id = f"alpacaeval-{_slug(generators[1])}-vs-{_slug(generators[0])}-{_digest(instruction)}"
        seen.check(annotator, item_id, source, line)
        items.add(
            {
                "id": item_id,
                "question": instruction,
                "a": outputs[first],
                "b": outputs[second],
                "model_a": generators[first],
                "model_b": generators[second],
                "shown_first": f"output_{first + 1}",
                "dataset": record.get("dataset"),
            }
        )
        if preference is None:
            call, raw = None, None
        else:
            prefers_2 = preference > 1.5
            call = "tie" if preference == 1.5 else ("A" if prefers_2 == switched else "B")
            raw = {"A": "[[A]]", "B": "[[B]]", "tie": "[[C]]"}[call]
        row: dict[str, Any] = {
            "id": item_id,
            "judge": annotator,
            "judge_model": annotator,
            "call1": call,
            "call2": None,
            "raw1": raw,  # AlpacaEval keeps its parsed preference; written here as the bracket reply it stands for
            "raw2": None,
            "preference": preference,
            "switched": switched,
            "source": where(source, line),
            "tool": dict(record),
        }
        if preference is None:
            row["error1"] = "AlpacaEval recorded no preference (null)"
        out.judgments.append(row)
    out.items = list(items.rows.values())
    return out


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:60]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
