"""Helpers of the integration tests: a live judge's overrides, and a sweep's printed table read back."""

from __future__ import annotations

import csv
from pathlib import Path

KEY = {"LOCAL_JUDGE_KEY": "sk-test-local"}


def local(server_url: str, *more: str) -> list[str]:
    """Overrides for the `local` judge pointed at a test server, with fast retries."""
    return [
        "judge=local",
        f"judge.base_url={server_url}",
        "judge.api_key_env=LOCAL_JUDGE_KEY",
        "judge.retry_backoff=0.01",
        "bootstrap.resamples=100",
        "report=false",
        *more,
    ]


QUICK = ("bootstrap.resamples=200", "report=false")


def table(sweep_dir: Path) -> list[dict[str, str]]:
    """The rows of a sweep's sweep_summary.csv."""
    with (sweep_dir / "sweep_summary.csv").open(encoding="utf-8") as file:
        return list(csv.DictReader(file))
