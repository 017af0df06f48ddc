"""What a call costs, from the judge's configured prices: the one formula the summary, the dry run and the cap use."""

from __future__ import annotations

from judgebias.config.schema import JudgeConfig


def call_cost(
    judge: JudgeConfig, prompt_tokens: int, completion_tokens: int, *, cached: int = 0, batched: bool = False
) -> float:
    """US dollars for one call at the judge's per-million-token prices: of its prompt tokens, the `cached` ones (the
    server's prompt cache served them) at judge.price_cached_input_per_mtok (the input price when none is set); a
    batched call at the batch discount."""
    cached = min(max(cached, 0), prompt_tokens)
    amount = (
        (prompt_tokens - cached) * judge.price_input_per_mtok
        + cached * cached_input_price(judge)
        + completion_tokens * judge.price_output_per_mtok
    ) / 1e6
    return amount * judge.batch_discount if batched else amount


def cached_input_price(judge: JudgeConfig) -> float:
    """USD per million prompt tokens served by the server's prompt cache: the judge's cached price, else its input
    price (no discount counted that the judge's prices do not state)."""
    price = judge.price_cached_input_per_mtok
    return judge.price_input_per_mtok if price is None else price
