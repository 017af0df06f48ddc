"""Who answered each call, and when a judge was not one judge (pure figures, no server)."""

from __future__ import annotations

from typing import Any

import pytest

from judgebias.backends.chat_reply import reply_of_text
from judgebias.core.record import CallResult, ItemResult, Reply
from judgebias.figures.provenance import foreign_reason, judge_origin, mixed_judge_note, same_model


def no_probs(_: Any) -> None:
    """No label probabilities."""
    return None


def call(by: str, *, model: str = "judge", cached: bool = False, fallbacks: int = 0) -> CallResult:
    """One answered call."""
    return CallResult("A", None, cached, model=model, answered_by=by, fallbacks=fallbacks)


def row(item: str, *calls: CallResult) -> ItemResult:
    """One item judged by `calls`."""
    return ItemResult(id=item, verdict="1", call1="A", call2="B", consistent=True, calls=calls)


@pytest.mark.parametrize(
    ("name", "accepted", "same"),
    [
        ("gpt-4o-2024-08-06", ["gpt-4o"], True),
        ("openai/gpt-4o", ["gpt-4o"], True),
        ("gpt-4o-mini", ["gpt-4o"], False),
        ("claude-3-5-sonnet-20241022", ["claude-3-5-sonnet"], True),
        ("my-snapshot", ["gpt-4o", "my-snapshot"], True),
    ],
)
def test_a_dated_snapshot_or_a_provider_prefix_is_the_same_model(name: str, accepted: list[str], same: bool) -> None:
    """An alias's dated snapshot and a provider-prefixed name match; another model of the family does not."""
    assert same == same_model(name, accepted)


def test_expect_models_accepts_a_declared_model_and_checks_deployments() -> None:
    """judge.expect_models admits a renamed model; with it set, a deployment outside it is foreign."""
    assert foreign_reason("gpt4o-eu", None, 0, "gpt-4o", []) is not None
    assert foreign_reason("gpt4o-eu", None, 0, "gpt-4o", ["gpt4o-eu"]) is None
    assert foreign_reason("judge", "openai/other", 0, "judge", ["primary"]) is not None
    assert foreign_reason("judge", "openai/other", 0, "judge", []) is None  # an alias's deployment is recorded only
    assert foreign_reason("judge", "primary", 1, "judge", ["primary"]) is not None  # a fallback always is


def test_one_deployment_throughout_is_one_judge() -> None:
    """An alias answered by one deployment and no fallback: no mixed-judge line."""
    origin = judge_origin([row("i1", call("primary"), call("primary"))], "judge", [])

    assert ({"primary": 2}, 0) == (origin["answered_by"], origin["items_mixed_judge"])
    assert mixed_judge_note(origin, "j") is None


def test_one_model_under_two_declared_deployment_names_is_one_judge() -> None:
    """Two deployment names of one model (east, west): without a declaration two models (mixed); named in
    judge.expect_models, one judge, with both deployments still listed, and items split between them not mixed."""
    rows = [
        row(f"i{n}", call("openai/gpt4o-eastus", model="gpt-4o"), call("openai/gpt4o-westus", model="gpt-4o"))
        for n in range(3)
    ]

    undeclared = judge_origin(rows, "gpt-4o", [])
    declared = judge_origin(rows, "gpt-4o", ["gpt4o-eastus", "gpt4o-westus"])

    assert (2, 3) == (undeclared["models_answering"], undeclared["items_mixed_judge"])
    assert mixed_judge_note(undeclared, "j") is not None
    assert (1, 0, 0) == (declared["models_answering"], declared["items_mixed_judge"], declared["calls_foreign"])
    assert {"openai/gpt4o-eastus": 3, "openai/gpt4o-westus": 3} == declared["answered_by"]
    assert mixed_judge_note(declared, "j") is None
    assert (["openai/gpt4o-eastus", "openai/gpt4o-westus"], []) == (
        sorted(undeclared["answered_unexpected"]), declared["answered_unexpected"]
    )  # fmt: skip


@pytest.mark.parametrize(
    ("names", "configured"),
    [
        (["openai/gpt-4o", "openai/gpt-4o-2024-08-06"], "gpt-4o"),  # a dated snapshot counts as the model
        (["gpt-4o-mini", "openai/gpt-4o-mini"], "my-alias"),  # a batch body's name and a gateway header's
    ],
)
def test_names_that_differ_only_in_prefix_or_snapshot_are_one_model(names: list[str], configured: str) -> None:
    """Names that differ only in a provider prefix or a snapshot date are one model, declared or not."""
    rows = [row("i1", call(names[0], model=configured), call(names[1], model=configured))]
    origin = judge_origin(rows, configured, [])
    assert (1, 0) == (origin["models_answering"], origin["items_mixed_judge"])
    assert mixed_judge_note(origin, "j") is None


def test_items_answered_by_two_models_and_cached_foreign_replies_are_counted() -> None:
    """Two deployments on one item, and a cached reply from a model the fresh ones do not come from, are flagged."""
    rows = [
        row("i1", call("primary"), call("primary")),
        row("i2", call("backup", cached=True, fallbacks=1), call("primary")),
    ]
    origin = judge_origin(rows, "judge", [])

    assert (["i2"], 1, 1, 1) == (
        origin["items_mixed_judge_ids"],
        origin["cached_foreign"],
        origin["gateway_fallbacks"],
        origin["calls_foreign"],
    )
    note = mixed_judge_note(origin, "j")
    assert note is not None and "1 from a gateway fallback" in note and "cache.reask=[foreign]" in note


