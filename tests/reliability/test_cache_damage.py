"""A cache.db damaged in the middle (not in its header): one line naming the cache, how to check it and how to go
on, never a traceback; `python -m judgebias.cache verify` says what is damaged."""

from __future__ import annotations

import pytest

from judgebias.cache.__main__ import main as cache_main
from tests.helpers import InProcessCli

pytestmark = pytest.mark.reliability


def test_a_cache_damaged_in_the_middle_is_one_line_and_verify_names_it(
    cli_here: InProcessCli,
    server,  # type: ignore[no-untyped-def]
    capsys: pytest.CaptureFixture[str],
) -> None:
    """2 KB of 0xff at offset 40960 of a filled cache.db: the next run stops with one line (exit 2); verify exits 2."""
    judge = server(policy="hash")
    local = ("judge=local", f"judge.base_url={judge.url}", "judge.api_key_env=null", "report=false")
    assert 0 == cli_here(*local).code
    database = cli_here.cache_dir / "cache.db"
    assert database.stat().st_size > 45_000
    with database.open("r+b") as damaged:
        damaged.seek(40960)
        damaged.write(b"\xff" * 2048)

    rerun = cli_here(*local)

    (line,) = rerun.stderr.strip().splitlines()
    assert 2 == rerun.code and "Traceback" not in rerun.stderr
    assert "is damaged" in line and "python -m judgebias.cache verify" in line and str(database) in line
    capsys.readouterr()
    assert 2 == cache_main(["verify", "--cache-dir", str(cli_here.cache_dir)])
    out, err = capsys.readouterr()
    assert "malformed" in out and "export what is readable" in err


def test_a_sound_cache_verifies(cli_here: InProcessCli, server, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    """verify on a cache a run just filled: every reply readable, exit 0."""
    judge = server()
    assert 0 == cli_here("judge=local", f"judge.base_url={judge.url}", "judge.api_key_env=null", "data.limit=4").code
    capsys.readouterr()

    assert 0 == cache_main(["verify", "--cache-dir", str(cli_here.cache_dir)])
    assert f"{cli_here.cache_dir}: 8 readable replies, 0 unreadable" in capsys.readouterr().out


def test_a_negative_bootstrap_seed_is_one_line(cli_here: InProcessCli) -> None:
    """bootstrap.seed=-1 is refused at configuration, not a numpy traceback after judging."""
    result = cli_here("bootstrap.seed=-1", "data.limit=2")
    assert 2 == result.code and "bootstrap.seed=-1 must be" in result.stderr
    assert 1 == len(result.stderr.strip().splitlines())
