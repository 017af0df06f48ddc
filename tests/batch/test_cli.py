"""Batch mode from the command line: python -m judgebias.run against the devserver's Batch API."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from judgebias.devserver.batch import BatchOptions
from judgebias.devserver.server import RunningServer
from tests.helpers import Cli, InProcessCli, Result, write_items
from tests.reliability.helpers import pairs

pytestmark = pytest.mark.slow

ITEMS = 6
CALLS = 2 * ITEMS
EXIT_BATCH_PENDING = 75


def local(cli: Cli, server: RunningServer, *more: str, mode: str = "batch") -> tuple[str, ...]:
    """Overrides for the `local` judge at a test server in the given mode, on a small dataset of its own."""
    data = cli.tmp_path / "items.jsonl"
    if not data.exists():
        write_items(data, pairs(ITEMS))
    return (
        "judge=local",
        f"judge.base_url={server.url}",
        "judge.api_key_env=null",
        f"judge.mode={mode}",
        "judge.batch_poll_seconds=0.05",
        "data=jsonl",
        f"data.path={data}",
        "bootstrap.resamples=0",
        "report=false",
        *more,
    )


def batch_stats(server: RunningServer) -> dict[str, int]:
    """Uploads, batches created, lines answered by the server's Batch API."""
    return dict(server.stats()["batch"])


def verdicts_text(result: Result) -> str:
    """The run's verdicts.jsonl as written."""
    return (result.run_dir / "verdicts.jsonl").read_text(encoding="utf-8")


def test_batch_verdicts_equal_live_verdicts_and_a_rerun_sends_nothing(cli_here: InProcessCli, server: Any) -> None:
    """A batch run writes byte-identical verdicts to a live run, with no live call; its rerun sends nothing."""
    judge = server(policy="hash")
    live = cli_here(*local(cli_here, judge, f"cache.dir={cli_here.tmp_path / 'live'}", mode="live"))
    assert 0 == live.code, live
    live_requests = judge.stats()["requests"]

    batched = cli_here(*local(cli_here, judge))
    rerun = cli_here(*local(cli_here, judge))

    assert (0, 0) == (batched.code, rerun.code), (batched, rerun)
    assert verdicts_text(live) == verdicts_text(batched)
    assert live_requests == judge.stats()["requests"]  # the batch run made no live call
    assert {"uploads": 1, "batches_created": 1, "lines_answered": CALLS, "cancels": 0} == batch_stats(judge)
    summary = batched.summary()
    assert (CALLS, 0, 0) == (summary["calls_batched"], summary["calls_cached"], summary["failed_calls"])
    assert [("completed", CALLS, CALLS, 0)] == [
        (b["status"], b["total"], b["completed"], b["failed"]) for b in summary["batches"]
    ]
    assert (0, CALLS, []) == (
        rerun.summary()["calls_batched"],
        rerun.summary()["calls_cached"],
        rerun.summary()["batches"],
    )
    assert 1 == batch_stats(judge)["batches_created"]


def test_batched_calls_cost_the_batch_price(cli_here: InProcessCli, server: Any) -> None:
    """cost_usd of a batch run is the live run's cost times batch_discount; the dry run shows both estimates."""
    judge = server(policy="hash")
    prices = ("judge.price_input_per_mtok=1000000", "judge.price_output_per_mtok=2000000")
    dry = cli_here(*local(cli_here, judge, *prices, "dry_run=true"))
    live = cli_here(*local(cli_here, judge, *prices, f"cache.dir={cli_here.tmp_path / 'live'}", mode="live"))
    batched = cli_here(*local(cli_here, judge, *prices, "judge.batch_discount=0.5"))
    assert (0, 0, 0) == (dry.code, live.code, batched.code), (dry, live, batched)
    assert live.summary()["cost_usd"] > 0
    assert pytest.approx(live.summary()["cost_usd"] * 0.5) == batched.summary()["cost_usd"]
    estimate = json.loads((dry.run_dir / "dry_run.json").read_text(encoding="utf-8"))
    assert pytest.approx(estimate["cost_usd_est"] * 0.5) == estimate["cost_usd_est_batch"]
    assert "batch" in dry.stdout and f"${estimate['cost_usd_est_batch']:.4f}" in dry.stdout


