"""A sweep on a local Ray through `python -m judgebias.run -m hydra/launcher=ray` (Hydra's Ray launcher)."""

from __future__ import annotations

import importlib.util
import time
from typing import Any

import pytest

from tests.cluster.slurm import local
from tests.helpers import Cli
from tests.integration.helpers import table

HAS_RAY = importlib.util.find_spec("hydra_plugins.hydra_ray_launcher") is not None

# A local Ray of two CPUs started by the launcher and stopped with it; no dashboard (a fixed port), no token file
# written into the home folder.
RAY = ("hydra/launcher=ray", "+hydra.launcher.ray.init.num_cpus=2", "+hydra.launcher.ray.init.include_dashboard=false")


@pytest.mark.cluster
@pytest.mark.slow
@pytest.mark.skipif(not HAS_RAY, reason="hydra-ray-launcher is not installed (pip install -e '.[dev]')")
def test_a_sweep_runs_on_a_local_ray_and_shares_the_cache(cli: Cli, server: Any) -> None:
    """Two jobs run as Ray tasks and end in one table; the rerun of the sweep sends no request."""
    judge = server(policy="hash", latency=0.05)
    sweep = ("-m", *RAY, "data.limit=6", "rubric=default,content_only", *local(judge))
    env = {"RAY_AUTH_MODE": "disabled"}
    started = time.monotonic()

    first = cli(*sweep, env=env)
    sent = judge.stats()["requests"]
    print(f"\nray sweep, first run: {time.monotonic() - started:.1f} s wall, {sent} requests")
    started = time.monotonic()
    rerun = cli(*sweep, env=env)
    print(f"ray sweep, rerun: {time.monotonic() - started:.1f} s wall, {judge.stats()['requests']} requests")

    assert (0, 0) == (first.code, rerun.code), (first, rerun)
    assert 24 == sent  # 2 rubrics x 6 items x 2 orders
    assert sent == judge.stats()["requests"]
    assert 2 * [("ok", "6")] == [(r["status"], r["n"]) for r in table(first.run_dir)]
    assert 2 * [("ok", "12")] == [(r["status"], r["calls_cached"]) for r in table(rerun.run_dir)]
