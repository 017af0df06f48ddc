"""Which judged items people should label: random, stratified, or the judge's most uncertain first. Pure, seeded.

Uncertainty is the balanced position diversity entropy of Wang et al. 2023 ("Large Language Models are not Fair
Evaluators"): the entropy (in bits) of the mean of the two orders' preference distributions, read in the item's
frame. With log-probabilities those are the soft distributions; without them each order is the one answer it
picked, so an inconsistent item scores 1 bit and a consistent one 0. The paper sends the top ~20% to people.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

UNCERTAIN_SHARE = 0.2  # the share of items the entropy rule sends to people when no size is given


class Strategy(StrEnum):
    """How a sample is drawn."""

    random = "random"
    stratified = "stratified"  # by verdict, category and whether the two orders agreed
    uncertain = "uncertain"  # inconsistent and highest-entropy items first


@dataclass(frozen=True)
class Judged:
    """What sampling knows of one judged item."""

    id: str
    verdict: str
    consistent: bool | None
    category: str | None = None
    entropy: float = 0.0  # balanced position diversity entropy, bits


def order_distribution(pick: str | None, probs: Mapping[str, float] | None, order: int) -> dict[str, float]:
    """One order's preference distribution over a / b / tie in the item's frame."""
    if probs:
        first, second = ("a", "b") if order == 1 else ("b", "a")
        raw = {first: probs.get("A", 0.0), second: probs.get("B", 0.0), "tie": probs.get("tie", 0.0)}
        total = sum(max(0.0, v) for v in raw.values())
        if total > 0:
            return {k: max(0.0, v) / total for k, v in raw.items()}
    if pick in ("a", "b"):
        return {pick: 1.0}
    return {"tie": 1.0}


def position_entropy(first: Mapping[str, float], second: Mapping[str, float] | None) -> float:
    """Entropy in bits of the two orders' mean distribution (0 with one order: nothing to compare)."""
    if second is None:
        return 0.0
    mean = {k: (first.get(k, 0.0) + second.get(k, 0.0)) / 2 for k in ("a", "b", "tie")}
    return sum(-p * math.log2(p) for p in mean.values() if p > 0) + 0.0  # + 0.0: a certain item is 0.0, not -0.0


def sample_size(total: int, n: int | None, fraction: float | None) -> int:
    """How many items to draw: `n`, or `fraction` of them rounded up, never more than there are."""
    if n is not None:
        return min(n, total)
    if fraction is not None:
        return min(total, math.ceil(fraction * total))
    return min(total, math.ceil(UNCERTAIN_SHARE * total))


def draw(items: Sequence[Judged], size: int, strategy: Strategy, seed: int) -> list[Judged]:
    """`size` items by `strategy`, in the order people should see them (uncertain: most uncertain first)."""
    rng = random.Random(seed)
    if strategy is Strategy.random:
        return rng.sample(list(items), size)
    if strategy is Strategy.uncertain:
        shuffled = rng.sample(list(items), len(items))  # equal uncertainty: a seeded random order
        return sorted(shuffled, key=lambda j: (j.consistent is not False, -j.entropy))[:size]
    return _stratified(items, size, rng)


def _stratified(items: Sequence[Judged], size: int, rng: random.Random) -> list[Judged]:
    """Proportional allocation over (verdict, category, consistent) strata, largest remainders first."""
    strata: dict[tuple[str, str, str], list[Judged]] = defaultdict(list)
    for item in items:
        strata[(item.verdict, item.category or "", str(item.consistent))].append(item)
    total = len(items)
    quotas = {key: size * len(members) / total for key, members in strata.items()}
    taken = {key: math.floor(q) for key, q in quotas.items()}
    left = size - sum(taken.values())
    for key in sorted(quotas, key=lambda k: (taken[k] - quotas[k], sorted(strata).index(k)))[:left]:
        taken[key] += 1
    chosen = [member for key in sorted(strata) for member in rng.sample(strata[key], taken[key])]
    rng.shuffle(chosen)
    return chosen
