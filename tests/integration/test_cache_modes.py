"""Cost, dry runs, cache modes and provenance, end to end against the local OpenAI-compatible server."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest

from tests.helpers import REPO, InProcessCli, local_judge

pytestmark = pytest.mark.slow

ITEMS = 4
CALLS = 2 * ITEMS


def local(server: Any, *more: str) -> tuple[str, ...]:
    """Overrides for the `local` judge pointed at a test server: a few items, quick intervals, no report."""
    return local_judge(server, f"data.limit={ITEMS}", "bootstrap.resamples=200", *more)


def requests(server: Any) -> int:
    """Every request the server received (completions and anything else)."""
    stats = server.stats()
    return int(stats["requests"]) + int(stats["other_requests"])


def test_use_mode_answers_a_rerun_from_the_cache(cli_here: InProcessCli, server: Any) -> None:
    """cache.mode=use (the default): the first run calls the judge, an identical rerun sends nothing."""
    judge = server(policy="hash")

    first = cli_here(*local(judge))
    second = cli_here(*local(judge))

    assert (0, 0) == (first.code, second.code), (first, second)
    assert CALLS == requests(judge)
    assert (CALLS, 0) == (first.summary()["calls_live"], first.summary()["calls_cached"])
    assert (0, CALLS) == (second.summary()["calls_live"], second.summary()["calls_cached"])
    assert first.verdicts()[0]["verdict"] == second.verdicts()[0]["verdict"]


def test_refresh_mode_calls_again_and_overwrites(cli_here: InProcessCli, server: Any) -> None:
    """cache.mode=refresh calls the judge for every call even when cached, and the new replies replace the old."""
    judge = server(policy="hash")
    assert 0 == cli_here(*local(judge)).code

    refreshed = cli_here(*local(judge, "cache.mode=refresh"))
    replay = cli_here(*local(judge, "cache.mode=only"))

    assert (0, 0) == (refreshed.code, replay.code), (refreshed, replay)
    assert 2 * CALLS == requests(judge)
    assert CALLS == refreshed.summary()["calls_live"]
    assert CALLS == replay.summary()["calls_cached"]


def test_off_mode_neither_reads_nor_writes_the_cache(cli_here: InProcessCli, server: Any) -> None:
    """cache.mode=off calls the judge every time and leaves nothing behind for a later run."""
    judge = server(policy="hash")

    first = cli_here(*local(judge, "cache.mode=off"))
    second = cli_here(*local(judge, "cache.mode=off"))
    strict = cli_here(*local(judge, "cache.mode=only"))

    assert (0, 0) == (first.code, second.code), (first, second)
    assert 2 * CALLS == requests(judge)
    assert 0 != strict.code


def test_only_mode_on_a_cold_cache_fails_before_any_connection(cli_here: InProcessCli, server: Any) -> None:
    """cache.mode=only on an empty cache exits non-zero with a clear message and the server sees no request."""
    judge = server(policy="hash")

    result = cli_here(*local(judge, "cache.mode=only"))

    assert 2 == result.code, result
    assert "cache.mode=only: no cached reply for item" in result.stderr
    assert "nothing was sent" in result.stderr
    assert 0 == requests(judge)
    assert not (result.run_dir / "verdicts.jsonl").exists()


def test_only_mode_on_a_warm_cache_costs_nothing(cli_here: InProcessCli, server: Any) -> None:
    """cache.mode=only after a full run succeeds with zero requests: the rerun provably costs nothing."""
    judge = server(policy="hash")
    first = cli_here(*local(judge, "judge.price_input_per_mtok=2.5", "judge.price_output_per_mtok=10"))
    judge.reset()

    replay = cli_here(
        *local(judge, "cache.mode=only", "judge.price_input_per_mtok=2.5", "judge.price_output_per_mtok=10")
    )

    assert (0, 0) == (first.code, replay.code), (first, replay)
    assert 0 == requests(judge)
    summary = replay.summary()
    assert (0, CALLS, 0.0) == (summary["calls_live"], summary["calls_cached"], summary["cost_usd"])
    assert first.summary()["cost_usd"] == summary["saved_usd"]


def test_cost_is_charged_for_live_tokens_and_saved_for_cached_ones(cli_here: InProcessCli, server: Any) -> None:
    """cost_usd prices the live calls' reported tokens at the judge's prices; a cached rerun reports it as saved_usd."""
    judge = server(policy="longer")
    prices = ("judge.price_input_per_mtok=3", "judge.price_output_per_mtok=15")

    live = cli_here(*local(judge, *prices)).summary()
    cached = cli_here(*local(judge, *prices)).summary()

    expected = round(live["prompt_tokens"] * 3 / 1e6 + live["completion_tokens"] * 15 / 1e6, 6)
    assert live["prompt_tokens"] > 0
    assert CALLS == live["completion_tokens"]  # the server replies with one word per call
    assert (expected, 0.0) == (live["cost_usd"], live["saved_usd"])
    assert (0.0, expected) == (cached["cost_usd"], cached["saved_usd"])


def test_dry_run_counts_cache_misses_without_calling(cli_here: InProcessCli, server: Any) -> None:
    """dry_run=true sends nothing, and the calls it says would go live are exactly those a real run then makes."""
    judge = server(policy="hash")
    prices = ("judge.price_input_per_mtok=2.5", "judge.price_output_per_mtok=10")

    cold = cli_here(*local(judge, "dry_run=true", *prices))
    assert 0 == cold.code, cold
    assert 0 == requests(judge)
    estimate = json.loads((cold.run_dir / "dry_run.json").read_text(encoding="utf-8"))
    real = cli_here(*local(judge, *prices))
    more = cli_here(*local(judge, "dry_run=true", "data.limit=6", *prices))
    extended = cli_here(*local(judge, "data.limit=6", *prices))

    assert (CALLS, 0) == (estimate["calls_live"], estimate["calls_cached"])
    assert estimate["calls_live"] == real.summary()["calls_live"]
    assert estimate["cost_usd_est"] > 0
    assert "Nothing was called" in cold.stdout
    assert not (cold.run_dir / "summary.json").exists()
    later = json.loads((more.run_dir / "dry_run.json").read_text(encoding="utf-8"))
    assert (4, CALLS) == (later["calls_live"], later["calls_cached"])
    assert later["calls_live"] == extended.summary()["calls_live"]
    assert CALLS + 4 == requests(judge)


def test_provenance_records_the_setup_without_secrets(cli_here: InProcessCli, server: Any) -> None:
    """provenance.json holds the resolved config, a config hash, the model ids served, versions and the git revision."""
    secret = "sk-provenance-secret-0123456789"
    judge = server(policy="hash", api_key=secret)
    keyed = ("judge.api_key_env=JB_TEST_JUDGE_KEY",)

    first = cli_here(*local(judge, *keyed), env={"JB_TEST_JUDGE_KEY": secret})
    again = cli_here(*local(judge, *keyed), env={"JB_TEST_JUDGE_KEY": secret})
    other = cli_here(*local(judge, *keyed, "rubric=content_only"), env={"JB_TEST_JUDGE_KEY": secret})

    assert (0, 0, 0) == (first.code, again.code, other.code), (first, again, other)
    provenance = json.loads((first.run_dir / "provenance.json").read_text(encoding="utf-8"))
    config = provenance["config"]
    assert (judge.url, "JB_TEST_JUDGE_KEY", ITEMS) == (
        config["judge"]["base_url"],
        config["judge"]["api_key_env"],
        config["data"]["limit"],
    )
    assert re.fullmatch(r"[0-9a-f]{16}", provenance["config_hash"])
    hashes = [json.loads((r.run_dir / "provenance.json").read_text())["config_hash"] for r in (again, other)]
    assert provenance["config_hash"] == hashes[0]
    assert provenance["config_hash"] != hashes[1]
    assert ["local-model"] == provenance["models_reported"]
    assert provenance["packages"]["judgebias"] and provenance["packages"]["hydra-core"]
    assert _git_head() == provenance["git_revision"]
    for path in first.run_dir.rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(encoding="utf-8", errors="replace"), path


def _git_head() -> str | None:
    """The checkout's revision, as provenance should record it (None outside a git checkout)."""
    result = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    return result.stdout.strip() or None if result.returncode == 0 else None


