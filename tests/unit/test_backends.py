"""The backend interface: every optional capability has a default, and the registry builds a backend by name."""

from __future__ import annotations

import pytest

from judgebias.backends import BACKENDS, build_backend
from judgebias.backends.base import Backend
from judgebias.backends.scripted import ScriptedJudge
from judgebias.config.checks import CAPABILITIES
from judgebias.config.schema import JudgeConfig, RubricConfig
from judgebias.core.errors import UserError
from judgebias.core.item import Item
from judgebias.core.prompt import shown
from judgebias.core.record import Reply, Request

RUBRIC = RubricConfig(name="r", system="s", user="u")
ITEM = Item(id="1", question="q", a="short", b="a longer answer")


class Echo(Backend):
    """A backend that implements only the one required method."""

    def complete(self, request: Request) -> Reply:
        """Reply with the first label."""
        return Reply(text=request.view.label_first)


def test_a_backend_with_only_complete_has_every_capability_defaulted() -> None:
    """A free backend answers every capability question without probing: unpaid, every item, both orders."""
    backend = Echo()
    backend.check_key()
    backend.stop("done")

    assert (False, 0, True, False, "Echo") == (
        backend.paid,
        backend.retries,
        backend.has(ITEM),
        backend.one_order(ITEM),
        backend.describe(),
    )
    with pytest.raises(NotImplementedError):
        backend.cache_request([])


def test_the_registry_has_one_backend_per_name() -> None:
    """Each shipped kind has its factory and its capabilities (a kind with one but not the other would be refused
    by the checks, or built unchecked)."""
    assert {"openai", "scripted", "replay"} == set(BACKENDS) == set(CAPABILITIES)  # each kind built and checked


def test_a_scripted_judge_is_built_by_name_and_answers_in_the_rubric_words() -> None:
    """judge.backend=scripted builds the scripted judge, which writes the label shown for its choice.

    In order 2 the longer answer b is shown first, under the label "1".
    """
    judge = JudgeConfig(backend="scripted", name="longer", strategy="longer")  # type: ignore[arg-type]
    backend = build_backend(judge, RUBRIC, None)
    request = Request(ITEM, shown(ITEM, 2, "numbers"), [])

    assert (ScriptedJudge, "1") == (type(backend), backend.complete(request).text)


def test_an_unknown_backend_built_directly_is_a_user_error() -> None:
    """A Config built in Python with a backend name no one registered fails naming the allowed ones."""
    judge = JudgeConfig(backend="bogus", name="x")

    with pytest.raises(UserError, match="use one of openai, scripted, replay"):
        build_backend(judge, RUBRIC, None)
