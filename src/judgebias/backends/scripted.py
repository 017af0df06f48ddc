"""Scripted judges: decide offline by a fixed rule (always the first, the longer, or the human label with a known
position or style bias).

For dry runs, tests and the no-key default run; their replies go through the rubric's parser like a live judge's.
"""

from __future__ import annotations

import hashlib

from judgebias.backends.base import AttemptMeter, Backend
from judgebias.config.checks import check_judge
from judgebias.config.schema import RubricConfig, ScriptedSettings, Strategy
from judgebias.core.record import Reply, Request
from judgebias.core.style import style_of


def format_reply(rubric: RubricConfig, label: str) -> str:
    """How a scripted judge phrases its choice of `label`, in the rubric's own reply format."""
    return rubric.reply_format.replace("{label}", label).replace("{label_lower}", label.lower())


class ScriptedJudge(Backend):
    """Offline judges with a fixed rule: for dry runs, tests, and the no-key default run."""

    reads_messages = False  # the rule reads the shown answers, never the prompt

    def __init__(self, config: ScriptedSettings, rubric: RubricConfig) -> None:
        check_judge(config)  # the strategy and its bias, also when built outside a run
        self.config = config
        self.rubric = rubric
        self._model = f"scripted:{config.strategy}"
        # Each label's reply, phrased once and one object (frozen): a run asks for a few labels, a million times, and
        # the runner parses each reply object once.
        self._replies: dict[str, Reply] = {}

    def choose(self, request: Request) -> str:
        """The positional choice by the scripted rule: "A" (first shown), "B" (second shown) or "tie"."""
        view = request.view
        if self.config.strategy == Strategy.always_a:
            return "A"
        if self.config.strategy == Strategy.longer:
            return "B" if len(view.second) > len(view.first) else "A"
        if self.config.strategy == Strategy.formatted:
            # With probability style_bias (drawn once per item, so both orders agree) pick the shown answer with
            # more markdown features when the two differ; else follow the human label. It sees only what is
            # shown: answers stripped to plain text give it nothing to prefer.
            first, second = style_of(view.first).total, style_of(view.second).total
            if first != second and _draw(f"{request.item.id}|style" + _ask(request)) < self.config.style_bias:
                return "A" if first > second else "B"
        # noisy: with probability first_bias pick the first shown, else follow the human label (tie if none).
        elif _draw(f"{request.item.id}|{view.order}" + _ask(request)) < self.config.first_bias:
            return "A"
        human = request.item.human
        if human not in ("1", "2"):
            return "tie"
        return "A" if (human == "1") == (view.order == 1) else "B"  # the human's pick, where it is shown

    def complete(self, request: Request, meter: AttemptMeter | None = None) -> Reply:
        """The rubric's reply for the scripted choice, in the words offered for it."""
        label = request.view.label_of(self.choose(request), self.rubric.tie_label)
        reply = self._replies.get(label)
        if reply is None:  # no tokens: nothing was generated or billed
            reply = self._replies[label] = Reply(text=format_reply(self.rubric, label), model=self._model)
        return reply


def _ask(request: Request) -> str:
    """The seed suffix of one ask of judge.samples: none for the first, so a one-sample run decides as before."""
    return f"|sample{request.sample}" if request.sample else ""


def _draw(seed: str) -> float:
    """A number in [0, 1) fixed by `seed` (sha256), so a scripted run decides the same way every time."""
    return int(hashlib.sha256(seed.encode()).hexdigest()[:8], 16) / 2**32