def test_a_rerun_answered_wholly_from_the_cache_says_how_old_the_replies_are(
    cli_here: InProcessCli, server: Any
) -> None:
    """When every call came from the cache, one line gives the replies' stored time and how to refresh them."""
    judge = server(policy="hash")

    first = cli_here(*local(judge))
    second = cli_here(*local(judge))
    refreshed = cli_here(*local(judge, "cache.mode=refresh"))

    (note,) = [line for line in second.stdout.splitlines() if "came from the cache" in line]
    assert re.search(r"replies stored \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC.* \(the oldest \d+ s ago\)", note), note
    assert "cache.mode=refresh" in note and note in [f"  note: {n}" for n in second.summary()["notes"]]
    assert "came from the cache" not in first.stdout + refreshed.stdout


def test_an_undeclared_model_behind_no_gateway_asks_nothing_more_and_a_rerun_loads_no_sdk(
    cli_here: InProcessCli, server: Any
) -> None:
    """Replies naming a model nobody declared, from a server that is no gateway: the run asks for no deployment
    list (the server's own count: only the judge calls), and the cached rerun never imports the openai SDK."""
    judge = server(policy="hash", served_model="another-model")
    first = cli_here(*local(judge))
    assert 0 == first.code, first
    assert ["another-model"] == first.summary()["answered_unexpected"]
    assert (CALLS, 0) == (judge.stats()["requests"], judge.stats()["other_requests"])

    probe = (
        "import sys\nfrom judgebias.run import main\nsys.argv = ['judgebias.run', *sys.argv[1:]]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\nprint('openai' in sys.modules, file=sys.stderr)\n"
    )
    overrides = [*local(judge), f"cache.dir={cli_here.cache_dir}", f"hydra.run.dir={cli_here.tmp_path / 'rerun'}"]
    done = subprocess.run(
        [sys.executable, "-c", probe, *overrides], capture_output=True, text=True, env=cli_here.env, timeout=240
    )
    assert done.stderr.strip().splitlines()[-1] == "False", done.stderr[-2000:]
    assert CALLS == judge.stats()["requests"] and 0 == judge.stats()["other_requests"]