def test_the_gateways_headers_name_the_deployment_and_survive_the_cache() -> None:
    """LiteLLM's headers become the reply's origin, stored in the cached form and read back unchanged."""
    body = '{"model": "judge", "system_fingerprint": "fp1", "choices": [{"message": {"content": "A"}}]}'
    headers = {"x-litellm-model-name": "backup-model", "x-litellm-attempted-fallbacks": "1", "x-litellm-model-id": "d1"}
    reply = reply_of_text(body, headers, no_probs)

    assert ("backup-model", "d1", 1, "fp1", "backup-model") == (
        reply.deployment,
        reply.deployment_id,
        reply.fallbacks,
        reply.system_fingerprint,
        reply.answered_by,
    )
    assert reply == Reply.from_json(reply.to_json())
    assert "deployment" not in Reply("A").to_json()  # an ordinary reply's cached form is as before


def test_openrouters_provider_is_part_of_who_answered() -> None:
    """OpenRouter names the provider in the body: `model via provider`."""
    body = '{"model": "openai/gpt-4o", "provider": "Azure", "choices": [{"message": {"content": "A"}}]}'
    assert "openai/gpt-4o via Azure" == reply_of_text(body, None, no_probs).answered_by


@pytest.mark.parametrize(
    ("body", "outcome"),
    [
        ("<html>sign in</html>", "not_json"),
        ("[1, 2]", "not_json"),
        ('{"choices": []}', "no_choices"),
        ('{"choices": ["x"]}', "no_choices"),
        ('{"error": {"message": "overloaded"}}', "error_body"),
        ('{"choices": [{"message": {"content": null, "refusal": "No."}}]}', "refusal"),
        ('{"choices": [{"message": {"content": null}, "finish_reason": "content_filter"}]}', "content_filter"),
        ('{"choices": [{"message": {"content": null, "tool_calls": [{"id": "t"}]}}]}', "tool_calls"),
        (
            '{"choices": [{"message": {"content": [{"type": "text", "text": "A"}]}}], "usage": {"prompt_tokens": "x"}}',
            None,
        ),
    ],
)
def test_whatever_a_server_sends_is_a_reply_never_an_exception(body: str, outcome: str | None) -> None:
    """Every body shape becomes a Reply: the no-verdict ones with their outcome and reason, content parts read."""
    reply = reply_of_text(body, None, no_probs)

    assert outcome == reply.outcome
    assert (reply.reason is None) == (outcome is None)
    if outcome is None:
        assert "A" == reply.text


@pytest.mark.parametrize(
    ("headers", "gateway"),
    [
        ({"x-litellm-cache-key": "abc", "x-litellm-model-name": "openai/other"}, "litellm"),
        ({"x-portkey-cache-status": "HIT"}, "portkey"),
        ({"x-portkey-cache-status": "SEMANTIC HIT"}, "portkey"),
        ({"helicone-cache": "HIT"}, "helicone"),
        ({"cf-aig-cache-status": "HIT"}, "cloudflare"),
        ({"x-portkey-cache-status": "MISS"}, None),
        ({"x-litellm-model-name": "openai/gpt-4o"}, None),
    ],
)
def test_a_gateways_cache_hit_is_a_source_of_its_own(headers: dict[str, str], gateway: str | None) -> None:
    """A reply a gateway served from its response cache names that gateway and no deployment (LiteLLM names this
    request's pick on a hit, not the deployment that wrote the reply); a miss is an ordinary reply."""
    body = '{"model": "judge", "choices": [{"index": 0, "message": {"content": "A"}, "finish_reason": "stop"}]}'
    reply = reply_of_text(body, headers, no_probs)
    assert gateway == reply.gateway_cache
    if gateway is not None:
        assert "unknown (gateway cache)" == reply.answered_by


def test_an_alias_target_listed_under_the_alias_is_not_a_deployment_of_the_group() -> None:
    """LiteLLM's /model/info as the proxy answered it (model_group_alias {"gpt-4o": "judge-big"}): big-model is
    listed under gpt-4o with judge-big's id, so gpt-4o's own deployment is openai/gpt-4o alone."""
    from judgebias.backends.openai import deployments_by_group
    from judgebias.figures.provenance import routed_elsewhere

    def entry(group: str, model: str, deployment: str) -> dict[str, Any]:
        return {"model_name": group, "litellm_params": {"model": model}, "model_info": {"id": deployment}}

    body = {"data": [entry("gpt-4o", "openai/gpt-4o", "a"), entry("judge-big", "openai/big-model", "b"),
                     entry("gpt-4o", "openai/big-model", "b"), entry("judge-fb", "openai/primary", "c")]}  # fmt: skip
    routes = deployments_by_group(body)

    assert {"gpt-4o": ["openai/gpt-4o"], "judge-fb": ["openai/primary"]} == routes
    assert {"model": "gpt-4o", "gateway_deployments": ["openai/gpt-4o"], "answered_by": ["openai/big-model"]} == (
        routed_elsewhere("gpt-4o", ["openai/big-model"], routes)
    )
    assert routed_elsewhere("judge-fb", ["openai/backup"], routes) is None  # a group, not a model the gateway has
    assert routed_elsewhere("gpt-4o", [], routes) is None
    assert deployments_by_group({"object": "list", "data": "nope"}) is None  # not LiteLLM's list: no claim