def test_sigkill_during_the_wait_then_rerun_still_one_batch(cli: Cli, server: Any) -> None:
    """A run killed while its batch runs re-attaches on the same command: one upload, one batch, all verdicts."""
    judge = server(policy="hash", batch=BatchOptions(seconds=5.0))
    args = local(cli, judge)
    command = [
        sys.executable,
        "-m",
        "judgebias.run",
        f"cache.dir={cli.cache_dir}",
        f"hydra.run.dir={cli.tmp_path / 'killed'}",
    ]
    process = subprocess.Popen(
        [*command, *args], cwd=cli.tmp_path, env=cli.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    ledger = cli.cache_dir / "batches"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any("batch-" in p.read_text() for p in ledger.glob("*.json")):
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)
    assert 1 == batch_stats(judge)["batches_created"]

    rerun = cli(*args)

    assert 0 == rerun.code, rerun
    assert CALLS == rerun.summary()["calls_batched"]
    assert (1, 1) == (batch_stats(judge)["uploads"], batch_stats(judge)["batches_created"])
    assert [] == list(ledger.glob("*.json"))


def test_no_wait_submits_exits_75_and_the_same_command_collects(cli_here: InProcessCli, server: Any) -> None:
    """judge.batch_wait=false submits and exits 75 saying how to collect; the same command later collects."""
    judge = server(policy="hash", batch=BatchOptions(seconds=1.0))
    args = local(cli_here, judge, "judge.batch_wait=false")
    submitted = cli_here(*args)
    assert EXIT_BATCH_PENDING == submitted.code, submitted
    assert "rerun the same command" in submitted.stderr + submitted.stdout
    assert not (submitted.run_dir / "verdicts.jsonl").exists()
    time.sleep(1.2)

    collected = cli_here(*args)

    assert 0 == collected.code, collected
    assert (CALLS, 1) == (collected.summary()["calls_batched"], batch_stats(judge)["batches_created"])


def test_failed_lines_are_errors_and_the_rerun_resubmits_only_them(cli_here: InProcessCli, server: Any) -> None:
    """Lines the provider failed become error calls with its reason (exit 1); the rerun sends only those."""
    judge = server(policy="hash", batch=BatchOptions(fail_fraction=0.5))  # 4 of these 12 lines fail first time
    first = cli_here(*local(cli_here, judge))
    failed = first.summary()["failed_calls"]
    assert 1 == first.code and 0 < failed < CALLS, first
    reasons = [line.get(f"error{i}") for line in first.verdicts() for i in (1, 2) if line.get(f"error{i}")]
    assert failed == len(reasons) and all("HTTP 500" in reason for reason in reasons)

    second = cli_here(*local(cli_here, judge))

    assert 0 == second.code, second
    assert [failed] == [b["total"] for b in second.summary()["batches"]]
    assert (failed, CALLS - failed) == (second.summary()["calls_batched"], second.summary()["calls_cached"])


def test_an_expired_batch_keeps_its_lines_and_only_the_rest_is_resubmitted(cli_here: InProcessCli, server: Any) -> None:
    """An expired batch's finished lines are kept; the rerun submits only the lines that never ran."""
    judge = server(policy="hash", batch=BatchOptions(expire_after_lines=CALLS - 3))
    first = cli_here(*local(cli_here, judge))
    assert 1 == first.code and 3 == first.summary()["failed_calls"], first
    assert ["expired"] == [b["status"] for b in first.summary()["batches"]]

    second = cli_here(*local(cli_here, judge))

    assert 0 == second.code, second
    assert [3] == [b["total"] for b in second.summary()["batches"]]


def test_batch_size_splits_the_calls(cli_here: InProcessCli, server: Any) -> None:
    """judge.batch_size caps the lines of each batch; together they cover every call once."""
    judge = server(policy="hash")
    result = cli_here(*local(cli_here, judge, "judge.batch_size=5"))
    assert 0 == result.code, result
    assert [5, 5, 2] == [b["total"] for b in result.summary()["batches"]]
    assert CALLS == batch_stats(judge)["lines_answered"]


