"""The configs ship inside the package; an editable install reads them live.

The regular wheel, installed with its dependencies in a clean venv and run from another folder, is checked by
tools/check-wheel.sh (part of `make test`): inside this venv the editable install would hide a missing module.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def test_editable_install_reads_the_checkout_configs() -> None:
    """The development install reads src/judgebias/conf/ from the checkout, so an edited YAML takes effect at once."""
    result = subprocess.run(
        [sys.executable, "-c", "import judgebias.conf as c; print(c.__path__[0])"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert Path(result.stdout.strip()).resolve() == (REPO / "src" / "judgebias" / "conf").resolve()
