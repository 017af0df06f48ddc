"""judgebias from a notebook: `api.run` gives the run the command line gives for the same overrides, and
`api.verdicts` reads the run's verdicts.jsonl into pandas as the file holds them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgebias.api import run, verdicts
from judgebias.core.errors import UserError
from tests.helpers import THEIR_NAMES as MAPPING
from tests.helpers import InProcessCli, write_items

PAIRS = [
    {"conv_id": 1, "prompt": "2+2?", "response_v1": "4", "response_v2": "five", "human_pref": "v1"},
    {"conv_id": 2, "prompt": "Sky?", "response_v1": "green", "response_v2": "blue", "human_pref": "v2"},
    {"conv_id": 3, "prompt": "Hi", "response_v1": "hello", "response_v2": "hey", "human_pref": "tie"},
]


def test_a_notebook_run_is_the_command_line_run(
    cli_here: InProcessCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_items(tmp_path / "pairs.jsonl", PAIRS)
    overrides = ("data=file", f"data.path={path}", *MAPPING, f"cache.dir={tmp_path / 'cache'}", "report=false")
    command_line = cli_here(*overrides)
    assert command_line.code == 0, command_line
    monkeypatch.chdir(tmp_path)
    done = run(*overrides, out=tmp_path / "notebook")
    assert done.folder == tmp_path / "notebook"
    assert (done.folder / "verdicts.jsonl").read_bytes() == (command_line.run_dir / "verdicts.jsonl").read_bytes()
    assert done.summary == json.loads((done.folder / "summary.json").read_text(encoding="utf-8"))
    assert done.summary["win_rate"] == command_line.summary()["win_rate"]

    table = verdicts(done.folder)
    lines = [json.loads(line) for line in (done.folder / "verdicts.jsonl").read_text(encoding="utf-8").splitlines()]
    assert list(table["id"]) == ["1", "2", "3"] == [line["id"] for line in lines]
    assert list(table["verdict"]) == [line["verdict"] for line in lines]
    assert list(table["human"]) == ["1", "2", "tie"]


def test_a_notebook_mistake_is_the_command_lines_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError) as raised:
        run("judge=nosuchjudge")
    assert str(raised.value).startswith("judge=nosuchjudge: no such option in group 'judge'")
    with pytest.raises(UserError, match=r"data\.path is required"):
        run("data=file", f"cache.dir={tmp_path / 'cache'}")
    with pytest.raises(UserError, match=r"no verdicts\.jsonl here"):
        verdicts(tmp_path)


def test_a_notebook_run_reads_your_own_configs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_items(tmp_path / "pairs.jsonl", PAIRS)
    mine = tmp_path / "myconf" / "data"
    mine.mkdir(parents=True)
    (mine / "mine.yaml").write_text(
        "defaults: [file, _self_]\nname: mine\n"
        f"path: {path}\n"
        "fields: {id: conv_id, question: prompt, a: response_v1, b: response_v2, human: human_pref}\n"
        "labels: {v1: a, v2: b}\nnames: {a: old, b: new}\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    done = run("data=mine", f"cache.dir={tmp_path / 'cache'}", "report=false", config_dir=tmp_path / "myconf")
    assert done.summary["data"] == "mine"
    assert done.summary["headline"]["name"] == "old" and done.summary["headline"]["other"] == "new"
    assert done.folder.parent.parent == tmp_path / "outputs"
