"""What a gateway answers on its own, said as what it is: its 408 (LiteLLM's timeout) and 504 are timeouts that
may have been billed upstream, and log-probabilities it dropped are said on screen, not only in summary.json."""

from __future__ import annotations

import threading

import pytest

from tests.helpers import InProcessCli, JsonHandler, serving

pytestmark = pytest.mark.reliability


def timing_out_first(status: int) -> type[JsonHandler]:
    """Answers each distinct request `status` the first time (a gateway's timeout), then A."""
    seen: set[bytes] = set()
    lock = threading.Lock()

    class Gateway(JsonHandler):
        def do_POST(self) -> None:
            body = self.request_body()
            with lock:
                first = body not in seen
                seen.add(body)
            if first and status != 200:
                self.send_json(
                    status, {"error": {"message": "Request timed out", "type": "timeout", "code": str(status)}}
                )
                return
            reply = {"role": "assistant", "content": "A"}
            self.send_json(200, {"choices": [{"index": 0, "message": reply, "finish_reason": "stop"}],
                                 "usage": {"prompt_tokens": 9, "completion_tokens": 1}})  # fmt: skip

    return Gateway


@pytest.mark.parametrize("status", [408, 504])
def test_a_gateways_timeout_counts_as_a_timeout_with_the_billing_note(cli_here: InProcessCli, status: int) -> None:
    """Each call's first request answered 408 (or 504) by the gateway: retried, counted in `timeouts`, and the
    summary says those requests may have been billed twice."""
    with serving(timing_out_first(status)) as url:
        result = cli_here(
            "judge=local", f"judge.base_url={url}", "judge.api_key_env=null", "judge.retry_backoff=0", "data.limit=2"
        )
    assert 0 == result.code, result
    summary = result.summary()
    assert (4, 4) == (summary["retries"], summary["timeouts"])
    assert any("may have been billed twice" in note and "408/504" in note for note in summary["notes"])


def test_dropped_log_probabilities_are_printed(cli_here: InProcessCli) -> None:
    """judge.logprobs=true through a gateway that drops them (drop_params): the printed summary says there are no
    soft verdicts, not only summary.json."""
    with serving(timing_out_first(200)) as url:  # a 200 the first time too: every reply plain A, no logprobs
        result = cli_here(
            "judge=local", f"judge.base_url={url}", "judge.api_key_env=null", "judge.logprobs=true", "data.limit=2"
        )
    assert 0 == result.code, result
    assert result.summary()["soft_note"] in result.stdout
