"""The stand-in server's prompt cache and bill: prefixes cached as OpenAI caches them, cached tokens reported in the
usage shape of a chosen provider, and every request billed, so a test or a benchmark reads what the server served
from its cache and what it charged (GET /stats `billing`) instead of trusting the client's own count.

OpenAI's rule: a prompt's prefix is served from the cache when an earlier prompt had the same first tokens, from
1,024 tokens on, in steps of 128 (tokens are the prompt's words here, as the server's usage counts them).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

MIN_TOKENS = 1024
STEP = 128
USAGE_SHAPES = ("openai", "anthropic", "deepseek")


@dataclass(frozen=True)
class Prices:
    """USD per million tokens: input, cached input, output; `cached_in_full`: cached tokens billed at the input price
    (a server that reports cached tokens but does not discount them)."""

    input: float = 0.0
    cached: float = 0.0
    output: float = 0.0
    cached_in_full: bool = False


@dataclass(frozen=True)
class Lookup:
    """A prompt's cached tokens when it arrived, and its prefixes' hashes."""

    cached: int
    boundaries: tuple[bytes, ...]


NOTHING = Lookup(0, ())  # the prompt cache is off


class PromptCache:
    """Prefixes seen (a hash at every 128-token boundary), and the bill; thread-safe."""

    def __init__(self, prices: Prices) -> None:
        self.prices = prices
        self._seen: set[bytes] = set()
        self._lock = threading.Lock()
        self.requests = 0
        self.marked = 0  # requests that carried an explicit cache breakpoint (cache_control)
        self.prompt_tokens = 0
        self.cached_tokens = 0
        self.completion_tokens = 0
        self.billed_usd = 0.0

    def look_up(self, words: Sequence[str]) -> Lookup:
        """The tokens of this prompt the cache serves now (0 under MIN_TOKENS), and its prefixes, to `remember` once
        the prompt has been read: a prompt still being read when another with its prefix arrives serves it nothing,
        as on a real server (both calls of an item sent at once both pay in full)."""
        digest = hashlib.blake2b(digest_size=16)
        boundaries = []
        for start in range(0, len(words) - len(words) % STEP, STEP):
            digest.update("\x00".join(words[start : start + STEP]).encode() + b"\x01")
            boundaries.append(digest.copy().digest())
        with self._lock:
            cached = 0
            for index, boundary in enumerate(boundaries):
                if boundary not in self._seen:
                    break
                cached = (index + 1) * STEP
        return Lookup(cached if cached >= MIN_TOKENS else 0, tuple(boundaries))

    def remember(self, lookup: Lookup) -> None:
        """Cache a prompt's prefixes (it has been read)."""
        with self._lock:
            self._seen.update(lookup.boundaries)

    def bill(self, prompt_tokens: int, cached_tokens: int, completion_tokens: int, *, marked: bool = False) -> None:
        """Charge one answered request (`marked`: it carried an explicit cache breakpoint, counted)."""
        prices = self.prices
        cached_price = prices.input if prices.cached_in_full else prices.cached
        usd = (
            (prompt_tokens - cached_tokens) * prices.input
            + cached_tokens * cached_price
            + completion_tokens * prices.output
        ) / 1e6
        with self._lock:
            self.requests += 1
            self.marked += marked
            self.prompt_tokens += prompt_tokens
            self.cached_tokens += cached_tokens
            self.completion_tokens += completion_tokens
            self.billed_usd += usd

    def stats(self) -> dict[str, Any]:
        """What GET /stats reports under `billing`."""
        with self._lock:
            return {
                "requests": self.requests,
                "marked": self.marked,
                "prompt_tokens": self.prompt_tokens,
                "cached_tokens": self.cached_tokens,
                "completion_tokens": self.completion_tokens,
                "billed_usd": round(self.billed_usd, 9),
            }


def report(usage: dict[str, Any], cached: int, shape: str) -> None:
    """Write `cached` into a usage object the way the provider of `shape` reports it."""
    if shape == "openai":
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    elif shape == "anthropic":
        usage["cache_read_input_tokens"] = cached
        usage["cache_creation_input_tokens"] = 0
    elif shape == "deepseek":
        usage["prompt_cache_hit_tokens"] = cached
        usage["prompt_cache_miss_tokens"] = usage.get("prompt_tokens", 0) - cached
    else:
        raise ValueError(f"usage shape must be one of {', '.join(USAGE_SHAPES)}, got {shape!r}")
