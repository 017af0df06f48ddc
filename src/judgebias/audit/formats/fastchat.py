"""FastChat `llm_judge`: pairwise judgments (`model_judgment/<judge>_pair.jsonl`) replayed as judgebias runs, and
single-answer grades (`<judge>_single.jsonl`) summarised as FastChat's show_result prints them.

Where FastChat keeps its files (as its own scripts write them): `data/<bench>/question.jsonl`,
`model_answer/<model>.jsonl`, `reference_answer/<judge>.jsonl`, `model_judgment/<judge>_pair.jsonl` and
`model_judgment/<judge>_single.jsonl`.

The frame: game 1 shows model_1 as Assistant A, game 2 shows model_2 as Assistant A (gen_judgment.py's
play_a_match_pair); `g1_winner`/`g2_winner` are already in the model frame. Item a = model_1, b = model_2, so
call1 = game 1 and call2 = game 2, as judgebias orders its two calls. Each game's recorded prompt
(`g1_user_prompt`, `g2_user_prompt`) holds both answers: the order they stand in there is the record's own
evidence of the order shown, checked against that rule line by line.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judgebias.audit import files
from judgebias.audit.formats.common import (
    AnswerOwners,
    Converted,
    Format,
    Items,
    Options,
    Record,
    Seen,
    answers_not_shown,
    common_model,
    compare_readings,
    fail,
    key_field,
    mark_repeat,
    model_table,
    named_verdicts,
    order_evidence,
    questions_by,
    record_object,
    text_field,
    unordered,
    where,
)

FASTCHAT_ERROR_OUTPUT = "$ERROR$"  # what FastChat's API helpers return when every retry failed


FASTCHAT_WINNERS = ("model_1", "model_2", "tie", "error")


HUMAN_WINNERS = {"model_a": "a", "model_b": "b", "tie": "tie", "tie (bothbad)": "tie"}


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
        record = record_object(source, line, value)
        model = source.rsplit("/", 1)[-1].removesuffix(".jsonl")
        qid = key_field(record, "question_id", source, line)
        choices = record.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise fail(source, line, "choices", "must be a non-empty list of {'turns': [...]} objects")
        turns = choices[0].get("turns")
        if not isinstance(turns, list) or not all(isinstance(turn, str) for turn in turns):
            raise fail(source, line, "choices[0].turns", "must be a list of strings")
        answers.setdefault(model, {})[qid] = list(turns)
    return answers


def fastchat_questions(records: Iterable[Record]) -> dict[str, dict[str, Any]]:
    """question id -> the question line (turns checked), from `question.jsonl`."""
    return questions_by(records, "question_id", _check_turns, "turns")


def _check_turns(record: Mapping[str, Any], source: str, line: int) -> None:
    turns = record.get("turns")
    if not isinstance(turns, list) or not turns or not all(isinstance(turn, str) for turn in turns):
        raise fail(source, line, "turns", "must be a non-empty list of strings")


def fastchat_human_votes(records: Iterable[Record]) -> dict[tuple[str, int, str, str], list[str]]:
    """(question id, turn, model_a, model_b) -> winners ("a", "b", "tie") from FastChat's mt_bench_human_judgments
    votes (`winner`: model_a, model_b, tie, "tie (bothbad)"), the pair as each vote names it."""
    votes: dict[tuple[str, int, str, str], list[str]] = {}
    for source, line, value in records:
        record = record_object(source, line, value)
        qid = key_field(record, "question_id", source, line)
        model_a, model_b = text_field(record, "model_a", source, line), text_field(record, "model_b", source, line)
        winner = record.get("winner")
        if winner not in HUMAN_WINNERS:
            raise fail(source, line, "winner", f"must be one of {', '.join(HUMAN_WINNERS)}, got {winner!r}")
        turn = record.get("turn", 1)
        if turn not in (1, 2):
            raise fail(source, line, "turn", f"must be 1 or 2, got {turn!r}")
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
    items, seen, owners = Items(), Seen(), AnswerOwners(answers)
    references = references or {}
    for source, line, value in judgments:
        pair = _pair_line(record_object(source, line, value), source, line)
        if pair.qid not in questions:
            raise fail(source, line, "question_id", f"question {pair.qid} is not in question.jsonl")
        question = questions[pair.qid]
        if len(question["turns"]) < pair.turn:
            raise fail(
                source, line, "turn", f"question {pair.qid} has {len(question['turns'])} turn(s), not {pair.turn}"
            )
        turns = {}
        for name, model in (("model_1", pair.model_1), ("model_2", pair.model_2)):
            answer = answers.get(model, {}).get(pair.qid)
            if answer is None or len(answer) < pair.turn:
                raise fail(
                    source,
                    line,
                    name,
                    f"no turn-{pair.turn} answer of {model!r} to question {pair.qid} in model_answer/",
                )
            turns[name] = answer
        item = _pair_item(pair, question, turns, references, human or {})
        first = seen.earlier(
            pair.judge_name, item["id"], source, line, (pair.qid, pair.turn, unordered(pair.model_1, pair.model_2))
        )
        row = _pair_row(pair, item["id"], turns, source, line)
        if "answers_not_shown" in row:
            prompts = [pair.record.get("g1_user_prompt"), pair.record.get("g2_user_prompt")]
            row["shown_instead"] = owners.owners(prompts, row["answers_not_shown"])
        if first is None:
            items.add(item)
        else:  # a re-run appended to the file (perhaps with the models swapped): show_result counts every line
            mark_repeat(row, first, "show_result")
        out.judgments.append(row)
    out.items = list(items.rows.values())
    if references and not any(row["reference_guided"] for row in out.judgments):
        out.notes.append("reference answers were given but no judgment used a reference-guided (math) prompt")
    return out


@dataclass(frozen=True)
class _PairLine:
    """One checked line of a FastChat pair file."""

    record: dict[str, Any]
    qid: str
    model_1: str
    model_2: str
    judge_model: str
    prompt: str
    turn: int
    raws: tuple[str, str]  # g1_judgment, g2_judgment

    @property
    def judge_name(self) -> str:
        return f"{self.judge_model}/{self.prompt}"

    @property
    def reference_guided(self) -> bool:
        return "math" in self.prompt  # FastChat's pair-math-v1 prompts are the ones shown reference answers


def _pair_line(record: dict[str, Any], source: str, line: int) -> _PairLine:
    """A pair line's fields, each checked; a single-game or single-answer line is named as what it is."""
    qid = key_field(record, "question_id", source, line)
    model_1, model_2 = text_field(record, "model_1", source, line), text_field(record, "model_2", source, line)
    if "g1_winner" not in record and "winner" in record:
        raise fail(source, line, "g1_winner", "missing: this is a single-game line (`winner`), not a pairwise one")
    if "g1_winner" not in record and "score" in record and "model" in record:
        raise fail(source, line, "g1_winner", "missing: this is a single-answer grade (a *_single.jsonl line)")
    for name in ("g1_winner", "g2_winner"):
        if record.get(name) not in FASTCHAT_WINNERS:
            raise fail(source, line, name, f"must be one of {', '.join(FASTCHAT_WINNERS)}, got {record.get(name)!r}")
    judge = record.get("judge")
    if not (isinstance(judge, list) and len(judge) == 2 and all(isinstance(part, str) for part in judge)):
        raise fail(source, line, "judge", f"must be [judge model, prompt name], got {json.dumps(judge)[:60]}")
    turn = record.get("turn", 1)
    if turn not in (1, 2):
        raise fail(source, line, "turn", f"must be 1 or 2, got {turn!r}")
    raws = (text_field(record, "g1_judgment", source, line), text_field(record, "g2_judgment", source, line))
    return _PairLine(record, qid, model_1, model_2, judge[0], judge[1], turn, raws)


