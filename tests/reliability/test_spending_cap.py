"""The spending cap against a server that bills by its own count (tests/reliability/billing_server.py): what the
server billed never passes max_cost_usd, whether it counts a token per character, reports no usage, or answers a
call's first attempt with no choices or cut off; at one call at a time and at sixteen; over reruns."""

from __future__ import annotations

import pytest

from tests.helpers import InProcessCli
from tests.reliability.billing_server import PRICE_PER_MTOK, billing_server

pytestmark = pytest.mark.reliability

CAP = 5.0  # USD: about ten calls of q1 at the server's prices


def capped(cli_here: InProcessCli, url: str, *more: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    """A run of q1 against the billing server under max_cost_usd=CAP: exit code and summary."""
    result = cli_here(
        "judge=local", f"judge.base_url={url}", "judge.api_key_env=null", f"max_cost_usd={CAP}",
        f"judge.price_input_per_mtok={PRICE_PER_MTOK}", f"judge.price_output_per_mtok={PRICE_PER_MTOK}",
        "bootstrap.resamples=0", "report=false", *more,
    )  # fmt: skip
    return result.code, result.summary()


@pytest.mark.parametrize("concurrency", [1, 16])
@pytest.mark.parametrize("mode", ["usage", "no_usage", "no_choices_first"])
def test_the_servers_bill_stays_within_the_cap(cli_here: InProcessCli, mode: str, concurrency: int) -> None:
    """Billed by the server's own count, every 200 included: within the cap, the run stopped at it (exit 3)."""
    with billing_server(mode) as (url, bill):
        code, summary = capped(cli_here, url, f"max_concurrency={concurrency}")

    assert (3, "budget") == (code, summary["status"])
    assert 0 < bill.requests and bill.billed_usd <= CAP, (bill.requests, bill.billed_usd)
    assert summary["budget"]["used_usd"] <= CAP + 1e-9
    if mode == "no_usage":
        assert summary["budget"]["used_is_bound"] and any("reported no usage" in n for n in summary["notes"])
    if mode == "no_choices_first":
        assert summary["billed_unused"]["attempts"] > 0  # each first attempt was billed, and counted
        assert summary["cost_usd"] == pytest.approx(bill.billed_usd, rel=1e-6)


def test_repeated_samples_with_cut_off_first_attempts_stay_within_the_cap(cli_here: InProcessCli) -> None:
    """judge.samples=2 at temperature 0.7, each first attempt cut off and asked again: every billed attempt counts."""
    with billing_server("cut_first") as (url, bill):
        code, summary = capped(cli_here, url, "judge.samples=2", "judge.temperature=0.7", "judge.seed=null")

    assert 3 == code and bill.billed_usd <= CAP, (bill.requests, bill.billed_usd)
    assert summary["billed_unused"]["attempts"] > 0


def test_reruns_under_the_same_cap_pay_nothing_more(cli_here: InProcessCli) -> None:
    """A server that reports no usage: three reruns under the same cap add nothing to its bill (the cached replies
    count at their bound), and the whole bill stays within the cap."""
    with billing_server("no_usage") as (url, bill):
        capped(cli_here, url)
        first = bill.billed_usd
        for _ in range(3):
            code, _ = capped(cli_here, url)
            assert 3 == code

    assert first == bill.billed_usd <= CAP


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("judge.price_input_per_mtok=-5", "must be 0 or more"),
        ("judge.price_output_per_mtok=0", "no price for"),
        ("judge.max_tokens=null", "needs judge.max_tokens"),
    ],
)
def test_a_cap_that_could_not_bind_refuses_to_start(cli_here: InProcessCli, override: str, expected: str) -> None:
    """A negative price, no price at all, or no reply limit: one line before any call, exit 2."""
    with billing_server() as (url, bill):
        result = cli_here(
            "judge=local",
            f"judge.base_url={url}",
            "judge.api_key_env=null",
            f"max_cost_usd={CAP}",
            f"judge.price_output_per_mtok={PRICE_PER_MTOK}",
            override,
        )  # fmt: skip  (the price in is 0 as judge=local has it: with no price out either, nothing would count)
    assert 2 == result.code and expected in result.stderr and 1 == len(result.stderr.strip().splitlines())
    assert 0 == bill.requests
