"""Judge backends, one file each, behind the base class in `base`; `build_backend` picks one by `judge.backend`.

The registry holds factories, not classes, so the live backend's module (and with it the SDK's module graph) is
imported only when a run uses it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from judgebias.backends.base import Backend
from judgebias.config.checks import CAPABILITIES, Capabilities, capabilities_of
from judgebias.config.schema import JudgeConfig, RubricConfig
from judgebias.core.item import Item
from judgebias.core.record import Request


@dataclass(frozen=True)
class BatchGaps:
    """Why a call of a batch-mode judge has no reply: the batch's own reason for it, else the mode's."""

    errors: Mapping[str, str]  # cache key -> why the batch (or the imported file) has no reply for that call
    missing: str  # the reason for a call the batch never mentioned

    def reason(self, key: str) -> str:
        """The reason the call with this cache key failed."""
        return self.errors.get(key, self.missing)


@dataclass
class Judging:
    """One judge taking part in a run: its name, its config and the backend answering its calls."""

    name: str
    config: JudgeConfig
    backend: Backend
    key_checked: bool = False  # its credentials were checked before its first live call
    # Set by the batch pre-pass for a judge whose calls go by batch (or file): a call the batch left unanswered
    # fails with its reason and is never sent live. The backend itself is never swapped.
    batch_gaps: BatchGaps | None = None

    def check_key_once(self) -> None:
        """Check the judge's credentials before its first request of the run (a live call or a batch upload)."""
        if not self.key_checked:
            self.backend.check_key()
            self.key_checked = True


class Call(NamedTuple):
    """One call of a run as the runner looked it up: who judges, what, its cache key and its cached reply.

    `key` is None for a free judge (never cached); `hit` is the cached reply's JSON, None on a miss.
    """

    judging: Judging
    item: Item
    request: Request
    key: str | None
    hit: dict[str, Any] | None


Factory = Callable[[JudgeConfig, RubricConfig, Path | None], Backend]


def _openai(config: JudgeConfig, rubric: RubricConfig, judgments: Path | None) -> Backend:
    from judgebias.backends.openai import OpenAIJudge

    return OpenAIJudge(config, rubric)


def _scripted(config: JudgeConfig, rubric: RubricConfig, judgments: Path | None) -> Backend:
    from judgebias.backends.scripted import ScriptedJudge

    return ScriptedJudge(config, rubric)


def _replay(config: JudgeConfig, rubric: RubricConfig, judgments: Path | None) -> Backend:
    from judgebias.backends.replay import ReplayJudge

    return ReplayJudge(config, judgments)


BACKENDS: dict[str, Factory] = {
    "openai": _openai,
    "scripted": _scripted,
    "replay": _replay,
}


def register_backend(kind: str, factory: Factory, capabilities: Capabilities) -> None:
    """A backend of one's own: its factory and what it can do (paid, counts tokens, sends batches), declared
    together, so the run builds it by `judge.backend=kind` and the checks ask its capabilities."""
    BACKENDS[kind] = factory
    CAPABILITIES[kind] = capabilities


def build_backend(config: JudgeConfig, rubric: RubricConfig, judgments: Path | None) -> Backend:
    """The backend named by `config.backend` (composition refuses other names; this guards direct callers)."""
    capabilities_of(config)  # a name no backend is declared under is one line
    return BACKENDS[str(config.backend)](config, rubric, judgments)
