"""Which judged items people should label: random, stratified, or the judge's most uncertain first. Pure, seeded.

Uncertainty is the balanced position diversity entropy of Wang et al. 2023 ("Large Language Models are not Fair
Evaluators"): the entropy (in bits) of the mean of the two orders' preference distributions, read in the item's
frame. With log-probabilities those are the soft distributions; without them each order is the one answer it
picked, so an inconsistent item scores 1 bit and a consistent one 0. The paper sends the top ~20% to people.
"""

from __future__ import annotations

import hashlib
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


def item_digest(question: str, a: str, b: str) -> str:
    """What a label is about: the item's question and answers as sampled (a label on a changed item is stale)."""
    return hashlib.sha256("\x00".join((question, a, b)).encode("utf-8", "surrogatepass")).hexdigest()[:16]


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


@dataclass(frozen=True)
class Drawn:
    """A sample and its design: the items drawn, in the order people should see them, and every candidate's
    probability of being drawn (what makes the labels stand for every item: the run weighs a label by 1/π)."""

    items: list[Judged]
    probabilities: dict[str, float]


FLOOR_SHARE = 0.1  # uncertain: every item at least this share of the average probability (never 0)
# uncertain: a sure item's worth; one whose orders disagreed (2 bits) is drawn up to 3 times as often
BASE_UNCERTAINTY = 1.0


def draw(items: Sequence[Judged], size: int, strategy: Strategy, seed: int) -> Drawn:
    """About `size` items by `strategy`, with each candidate's inclusion probability. random: a simple random sample
    (π = size / candidates); stratified: a simple random sample in each (verdict, category, consistent) stratum, sized
    in proportion, every stratum at least one where the size allows; uncertain: Poisson sampling with π growing with
    the judge's uncertainty (an inconsistent item counts a bit more than its entropy), at least FLOOR_SHARE of the
    average, so the size is `size` on average and the most uncertain items come first."""
    rng = random.Random(seed)
    if strategy is Strategy.random:
        chosen = rng.sample(list(items), size)
        chance = size / len(items) if items else 0.0
        return Drawn(chosen, {item.id: chance for item in items})
    if strategy is Strategy.uncertain:
        probabilities = uncertain_probabilities(items, size)
        chosen = [item for item in items if rng.random() < probabilities[item.id]]
        shuffled = rng.sample(chosen, len(chosen))  # equal uncertainty: a seeded random order
        return Drawn(sorted(shuffled, key=lambda j: -uncertainty(j)), probabilities)
    return _stratified(items, size, rng)


def uncertainty(item: Judged) -> float:
    """How unsure the judge was of an item: the position entropy, plus a bit for orders that disagreed."""
    return item.entropy + (1.0 if item.consistent is False else 0.0)


def uncertain_probabilities(items: Sequence[Judged], size: float) -> dict[str, float]:
    """Poisson inclusion probabilities min(1, max(floor, c·(1 + u))) summing to `size` (c found by bisection): an
    item's chance grows with its uncertainty u (at most three times a sure item's: weights much larger than the
    average would cost the estimate more than the uncertain items' labels bring), none below FLOOR_SHARE of the
    average."""
    if not items:
        return {}
    total = len(items)
    floor = min(1.0, FLOOR_SHARE * size / total)
    raw = [uncertainty(item) for item in items]
    base = BASE_UNCERTAINTY  # a sure item's worth

    def chances(scale: float) -> list[float]:
        return [min(1.0, max(floor, scale * (u + base))) for u in raw]

    low, high = 0.0, 1.0
    while sum(chances(high)) < size and high < 1e12:
        high *= 2.0
    for _ in range(100):
        middle = (low + high) / 2.0
        low, high = (middle, high) if sum(chances(middle)) < size else (low, middle)
    return {item.id: chance for item, chance in zip(items, chances(high), strict=True)}


def _stratified(items: Sequence[Judged], size: int, rng: random.Random) -> Drawn:
    """Proportional allocation over (verdict, category, consistent) strata, largest remainders first, every stratum
    at least one item when the size allows it (a stratum drawn from not at all would have probability 0)."""
    strata: dict[tuple[str, str, str], list[Judged]] = defaultdict(list)
    for item in items:
        strata[(item.verdict, item.category or "", str(item.consistent))].append(item)
    total = len(items)
    quotas = {key: size * len(members) / total for key, members in strata.items()}
    taken = {key: math.floor(q) for key, q in quotas.items()}
    if size >= len(strata):
        taken = {key: max(1, count) for key, count in taken.items()}
    left = size - sum(taken.values())
    order = sorted(quotas, key=lambda k: (taken[k] - quotas[k], sorted(strata).index(k)))
    for key in order[:left] if left > 0 else ():
        taken[key] += 1
    for key in reversed(order):  # the minimum of one may have gone over the size: take back from the largest
        while sum(taken.values()) > size and taken[key] > 1:
            taken[key] -= 1
    chosen = [member for key in sorted(strata) for member in rng.sample(strata[key], taken[key])]
    rng.shuffle(chosen)
    probabilities = {
        member.id: taken[key] / len(members) for key, members in strata.items() if taken[key] for member in members
    }
    return Drawn(chosen, probabilities)
