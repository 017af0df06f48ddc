"""What a new user still tripped over on a second pass: the header's overrides, --version, hints, the README's
commands, file permissions and the note on a run answered wholly from the cache."""

from __future__ import annotations

import pytest

from tests.conftest import Cli

pytestmark = pytest.mark.slow


def test_header_names_the_overrides_that_change_the_run(cli: Cli) -> None:
    """`rubric.labels=tags` shows in the printed header, beside the group choices, without Hydra's own settings."""
    result = cli("rubric.labels=tags", "data.limit=3", "report=false")

    header = result.stdout.splitlines()[0]
    assert header.startswith("judgebias  judge=noisy  rubric=default  data=q1  status=ok  overrides: ")
    assert "rubric.labels=tags" in header and "data.limit=3" in header
    assert "hydra.run.dir" not in header
