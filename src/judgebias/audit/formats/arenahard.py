"""Arena-Hard-Auto: `model_judgment/<judge>/<model>.jsonl` judgments of every model against a baseline, in both
of its published layouts, replayed as judgebias runs, with the tool's own score beside them.

- v0.1 (`data/arena-hard-v0.1/`, every public judgment set found): lines keyed by `question_id`, with `model`,
  `judge` and `games` (each `{user_prompt, judgment, score}`), no baseline field (show_result.py's
  `--baseline`, gpt-4-0314 by default); `question.jsonl` lines `{question_id, category, cluster, turns}`; answers
  `model_answer/<model>.jsonl` as `{question_id, model_id, choices: [{turns: [{content}]}]}`.
- v2 (`data/arena-hard-v2.0/`): lines keyed by `uid`, with `baseline`, and games whose judgment may be
  `{answer: ...}`; `question.jsonl` lines `{uid, category, prompt}`; answers `{uid, model, messages}`.

The frame (gen_judgment.py of both): game 1 (`games[0]`) shows the baseline as Assistant A, game 2 the model.
Item a = the model, b = the baseline: call1 = `games[1]`, call2 = `games[0]`. Each game's recorded prompt holds
both answers, so the record proves the order it was shown in (and, in v0.1, which model was the baseline).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from judgebias.audit import files
from judgebias.audit.formats.common import (
    AnswerOwners,
    Converted,
    Format,
    Items,
    Options,
    Questions,
    Record,
    Seen,
    answers_not_shown,
    compare_readings,
    counted_by_tool,
    fail,
    key_field,
    mark_repeat,
    named_verdicts,
    order_evidence,
    record_object,
    shown_first,
    text_field,
    where,
)

DEFAULT_BASELINE = "gpt-4-0314"  # show_result.py's --baseline default for arena-hard-v0.1
ARENAHARD_WEIGHT = 3  # show_result.py's weight / multiplier: a strong verdict counts three times
_SCORE_A = {"A>B": 1.0, "A>>B": 1.0, "A=B": 0.5, "A<<B": 0.0, "A<B": 0.0}  # each label's score for Assistant A
_SCORE_A |= {"B>A": 0.0, "B>>A": 0.0, "B=A": 0.5, "B<<A": 1.0, "B<A": 1.0}
_STRONG = frozenset({"A>>B", "B>>A", "A<<B", "B<<A"})


ARENAHARD_LABELS = ("A>>B", "A>B", "A=B", "B>A", "B>>A", "A<<B", "A<B", "B=A", "B<<A", "B<A")


ARENAHARD_PATTERNS = (r"\[\[([AB<>=]+)\]\]", r"\[([AB<>=]+)\]")  # the regex_patterns of its shipped configs


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


def _game_text(game: Mapping[str, Any], source: str, line: int, name: str) -> str:
    judgment = game.get("judgment")
    text = judgment.get("answer") if isinstance(judgment, dict) else judgment
    if not isinstance(text, str):
        raise fail(source, line, f"{name}.judgment", "must be a string or an object with an 'answer' string")
    return text


def _answer_text(record: Mapping[str, Any], source: str, line: int) -> str:
    """An answer's text in either layout: v2 `messages[-1].content(.answer)`, v0.1 `choices[0].turns[0].content`."""
    if "messages" in record:
        messages = record.get("messages")
        last = messages[-1] if isinstance(messages, list) and messages else None
        content = last.get("content") if isinstance(last, dict) else None
        answer = content.get("answer") if isinstance(content, dict) else content
        if not isinstance(answer, str):
            raise fail(source, line, "messages", "the last message needs content.answer (or content) as a string")
        return answer
    choices = record.get("choices")
    turns = choices[0].get("turns") if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
    first = turns[0] if isinstance(turns, list) and turns else None
    answer = first.get("content") if isinstance(first, dict) else first
    if not isinstance(answer, str):
        raise fail(source, line, "choices", "needs choices[0].turns[0].content as a string (or messages, in v2)")
    return answer


