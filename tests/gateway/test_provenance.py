"""Through a real LiteLLM proxy: every call names who answered, and a run whose judge was not one judge says so."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from judgebias import check
from tests.gateway.helpers import KEY_ENV, MASTER_KEY, PRIMARY_500, Gateway, dataset
from tests.gateway.test_litellm import through
from tests.reliability.helpers import run_here, verdict_lines

pytestmark = pytest.mark.gateway


@pytest.fixture
def failing_primary(gateway: Gateway) -> Iterator[None]:
    """judge-fb's primary answers 500 to a share of its requests (LiteLLM then asks the fallback), for one test."""
    gateway.primary.reconfigure(p500=PRIMARY_500, fault_seed=5)
    yield
    gateway.primary.reconfigure(p500=0.0)


def judged(gateway: Gateway, tmp_path: Path, model: str, *more: str, name: str = "run", items: int = 12) -> Any:
    """One in-process run through the gateway (its cache in tmp_path/cache); its summary."""
    overrides = through(gateway, model, dataset(tmp_path, items), f"cache.dir={tmp_path / 'cache'}", *more)
    return run_here(tmp_path / name, *overrides)


def gate(run: Path, *options: str) -> int:
    """The exit code of `python -m judgebias.check RUN`."""
    return check.main([str(run), *options])


