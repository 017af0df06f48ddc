"""AlpacaEval: `results/<model>/<annotator>/annotations.json` read as one recorded call per instruction, with the
order each pair was shown in decided per record, and AlpacaEval's own head-to-head figures beside judgebias's.

The order shown. AlpacaEval's annotators shuffle each pair before the judge sees it and store the preference
turned back to output_1/output_2 (`preference` 1: output_1, 2: output_2, 1.5 or 0: a draw, a soft value in
between for log-probability annotators). Two sources say which output was shown first:

- the record itself: an `*_fn` annotator's `raw_completion` ranks the outputs as "m" (shown first) and "M"
  (shown second), AlpacaEval 1's ranking annotator (alpaca_eval_gpt4) as "model_1" and "model_2"; a
  chain-of-thought annotator's `referenced_models` maps m to the output shown first; a log-probability
  annotator's first-token top log-probabilities of "m" and "M" give the soft preference it stored, 2 - P(m)
  unswitched or 1 + P(m) switched (`logprob_parser`, `is_binarize: false`);
- the tool's seeded rule: `RandomSwitchTwoColumnsProcessor` switches output_1 and output_2 when
  `random.Random("is_switched_outputs" + instruction + "0").choices([False, True])` is True, with seed 0, the
  seed every BaseAnnotator passes to its annotators (annotators/base.py, `seed: int = 0`).

The record's evidence is used where it decides; the rule elsewhere; where both exist they are compared, and the
agreement is reported (`order_*`). Item a = the answer shown first, so the one call is call1 and position
consistency cannot be measured: the position figure of such a run is how often the first-shown answer won.
"""

from __future__ import annotations

import ast
import json
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from judgebias.audit import files
from judgebias.audit.formats.common import (
    Converted,
    Format,
    Items,
    Options,
    Record,
    Seen,
    digest,
    fail,
    mark_repeat,
    named_verdicts,
    record_object,
    slug,
    text_field,
    unordered,
    where,
)
from judgebias.core.errors import UserError
from judgebias.figures.stats import binomial_two_sided_p, fit_logistic, percentile_interval

SWITCH_COLUMN = "is_switched_outputs"  # RandomSwitchTwoColumnsProcessor's _switch_column for pairwise annotators
SWITCH_SEED = 0  # the seed BaseAnnotator passes to every annotator's processors
FIRST, SECOND = "m", "M"  # the names AlpacaEval's prompts give the output shown first and the one shown second
V1_NAMES = ("model_1", "model_2")  # the same names in AlpacaEval 1's ranking prompt (alpaca_eval_gpt4)
LOGPROB_TOLERANCE = 1e-6  # a stored soft preference matches a recomputed one to this (they are written rounded)


def switched_by_rule(instruction: str) -> bool:
    """Whether AlpacaEval's seeded coin showed output_2 first for this instruction."""
    return bool(random.Random(SWITCH_COLUMN + instruction + str(SWITCH_SEED)).choices([False, True], k=1)[0])


def _completion(raw: Any) -> Any:
    """raw_completion as a value: kept as an object, or as the Python repr AlpacaEval writes for log-probability
    annotators (single quotes), read without evaluating anything; None when it is neither."""
    if isinstance(raw, dict | list):
        return raw
    if not isinstance(raw, str) or not raw.strip():
        return None
    for read in (json.loads, ast.literal_eval):
        try:
            return read(raw)
        except (ValueError, SyntaxError, RecursionError, MemoryError):
            continue
    return None


def switched_by_record(raw: Any, preference: float | None, referenced: Any = None) -> bool | None:
    """Whether the record proves output_2 was shown first: from an fn annotator's ranking or a log-probability
    annotator's first token, checked against the stored preference, or from the `referenced_models` map a
    chain-of-thought annotator stores (m -> the output shown first); None when it proves nothing, or when the
    ranking and the map disagree."""
    if preference is None or preference == 1.5:
        return None
    by_map = _switched_by_map(referenced) if preference in (1.0, 2.0) else None
    by_ranking = _switched_by_ranking(_completion(raw), preference)
    if by_map is not None and by_ranking is not None and by_map != by_ranking:
        return None
    return by_ranking if by_ranking is not None else by_map


