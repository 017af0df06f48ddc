"""Each judge setting belongs to the settings every backend shares or to one backend's own group; a setting given to
a backend that does not read it is said, never silently dropped."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from judgebias.backends import build_backend
from judgebias.config.checks import CAPABILITIES, unread_settings
from judgebias.config.schema import JudgeConfig, RubricConfig, SharedSettings, Strategy
from judgebias.core.errors import UserError
from judgebias.core.item import Item
from judgebias.core.prompt import shown
from judgebias.core.record import Request
from tests.reliability.helpers import run_here

ITEM = Item(id="x", question="q", a="a short answer", b="a somewhat longer answer")


def test_every_judge_setting_is_shared_or_in_a_backends_own_group() -> None:
    """A new field of JudgeConfig must be declared where it belongs (else no note could say it is unread)."""
    shared = {field.name for field in dataclasses.fields(SharedSettings)}
    assert shared == {"backend", "name", "samples", "family"}
    groups = [
        {field.name for field in dataclasses.fields(capabilities.group)} - shared
        for capabilities in CAPABILITIES.values()
    ]
    assert {field.name for field in dataclasses.fields(JudgeConfig)} - shared.union(*groups) == set()
    assert all(groups) and all(not (a & b) for i, a in enumerate(groups) for b in groups[i + 1 :])  # no key twice


@pytest.mark.parametrize("kind", ["openai", "scripted", "replay"])
def test_a_shipped_backend_reads_only_the_shared_settings_and_its_own_group(kind: str, tmp_path: Path) -> None:
    """Built and asked one call (a paid one: its cache key's input), a shipped backend reads no key of another
    backend's group: its declared group is all it depends on, so the note of unread keys tells the truth."""
    judge = JudgeConfig(backend=kind, name="j", model="m", base_url="http://127.0.0.1:9/v1", strategy=Strategy.longer)
    recorded = tmp_path / "judgments.jsonl"
    recorded.write_text(json.dumps({"judge": "j", "id": ITEM.id, "raw1": "A", "raw2": "B"}) + "\n", encoding="utf-8")
    read: set[str] = set()

    class Watched(JudgeConfig):
        """The judge's settings, noting every key asked of them."""

        def __getattribute__(self, name: str) -> Any:
            read.add(name)
            return object.__getattribute__(self, name)

    watched = Watched(**{f.name: getattr(judge, f.name) for f in dataclasses.fields(judge)})
    backend = build_backend(watched, RubricConfig(name="r", system="s", user="u"), recorded)
    request = Request(ITEM, shown(ITEM, 1, "letters"), [{"role": "user", "content": "q"}])
    if backend.paid:
        backend.cache_request(request.messages)
    else:
        assert backend.complete(request).text
    own = {f.name for f in dataclasses.fields(CAPABILITIES[kind].group)}
    assert (read & {f.name for f in dataclasses.fields(JudgeConfig)}) - own == set()


def test_a_setting_the_backend_does_not_read_is_named() -> None:
    """A scripted judge given a temperature, an endpoint judge given a scripted bias: each named with its value."""
    scripted = JudgeConfig(backend="scripted", name="noisy", strategy=Strategy.noisy, first_bias=0.2)
    assert [] == unread_settings(scripted)
    assert unread_settings(dataclasses.replace(scripted, temperature=0.5, base_url="http://x")) == [
        "judge 'noisy' (backend=scripted) does not read judge.base_url=http://x, judge.temperature=0.5: it changes "
        "nothing here"
    ]
    live = JudgeConfig(backend="openai", name="gpt", model="m", temperature=0.7, first_bias=0.1)
    assert unread_settings(live) == [
        "judge 'gpt' (backend=openai) does not read judge.first_bias=0.1: it changes nothing here"
    ]


def test_a_backend_nobody_declared_is_refused_in_one_line_before_anything_runs(tmp_path: Path) -> None:
    """judge.backend composes as any name (a kind registered by the user is one); a name no backend is declared
    under stops the run before its folder is made, naming the kinds there are."""
    with pytest.raises(UserError) as refused:
        run_here(tmp_path / "run", "judge.backend=opneai")
    assert str(refused.value) == (
        "judge.backend='opneai' is not a backend: use one of openai, scripted, replay (or a kind registered with "
        "judgebias.backends.register_backend)"
    )
    assert not (tmp_path / "run").exists()