def test_one_alias_answered_by_one_deployment_is_one_judge(
    gateway: Gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An alias answered throughout by one deployment: its deployment is recorded per call, the run is `ok`."""
    monkeypatch.setenv(KEY_ENV, MASTER_KEY)
    summary = judged(gateway, tmp_path, "judge")

    assert ("ok", False, 0, 0) == (
        summary["status"],
        summary["mixed_judge"],
        summary["calls_foreign"],
        summary["gateway_fallbacks"],
    )
    assert 1 == len(summary["answered_by"])
    (line, *_) = verdict_lines(tmp_path / "run")
    assert "judge" == line["model1"]  # LiteLLM rewrites the reply's model to the alias ...
    assert "judgebias-dev" in line["answered_by1"]  # ... and names the deployment in its headers
    assert line["origin1"]["api_base"].startswith(gateway.upstream.url)
    assert 0 == gate(tmp_path / "run")


def test_a_partial_fallback_is_a_mixed_judge_on_screen_in_the_summary_and_in_the_gate(
    gateway: Gateway,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    failing_primary: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Some calls answered by the fallback model: status mixed_judge, counted, mixed items listed, the gate fails."""
    monkeypatch.setenv(KEY_ENV, MASTER_KEY)
    printed: list[str] = []
    from judgebias.engine.runner import run_experiment
    from tests.reliability.helpers import config_of

    overrides = through(gateway, "judge-fb", dataset(tmp_path, 12), f"cache.dir={tmp_path / 'cache'}")
    summary = run_experiment(config_of(*overrides), tmp_path / "run", echo=printed.append)

    assert "mixed_judge" == summary["status"]
    assert 2 == len(summary["answered_by"]), summary["answered_by"]
    assert 0 < summary["gateway_fallbacks"] == summary["calls_foreign"] < 24
    assert summary["items_mixed_judge"] == len(summary["items_mixed_judge_ids"]) > 0
    fallen = [line for line in verdict_lines(tmp_path / "run") if line.get("origin1", {}).get("fallbacks")]
    assert fallen and all(line["model1"] == "backup-model" for line in fallen)
    (screen,) = printed
    (warning,) = [line for line in screen.splitlines() if "MIXED JUDGE" in line]
    assert "from a gateway fallback" in warning
    capsys.readouterr()
    assert 1 == gate(tmp_path / "run")
    assert "not one judge" in capsys.readouterr().out
    assert 0 == gate(tmp_path / "run", "--no-same-judge")


def test_a_complete_fallback_is_a_mixed_judge(
    gateway: Gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The primary down: every call answered by the fallback model, one deployment, and still not the judge named."""
    monkeypatch.setenv(KEY_ENV, MASTER_KEY)
    summary = judged(gateway, tmp_path, "judge-down", items=6)

    assert ("mixed_judge", 12, 12, 0) == (
        summary["status"],
        summary["calls_foreign"],
        summary["gateway_fallbacks"],
        summary["failed_calls"],
    )
    assert 1 == len(summary["answered_by"])
    assert 1 == gate(tmp_path / "run")


def test_load_balancing_across_two_models_is_a_mixed_judge(
    gateway: Gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two models under one alias: the replies all say `judge-lb`, the headers name both models, the run says so."""
    monkeypatch.setenv(KEY_ENV, MASTER_KEY)
    summary = judged(gateway, tmp_path, "judge-lb", items=10)

    assert ["judge-lb"] == summary["models_reported"]  # the body alone is blind to it
    assert 2 == len(summary["answered_by"]), summary["answered_by"]
    assert ("mixed_judge", 0) == (summary["status"], summary["gateway_fallbacks"])
    assert 1 == gate(tmp_path / "run")


def test_one_model_under_two_deployment_names_is_one_judge_once_declared(
    gateway: Gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An alias over two deployments of one model (east, west regions): both deployments answer, counted by the
    upstream; undeclared it is a mixed judge, declared in judge.expect_models it is one judge and the gate passes,
    its provenance still listing both deployments."""
    monkeypatch.setenv(KEY_ENV, MASTER_KEY)
    before = gateway.upstream.stats()["completions_ok"]
    undeclared = judged(gateway, tmp_path, "judge-regions", items=10, name="undeclared")
    sent = gateway.upstream.stats()["completions_ok"] - before
    declared = judged(
        gateway, tmp_path, "judge-regions", "judge.expect_models=[gpt4o-eastus,gpt4o-westus]", items=10,
        name="declared",
    )  # fmt: skip

    assert 20 == sent == sum(undeclared["answered_by"].values())  # the upstream's count of what it answered
    assert 2 == len(undeclared["answered_by"]) and "mixed_judge" == undeclared["status"]
    assert ("ok", 1, 0) == (declared["status"], declared["models_answering"], declared["calls_foreign"])
    assert undeclared["answered_by"] == declared["answered_by"]  # the same replies (cached), both deployments
    assert (
        sorted(undeclared["answered_unexpected"]) == sorted(undeclared["answered_by"])
        and not declared["answered_unexpected"]
    )
    assert 1 == gate(tmp_path / "undeclared") and 0 == gate(tmp_path / "declared")


def test_a_model_and_its_dated_snapshot_behind_one_alias_are_one_judge(
    gateway: Gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """openai/gpt-4o beside openai/gpt-4o-2024-08-06 under one alias: both answer, and it is one judge (ok)."""
    monkeypatch.setenv(KEY_ENV, MASTER_KEY)
    summary = judged(gateway, tmp_path, "judge-snap", items=10)

    assert {"openai/gpt-4o", "openai/gpt-4o-2024-08-06"} == set(summary["answered_by"]), summary["answered_by"]
    assert ("ok", 1) == (summary["status"], summary["models_answering"])
    assert 0 == gate(tmp_path / "run")


def test_an_alias_that_shadows_a_real_model_names_who_answered(
    gateway: Gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """model_group_alias {"gpt-4o": "judge-big"} beside a real gpt-4o deployment: every call answered by big-model
    while the replies say gpt-4o; the printed summary names big-model, and declaring it is the way to accept it."""
    monkeypatch.setenv(KEY_ENV, MASTER_KEY)
    printed: list[str] = []
    from judgebias.engine.runner import run_experiment
    from tests.reliability.helpers import config_of

    overrides = through(gateway, "gpt-4o", dataset(tmp_path, 4), f"cache.dir={tmp_path / 'cache'}")
    summary = run_experiment(config_of(*overrides), tmp_path / "run", echo=printed.append)

    assert {"openai/big-model": 8} == summary["answered_by"]
    assert ["gpt-4o"] == summary["models_reported"]  # LiteLLM rewrites the reply's model to the alias
    assert ["openai/big-model"] == summary["answered_unexpected"]
    (screen,) = printed
    assert "answered by openai/big-model: neither judge.model nor judge.expect_models" in screen
    # The proxy's own model list (GET /v1/model/info) has gpt-4o deployments (the group's own, and judge-snap's
    # dated snapshot), and lists big-model under "gpt-4o" only as the alias's target: the calls were routed elsewhere.
    assert {
        "model": "gpt-4o",
        "gateway_deployments": ["openai/gpt-4o", "openai/gpt-4o-2024-08-06"],
        "answered_by": ["openai/big-model"],
    } == summary["routed_elsewhere"]
    assert "routed elsewhere: the gateway serves 'gpt-4o' (openai/gpt-4o, openai/gpt-4o-2024-08-06), but" in screen
    assert 1 == gate(tmp_path / "run")


def test_routed_elsewhere_is_accepted_once_declared_and_never_claimed_for_a_name_the_gateway_lacks(
    gateway: Gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Declaring big-model accepts the alias (no flag, the gate passes); an alias that is only an alias (judge-big
    names no model of its own) is answered_unexpected but not routed_elsewhere."""
    monkeypatch.setenv(KEY_ENV, MASTER_KEY)
    declared = judged(gateway, tmp_path, "gpt-4o", "judge.expect_models=[big-model]", name="declared", items=4)
    assert (None, []) == (declared["routed_elsewhere"], declared["answered_unexpected"])
    assert 0 == gate(tmp_path / "declared")

    alias = judged(gateway, tmp_path, "judge-big", name="alias", items=4)
    assert ["openai/big-model"] == alias["answered_unexpected"] and alias["routed_elsewhere"] is None


def test_a_rerun_that_mixes_cached_fallback_replies_says_so_and_reask_foreign_asks_only_those(
    gateway: Gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cached fallback replies beside fresh primary ones are flagged; cache.reask=[foreign] re-asks only them."""
    monkeypatch.setenv(KEY_ENV, MASTER_KEY)
    gateway.primary.reconfigure(p500=PRIMARY_500, fault_seed=5)
    try:
        first = judged(gateway, tmp_path, "judge-fb", "data.limit=6", name="first")
    finally:
        gateway.primary.reconfigure(p500=0.0)
    fallen = first["gateway_fallbacks"]
    assert fallen > 0

    mixed = judged(gateway, tmp_path, "judge-fb", name="mixed")  # 12 items: 6 cached, 6 fresh from the primary
    assert ("mixed_judge", fallen) == (mixed["status"], mixed["cached_foreign"])
    assert "cache.reask=[foreign]" in mixed["mixed_judge_note"]

    before = gateway.backup.stats()["requests"], gateway.primary.stats()["requests"]
    clean = judged(gateway, tmp_path, "judge-fb", "cache.reask=[foreign]", name="clean")
    after = gateway.backup.stats()["requests"], gateway.primary.stats()["requests"]
    assert ("ok", 1, fallen) == (clean["status"], len(clean["answered_by"]), clean["calls_live"])
    assert (0, fallen) == (after[0] - before[0], after[1] - before[1])
