"""The spending cap (`max_cost_usd`, `max_tokens_total`): a cap that holds against the server's bill, by construction.

A call is admitted only while what is spent plus the worst case of every call in flight stays within the cap. The
worst case is an upper bound, not an estimate: the prompt's UTF-8 bytes (core.tokens.prompt_token_bound: no
tokenizer counts more tokens than bytes) plus the full `judge.max_tokens` (which bounds hidden reasoning tokens
too). When the reply arrives its reported usage replaces the bound; a reply without usage is charged the bound,
and the summary says its cost is a bound. Every billed attempt counts: a 200 with no choices, a cut-off reply
asked again and a timed-out request (which the server may have finished) are charged through the call's Meter,
and an attempt after one of them is admitted again against the cap, or not sent.

The cap bounds what the run's replies cost, the ones paid earlier and now cached included (summary.json's
`cost_usd` + `saved_usd`, each before the prompt cache's discount), so a rerun with the same cap sends nothing more
and a rerun with a higher one continues from the cache, paying only for the calls it adds. Prompt tokens a server's
prompt cache served are counted at the full input price, when reserving and when settling: the cap holds whatever
the server bills. The first call that would pass the cap stops the sending; the calls in flight land, and the run
writes everything with status `budget`.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from judgebias.config.pricing import call_cost
from judgebias.config.schema import Config, JudgeConfig
from judgebias.core.record import Reply
from judgebias.core.tokens import prompt_token_bound


@dataclass(frozen=True)
class Spend:
    """A call's cost in USD and in tokens (prompt and reply)."""

    usd: float = 0.0
    tokens: int = 0

    def __add__(self, other: Spend) -> Spend:
        return Spend(self.usd + other.usd, self.tokens + other.tokens)

    def __sub__(self, other: Spend) -> Spend:
        return Spend(self.usd - other.usd, self.tokens - other.tokens)


def worst_case(judge: JudgeConfig, messages: Sequence[Mapping[str, str]], discount: float = 1.0) -> Spend:
    """The most one attempt of a call can be billed: its prompt's byte bound and a full `judge.max_tokens` reply."""
    prompt = prompt_token_bound(messages)
    reply = judge.max_tokens or 0
    return Spend(call_cost(judge, prompt, reply) * discount, prompt + reply)


def reported(judge: JudgeConfig, reply: Reply, discount: float = 1.0) -> Spend:
    """A reply's cost from the usage its server reported, every prompt token at the full input price: the cap never
    counts the prompt cache's discount (cost_usd does), so a server that reports cached tokens but bills them in
    full cannot take a run past its cap."""
    usd = call_cost(judge, reply.prompt_tokens, reply.completion_tokens)
    return Spend(usd * discount, reply.prompt_tokens + reply.completion_tokens)


def metered(reply: Reply) -> bool:
    """Whether a reply reports its usage: no server bills a prompt of zero tokens, so 0 means none was reported."""
    return reply.prompt_tokens > 0


def charged(judge: JudgeConfig, reply: Reply | None, bound: Spend, discount: float = 1.0) -> Spend:
    """What an attempt is counted at: its reported usage, else (no usage, or no reply: a timeout) its bound."""
    if reply is None or not metered(reply):
        return bound
    return reported(judge, reply, discount)


class Budget:
    """The run's running total against its cap; thread-safe (workers settle, the main thread reserves)."""

    def __init__(self, max_cost_usd: float | None, max_tokens_total: int | None) -> None:
        self.max_cost_usd = max_cost_usd
        self.max_tokens_total = max_tokens_total
        self.total = Spend()  # what replies used and attempts billed came to, plus the worst case of calls in flight
        self.stopped_at: Spend | None = None  # the worst case of the first call refused
        self.unsent = 0  # calls not sent because of the cap
        self.unmetered = 0  # replies (and attempts) counted at their bound: their server reported no usage
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

    def add(self, spend: Spend, *, bound: bool = False) -> None:
        """Count a reply the run uses without sending anything (a cached or batch-collected reply); `bound`: it
        reported no usage and `spend` is its bound."""
        with self._lock:
            self.total += spend
            self.unmetered += bound

    def reserve(self, estimate: Spend) -> bool:
        """Count a call about to be sent at its estimate; False (and sending stops) when it would pass the cap."""
        with self._lock:
            if self.stopped_at is None and self._fits(self.total + estimate):
                self.total += estimate
                return True
            self.stopped_at = self.stopped_at or estimate
            self.unsent += 1
            return False

    def settle(self, estimate: Spend, actual: Spend, *, bound: bool = False) -> None:
        """Replace a sent attempt's worst case by what it is charged (`bound`: no usage, charged the bound)."""
        with self._lock:
            self.total = self.total - estimate + actual
            self.unmetered += bound

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
        return f"not sent: the spending cap ({self._caps()}) could be passed by this call (its worst case)"

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
            "replies_without_usage": self.unmetered,
            "used_is_bound": self.unmetered > 0,  # some replies were counted at their bound, not their usage
        }

    def note(self) -> str:
        """The summary's note of a run the cap stopped."""
        return (
            f"the spending cap ({self._caps()}) was reached: {self.unsent} calls were not sent; rerun with a higher "
            "cap to continue from the cache (replies already received are not paid again)"
        )


class Meter:
    """One call's billed attempts against the cap. The call's first attempt runs on the worst case reserved when it
    was admitted; an attempt that was billed but not used (no choices, cut off and asked again, timed out) is charged
    at once, and the attempt after it must be admitted against the cap again."""

    def __init__(self, budget: Budget | None, judge: JudgeConfig, bound: Spend, unused: UnusedAttempts) -> None:
        self.budget = budget
        self.judge = judge
        self.bound = bound
        self.unused = unused
        self.held = True  # a worst case is reserved for the attempt about to go (the admission's, at first)

    def before_attempt(self) -> bool:
        """Whether the next attempt may go: it holds a reservation, or the cap admits one more worst case."""
        if self.held or self.budget is None:
            self.held = True
            return True
        self.held = self.budget.reserve(self.bound)
        return self.held

    def billed(self, reply: Reply | None) -> Spend:
        """Charge an attempt the server billed but the call does not use (`reply` None: a timeout); its cost."""
        spend = charged(self.judge, reply, self.bound)
        bound = reply is None or not metered(reply)
        if self.budget is not None and self.held:
            self.budget.settle(self.bound, spend, bound=bound)
        self.held = False
        self.unused.add(spend, bound=bound)
        return spend


class UnusedAttempts:
    """The run's attempts that were billed but not used (no choices, asked again, timed out): what they cost, for
    summary.json's cost_usd (a bill counts them, so the run does too). Thread-safe."""

    def __init__(self) -> None:
        self.attempts = 0
        self.spend = Spend()
        self.at_bound = 0  # of those, charged their bound: no usage was reported (or none could be: a timeout)
        self._lock = threading.Lock()

    def add(self, spend: Spend, *, bound: bool) -> None:
        """Count one billed attempt the call did not use."""
        with self._lock:
            self.attempts += 1
            self.spend += spend
            self.at_bound += bound

    def record(self) -> dict[str, Any]:
        """summary.json's `billed_unused`."""
        return {
            "attempts": self.attempts,
            "usd": round(self.spend.usd, 6),
            "tokens": self.spend.tokens,
            "at_bound": self.at_bound,
        }