def test_a_batch_failing_validation_stops_with_its_id(cli_here: InProcessCli, server: Any) -> None:
    """A batch the provider refuses stops the run with exit 2, its id and the per-line errors."""
    judge = server(allowed_models=("another-model",))
    result = cli_here(*local(cli_here, judge))
    assert 2 == result.code, result
    assert "batch batch-dev" in result.stderr and "line 1: model_not_found" in result.stderr
    assert "Traceback" not in result.stderr


def test_export_run_elsewhere_import_gives_the_live_verdicts_with_no_server(
    cli_here: InProcessCli, server: Any
) -> None:
    """export writes batch_input.jsonl; its output, run as a batch elsewhere, imports to the live verdicts offline."""
    judge = server(policy="hash")
    live = cli_here(*local(cli_here, judge, f"cache.dir={cli_here.tmp_path / 'live'}", mode="live"))
    exported = cli_here(*local(cli_here, judge, mode="export"))
    assert (0, EXIT_BATCH_PENDING) == (live.code, exported.code), exported
    inputs = exported.run_dir / "batch_input.jsonl"
    assert "vllm run-batch -i" in exported.stdout + exported.stderr
    assert CALLS == len(inputs.read_text(encoding="utf-8").splitlines())

    elsewhere = OpenAI(base_url=judge.url, api_key="k")  # the file run as a batch by another service
    uploaded = elsewhere.files.create(file=inputs.open("rb"), purpose="batch")
    batch = elsewhere.batches.create(
        input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
    )
    outputs = cli_here.tmp_path / "batch_output.jsonl"
    outputs.write_bytes(elsewhere.files.content(elsewhere.batches.retrieve(batch.id).output_file_id or "").content)
    offline_url = judge.url
    judge.stop()

    imported = cli_here(*local(cli_here, judge, f"judge.batch_file={outputs}", mode="import"))

    assert 0 == imported.code, imported
    assert verdicts_text(live) == verdicts_text(imported)
    assert offline_url == judge.url


def test_import_refuses_a_line_of_another_run(cli_here: InProcessCli, server: Any, tmp_path: Path) -> None:
    """A custom_id that belongs to no request of this run is refused with the file's line number."""
    judge = server(policy="hash")
    stray = {"id": "x", "custom_id": "jb-" + "0" * 64, "response": {"status_code": 200, "body": {}}, "error": None}
    path = tmp_path / "other.jsonl"
    path.write_text(json.dumps(stray) + "\n", encoding="utf-8")
    result = cli_here(*local(cli_here, judge, f"judge.batch_file={path}", mode="import"))
    assert 2 == result.code, result
    assert f"{path}:1: custom_id 'jb-{'0' * 64}' belongs to no request of this run" in result.stderr


def test_a_sweep_in_batch_mode_gives_each_job_its_batches(cli_here: InProcessCli, server: Any) -> None:
    """Each job of a sweep in batch mode submits and collects its own batch and completes."""
    judge = server(policy="hash")
    result = cli_here("-m", *local(cli_here, judge, "judge.seed=1,2"))
    assert 0 == result.code, result
    summaries = [json.loads((result.run_dir / str(n) / "summary.json").read_text()) for n in (0, 1)]
    assert [CALLS, CALLS] == [s["calls_batched"] for s in summaries]
    assert 2 == batch_stats(judge)["batches_created"]


def test_a_sweep_with_batches_still_out_exits_75_and_the_rerun_collects(cli_here: InProcessCli, server: Any) -> None:
    """A batch-mode sweep with judge.batch_wait=false ends like a single run does: 75, then the same sweep collects."""
    judge = server(policy="hash", batch=BatchOptions(seconds=1.0))
    sweep = ("-m", *local(cli_here, judge, "judge.seed=1,2", "judge.batch_wait=false"))
    submitted = cli_here(*sweep)
    assert EXIT_BATCH_PENDING == submitted.code, submitted
    assert "batches still out" in submitted.stderr
    time.sleep(1.2)
    collected = cli_here(*sweep)
    assert 0 == collected.code, collected
    assert 2 == batch_stats(judge)["batches_created"]


