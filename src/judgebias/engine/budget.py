"""The spending cap (`max_cost_usd`, `max_tokens_total`): no call is sent whose estimate would pass it.

The cap bounds what the run's replies cost, the ones paid earlier and now cached included (summary.json's
`cost_usd` + `saved_usd`), so a rerun with the same cap sends at most what the estimates overstated and a rerun
with a higher one continues from the cache, paying only for the calls it adds. A call is counted at its estimate when it is sent
(prompt tokens as the dry run counts them, plus `judge.max_tokens` of reply, at the judge's prices), and at its
reported usage once its reply arrives. The first call that would pass the cap stops the sending; the calls in
flight land, and the run writes everything with status `budget`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from judgebias.config.pricing import call_cost
from judgebias.config.schema import Config, JudgeConfig
from judgebias.core.record import Reply
from judgebias.core.tokens import estimate_prompt_tokens


@dataclass(frozen=True)
class Spend:
    """A call's cost in USD and in tokens (prompt and reply)."""

    usd: float = 0.0
    tokens: int = 0

    def __add__(self, other: Spend) -> Spend:
        return Spend(self.usd + other.usd, self.tokens + other.tokens)

    def __sub__(self, other: Spend) -> Spend:
        return Spend(self.usd - other.usd, self.tokens - other.tokens)


def estimated(
    judge: JudgeConfig,
    messages: Sequence[Mapping[str, str]],
    count: Callable[[str], int] | None,
    discount: float = 1.0,
) -> Spend:
    """A call's estimate before it is sent: its prompt's tokens and a full `judge.max_tokens` reply."""
    prompt = estimate_prompt_tokens(messages, count)
    reply = judge.max_tokens or 0
    usd = call_cost(judge, prompt, reply)
    return Spend(usd * discount, prompt + reply)


def reported(judge: JudgeConfig, reply: Reply, discount: float = 1.0) -> Spend:
    """A reply's cost from the usage its server reported."""
    usd = call_cost(judge, reply.prompt_tokens, reply.completion_tokens)
    return Spend(usd * discount, reply.prompt_tokens + reply.completion_tokens)


class Budget:
    """The run's running total against its cap; thread-safe (workers settle, the main thread reserves)."""

    def __init__(self, max_cost_usd: float | None, max_tokens_total: int | None) -> None:
        self.max_cost_usd = max_cost_usd
        self.max_tokens_total = max_tokens_total
        self.total = Spend()  # reported usage of replies used, plus the estimates of calls in flight
        self.stopped_at: Spend | None = None  # the estimate of the first call refused
        self.unsent = 0  # calls not sent because of the cap
        self._lock = threading.Lock()

    @classmethod
    def of(cls, config: Config) -> Budget | None:
        """The run's budget, or None when no cap is set."""
        if config.max_cost_usd is None and config.max_tokens_total is None:
            return None
        return cls(config.max_cost_usd, config.max_tokens_total)

    @property
    def reached(self) -> bool:
        """Whether a call was refused: from then on no new call is sent."""
        return self.stopped_at is not None

    def add(self, spend: Spend) -> None:
        """Count a reply the run uses without sending anything (a cached or batch-collected reply)."""
        with self._lock:
            self.total += spend

    def reserve(self, estimate: Spend) -> bool:
        """Count a call about to be sent at its estimate; False (and sending stops) when it would pass the cap."""
        with self._lock:
            if self.stopped_at is None and self._fits(self.total + estimate):
                self.total += estimate
                return True
            self.stopped_at = self.stopped_at or estimate
            self.unsent += 1
            return False

    def settle(self, estimate: Spend, actual: Spend) -> None:
        """Replace a sent call's estimate by the usage its reply reported."""
        with self._lock:
            self.total = self.total - estimate + actual

    def _fits(self, total: Spend) -> bool:
        over_cost = self.max_cost_usd is not None and total.usd > self.max_cost_usd + 1e-12
        over_tokens = self.max_tokens_total is not None and total.tokens > self.max_tokens_total
        return not (over_cost or over_tokens)

    def trial(self) -> Budget:
        """A fresh count under the same caps (the batch pre-pass's, before the run counts for itself)."""
        return Budget(self.max_cost_usd, self.max_tokens_total)

    def take_refusals(self, trial: Budget) -> None:
        """Carry a trial's refusals over: calls it left out count as not sent, and sending stops."""
        with self._lock:
            self.stopped_at = self.stopped_at or trial.stopped_at
            self.unsent += trial.unsent

    def reason(self) -> str:
        """Why a call was not sent (its verdicts.jsonl error)."""
        return f"not sent: the spending cap ({self._caps()}) would be passed by this call's estimate"

    def _caps(self) -> str:
        caps = []
        if self.max_cost_usd is not None:
            caps.append(f"max_cost_usd={self.max_cost_usd:g}")
        if self.max_tokens_total is not None:
            caps.append(f"max_tokens_total={self.max_tokens_total}")
        return ", ".join(caps)

    def record(self) -> dict[str, Any]:
        """summary.json's `budget`: the caps, what the run's replies came to, and the calls left unsent."""
        return {
            "max_cost_usd": self.max_cost_usd,
            "max_tokens_total": self.max_tokens_total,
            "used_usd": round(self.total.usd, 6),
            "used_tokens": self.total.tokens,
            "calls_not_sent": self.unsent,
            "reached": self.reached,
        }

    def note(self) -> str:
        """The summary's note of a run the cap stopped."""
        return (
            f"the spending cap ({self._caps()}) was reached: {self.unsent} calls were not sent; rerun with a higher "
            "cap to continue from the cache (replies already received are not paid again)"
        )