def _switched_by_map(referenced: Any) -> bool | None:
    """ChainOfThoughtProcessor's `referenced_models` ({"m": "output_2", "M": "output_1"}: output_2 was m, shown
    first); it is built from an integer preference, so only a decided record's map is read."""
    if not isinstance(referenced, dict) or referenced.get(FIRST) not in ("output_1", "output_2"):
        return None
    if {referenced.get(FIRST), referenced.get(SECOND)} != {"output_1", "output_2"}:
        return None
    return bool(referenced[FIRST] == "output_2")


def _switched_by_ranking(value: Any, preference: float) -> bool | None:
    """The switch a ranking completion or a first token's log-probabilities prove, with the stored preference."""
    first_won = _first_ranked_first(value)
    if first_won is not None:
        output_2_won = preference > 1.5
        return bool(first_won == output_2_won)  # the first-shown output won, and it was output_2: switched
    p_first = _first_token_share(value)
    if p_first is None or abs(p_first - 0.5) < LOGPROB_TOLERANCE:
        return None
    unswitched, switched = 2.0 - p_first, 1.0 + p_first
    if abs(preference - switched) <= LOGPROB_TOLERANCE < abs(preference - unswitched):
        return True
    if abs(preference - unswitched) <= LOGPROB_TOLERANCE < abs(preference - switched):
        return False
    return None


def _first_ranked_first(value: Any) -> bool | None:
    """Whether a ranking completion puts the output shown first at rank 1: an `*_fn` annotator's
    `{"ordered_models": [...]}` naming m and M, or AlpacaEval 1's `ranking_parser` list naming model_1 (its
    prompt's first output) and model_2; None when the completion is no such ranking."""
    ranked = value.get("ordered_models") if isinstance(value, dict) else value
    if not isinstance(ranked, list):
        return None
    best = [entry.get("model") for entry in ranked if isinstance(entry, dict) and entry.get("rank") == 1]
    if len(best) != 1:
        return None
    for first, second in ((FIRST, SECOND), V1_NAMES):
        if best[0] in (first, second):
            return bool(best[0] == first)
    return None


def _first_token_share(value: Any) -> float | None:
    """P(m) / (P(m) + P(M)) from the first generated token's top log-probabilities, as logprob_parser reads it."""
    choices = value if isinstance(value, list) else [value]
    first = choices[0] if choices and isinstance(choices[0], dict) else {}
    logprobs = first.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list) or not content or not isinstance(content[0], dict):
        return None
    tops = content[0].get("top_logprobs")
    if not isinstance(tops, list):
        return None
    by_token = {t.get("token"): t.get("logprob") for t in tops if isinstance(t, dict)}
    shares = [math.exp(v) if isinstance(v, int | float) else 0.0 for v in (by_token.get(FIRST), by_token.get(SECOND))]
    if sum(shares) <= 0:
        return None
    return shares[0] / sum(shares)