def arenahard_answers(records: Iterable[Record]) -> dict[str, dict[str, str]]:
    """model -> question key -> the answer text, from `model_answer/<model>.jsonl` lines of either layout (the model
    named by `model` (v2) or `model_id` (v0.1), else by the file)."""
    answers: dict[str, dict[str, str]] = {}
    for source, line, value in records:
        record = record_object(source, line, value)
        key = key_field(record, "uid" if "uid" in record else "question_id", source, line)
        named = record.get("model", record.get("model_id"))
        model = named if isinstance(named, str) and named else source.rsplit("/", 1)[-1].removesuffix(".jsonl")
        answers.setdefault(model, {})[key] = _answer_text(record, source, line)
    return answers


def arenahard_questions(records: Iterable[Record]) -> dict[str, dict[str, Any]]:
    """question key -> the question line with its `prompt`, from `question.jsonl` of either layout."""
    questions = Questions()
    for source, line, value in records:
        record = record_object(source, line, value)
        if "uid" in record:
            key = key_field(record, "uid", source, line)
            prompt = text_field(record, "prompt", source, line)
            questions.add(key, record, prompt, source, line, "prompt")
            continue
        key = key_field(record, "question_id", source, line)
        turns = record.get("turns")
        first = turns[0] if isinstance(turns, list) and turns else None
        content = first.get("content") if isinstance(first, dict) else None
        if not isinstance(content, str):
            raise fail(source, line, "turns", "needs turns[0].content as a string (or uid and prompt, in v2)")
        questions.add(key, record | {"prompt": content}, content, source, line, "turns")
    return questions.rows


def _baseline_of(
    record: Mapping[str, Any], key: str, model: str, answers: Mapping[str, Mapping[str, str]], baseline: str | None
) -> str:
    """The baseline of a line: its own field (v2); else the model whose answer game 1 shows as Assistant A (the
    record proves it); else the default. None of them answered: said with the fix."""
    if isinstance(record.get("baseline"), str):
        return str(record["baseline"])
    if baseline is not None:
        return baseline
    games = record.get("games")
    prompt = games[0].get("user_prompt") if isinstance(games, list) and games and isinstance(games[0], dict) else None
    mine = answers.get(model, {}).get(key, "")
    for other, theirs in answers.items():
        if other != model and key in theirs and shown_first(prompt, theirs[key], mine):
            return other
    return DEFAULT_BASELINE


def convert_arenahard(
    judgments: Iterable[Record],
    questions: Mapping[str, dict[str, Any]],
    answers: Mapping[str, Mapping[str, str]],
    baseline: str | None = None,
) -> Converted:
    """`model_judgment/<judge>/<model>.jsonl` lines (v0.1 or v2) as items (model vs baseline) and both games."""
    out = Converted("arenahard")
    items, seen, owners = Items(), Seen(), AnswerOwners(answers)
    for source, line, value in judgments:
        record = record_object(source, line, value)
        version = "v2" if "uid" in record else "v0.1"
        key = key_field(record, "uid" if version == "v2" else "question_id", source, line)
        model, judge = text_field(record, "model", source, line), text_field(record, "judge", source, line)
        games = _games(record, source, line)
        if key not in questions:
            raise fail(
                source, line, "uid" if version == "v2" else "question_id", f"question {key} is not in question.jsonl"
            )
        against = _baseline_of(record, key, model, answers, baseline)
        for name, who in (("model", model), ("baseline", against)):
            if key not in answers.get(who, {}):
                hint = "" if name == "model" or "baseline" in record else " (name the baseline with --baseline)"
                raise fail(source, line, name, f"no answer of {who!r} to question {key} in model_answer/{hint}")
        item_id = f"arenahard-{key}-{model}-vs-{against}"
        first = seen.earlier(judge, item_id, source, line)
        question = questions[key]
        item = {
            "id": item_id,
            "question": question["prompt"],
            "a": answers[model][key],
            "b": answers[against][key],
            "model_a": model,
            "model_b": against,
            "uid" if version == "v2" else "question_id": key,
            "category": question.get("category", record.get("category")),
        } | {k: v for k, v in question.items() if k not in ("uid", "question_id", "prompt", "category", "turns")}
        shown = (answers[model][key], answers[against][key])
        row = _game_row(record, item_id, version, (model, against, judge), games, shown, where(source, line))
        if "answers_not_shown" in row:
            row["shown_instead"] = owners.owners(games.prompts, row["answers_not_shown"])
        if first is None:
            items.add(item)
        elif "left_out" not in row:  # a re-run appended to the file: show_result.py counts every line
            mark_repeat(row, first, "show_result.py")
        out.judgments.append(row)
    out.items = list(items.rows.values())
    versions = sorted({row["version"] for row in out.judgments})
    if versions:
        out.notes.append(f"Arena-Hard-Auto layout: {', '.join(versions)}")
    left_out = sum(not counted_by_tool(row) for row in out.judgments)
    if left_out:
        out.notes.append(
            f"{left_out} lines judge a model against itself or the judge's own answers: flagged (left_out) and kept "
            "out of the pooled figures"
        )
    return out