def _pair_item(
    pair: _PairLine,
    question: Mapping[str, Any],
    turns: Mapping[str, list[str]],
    references: Mapping[str, Mapping[str, list[str]]],
    human: Mapping[tuple[str, int, str, str], list[str]],
) -> dict[str, Any]:
    """The item a pair line judged: the question's turn, both models' answers (turn 1 too for a turn-2 line), the
    reference a math prompt was shown, and people's votes."""
    turn = pair.turn
    item: dict[str, Any] = {
        "id": f"fastchat-q{pair.qid}-t{turn}-{pair.model_1}-vs-{pair.model_2}",
        "question": question["turns"][turn - 1],
        "a": turns["model_1"][turn - 1],
        "b": turns["model_2"][turn - 1],
        "model_a": pair.model_1,
        "model_b": pair.model_2,
        "question_id": question["question_id"],
        "turn": turn,
        "category": question.get("category"),
    }
    if turn == 2:
        item |= {"question_turn1": question["turns"][0], "a_turn1": turns["model_1"][0], "b_turn1": turns["model_2"][0]}
    reference = references.get(pair.judge_model, {}).get(pair.qid) if pair.reference_guided else None
    if reference is None and pair.reference_guided and isinstance(question.get("reference"), list):
        reference = [str(part) for part in question["reference"]]
    if reference:
        for number, text in enumerate(reference[:turn], start=1):
            item[f"reference_turn{number}"] = text
    votes = _votes_for(human, pair.qid, turn, pair.model_1, pair.model_2)
    if votes:
        item["human_votes"] = votes
        item["human"] = majority(votes)
    return item


