"""The configs ship inside the package: a regular wheel install works from any folder, not just a checkout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def test_wheel_install_runs_from_any_folder(tmp_path: Path) -> None:
    """A wheel installed elsewhere composes its configs from the package and runs the default job."""
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), str(REPO)],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheels.glob("judgebias-*.whl")
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = os.environ | {"PYTHONPATH": str(site)}
    where = subprocess.run(
        [sys.executable, "-c", "import judgebias; print(judgebias.__file__)"],
        cwd=elsewhere, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert where.stdout.startswith(str(site))
    result = subprocess.run(
        [sys.executable, "-m", "judgebias.run", f"cache.dir={tmp_path / 'cache'}", "hydra.run.dir=out", "data.limit=5"],
        cwd=elsewhere, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert 0 == result.returncode, result.stderr
    assert 5 == json.loads((elsewhere / "out" / "summary.json").read_text())["n_items"]
    assert (elsewhere / "out" / ".hydra" / "config.yaml").exists()
    assert "</html>" in (elsewhere / "out" / "report.html").read_text(encoding="utf-8")  # templates ship too


def test_editable_install_reads_the_checkout_configs() -> None:
    """The development install reads src/judgebias/conf/ from the checkout, so an edited YAML takes effect at once."""
    result = subprocess.run(
        [sys.executable, "-c", "import judgebias.conf as c; print(c.__path__[0])"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert Path(result.stdout.strip()).resolve() == (REPO / "src" / "judgebias" / "conf").resolve()