def _preference(value: Any, source: str, line: int) -> float | None:
    """AlpacaEval's preference: 1 (output_1), 2 (output_2), 1.5 or 0 (a draw), a soft value in [1, 2], or null."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise fail(source, line, "preference", f"must be a number in [1, 2], 0, or null, got {json.dumps(value)[:40]}")
    number = float(value)
    if number == 0.0:
        return 1.5
    if not 1.0 <= number <= 2.0:
        raise fail(source, line, "preference", f"must be in [1, 2] (or 0 for a draw), got {value}")
    return number


def convert_alpacaeval(annotations: Iterable[Record]) -> Converted:
    """AlpacaEval `annotations.json` entries as items (answer shown first = a) and their one recorded call."""
    out = Converted("alpacaeval")
    items, seen = Items(), Seen()
    named: dict[str, tuple[set[str], set[str]]] = {}  # file -> the annotators and models its records name
    shown_texts: dict[tuple[str, Any], set[str]] = {}  # (annotator, pair) -> the outputs it was judged on
    for source, line, value in annotations:
        record = record_object(source, line, value)
        instruction = text_field(record, "instruction", source, line)
        outputs = [text_field(record, name, source, line) for name in ("output_1", "output_2")]
        generators = [text_field(record, name, source, line) for name in ("generator_1", "generator_2")]
        annotator = record.get("annotator")
        if not isinstance(annotator, str) or not annotator:
            raise fail(source, line, "annotator", "missing: AlpacaEval annotations name their annotator")
        annotators, models = named.setdefault(source, (set(), set()))
        annotators.add(annotator)
        models.add(generators[1])
        preference = _preference(record.get("preference"), source, line)
        by_rule = switched_by_rule(instruction)
        by_record = switched_by_record(record.get("raw_completion"), preference, record.get("referenced_models"))
        switched = by_rule if by_record is None else by_record
        first, second = (1, 0) if switched else (0, 1)
        item_id = f"alpacaeval-{slug(generators[1])}-vs-{slug(generators[0])}-{digest(instruction)}"
        pair = (digest(instruction), unordered(*generators))
        first_seen = seen.earlier(annotator, item_id, source, line, pair)
        if shown_texts.setdefault((annotator, pair), set(outputs)) != set(outputs):
            raise fail(
                source,
                line,
                "output_1",
                f"annotator {annotator!r} judged this instruction for {generators[1]!r} against {generators[0]!r} "
                f"before (at {first_seen}) on other outputs: keep one of the two entries, or give the re-generated "
                "outputs their own generator name",
            )
        item = {
            "id": item_id,
            "question": instruction,
            "a": outputs[first],
            "b": outputs[second],
            "model_a": generators[first],
            "model_b": generators[second],
            "shown_first": f"output_{first + 1}",
            "dataset": record.get("dataset"),
        }
        if first_seen is None:
            items.add(item)
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
            "model": generators[1],
            "baseline": generators[0],
            "call1": call,
            "call2": None,
            "raw1": raw,  # AlpacaEval keeps its parsed preference; written here as the bracket reply it stands for
            "raw2": None,
            "preference": preference,
            "switched": switched,
            "order_source": "rule" if by_record is None else "record",
            "order_checked": by_record is not None,
            "source": where(source, line),
            "tool": dict(record),
        }
        row["named_verdicts"] = named_verdicts([(generators[first], generators[second], call)])
        if first_seen is not None:  # a re-run appended: get_winrate counts every annotation
            mark_repeat(row, first_seen, "get_winrate")
        if by_record is not None:
            row["order_agrees"] = by_record == by_rule
        if preference is None:
            row["error1"] = "AlpacaEval recorded no preference (null)"
        out.judgments.append(row)
    out.items = list(items.rows.values())
    out.notes += [
        note for source, (annotators, models) in named.items() for note in _folder_names(source, annotators, models)
    ]
    return out


def _folder_names(source: str, annotators: set[str], models: set[str]) -> list[str]:
    """Where a file kept as AlpacaEval keeps them (results/<model>/<annotator>/annotations.json) names another
    annotator or model in its folders than its records do: the leaderboard lists the folder's names, the figures
    here the records'."""
    path = Path(source)
    if path.name != "annotations.json" or path.parent.parent.parent.name != "results":
        return []
    notes = []
    folder_annotator, folder_model = path.parent.name, path.parent.parent.name
    if annotators != {folder_annotator}:
        notes.append(
            f"{source}: its folder names annotator {folder_annotator}, its records {', '.join(sorted(annotators))}: "
            "the figures here are under the records' name"
        )
    if models != {folder_model}:
        notes.append(
            f"{source}: its folder names model {folder_model}, its records' generator_2 {', '.join(sorted(models))}: "
            "the figures here are under the records' name"
        )
    return notes


