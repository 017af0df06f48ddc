"""examples/ci/judge-change.sh end to end, as a CI job runs it: a stand-in judge on 127.0.0.1 that follows an order
cue in its prompt (the dev server's `suggestible`), the base run's replies recorded once and handed in as a bundle,
then the candidate rubric judged live. The server's own request count proves the base cost nothing; a rubric that
leaks an order cue fails the gate (exit 1), one reworded without changing what the judge decides by passes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from judgebias.devserver.server import RunningServer, ServerOptions, start_server
from tests.helpers import REPO

pytestmark = pytest.mark.slow

SCRIPT = REPO / "examples" / "ci" / "judge-change.sh"
WORKFLOW = REPO / "examples" / "ci" / "judge-change.yml"
CONF = REPO / "examples" / "ci" / "conf"
ITEMS = 48  # q1


@pytest.fixture(scope="module")
def suggestible() -> Iterator[RunningServer]:
    running = start_server(ServerOptions(policy="hash", suggestible=0.8))
    yield running
    running.stop()


def env_of(tmp_path: Path, **settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGEBIAS_", "OPENAI_"))}
    return env | {"PYTHON": sys.executable, "JUDGEBIAS_CACHE_DIR": str(tmp_path / "user-cache")} | settings


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory, suggestible: RunningServer) -> Path:
    """The base run's replies, recorded once (as on the main branch) and exported as a bundle."""
    folder = tmp_path_factory.mktemp("recorded")
    judge = ["judge=local", f"judge.base_url={suggestible.url}"]
    run = [
        sys.executable,
        "-m",
        "judgebias.run",
        *judge,
        f"cache.dir={folder / 'cache'}",
        f"hydra.run.dir={folder / 'run'}",
    ]
    subprocess.run([*run, "report=false", "progress=off"], check=True, capture_output=True, env=env_of(folder))
    path = folder / "base-replies.jsonl.gz"
    export = [sys.executable, "-m", "judgebias.cache", "export", str(path), "--run", str(folder / "run")]
    subprocess.run([*export, "--cache-dir", str(folder / "cache")], check=True, capture_output=True, env=env_of(folder))
    return path


def judge_change(tmp_path: Path, server: RunningServer, bundle: Path, rubric: str) -> subprocess.CompletedProcess[str]:
    judge = f"judge=local judge.base_url={server.url}"
    env = env_of(
        tmp_path,
        JUDGEBIAS_BASE=judge,
        JUDGEBIAS_CAND=f"--config-dir {CONF} {judge} rubric={rubric}",
        JUDGEBIAS_BASE_BUNDLE=str(bundle),
        JUDGEBIAS_CI_OUT=str(tmp_path / "ci"),
    )
    return subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)


@pytest.mark.parametrize(("rubric", "code"), [("leaky", 1), ("reworded", 0)])
def test_the_recipe_gates_a_rubric_change_and_the_base_costs_nothing(
    tmp_path: Path, suggestible: RunningServer, bundle: Path, rubric: str, code: int
) -> None:
    before = suggestible.stats()["requests"]

    done = judge_change(tmp_path, suggestible, bundle, rubric)

    assert code == done.returncode, done.stdout[-3000:] + done.stderr[-3000:]
    assert 2 * ITEMS == suggestible.stats()["requests"] - before  # the candidate's calls only, by the server's count
    base = json.loads((tmp_path / "ci" / "base" / "summary.json").read_text(encoding="utf-8"))
    assert (0, 2 * ITEMS) == (base["calls_live"], base["calls_cached"])
    document = json.loads((tmp_path / "ci" / "compare" / "compare.json").read_text(encoding="utf-8"))
    assert (tmp_path / "ci" / "compare" / "compare.html").exists()
    if rubric == "leaky":
        assert "position_consistency dropped against the baseline" in done.stdout
        assert document["differences"]["biased_first"]["ci"][0] > 0.02
    else:
        assert done.stdout.rstrip().splitlines()[-1].startswith("OK: 1 job passes")
        assert [] == document["moved"]


def test_the_recipe_refuses_to_run_without_its_settings(tmp_path: Path) -> None:
    done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, env=env_of(tmp_path), cwd=tmp_path)
    assert 0 != done.returncode and "set JUDGEBIAS_BASE" in done.stderr


def test_the_workflow_runs_the_recipe_with_the_settings_it_reads() -> None:
    """The GitHub Actions file is valid YAML, runs the script, and sets only settings the script reads."""
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    steps = workflow["jobs"]["gate"]["steps"]
    (gate,) = [step for step in steps if "judge-change.sh" in str(step.get("run", ""))]
    script = SCRIPT.read_text(encoding="utf-8")
    assert all(name in script for name in gate["env"] if name.startswith("JUDGEBIAS_"))
    assert {"JUDGEBIAS_BASE", "JUDGEBIAS_CAND", "JUDGEBIAS_BASE_BUNDLE"} <= set(gate["env"])
