"""Print judgebias's figures beside published ones: Judging the Judges' position consistency (PC) and preference
fairness (PF) on jtj_mtbench, and Zheng et al.'s agreement conventions (S1 with ties, S2 without) on mtbench_human.

Usage: python benchmarks/published_figures.py [--resamples 2000] [--seed 0]
Every recorded judge is replayed in-process (judge=replay, data from $JUDGEBIAS_DATA_ROOT) with the default
clustered intervals (bootstrap.cluster=auto: by question_id on both sets).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from cluster_widths import summary_of
from harness import figure_options
from judgebias.cli.schemas import register_schemas

# Shi et al. 2024 (arXiv:2406.07791) on their full 2,400-pair MT-Bench run. PC as the repository's run logs give
# it (judgment_data/data_MTBench_position_bias/*/log.txt: consistent / extracted); PF where we have their figure.
JTJ = {"gpt-4-0613": (0.815, 0.020), "gpt-3.5-turbo-1106": (0.696, None), "gemini-pro": (0.575, None)}
MTBENCH_HUMAN_JUDGES = (
    "GPT-4/Vanilla_NoRules",
    "GPT-4/Metrics_Reference",
    "ChatGPT/Vanilla_NoRules",
    "ChatGPT/Metrics_Reference",
    "LLaMA2/Vanilla_NoRules",
    "LLaMA2/Metrics_Reference",
    "PaLM2/Vanilla_NoRules",
    "PaLM2/Metrics_Reference",
)


def with_ci(summary: Any, name: str) -> str:
    """'0.828 [0.797, 0.856]' (the clustered interval), or 'n/a'."""
    value, interval = summary.get(name), (summary.get("ci") or {}).get(name)
    if value is None:
        return "n/a"
    return f"{value:.3f}" + (f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else "")


def published(value: float | None, signed: bool = False) -> str:
    """A published figure, or a dash when we do not have it."""
    return "—" if value is None else (f"{value:+.3f}" if signed else f"{value:.3f}")


def main() -> None:
    """Replay the recorded judges and print the two Markdown tables of docs/numbers.md."""
    args = figure_options(__doc__, resamples=2000)
    register_schemas()
    with tempfile.TemporaryDirectory() as scratch:
        print("| judge | PC ours (800 pairs) | PC theirs | PF ours | PF theirs | pairs with both calls read |")
        print("|---|---|---|---|---|---|")
        for judge, (pc, pf) in JTJ.items():
            s = summary_of("jtj_mtbench", "brackets", judge, "auto", args.resamples, args.seed, Path(scratch))
            print(
                f"| {judge} | {with_ci(s, 'position_consistency')} | {published(pc)} | "
                f"{with_ci(s, 'preference_score')} | {published(pf, signed=True)} | {s.get('preference_score_n')} |",
                flush=True,
            )
        print()
        print("| judge | S1 (with ties) | S2 (without ties) | S2 items | human-human S1 | human-human S2 |")
        print("|---|---|---|---|---|---|")
        for judge in MTBENCH_HUMAN_JUDGES:
            s = summary_of("mtbench_human", "llmbar", judge, "auto", args.resamples, args.seed, Path(scratch))
            ceiling = (s.get("calibration") or {}).get("ceiling") or {}
            people_s2 = ceiling.get("decisive_agreement")
            print(
                f"| {judge} | {with_ci(s, 'human_vote_agreement')} | {with_ci(s, 'human_vote_agreement_no_ties')} | "
                f"{s.get('human_vote_agreement_no_ties_n')} | {with_ci(s, 'human_human_agreement')} | "
                f"{'n/a' if people_s2 is None else f'{people_s2:.3f}'} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
