"""A real prompt change compared: GPT-4 under LLMBar's Vanilla_NoRules prompt against the same GPT-4 under its
Metrics_Reference prompt, both recorded in both orders on the 200 MT-Bench pairs (../shared/data/mtbench-human).
The discordant items are counted by hand from the recorded calls, and each exact p-value is SciPy's binomial test
(the other tools' environment, .venv-oracles) on those counts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from judgebias import compare
from tests.integration.test_audit_real import ORACLES
from tests.reliability.helpers import run_here

pytestmark = pytest.mark.slow

BASE, CAND = "GPT-4/Vanilla_NoRules", "GPT-4/Metrics_Reference"


def recorded_calls(data_root: Path, judge: str) -> dict[str, tuple[str, str]]:
    rows = (json.loads(line) for line in (data_root / "mtbench-human" / "judgments.jsonl").open(encoding="utf-8"))
    return {row["id"]: (row["call1"], row["call2"]) for row in rows if row["judge"] == judge}


def scipy_binomial_p(k: int, n: int) -> float:
    if not ORACLES.exists():
        pytest.skip("SciPy is not installed in .venv-oracles: tools/install-oracles.sh makes it")
    code = f"from scipy.stats import binomtest; print(binomtest({k}, {n}, 0.5).pvalue)"
    done = subprocess.run([str(ORACLES), "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return float(done.stdout.strip())


@pytest.mark.oracle
def test_a_recorded_prompt_change_compared_against_the_records_and_scipy(tmp_path: Path, data_root: Path) -> None:
    folders = []
    for judge in (BASE, CAND):
        folder = tmp_path / judge.replace("/", "_")
        run_here(
            folder, "judge=replay", f"judge.name={judge}", "data=mtbench_human", "rubric=llmbar",
            "bootstrap.resamples=300", "report=false", "progress=off", f"cache.dir={tmp_path / 'cache'}",
        )  # fmt: skip
        folders.append(folder)
    old, new = recorded_calls(data_root, BASE), recorded_calls(data_root, CAND)
    agrees = {("A", "B"), ("B", "A")}  # forced choice, no tie: consistent = a different letter in each order
    consistency = (
        sum(1 for i in old if old[i] in agrees and new[i] not in agrees),
        sum(1 for i in old if new[i] in agrees and old[i] not in agrees),
    )
    first = (
        sum(1 for i in old if old[i] == ("A", "A") and new[i] != ("A", "A")),
        sum(1 for i in old if new[i] == ("A", "A") and old[i] != ("A", "A")),
    )

    comparison = compare.compare_runs(compare.read_run(folders[0]), compare.read_run(folders[1]))

    assert 200 == comparison.matched and "question_id" == comparison.cluster
    for name, counts in (("position_consistency", consistency), ("biased_first", first)):
        difference = comparison.differences[name]
        assert counts == difference.discordant, name
        assert difference.diff == pytest.approx((counts[1] - counts[0]) / 200)
        assert difference.p == pytest.approx(scipy_binomial_p(counts[1], sum(counts)), rel=1e-9)
    low, high = comparison.differences["biased_first"].ci or (None, None)
    assert low is not None and high is not None and 0 < low < high  # the prompt change made GPT-4 follow the first slot
