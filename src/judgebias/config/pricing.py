"""What a call costs, from the judge's configured prices: the one formula the summary, the dry run and the cap use."""

from __future__ import annotations

from judgebias.config.schema import JudgeConfig


def call_cost(judge: JudgeConfig, prompt_tokens: int, completion_tokens: int, *, batched: bool = False) -> float:
    """US dollars for one call at the judge's per-million-token prices; a batched call at the batch discount."""
    amount = (prompt_tokens * judge.price_input_per_mtok + completion_tokens * judge.price_output_per_mtok) / 1e6
    return amount * judge.batch_discount if batched else amount
