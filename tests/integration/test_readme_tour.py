"""README's five-minute tour, run as written: every line README shows a command printing is printed today.

The commands and their printed output are read from README.md itself (its ```bash blocks and the plain blocks
that follow them), so a figure that drifts from what the command prints fails here. What cannot match on
another machine or day is masked on both sides: dates and times, ages, folder paths, and the stand-in server's
address (the test serves it on a free port, README on 8000).
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import REPO, free_port, stop_process

pytestmark = pytest.mark.slow

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
STAMP = re.compile(r"\d{4}-\d{2}-\d{2}[ /]\d{2}[:-]\d{2}[:-]\d{2}( UTC)?")
AGE = re.compile(r"\(the oldest [^)]*ago\)")
BASE_URL = re.compile(r"\s*judge\.base_url=\S+")


@dataclass
class Step:
    """A README code block of commands and the block of what they print."""

    commands: list[str]
    printed: list[str]


def tour_steps(readme: str) -> list[Step]:
    """README's steps: each ```bash block followed directly by a plain block (a plain block first, before any bash
    block, is `make run`'s output). Steps are read up to the batch-mode section (later blocks need a key or other
    files)."""
    tour = readme[readme.index("## A five-minute tour") : readme.index("## Batch mode")]
    fences = list(FENCE.finditer(tour))
    steps = [] if fences[0].group(1) else [Step(["python -m judgebias.run"], fences[0].group(2).splitlines())]
    for fence, after in itertools.pairwise(fences):
        between = tour[fence.end() : after.start()]
        if fence.group(1) == "bash" and not after.group(1) and len(between.strip()) < 80:
            steps.append(Step(fence.group(2).splitlines(), after.group(2).splitlines()))
    return steps


def masked(line: str) -> str:
    """A printed line without what differs between machines and days."""
    line = AGE.sub("(the oldest ...)", STAMP.sub("<time>", line)).replace("<time> to <time>", "<time>")
    line = BASE_URL.sub("", line)
    line = re.sub(r"\(outputs/multirun/[^)]*\)", "(<sweep>)", line)
    return line.rstrip().removesuffix("  overrides:")


def compared(printed: list[str]) -> list[str]:
    """The lines of a README block to look for: figures and notes, not elisions, folders or the server's banner."""
    skip = ("...", "run folder:", "report:", "serving on ")
    return [masked(line) for line in printed if line.strip() and not line.strip().startswith(skip)]


def test_every_line_the_tour_shows_is_printed_today(tmp_path: Path) -> None:
    """Each tour command, run from a fresh folder with an empty cache, prints every line README shows for it."""
    steps = tour_steps((REPO / "README.md").read_text(encoding="utf-8"))
    assert 5 <= len(steps), [step.commands for step in steps]
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "HYDRA_FULL_ERROR", "LINES")}
    env |= {"JUDGEBIAS_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "120"}
    shutil.copytree(REPO / "examples", tmp_path / "examples")  # a fresh checkout has them beside README
    port = free_port()
    server: subprocess.Popen[str] | None = None
    sweep_dir: Path | None = None
    try:
        for step in steps:
            out = ""
            for command in step.commands:
                words = shlex.split(command.split("#")[0])
                if not words or words[0] in ("source", "ls"):
                    continue
                if words[0] == "kill":
                    assert server is not None
                    stop_process(server, 10)
                    server = None
                    continue
                words = [sys.executable if word == "python" else word for word in words if word != "&"]
                if "judgebias.devserver" in words:
                    words[words.index("--port") + 1] = str(port)
                    server = subprocess.Popen(words, cwd=tmp_path, env=env, text=True, stdout=subprocess.DEVNULL)
                    continue
                if "judge=local" in words:
                    words.append(f"judge.base_url=http://127.0.0.1:{port}/v1")
                if "judgebias.check" in words:
                    assert sweep_dir is not None
                    words = [str(sweep_dir) if word.startswith("outputs/multirun/") else word for word in words]
                done = subprocess.run(words, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
                out += done.stdout + done.stderr
                if "judgebias.run" in words and "-m" in words[words.index("judgebias.run") :]:
                    sweep_dir = sorted((tmp_path / "outputs" / "multirun").glob("*/*"))[-1]
            printed = {masked(line) for line in out.splitlines()}
            missing = [line for line in compared(step.printed) if line not in printed]
            assert [] == missing, (step.commands, out)
    finally:
        if server is not None:
            stop_process(server, 10)
