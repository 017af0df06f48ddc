"""summary.json's status, decided once from what decides it, in the precedence docs/outputs.md gives."""

from __future__ import annotations

import pytest

from judgebias.figures.summary import status_of


@pytest.mark.parametrize(
    ("failures", "unreadable", "mixed", "reached", "status"),
    [
        (0, False, False, False, "ok"),
        (3, False, False, False, "errors"),
        (3, True, True, False, "errors"),  # a failed call first: unreadable and mixed_judge need none failed
        (0, True, True, False, "unreadable"),  # readable replies first: mixed_judge needs them readable
        (0, False, True, False, "mixed_judge"),
        (3, True, True, True, "budget"),  # the cap stopped the run: a higher cap continues it, whatever else
        (0, False, False, True, "budget"),
    ],
)
def test_the_status_follows_the_documented_precedence(
    failures: int, unreadable: bool, mixed: bool, reached: bool, status: str
) -> None:
    assert status == status_of(failures, unreadable, mixed, reached)