class _Games(NamedTuple):
    """A line's two games as recorded, and each game's judgment text, verdict label and prompt."""

    recorded: list[Any]
    texts: list[str | None]
    labels: list[str | None]
    prompts: list[Any]


def _games(record: Mapping[str, Any], source: str, line: int) -> _Games:
    """A line's two games (baseline shown first, then the model), each game's judgment text, verdict label and
    prompt; a failed game (null, as gen_judgment.py stores it) is None in each."""
    games = record.get("games")
    if not isinstance(games, list) or len(games) != 2:
        raise fail(source, line, "games", "must be a list of two games (baseline shown first, then the model)")
    texts: list[str | None] = []
    labels: list[str | None] = []
    prompts: list[Any] = []
    for index, game in enumerate(games):
        name = f"games[{index}]"
        if game is None:  # the judge call failed: gen_judgment.py stores null
            texts.append(None)
            labels.append(None)
            prompts.append(None)
            continue
        if not isinstance(game, dict):
            raise fail(source, line, name, f"must be an object or null, got {type(game).__name__}")
        texts.append(_game_text(game, source, line, name))
        score = game.get("score")
        if score is not None and not isinstance(score, str):
            raise fail(source, line, f"{name}.score", f"must be a verdict label or null, got {json.dumps(score)}")
        labels.append(score)
        prompts.append(game.get("user_prompt"))
    return _Games(games, texts, labels, prompts)


def _game_row(
    record: Mapping[str, Any],
    item_id: str,
    version: str,
    who: tuple[str, str, str],
    games: _Games,
    shown: tuple[str, str],
    source: str,
) -> dict[str, Any]:
    """Both games of a line as the judgment row of its item (the model is a), with the order its prompts prove
    and the reason a line is kept out of the pooled figures."""
    (model, against, judge), (model_answer, baseline_answer) = who, shown
    labels, texts, prompts = games.labels, games.texts, games.prompts
    row: dict[str, Any] = {
        "id": item_id,
        "judge": judge,
        "judge_model": judge,
        "model": model,
        "baseline": against,
        "version": version,
        "call1": arenahard_side(labels[1]),  # games[1]: the model (a) shown first
        "call2": arenahard_side(labels[0]),  # games[0]: the baseline (b) shown first
        "score1": labels[1],
        "score2": labels[0],
        "raw1": texts[1],
        "raw2": texts[0],
        "source": source,
        "tool": {k: v for k, v in record.items() if k != "games"} | {"baseline": against, "games": games.recorded},
    }
    row |= order_evidence([(prompts[0], baseline_answer, model_answer), (prompts[1], model_answer, baseline_answer)])
    other = answers_not_shown(prompts, {model: model_answer, against: baseline_answer} if model != against else {})
    if other:
        row["answers_not_shown"] = other
    if model == against:
        row["left_out"] = "the baseline judged against itself"
    elif model == judge:
        row["left_out"] = "the judge's own answers (show_result.py leaves the judge's model out)"
    row["named_verdicts"] = named_verdicts([(against, model, row["call2"]), (model, against, row["call1"])])
    for order, game_index in ((1, 1), (2, 0)):
        if games.recorded[game_index] is None:
            row[f"error{order}"] = f"Arena-Hard recorded no game {game_index + 1} (the judge call failed)"
    return row