def _pair_row(pair: _PairLine, item_id: str, turns: Mapping[str, list[str]], source: str, line: int) -> dict[str, Any]:
    """Both games of a pair line as the judgment row of its item, with the order its prompts prove."""
    record, turn = pair.record, pair.turn
    row: dict[str, Any] = {
        "id": item_id,
        "judge": pair.judge_name,
        "judge_model": pair.judge_model,
        "prompt": pair.prompt,
        "reference_guided": pair.reference_guided,
        "call1": _fastchat_positional(record["g1_winner"], 1),
        "call2": _fastchat_positional(record["g2_winner"], 2),
        "raw1": pair.raws[0],
        "raw2": pair.raws[1],
        "source": where(source, line),
        "tool": {k: v for k, v in record.items() if k not in ("g1_judgment", "g2_judgment")},
    }
    row["named_verdicts"] = named_verdicts(
        [(pair.model_1, pair.model_2, row["call1"]), (pair.model_2, pair.model_1, row["call2"])]
    )
    row |= order_evidence(
        [(record.get("g1_user_prompt"), turns["model_1"][turn - 1], turns["model_2"][turn - 1]),
         (record.get("g2_user_prompt"), turns["model_2"][turn - 1], turns["model_1"][turn - 1])]
    )  # fmt: skip
    other = answers_not_shown(
        [record.get("g1_user_prompt"), record.get("g2_user_prompt")],
        {pair.model_1: turns["model_1"][turn - 1], pair.model_2: turns["model_2"][turn - 1]},
    )
    if other:
        row["answers_not_shown"] = other
    for order, raw in enumerate(pair.raws, start=1):
        if raw == FASTCHAT_ERROR_OUTPUT:
            row[f"error{order}"] = f"FastChat recorded {FASTCHAT_ERROR_OUTPUT} (every API retry failed)"
    return row


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


def fastchat_show_result(rows: Sequence[Mapping[str, Any]], baseline: str | None = None) -> dict[str, Any]:
    """show_result.py --mode pairwise-* on these lines: error games dropped, a tie or a disagreement is a tie.

    The baseline is the model every line shares (pairwise-baseline mode) unless one is given.
    """
    kept = [row["tool"] for row in rows if "error" not in (row["tool"]["g1_winner"], row["tool"]["g2_winner"])]
    outcomes = []
    for line in kept:
        g1, g2 = line["g1_winner"], line["g2_winner"]
        outcome = "tie" if g1 == "tie" or g1 != g2 else ("1" if g1 == "model_1" else "2")
        outcomes.append((line["model_1"], line["model_2"], outcome))
    baseline = baseline or common_model([(line["model_1"], line["model_2"]) for line in (row["tool"] for row in rows)])
    return {
        "lines": len(rows),
        "lines_with_error": len(rows) - len(kept),
        "mode": "pairwise-baseline" if baseline else "pairwise-all",
        "baseline": baseline,
        "models": model_table(outcomes, baseline),
    }


SINGLE_PATTERN = "*_single.jsonl"
PAIR_PATTERN = "*_pair.jsonl"


def _inputs(paths: Sequence[Path]) -> tuple[dict[str, list[Record]], list[Record]]:
    """The pairwise inputs (judgments with their bench's questions, answers, references) and the single grades."""
    pair_paths: list[Path] = []
    single: list[Record] = []
    for path in paths:
        if path.is_dir():
            grades = sorted((path / "model_judgment").glob(SINGLE_PATTERN))
            single += files.records_of(grades)
            if sorted((path / "model_judgment").glob(PAIR_PATTERN)) or not grades:
                pair_paths.append(path)
        elif path.name.endswith("_single.jsonl"):
            single += files.read_records(path)
        else:
            pair_paths.append(path)
    if not pair_paths:
        return {"judgments": [], "questions": [], "answers": [], "references": []}, single
    expected = "model_judgment/*_pair.jsonl or *_single.jsonl (FastChat's judgments)"
    return files.bench_inputs(pair_paths, PAIR_PATTERN, expected, judge_folders=False, references=True), single


