"""Cached prompt tokens, read and priced: the usage shapes providers document, the cost at the cached rate, and the
spending cap that never counts on the discount. Expected values are written out by hand from the providers' own
examples and prices."""

from __future__ import annotations

from typing import Any

import pytest

from judgebias.backends.chat_reply import cached_prompt_tokens
from judgebias.config.pricing import call_cost
from judgebias.config.schema import JudgeConfig
from judgebias.core.prefix import cacheable_tokens
from judgebias.core.record import Reply
from judgebias.engine.budget import reported


def judge(**prices: Any) -> JudgeConfig:
    return JudgeConfig(name="priced", **prices)


@pytest.mark.parametrize(
    ("usage", "cached"),
    [
        # OpenAI's prompt caching guide: the usage of a request whose prefix was served from the cache.
        ({"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
          "prompt_tokens_details": {"cached_tokens": 1920}}, 1920),
        # Anthropic's shape, as LiteLLM passes it on beside prompt_tokens.
        ({"prompt_tokens": 3000, "completion_tokens": 12, "cache_read_input_tokens": 2048,
          "cache_creation_input_tokens": 0}, 2048),
        # DeepSeek's context caching: hit and miss tokens make up the prompt.
        ({"prompt_tokens": 1500, "completion_tokens": 5, "prompt_cache_hit_tokens": 1280,
          "prompt_cache_miss_tokens": 220}, 1280),
        ({"prompt_tokens": 900, "completion_tokens": 5}, 0),  # none said
        ({"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": 5000}}, 100),  # never more than the prompt
        ({"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": -7}}, 0),
        ({"prompt_tokens": 100, "prompt_tokens_details": None, "cache_read_input_tokens": "64"}, 64),
    ],
    ids=["openai", "anthropic", "deepseek", "none", "more-than-prompt", "negative", "text"],
)  # fmt: skip
def test_cached_tokens_are_read_in_each_providers_shape(usage: dict[str, Any], cached: int) -> None:
    assert cached == cached_prompt_tokens(usage)


def test_cached_tokens_are_priced_at_the_cached_rate() -> None:
    """gpt-4o's prices: 2,006 prompt tokens of which 1,920 cached, 300 out: 86 x 2.50 + 1,920 x 1.25 + 300 x 10.00
    per million = $0.005615."""
    gpt4o = judge(price_input_per_mtok=2.5, price_cached_input_per_mtok=1.25, price_output_per_mtok=10.0)
    assert call_cost(gpt4o, 2006, 300, cached=1920) == pytest.approx(0.005615, abs=1e-12)
    assert call_cost(gpt4o, 2006, 300) == pytest.approx(0.008015, abs=1e-12)  # none cached: full price
    unpriced = judge(price_input_per_mtok=2.5, price_output_per_mtok=10.0)  # no cached price: the input price
    assert call_cost(unpriced, 2006, 300, cached=1920) == pytest.approx(0.008015, abs=1e-12)


def test_the_cap_counts_cached_tokens_at_the_full_input_price() -> None:
    """A reply reporting 1,920 of 2,006 prompt tokens as cached is charged against the cap as 2,006 at $2.50 and 300
    at $10.00 ($0.008015), whatever the cached price: the cap holds if the server bills them in full."""
    gpt4o = judge(price_input_per_mtok=2.5, price_cached_input_per_mtok=1.25, price_output_per_mtok=10.0)
    reply = Reply("A", prompt_tokens=2006, completion_tokens=300, prompt_tokens_cached=1920)
    assert reported(gpt4o, reply).usd == pytest.approx(0.008015, abs=1e-12)


@pytest.mark.parametrize(("tokens", "share", "cached"), [(2000, 0.5, 0), (2048, 0.5, 1024), (2000, 0.65, 1280)])
def test_a_shared_prefix_is_cached_as_openai_caches_it(tokens: int, share: float, cached: int) -> None:
    """From 1,024 tokens on, in steps of 128 (1,000 shared: none; 1,024: all; 1,300: 1,280)."""
    assert cached == cacheable_tokens(tokens, share)