def show_result(
    rows: Sequence[Mapping[str, Any]], *, weight: int = ARENAHARD_WEIGHT, resamples: int = 100, seed: int = 0
) -> dict[str, Any]:
    """show_result.py's score per model against the baseline, the way the file's version computes it.

    Both versions score every game for the model (A>B 1, A=B 0.5, ...; the baseline's game mirrored) and count a
    strong verdict (`>>`) `weight` times. v2 drops a line with a null game or score and reports the mean with a
    bootstrap 90% interval (resampling each model's battles). v0.1 drops only the game without a score, fits
    Bradley-Terry ratings to the battles and reports the predicted win rate against the baseline, with a 95%
    bootstrap interval; with every battle against the baseline (a star), the fitted win rate is the battles' mean
    score (each model's likelihood depends on its own battles only), which is what is computed here.
    Lines left out (a model against itself, the judge's own answers) are left out, as show_result.py leaves them;
    a repeat of a line is counted, as show_result.py counts every line.
    """
    by_model: dict[str, list[float]] = {}
    plain: dict[str, list[float]] = {}
    dropped, unmapped = 0, []
    labels: dict[str, int] = {}
    kept_rows = [row for row in rows if counted_by_tool(row)]
    versions = sorted({row.get("version", "v2") for row in kept_rows})
    for row in kept_rows:
        games = [(row["score1"], False, row.get("error1")), (row["score2"], True, row.get("error2"))]
        if row.get("version", "v2") == "v2" and any(label is None or error for label, _, error in games):
            dropped += 1  # v2 drops a line with a null game or a null score
            continue
        usable = [(label, flip) for label, flip, error in games if label is not None and not error]
        dropped += len(usable) < 2
        if any(label not in _SCORE_A for label, _ in usable):
            unmapped.append({"id": row["id"], "labels": [row["score2"], row["score1"]]})
            continue  # v2's show_result.py would stop with a KeyError on this label (v0.1 gives it weight 0)
        scores, ones = by_model.setdefault(row["model"], []), plain.setdefault(row["model"], [])
        for label, flip in usable:
            labels[label] = labels.get(label, 0) + 1
            value = 1.0 - _SCORE_A[label] if flip else _SCORE_A[label]
            scores.extend([value] * (weight if label in _STRONG else 1))
            ones.append(value)
    rng = np.random.default_rng(seed)
    level = 0.95 if versions == ["v0.1"] else 0.90
    models = {}
    for model, scores in sorted(by_model.items()):
        values = np.array(scores)
        boots = np.array([rng.choice(values, size=values.size).mean() for _ in range(resamples)])
        low, high = np.quantile(boots, [(1 - level) / 2, (1 + level) / 2]) if resamples else (math.nan, math.nan)
        models[model] = {
            "score": float(values.mean()),
            "ci": [float(low), float(high)],
            "ci_level": level,
            "battles": int(values.size),
            "score_weight_1": float(np.mean(plain[model])),
        }
    strong = sum(count for label, count in labels.items() if label in _STRONG)
    baselines = sorted({str(row["baseline"]) for row in kept_rows})
    return {
        "lines": len(rows),
        "versions": versions,
        "baseline": baselines[0] if len(baselines) == 1 else None,
        "lines_left_out": len(rows) - len(kept_rows),
        "lines_dropped_null": dropped,
        "lines_unmapped_label": unmapped,
        "weight": weight,
        "labels": dict(sorted(labels.items())),
        "strong_verdicts": strong,
        "strong_share": strong / sum(labels.values()) if labels else None,
        "models": models,
    }


def convert(paths: Sequence[Path], options: Options) -> Converted:
    """Arena-Hard-Auto bench folders, judge folders or judgment files (v0.1 or v2) as items and judgments."""
    options.refuse("Arena-Hard", "baseline")
    found = files.bench_inputs(
        paths, "*/*.jsonl", "model_judgment/<judge>/<model>.jsonl", judge_folders=True, references=False
    )
    return convert_arenahard(
        found["judgments"],
        arenahard_questions(found["questions"]),
        arenahard_answers(found["answers"]),
        options.baseline,
    )


def tool_figures(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Arena-Hard's headline for one judge's lines: show_result.py's score per model."""
    return {"show_result": show_result(rows)}


def readings(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Arena-Hard's extraction (the last label found) against judgebias's five-point parser."""
    return compare_readings(rows, style="arenahard", tie_label="A=B", tool_labels=True)


FORMAT = Format("arenahard", "arenahard", convert, tool_figures, readings)
