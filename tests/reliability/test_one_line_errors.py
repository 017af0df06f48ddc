"""One line, never a traceback: odd data, the user's own YAML, early Ctrl-C, a used port, a closed pipe (exit 2 / 130)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import Cli, free_port, interrupt_after_start, stop_process
from tests.reliability.helpers import judgebias

pytestmark = [pytest.mark.reliability, pytest.mark.slow]

IMPORT_TIMED_RUN = (sys.executable, "-X", "importtime", "-m", "judgebias.run")  # names each module once imported
ITEM = '{{"id": "a", "question": "q", "a": "x", "b": "y", "extra": {}}}\n'


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The single `judgebias: error:` line of a refused run (asserting exit 2 and nothing else on stderr)."""
    assert 2 == result.returncode, result.stderr
    lines = result.stderr.strip().splitlines()
    assert 1 == len(lines) and lines[0].startswith("judgebias: error: "), result.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("value", "reason"),
    [("9" * 5000, "a number too long to read"), ("[" * 200_000 + "]" * 200_000, "values nested too deeply")],
    ids=["4300-digits", "nested-200k"],
)
def test_a_jsonl_value_python_cannot_read_is_named_by_file_and_line(cli: Cli, value: str, reason: str) -> None:
    """An integer over 4,300 digits or nesting 200,000 deep is one line naming file and line."""
    data = cli.tmp_path / "odd.jsonl"
    data.write_text(ITEM.format(value), encoding="utf-8")
    line = one_error_line(judgebias(cli, "data=jsonl", f"data.path={data}", "hydra.run.dir=out"))
    assert line.startswith(f"judgebias: error: {data}:1: {reason}")


@pytest.fixture
def own_judges(cli: Cli) -> Path:
    """A --config-dir with three judges of the user's: a misspelt key, a wrong type, a YAML syntax error."""
    folder = cli.tmp_path / "conf" / "judge"
    folder.mkdir(parents=True)
    (folder / "typo.yaml").write_text("defaults: [local]\nname: typo\ntemprature: 0.2\n", encoding="utf-8")
    (folder / "typed.yaml").write_text("defaults: [local]\nname: typed\ntemperature: warm\n", encoding="utf-8")
    (folder / "broken.yaml").write_text("defaults: [local]\nname: broken\ntemperature: [0.2\n", encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    ("judge", "expected"),
    [
        ("typo", "typo.yaml: judge.temprature is not a judgebias setting: did you mean judge.temperature?"),
        ("typed", "typed.yaml: judge.temperature: Value 'warm' of type 'str' could not be converted to Float"),
        ("broken", "broken.yaml:4: not valid YAML ("),
    ],
)
def test_a_mistake_in_ones_own_yaml_names_the_file_and_the_key(
    cli: Cli, own_judges: Path, judge: str, expected: str
) -> None:
    """A misspelt key, a wrong type or a syntax error in a --config-dir file is one line naming the file."""
    line = one_error_line(judgebias(cli, "--config-dir", str(own_judges.parent), f"judge={judge}", "hydra.run.dir=o"))
    assert f"judgebias: error: {own_judges}/{expected}" in line


def test_a_missing_config_dir_is_one_line(cli: Cli) -> None:
    """--config-dir naming a folder that does not exist is one line naming it."""
    line = one_error_line(judgebias(cli, "--config-dir", "nowhere", "hydra.run.dir=o"))
    assert f"--config-dir '{cli.tmp_path / 'nowhere'}': no such folder" in line


def test_a_value_hydra_cannot_parse_says_how_to_quote_it(cli: Cli) -> None:
    """'data.path=~/x.jsonl' (Hydra's grammar refuses ~ unquoted) is one line showing the quoted form."""
    line = one_error_line(judgebias(cli, "data=jsonl", "data.path=~/x.jsonl", "hydra.run.dir=o"))
    assert """'data.path="~/x.jsonl"'""" in line


def test_a_cache_dir_in_proc_is_one_line(cli: Cli) -> None:
    """cache.dir=/proc (not a place for files) is refused in one line."""
    line = one_error_line(judgebias(cli, "cache.dir=/proc", "judge=local", "judge.api_key_env=null", "hydra.run.dir=o"))
    assert "cache.dir=" in line


@pytest.mark.parametrize("after", [0.0, 0.15, 0.35])
def test_ctrl_c_while_starting_is_one_line_and_exit_130(cli: Cli, after: float) -> None:
    """SIGINT during the imports and the composition of the config: exit 130, one line, no traceback."""
    process = subprocess.Popen(
        [*IMPORT_TIMED_RUN, "hydra.run.dir=o", "data.limit=2", f"cache.dir={cli.cache_dir}"],
        cwd=cli.tmp_path,
        env=cli.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    stderr = interrupt_after_start(process, after)
    assert 130 == process.returncode, stderr
    assert "Traceback" not in stderr and 1 == len(stderr.strip().splitlines()) and "interrupted" in stderr


def test_help_into_a_closed_pipe_is_quiet(cli: Cli) -> None:
    """`python -m judgebias.run --help | head -1`: the reader goes away; no BrokenPipeError traceback."""
    process = subprocess.Popen(
        [sys.executable, "-m", "judgebias.run", "--help"],
        cwd=cli.tmp_path,
        env=cli.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.read(1)
    process.stdout.close()
    stderr = process.stderr.read().decode()
    process.wait(timeout=60)
    assert "" == stderr and 0 == process.returncode


def test_a_second_devserver_on_a_used_port_is_one_line(cli: Cli) -> None:
    """The dev server on a port another one holds exits 2 with one line naming the port."""
    port = str(free_port())
    command = [sys.executable, "-m", "judgebias.devserver", "--port", port]
    first = subprocess.Popen(command, cwd=cli.tmp_path, env=cli.env, stdout=subprocess.PIPE, text=True)
    try:
        assert first.stdout is not None and "serving on" in first.stdout.readline()
        second = subprocess.run(command, cwd=cli.tmp_path, env=cli.env, capture_output=True, text=True, timeout=60)
    finally:
        stop_process(first, timeout=10)
    assert 2 == second.returncode
    assert [
        f"devserver: cannot listen on 127.0.0.1:{port}: Address already in use (another server there? choose "
        "another --port, or --port 0 for a free one)"
    ] == second.stderr.splitlines()