def convert(paths: Sequence[Path], options: Options) -> Converted:
    """FastChat bench folders or judgment files (pairwise and single-answer) as judgebias items and judgments."""
    options.refuse("FastChat", "human")
    found, single = _inputs(paths)
    votes = fastchat_human_votes(files.read_records(options.human)) if options.human else None
    if found["judgments"]:
        answers = fastchat_answers(found["answers"])
        references = fastchat_answers(found["references"]) if found["references"] else {}
        converted = convert_fastchat(
            found["judgments"], fastchat_questions(found["questions"]), answers, references, votes
        )
    else:
        converted = Converted("fastchat")
    _name_models(converted)
    converted.single = single_grades(single)
    if converted.single and not converted.judgments:
        converted.notes.append("single-answer grades only: position bias does not apply (one answer per call)")
    return converted


def _name_models(converted: Converted) -> None:
    """Each line's `model`, for the per-model figures: against the baseline every line of its judge model shares
    (pairwise-baseline), the other model; without one (pairwise-all), the pair."""
    pairs: dict[str, list[tuple[str, str]]] = {}
    for row in converted.judgments:
        pairs.setdefault(row["judge_model"], []).append((row["tool"]["model_1"], row["tool"]["model_2"]))
    baselines = {judge_model: common_model(found) for judge_model, found in pairs.items()}
    for row in converted.judgments:
        model_1, model_2 = row["tool"]["model_1"], row["tool"]["model_2"]
        baseline = baselines[row["judge_model"]]
        row["baseline"] = baseline
        row["model"] = model_2 if baseline == model_1 else model_1 if baseline == model_2 else f"{model_1} vs {model_2}"


def single_grades(records: Iterable[Record]) -> list[dict[str, Any]]:
    """Each `*_single.jsonl` line checked: question_id, model, judge [model, prompt], score (-1: none), turn."""
    grades = []
    for source, line, value in records:
        record = record_object(source, line, value)
        qid = key_field(record, "question_id", source, line)
        model = text_field(record, "model", source, line)
        judge = record.get("judge")
        if not (isinstance(judge, list) and len(judge) == 2 and all(isinstance(part, str) for part in judge)):
            raise fail(source, line, "judge", f"must be [judge model, prompt name], got {json.dumps(judge)[:60]}")
        score = record.get("score")
        if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
            raise fail(source, line, "score", f"must be a number (-1 when the judgment had none), got {score!r}")
        turn = record.get("turn", 1)
        if turn not in (1, 2):
            raise fail(source, line, "turn", f"must be 1 or 2, got {turn!r}")
        grades.append({"question_id": qid, "model": model, "judge": judge, "score": float(score), "turn": turn})
    return grades


def single_show_result(grades: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """show_result.py --mode single: per model the mean score of turn 1, of turn 2 and of both, over the grades
    with a score (-1, no score, dropped); sorted by the average, as show_result prints them."""
    kept = [grade for grade in grades if grade["score"] != -1]
    models: dict[str, dict[str, Any]] = {}
    for model in sorted({grade["model"] for grade in kept}):
        mine = [grade for grade in kept if grade["model"] == model]
        entry: dict[str, Any] = {"n": len(mine)}
        for turn in (1, 2):
            scores = [grade["score"] for grade in mine if grade["turn"] == turn]
            entry[f"turn{turn}"] = sum(scores) / len(scores) if scores else None
            entry[f"turn{turn}_n"] = len(scores)
        entry["average"] = sum(grade["score"] for grade in mine) / len(mine)
        models[model] = entry
    return {
        "lines": len(grades),
        "lines_without_score": len(grades) - len(kept),
        "models": dict(sorted(models.items(), key=lambda kv: -kv[1]["average"])),
    }


def tool_figures(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """FastChat's headline for one judge model's pairwise lines: show_result.py --mode pairwise-*."""
    return {"show_result": fastchat_show_result(rows)}


def readings(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """FastChat's extraction ([[A]] tested first) against judgebias's bracket parser."""
    return compare_readings(rows, style="brackets", tie_label="C")


FORMAT = Format("fastchat", "brackets", convert, tool_figures, readings)