def leaderboard(rows: Sequence[Mapping[str, Any]], *, resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """AlpacaEval's head-to-head figures per model (generator_2), as metrics/winrate.py computes them: win_rate =
    mean(preference - 1) in %, its standard error, wins, base wins and draws; beside them, how often the answer
    shown first won (with its 95% bootstrap interval and exact sign test), and the minimal length-controlled GLM.

    The leaderboard's own length-controlled win rate (`length_controlled_v1`) adds a per-instruction difficulty
    fitted on every leaderboard model (instruction_difficulty.csv on AlpacaEval's dataset hub, in none of these
    files) and a regularisation towards two gamed baselines; it is not computed here. What is computed is
    AlpacaEval's own `length_controlled_minimal` formula (tanh of the standardised length difference and an
    intercept), named `length_controlled_winrate_minimal` because it is not the leaderboard's figure.
    """
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault((str(row["model"]), str(row["baseline"])), []).append(row)
    models = {}
    for (model, baseline), members in sorted(groups.items()):
        usable = [row for row in members if row["preference"] is not None]
        prefs = np.array([row["preference"] - 1.0 for row in usable])
        n = prefs.size
        entry: dict[str, Any] = {
            "baseline": baseline,
            "n_total": n,
            "n_missing": len(members) - n,
            "n_wins": int((prefs > 0.5).sum()),
            "n_wins_base": int((prefs < 0.5).sum()),
            "n_draws": int((prefs == 0.5).sum()),
            "win_rate": float(prefs.mean() * 100) if n else None,
            "standard_error": float(prefs.std(ddof=1) / math.sqrt(n) * 100) if n > 1 else None,
        }
        entry |= _length_controlled_minimal(usable, prefs)
        entry |= first_shown(usable, resamples=resamples, seed=seed)
        models[model] = entry
    return {"lines": len(rows), "models": models}


def first_shown(rows: Sequence[Mapping[str, Any]], *, resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """How often the decisive preference went to the answer shown first: the position figure of a one-order run.
    AlpacaEval shuffles each pair, so a share away from 1/2 is a position effect (the sign test is exact); the
    interval resamples the decisive records."""
    decisive = [row for row in rows if row["preference"] is not None and row["preference"] != 1.5]
    won = np.array([(row["preference"] > 1.5) == row["switched"] for row in decisive], dtype=np.float64)
    n = int(won.size)
    if not n:
        return {"first_shown_wins": None, "first_shown_n": 0, "first_shown_p": None, "first_shown_ci": None}
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n, size=(resamples, n)) if resamples else np.zeros((0, n), dtype=np.int64)
    return {
        "first_shown_wins": float(won.mean()),
        "first_shown_n": n,
        "first_shown_p": binomial_two_sided_p(int(won.sum()), n),
        "first_shown_ci": percentile_interval(won[draws].mean(axis=1)) if resamples else None,
    }


def _length_controlled_minimal(rows: Sequence[Mapping[str, Any]], prefs: np.ndarray) -> dict[str, Any]:
    """AlpacaEval's `length_controlled_minimal` GLM: logit P(output_2 preferred) = b0 + b1 * tanh(delta / sd(delta)),
    delta = len(output_1) - len(output_2) in characters; the win rate at no length difference is sigmoid(b0)."""
    if prefs.size < 3:
        return {"length_controlled_winrate_minimal": None, "length_coefficient": None}
    delta = np.array([len(row["tool"]["output_1"]) - len(row["tool"]["output_2"]) for row in rows], dtype=np.float64)
    spread = float(delta.std(ddof=1))
    x = np.tanh(delta / spread) if spread > 0 else np.zeros_like(delta)
    b0, b1 = fit_logistic(x, prefs, ridge=1e-8)
    return {"length_controlled_winrate_minimal": 100.0 / (1.0 + math.exp(-b0)), "length_coefficient": b1}


LC_NOTE = (
    "length_controlled_winrate_minimal is AlpacaEval's minimal GLM (length only), not the leaderboard's length-"
    "controlled win rate, which adds a per-instruction difficulty fitted on all its models (not in these files): on "
    "AlpacaEval's published files the two differ by 8 to 28 points (text_davinci_001: 17.4 by this GLM, 9.0 on the "
    "leaderboard)"
)


def convert(paths: Sequence[Path], options: Options) -> Converted:
    """The entries of AlpacaEval annotation files, or of every annotations.json under a folder."""
    options.refuse("AlpacaEval")
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            under = sorted(path.rglob("annotations.json"))
            if not under:
                raise UserError(f"{path}: no annotations.json under this folder")
            found += under
        else:
            found.append(path)
    converted = convert_alpacaeval(files.records_of(found))
    converted.notes.append(LC_NOTE)
    return converted


def tool_figures(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """AlpacaEval's head-to-head figures for one annotator's lines."""
    return {"leaderboard": leaderboard(rows)}


def readings(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """AlpacaEval stores its parsed preference, not a judgment text to read again."""
    return {"note": "AlpacaEval stores its parsed preference, not a judgment text to read again"}


FORMAT = Format("alpacaeval", "brackets", convert, tool_figures, readings, one_order=True, per_model=True)
