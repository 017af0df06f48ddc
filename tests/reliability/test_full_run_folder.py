"""A run folder whose disk fills during a large offline run: one line and exit 2, as a live run ends, never Hydra's
traceback; verdicts.jsonl.part left a whole-line prefix of the full run's verdicts (in one process, in parts while
they are judged, and while they are joined); no verdicts.jsonl without summary.json, even when the run dies in its
summary. The disk is real: a tmpfs of a fixed size mounted on the run folder (root only; skipped elsewhere). The
oracle is the same run on an ordinary disk: its verdicts.jsonl, byte for byte."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from judgebias.engine import items as items_module
from judgebias.engine import parts, runner
from tests.helpers import InProcessCli, write_items
from tests.reliability.helpers import pairs, run_here

pytestmark = pytest.mark.reliability

OFFLINE = ("judge=longer", "report=false", "progress=off", "bootstrap.resamples=0")


@pytest.fixture
def mounts(tmp_path: Path) -> Iterator[Any]:
    """mount(folder, kib): a real tmpfs of that size on `folder` (made), unmounted after the test."""
    mounted: list[Path] = []

    def mount(folder: Path, kib: int) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={kib}k", "tmpfs", str(folder)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a small filesystem here: {done.stderr.strip()}")
        mounted.append(folder)
        return folder

    yield mount
    for folder in mounted:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.fixture
def in_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parts of at least 50 items on 3 cores (real forks), as tests/integration/test_parts.py sets them."""
    monkeypatch.setattr(parts, "PART_MIN_ITEMS", 50)
    monkeypatch.setattr(parts, "_cores", lambda: 3)
    monkeypatch.setattr(items_module, "_MARK_EVERY", 16)


def reference(tmp_path: Path, data: Path) -> bytes:
    """The verdicts.jsonl of the same run on an ordinary disk."""
    run_here(tmp_path / "reference", *OFFLINE, "data=jsonl", f"data.path={data}")
    return (tmp_path / "reference" / "verdicts.jsonl").read_bytes()


def assert_stopped_cleanly(result: Any, full: bytes) -> str:
    """Exit 2 with one line naming the file and the full disk; .part a whole-line prefix of the full run; no
    verdicts.jsonl, no part's file left; the line, for the caller to read."""
    assert 2 == result.code, result
    lines = result.stderr.strip().splitlines()
    assert 1 == len(lines) and "no space left on its disk" in lines[0] and "Traceback" not in result.stderr, lines
    folder = result.run_dir
    assert not (folder / "verdicts.jsonl").exists()
    partial = folder / "verdicts.jsonl.part"
    kept = partial.read_bytes() if partial.exists() else b""
    assert full.startswith(kept) and (not kept or kept.endswith(b"\n")), (len(kept), kept[-80:])
    assert [] == sorted(p.name for p in folder.iterdir() if p.name.startswith("verdicts.jsonl.part."))
    return lines[0]


def test_a_full_run_folder_in_one_process_is_one_line(cli_here: InProcessCli, tmp_path: Path, mounts: Any) -> None:
    """2,000 items into a 128 KiB disk: the run stops at the write that does not fit."""
    data = write_items(tmp_path / "items.jsonl", pairs(2000))
    full = reference(tmp_path, data)
    mounts(tmp_path / "run1", 128)
    result = cli_here(*OFFLINE, "data=jsonl", f"data.path={data}")
    line = assert_stopped_cleanly(result, full)
    assert "cannot write verdicts.jsonl.part" in line


def test_a_full_run_folder_while_parts_are_judged_and_joined_is_one_line(
    cli_here: InProcessCli, tmp_path: Path, mounts: Any, in_parts: None
) -> None:
    """900 items in three parts, on disks from too small for the parts' own files to just too small to join them:
    every size ends in one line and a whole-line prefix; some fill while the parts are joined."""
    data = write_items(tmp_path / "items.jsonl", pairs(900))
    full = reference(tmp_path, data)
    size_kib = len(full) // 1024
    joining = 0
    for run, share in enumerate((0.4, 0.8, 1.0, 1.1, 1.2, 1.3), start=1):
        mounts(tmp_path / f"run{run}", int(size_kib * share) + 8)
        result = cli_here(*OFFLINE, "data=jsonl", f"data.path={data}")
        if result.code == 0:  # the disk was large enough after all: the run is whole
            assert full == (result.run_dir / "verdicts.jsonl").read_bytes()
            continue
        joining += "joining the parts" in assert_stopped_cleanly(result, full)
    assert joining, "no size filled the disk while the parts were joined"


def test_a_run_that_dies_in_its_summary_leaves_no_verdicts_jsonl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory runs out while the figures are computed: the verdicts stay in verdicts.jsonl.part, every line there,
    and there is no verdicts.jsonl without a summary.json."""
    data = write_items(tmp_path / "items.jsonl", pairs(40))

    def out_of_memory(*args: Any, **kwargs: Any) -> Any:
        raise MemoryError

    monkeypatch.setattr(runner, "build_summary", out_of_memory)
    with pytest.raises(MemoryError):
        run_here(tmp_path / "run", *OFFLINE, "data=jsonl", f"data.path={data}")
    names = sorted(path.name for path in (tmp_path / "run").iterdir())
    assert ["verdicts.jsonl.part"] == names
    assert 40 == len((tmp_path / "run" / "verdicts.jsonl.part").read_text(encoding="utf-8").splitlines())