def test_refresh_in_batch_mode_fetches_every_call_again_by_batch(cli_here: InProcessCli, server: Any) -> None:
    """cache.mode=refresh with judge.mode=batch sends every call again as one new batch and uses its replies."""
    judge = server(policy="hash")
    first = cli_here(*local(cli_here, judge))
    refreshed = cli_here(*local(cli_here, judge, "cache.mode=refresh"))
    assert (0, 0) == (first.code, refreshed.code), refreshed
    assert (CALLS, 0) == (refreshed.summary()["calls_batched"], refreshed.summary()["calls_cached"])
    assert (2, 0) == (batch_stats(judge)["batches_created"], judge.stats()["requests"])
    assert verdicts_text(first) == verdicts_text(refreshed)


def test_export_prints_an_import_command_that_runs(cli_here: InProcessCli, server: Any) -> None:
    """The import command export prints completes the run once the output file exists (in a new run folder)."""
    judge = server(policy="hash")
    exported = cli_here(*local(cli_here, judge, mode="export"))
    assert EXIT_BATCH_PENDING == exported.code, exported
    printed = next(line.strip() for line in exported.stdout.splitlines() if "judge.mode=import" in line)
    assert "hydra.run.dir" not in printed
    client = OpenAI(base_url=judge.url, api_key="k")
    uploaded = client.files.create(file=(exported.run_dir / "batch_input.jsonl").open("rb"), purpose="batch")
    batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h")
    output = client.files.content(client.batches.retrieve(batch.id).output_file_id or "").content
    (exported.run_dir / "batch_output.jsonl").write_bytes(output)
    overrides = [arg for arg in printed.split()[3:] if not arg.startswith("cache.dir=")]

    imported = cli_here(*overrides)

    assert 0 == imported.code, imported
    assert CALLS == imported.summary()["calls_batched"]


def test_a_hand_written_batch_output_is_marked_imported_everywhere(cli_here: InProcessCli, server: Any) -> None:
    """A batch_output.jsonl the user wrote (every reply "A") is imported as imported: summary.json names the file
    and its sha256, report.html shows IMPORTED, the gate fails it unless --allow-imported, and a later cached rerun
    still says so."""
    from judgebias.check import main as check

    judge = server(policy="hash")
    exported = cli_here(*local(cli_here, judge, mode="export"))
    assert EXIT_BATCH_PENDING == exported.code, exported
    forged = []
    for line in (exported.run_dir / "batch_input.jsonl").read_text(encoding="utf-8").splitlines():
        custom_id = json.loads(line)["custom_id"]
        body = {
            "id": "x", "object": "chat.completion", "model": "local-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "A"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 1},
        }  # fmt: skip
        forged.append(
            {"id": "b", "custom_id": custom_id, "response": {"status_code": 200, "body": body}, "error": None}
        )
    outputs = cli_here.tmp_path / "batch_output.jsonl"
    outputs.write_text("".join(json.dumps(line) + "\n" for line in forged), encoding="utf-8")

    imported = cli_here(*local(cli_here, judge, f"judge.batch_file={outputs}", "report=true", mode="import"))

    assert 0 == imported.code, imported
    record = imported.summary()["imported_replies"]
    assert (CALLS, "batch_output.jsonl", "batch output file") == (
        record["replies"], record["bundles"][0]["file"], record["bundles"][0]["kind"]
    )  # fmt: skip
    assert "IMPORTED: 12 replies came from files handed in" in (imported.run_dir / "report.html").read_text()
    assert 1 == check([str(imported.run_dir)])
    assert 0 == check([str(imported.run_dir), "--allow-imported"])
    rerun = cli_here(*local(cli_here, judge, "cache.mode=only", mode="live"))
    assert 0 == rerun.code and CALLS == rerun.summary()["imported_replies"]["replies"]
    assert 0 == judge.stats()["requests"]
