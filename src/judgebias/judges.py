"""Judge backends: one interface with one method, chosen by `judge.backend` from a small registry.

`openai` talks to any OpenAI-compatible endpoint (imported only when a live call is needed); `scripted` judges
decide offline by a fixed rule; `replay` returns the raw replies that a real judge once wrote. All three go
through the same rubric parser, so a replayed or scripted run exercises the same path as a live one.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from judgebias.config import JudgeConfig, RubricConfig
from judgebias.errors import UserError
from judgebias.item import Item
from judgebias.prompt import Shown


@dataclass(frozen=True)
class Request:
    """One judge call: the item, what is shown in which order, and the rendered chat messages."""

    item: Item
    view: Shown
    messages: list[dict[str, str]]


@dataclass(frozen=True)
class Reply:
    """What came back from one call."""

    text: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str | None = None
    finish_reason: str | None = None
    probs: dict[str, float] | None = None  # label text -> probability, when log-probabilities were returned

    def to_json(self) -> dict[str, Any]:
        """The cached form (JSON text in the cache, never pickle)."""
        return {
            "text": self.text,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "model": self.model,
            "finish_reason": self.finish_reason,
            "probs": self.probs,
        }

    @staticmethod
    def from_json(value: dict[str, Any]) -> Reply:
        """Rebuild a cached reply."""
        return Reply(
            text=value.get("text"),
            prompt_tokens=int(value.get("prompt_tokens") or 0),
            completion_tokens=int(value.get("completion_tokens") or 0),
            model=value.get("model"),
            finish_reason=value.get("finish_reason"),
            probs=value.get("probs"),
        )


class Backend(Protocol):
    """Answers judge calls: the one method a backend must implement."""

    def complete(self, request: Request) -> Reply:
        """The judge's reply to one call."""
        ...


@runtime_checkable
class PaidBackend(Backend, Protocol):
    """A backend whose calls cost money or time: its replies go to the disk cache, and it may need a key."""

    def cache_request(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        """Everything that decides the reply (the cache key's input); never credentials."""
        ...

    def check_key(self) -> None:
        """Raise a UserError before any call when the credentials are missing."""
        ...


def missing_recordings(backend: Backend, items: list[Item]) -> list[Item]:
    """Items a replay judge has no recording for (none for other backends)."""
    has = getattr(backend, "has", None)
    return [] if has is None else [item for item in items if not has(item)]


def format_reply(rubric: RubricConfig, label: str) -> str:
    """How a scripted judge phrases its choice of `label`, in the rubric's own reply format."""
    return rubric.reply_format.replace("{label}", label).replace("{label_lower}", label.lower())


class ScriptedJudge:
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


class ReplayJudge:
    """Replays the raw replies a real judge wrote, per item and order, from the dataset's judgments file."""

    def __init__(self, config: JudgeConfig, judgments: Path | None) -> None:
        if judgments is None:
            raise UserError("judge=replay needs recorded judgments, but data has none (data.judgments is null)")
        self.config = config
        self.replies: dict[str, tuple[str | None, str | None, bool]] = {}
        names: set[str] = set()
        try:
            lines = judgments.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            raise UserError(f"{judgments}: no such judgments file (check data.judgments and data.root)") from None
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise UserError(f"{judgments}:{number}: not valid JSON ({error.msg})") from None
            names.add(row.get("judge"))
            if row.get("judge") != config.name or (config.run is not None and row.get("run") != config.run):
                continue
            if row["id"] in self.replies:
                raise UserError(
                    f"{judgments}:{number}: judge {config.name!r} has several recordings of item {row['id']!r}: "
                    f"choose one run with judge.run=... (e.g. {row.get('run')!r})"
                )
            one_order = row.get("call2") is None and row.get("raw2") is None
            self.replies[row["id"]] = (row.get("raw1"), row.get("raw2"), one_order)
        if not self.replies:
            choices = ", ".join(sorted(n for n in names if isinstance(n, str)))
            raise UserError(f"judge.name={config.name!r} is not recorded in {judgments}: choose one of {choices}")

    def has(self, item: Item) -> bool:
        """Whether this judge was recorded on `item`."""
        return item.id in self.replies

    def one_order(self, item: Item) -> bool:
        """Whether only the first order was recorded for `item` (its second call does not exist)."""
        return self.replies[item.id][2]

    def complete(self, request: Request) -> Reply:
        raw1, raw2, _ = self.replies[request.item.id]
        text = raw1 if request.view.order == 1 else raw2
        return Reply(text=text, completion_tokens=len((text or "").split()), model=f"replay:{self.config.name}")


def build_backend(config: JudgeConfig, rubric: RubricConfig, judgments: Path | None) -> Backend:
    """The backend named by `config.backend`."""
    if config.backend == "openai":
        from judgebias.backends.openai import OpenAIJudge

        return OpenAIJudge(config, rubric)
    if config.backend == "scripted":
        return ScriptedJudge(config, rubric)
    if config.backend == "replay":
        return ReplayJudge(config, judgments)
    raise UserError(f"judge.backend={config.backend!r} is not a backend: use openai, scripted or replay")
