"""Scripted judges: decide offline by a fixed rule (always the first, the longer, or noisy around the human label).

For dry runs, tests and the no-key default run; their replies go through the rubric's parser like a live judge's.
"""

from __future__ import annotations

import hashlib

from judgebias.backends.base import Backend
from judgebias.config import JudgeConfig, RubricConfig
from judgebias.errors import UserError
from judgebias.record import Reply, Request


def format_reply(rubric: RubricConfig, label: str) -> str:
    """How a scripted judge phrases its choice of `label`, in the rubric's own reply format."""
    return rubric.reply_format.replace("{label}", label).replace("{label_lower}", label.lower())


class ScriptedJudge(Backend):
    """Offline judges with a fixed rule: for dry runs, tests, and the no-key default run."""

    def __init__(self, config: JudgeConfig, rubric: RubricConfig) -> None:
        if config.strategy not in ("always_a", "longer", "noisy"):
            raise UserError(
                f"judge {config.name!r}: judge.strategy={config.strategy!r} is not a scripted strategy "
                "(use always_a, longer or noisy)"
            )
        if not 0.0 <= config.first_bias <= 1.0:
            raise UserError(f"judge {config.name!r}: judge.first_bias={config.first_bias} must be within [0, 1]")
        self.config = config
        self.rubric = rubric

    def choose(self, request: Request) -> str:
        """ "first", "second" or "tie" by the scripted rule."""
        view = request.view
        if self.config.strategy == "always_a":
            return "first"
        if self.config.strategy == "longer":
            return "second" if len(view.second) > len(view.first) else "first"
        # noisy: with probability first_bias pick the first shown, else follow the human label (tie if none).
        draw = int(hashlib.sha256(f"{request.item.id}|{view.order}".encode()).hexdigest()[:8], 16) / 2**32
        if draw < self.config.first_bias:
            return "first"
        human = request.item.human
        if human not in ("1", "2"):
            return "tie"
        a_first = view.order == 1
        return "first" if (human == "1") == a_first else "second"

    def complete(self, request: Request) -> Reply:
        choice = self.choose(request)
        label = {
            "first": request.view.label_first,
            "second": request.view.label_second,
            "tie": self.rubric.tie_label,
        }[choice]
        text = format_reply(self.rubric, label)
        return Reply(text=text, completion_tokens=len(text.split()), model=f"scripted:{self.config.strategy}")
