"""What a failed run leaves in its folder: its failure record and config, no empty files."""

from __future__ import annotations

import pytest

from tests.helpers import InProcessCli, free_port


def refused_url() -> str:
    """A base URL on 127.0.0.1 where nothing listens (a port bound, then released)."""
    return f"http://127.0.0.1:{free_port()}/v1"


@pytest.mark.slow
def test_a_run_that_cannot_reach_its_judge_leaves_no_empty_files(cli_here: InProcessCli) -> None:
    """A run whose endpoint refuses every call leaves summary.json and .hydra/, but no empty log or verdicts."""
    overrides = ("judge=local", f"judge.base_url={refused_url()}", "judge.max_retries=0", "data.limit=3")

    result = cli_here(*overrides, env={"OPENAI_API_KEY": "sk-test-not-a-real-key-000000"})

    assert 2 == result.code, result
    assert "failed" == result.summary()["status"]
    assert [".hydra", "summary.json"] == sorted(path.name for path in result.run_dir.iterdir())


@pytest.mark.slow
def test_a_failed_sweep_job_leaves_no_empty_files(cli_here: InProcessCli) -> None:
    """A sweep job that fails leaves no 0-byte run.log and no empty verdicts.jsonl.part beside its summary."""
    overrides = ("judge=local", f"judge.base_url={refused_url()}", "judge.max_retries=0", "data.limit=3")

    result = cli_here(
        "-m", *overrides, "bootstrap.resamples=10,20", env={"OPENAI_API_KEY": "sk-test-not-a-real-key-0000"}
    )

    assert 1 == result.code, result
    for job in ("0", "1"):
        assert [".hydra", "summary.json"] == sorted(path.name for path in (result.run_dir / job).iterdir())
