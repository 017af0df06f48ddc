"""A SLURM sweep on the Redis cache: one quota across the job array, and replies shared by every node."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.slurm import LAUNCH, SlurmCluster, files_holding, local, measured
from tests.helpers import Cli
from tests.integration.helpers import table
from tests.redis.helpers import RedisServer, most_in_any_second

pytestmark = [pytest.mark.cluster, pytest.mark.redis, pytest.mark.slow]


def test_an_array_on_redis_holds_one_quota_and_a_rerun_from_another_node_is_free(
    cli: Cli, slurm: SlurmCluster, server: Any, redis_server: RedisServer, tmp_path: Path
) -> None:
    """Two jobs at requests_per_minute=240 together stay near 4 requests a second; a rerun elsewhere sends none."""
    judge = server(policy="hash")
    items = 8
    calls = 2 * items * 2  # 2 rubrics x items x 2 orders: 8 s at one quota of 4/s, 4 s at two
    sweep = (
        "-m",
        *LAUNCH,
        "cache.backend=redis",
        f"data.limit={items}",
        "max_concurrency=4",
        "rubric=default,content_only",
    )
    overrides = (*sweep, *local(judge, "judge.requests_per_minute=240"))
    env = slurm.env | {"JUDGEBIAS_REDIS_URL": redis_server.url}
    started = time.monotonic()

    first = cli(*overrides, env=env)
    measured("redis array sweep", started, judge)
    arrivals = [event["arrived"] for event in judge.timeline()]
    print(f"most in any second: {most_in_any_second(arrivals)}, spread {max(arrivals) - min(arrivals):.1f} s")
    elsewhere = Cli(tmp_path / "other-node")  # another cache.dir: only Redis can answer
    (tmp_path / "other-node").mkdir()
    started = time.monotonic()
    rerun = elsewhere(*overrides, env=env)
    measured("redis array sweep, rerun from another cache.dir", started, judge)

    assert (0, 0) == (first.code, rerun.code), (first, rerun)
    assert calls == judge.stats()["requests"]  # once each, none on the rerun
    assert most_in_any_second(arrivals) <= 6  # one quota of 4/s for both jobs (two quotas would allow 8)
    assert max(arrivals) - min(arrivals) >= (calls - 6) / 4
    assert 2 * [("ok", str(2 * items))] == [(r["status"], r["calls_cached"]) for r in table(rerun.run_dir)]
    assert [] == files_holding(first.run_dir, redis_server.password) + files_holding(
        rerun.run_dir, redis_server.password
    )
    assert [] == files_holding(cli.cache_dir, redis_server.password) + files_holding(
        elsewhere.cache_dir, redis_server.password
    )
