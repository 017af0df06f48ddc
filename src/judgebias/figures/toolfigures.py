"""What FastChat, Arena-Hard-Auto and AlpacaEval themselves report for a judge run, computed as each tool computes
it, and the side-by-side reading of the raw judgments (the tool's extraction against judgebias's parser). Pure.

The rows are the `judgments.jsonl` lines `core.toolformats` writes (the tool's own fields kept under `tool`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from judgebias.core.parsing import parse_reply
from judgebias.figures.stats import binomial_two_sided_p, fit_logistic

ARENAHARD_WEIGHT = 3  # show_result.py's load_judgments(weight=3): a strong verdict counts three times
_ARENAHARD_SCORE = {"A>B": 1.0, "A>>B": 1.0, "A=B": 0.5, "A<<B": 0.0, "A<B": 0.0}
_ARENAHARD_SCORE |= {"B>A": 0.0, "B>>A": 0.0, "B=A": 0.5, "B<<A": 1.0, "B<A": 1.0}
_STRONG = frozenset({"A>>B", "B>>A", "A<<B", "B<<A"})
EXCERPT = 300  # characters of a disagreeing judgment's end shown in the list (where the verdict usually is)


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


def judgebias_table(verdicts: Iterable[Mapping[str, Any]], baseline: str | None = None) -> dict[str, Any]:
    """The same table from judgebias's verdicts (both orders must agree; an error item is left out, as FastChat
    leaves out an error game)."""
    outcomes = [
        (v.get("model_a") or "a", v.get("model_b") or "b", v["verdict"]) for v in verdicts if v["verdict"] != "error"
    ]
    baseline = baseline or common_model([(m1, m2) for m1, m2, _ in outcomes])
    return {"baseline": baseline, "models": model_table(outcomes, baseline)}


def arenahard_show_result(
    rows: Sequence[Mapping[str, Any]], *, weight: int = ARENAHARD_WEIGHT, resamples: int = 100, seed: int = 0
) -> dict[str, Any]:
    """show_result.py's score per model against the baseline (a strong verdict counted `weight` times), its
    bootstrap 90% interval, the verdict counts (strong ones apart) and the score with weight 1 for comparison."""
    by_model: dict[str, list[float]] = {}
    plain: dict[str, list[float]] = {}
    dropped, unmapped = 0, []
    labels: dict[str, int] = {}
    for row in rows:
        model_label, baseline_label = row["score1"], row["score2"]  # games[1] (model first), games[0]
        if model_label is None or baseline_label is None or row.get("error1") or row.get("error2"):
            dropped += 1  # show_result.py drops a line with a null game or a null score
            continue
        if model_label not in _ARENAHARD_SCORE or baseline_label not in _ARENAHARD_SCORE:
            unmapped.append({"id": row["id"], "labels": [baseline_label, model_label]})
            continue  # show_result.py would stop with a KeyError on this label
        for label in (model_label, baseline_label):
            labels[label] = labels.get(label, 0) + 1
        scores, ones = by_model.setdefault(row["tool"]["model"], []), plain.setdefault(row["tool"]["model"], [])
        for label, flip in ((model_label, False), (baseline_label, True)):
            value = _ARENAHARD_SCORE[label]
            value = 1.0 - value if flip else value
            scores.extend([value] * (weight if label in _STRONG else 1))
            ones.append(value)
    rng = np.random.default_rng(seed)
    models = {}
    for model, scores in sorted(by_model.items()):
        values = np.array(scores)
        boots = np.array([rng.choice(values, size=values.size).mean() for _ in range(resamples)])
        low, high = np.quantile(boots, [0.05, 0.95]) if resamples else (math.nan, math.nan)
        models[model] = {
            "score": float(values.mean()),
            "ci90": [float(low), float(high)],
            "battles": int(values.size),
            "score_weight_1": float(np.mean(plain[model])),
        }
    strong = sum(count for label, count in labels.items() if label in _STRONG)
    baselines = sorted({str(row["tool"]["baseline"]) for row in rows})
    return {
        "lines": len(rows),
        "baseline": baselines[0] if len(baselines) == 1 else None,
        "lines_dropped_null": dropped,
        "lines_unmapped_label": unmapped,
        "weight": weight,
        "labels": dict(sorted(labels.items())),
        "strong_verdicts": strong,
        "strong_share": strong / sum(labels.values()) if labels else None,
        "models": models,
    }


def alpacaeval_leaderboard(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """AlpacaEval's head-to-head figures per model (generator_2): win_rate = mean(preference - 1) in %, its
    standard error, wins, base wins and draws; and the length-controlled win rate of the `length_controlled_minimal`
    GLM, fitted here by unpenalised maximum likelihood (see docs/audit.md for how it differs from the leaderboard)."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for row in rows:
        tool = row["tool"]
        groups.setdefault((tool["generator_2"], tool["generator_1"]), []).append(row)
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
        entry |= _length_controlled(usable, prefs)
        entry |= _first_shown(usable)
        models[model] = entry
    return {"lines": len(rows), "models": models}


def _first_shown(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """How often the decisive preference went to the answer shown first. AlpacaEval randomises the order per
    instruction, so a share away from 1/2 is a position effect (the sign test is exact)."""
    decisive = [row for row in rows if row["preference"] != 1.5]
    first = sum((row["preference"] > 1.5) == row["switched"] for row in decisive)
    n = len(decisive)
    return {
        "first_shown_wins": first / n if n else None,
        "first_shown_n": n,
        "first_shown_p": binomial_two_sided_p(first, n) if n else None,
    }


def _length_controlled(rows: Sequence[Mapping[str, Any]], prefs: np.ndarray) -> dict[str, Any]:
    """logit P(output_2 preferred) = b0 + b1 * tanh(delta_len / sd(delta_len)), delta = len_1 - len_2 in
    characters; the length-controlled win rate is the prediction at no length difference, sigmoid(b0)."""
    if prefs.size < 3:
        return {"length_controlled_winrate": None, "length_coefficient": None}
    delta = np.array([len(row["tool"]["output_1"]) - len(row["tool"]["output_2"]) for row in rows], dtype=np.float64)
    spread = float(delta.std(ddof=1))
    x = np.tanh(delta / spread) if spread > 0 else np.zeros_like(delta)
    b0, b1 = fit_logistic(x, prefs, ridge=1e-8)
    return {"length_controlled_winrate": 100.0 / (1.0 + math.exp(-b0)), "length_coefficient": b1}


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
