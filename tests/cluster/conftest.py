"""Fixtures of the cluster tests: a private single-node SLURM for the session, and the CLI submitting to it."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator

import pytest

from tests.cluster.slurm import SlurmCluster, missing_program, start_slurm
from tests.redis.conftest import redis_server  # noqa: F401  (the same fixture, shared)

HAS_SUBMITIT = importlib.util.find_spec("hydra_plugins.hydra_submitit_launcher") is not None


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """One private SLURM for the whole session, stopped at its end even when tests fail."""
    missing = missing_program()
    if missing is not None:
        pytest.skip(f"{missing} is not installed (Debian's slurm-wlm and munge: tools/install-system.sh)")
    if os.geteuid() != 0:
        pytest.skip("a private SLURM needs root (slurmd starts each job as the user who submitted it)")
    if not HAS_SUBMITIT:
        pytest.skip("hydra-submitit-launcher is not installed (pip install -e '.[dev]')")
    cluster = start_slurm(tmp_path_factory.mktemp("slurm"))
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def slurm(slurm_cluster: SlurmCluster) -> Iterator[SlurmCluster]:
    """The session's SLURM, with no job of an earlier test left on it afterwards."""
    yield slurm_cluster
    slurm_cluster.cancel_all()
