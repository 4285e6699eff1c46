"""Strict parsing of LI.FI responses, request validation, retry arithmetic, plans (pure)."""

from __future__ import annotations

import copy
import random
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from eth_abi import decode

from settlement_widgets.aggregator import RetryPolicy, TransferRequest
from settlement_widgets.aggregator.client.lifi import (
    RateLimit,
    backoff_delay,
    parse_rate_limit,
    parse_retry_after,
)
from settlement_widgets.aggregator.core.parse import (
    parse_chains,
    parse_quote,
    parse_routes,
    parse_status,
    parse_step,
    parse_tokens,
)
from settlement_widgets.aggregator.core.plan import plan_step
from settlement_widgets.errors import (
    AggregatorError,
    AggregatorResponseError,
    InvalidAddressError,
    InvalidAmountError,
    SettlementValueError,
    UnknownOptionError,
)
from tests.lifi_synthetic import fixture

SENDER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"


# --- parsing -----------------------------------------------------------------------------


def test_synthetic_fixtures_parse() -> None:
    routes = parse_routes(fixture("routes_arb_usdc_to_op_usdc.json"), source="t")
    assert len(routes) == 4
    r = routes[0]
    assert (r.from_chain_id, r.to_chain_id) == (42161, 10)
    assert r.from_amount == 100_000_000 and isinstance(r.to_amount, int)
    assert r.to_amount_units == Decimal("99.95")
    assert r.steps[0].included_steps[0].type == "cross"
    assert r.tools == ("stargateV2",)
    quote = parse_quote(fixture("quote_arb_usdc_to_op_usdc.json"), source="t")
    assert quote.transaction_request is not None
    assert quote.transaction_request.chain_id == 42161 and quote.transaction_request.value == 0
    status = parse_status(fixture("status_done.json"), source="t")
    assert status.done and status.receiving is not None and status.receiving.amount == 99_905_000
    chains = parse_chains(fixture("chains.json"), source="t")
    assert {c.id for c in chains} >= {1, 10, 42161}
    tokens = parse_tokens(fixture("tokens.json"), source="t")
    assert any(t.symbol == "USDC" for t in tokens[10])


def test_amounts_are_exact_ints_beyond_int64() -> None:
    data = fixture("routes_arb_usdc_to_op_usdc.json")
    route = data["routes"][0]
    huge = 2**200 + 12345
    route["toAmount"] = str(huge)
    route["toToken"]["decimals"] = 18
    parsed = parse_routes({"routes": [route]}, source="t")[0]
    assert parsed.to_amount == huge and type(parsed.to_amount) is int
    assert parsed.to_amount_units == Decimal(huge).scaleb(-18)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (("routes", 1, "toAmount"), "routes[1].toAmount is missing"),
        (
            ("routes", 0, "steps", 0, "estimate", "toAmountMin"),
            "routes[0].steps[0].estimate.toAmountMin is missing",
        ),
        (
            ("routes", 2, "steps", 0, "estimate", "feeCosts", 0, "included"),
            "feeCosts[0].included is missing",
        ),
        (("routes", 3, "toToken", "decimals"), "routes[3].toToken.decimals is missing"),
        (("routes", 0, "id"), "routes[0].id is missing"),
        (("routes",), "routes is missing"),
    ],
)
def test_missing_fields_name_their_path(path: tuple[Any, ...], expected: str) -> None:
    data = fixture("routes_arb_usdc_to_op_usdc.json")
    target = data
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    with pytest.raises(
        AggregatorResponseError, match=expected.replace("[", r"\[").replace("]", r"\]")
    ) as info:
        parse_routes(data, source="POST /advanced/routes")
    assert "POST /advanced/routes" in str(info.value)
    assert isinstance(info.value, AggregatorError)


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("toAmount", "12.5", "non-negative integer amount string"),
        ("toAmount", -5, "non-negative integer amount string"),
        ("toAmount", True, "non-negative integer amount string"),
        ("toAmountUSD", "lots", "decimal USD value"),
        ("toAmountUSD", "NaN", "decimal USD value"),
        ("steps", [], "is empty"),
        ("steps", {}, "must be an array"),
        ("fromChainId", "42161", "must be an integer"),
        ("tags", [1], "array of strings"),
    ],
)
def test_wrong_types_are_clear_errors(field: str, value: Any, problem: str) -> None:
    data = fixture("routes_arb_usdc_to_op_usdc.json")
    data["routes"][0][field] = value
    with pytest.raises(AggregatorResponseError, match=problem):
        parse_routes(data, source="t")


def test_unknown_fields_anywhere_are_ignored() -> None:
    """The live API adds fields over time; a field not read here must change nothing."""
    data = fixture("routes_arb_usdc_to_op_usdc.json")
    plain = parse_routes(data, source="t")
    extra = copy.deepcopy(data)
    extra["newTopLevel"] = {"anything": [1, 2]}
    route = extra["routes"][0]
    route["riskScore"] = 0.2
    route["fromToken"]["verified"] = True
    step = route["steps"][0]
    step["newStepField"] = ["x"]
    step["estimate"]["feeSplit"] = {"integratorFee": "0"}
    step["estimate"]["gasCosts"][0]["newGasField"] = None
    step["includedSteps"][0]["action"]["newActionField"] = "y"
    assert parse_routes(extra, source="t") == plain
    status = fixture("status_done.json")
    known = parse_status(status, source="t")
    status.update(newStatusField={"nested": True}, bridgeExplorerLink=None)
    status["sending"]["includedSteps"] = []
    assert parse_status(status, source="t") == known
    assert parse_status({"status": "NOT_FOUND", "message": "not indexed"}, source="t").status == (
        "NOT_FOUND"
    )


def test_bodies_that_are_not_objects() -> None:
    for body in (None, [], "routes", 3):
        with pytest.raises(AggregatorResponseError, match="must be a JSON object"):
            parse_routes(body, source="t")


def test_quote_and_step_transaction_requests_are_checked() -> None:
    quote = fixture("quote_arb_usdc_to_op_usdc.json")
    no_tx = copy.deepcopy(quote)
    del no_tx["transactionRequest"]
    with pytest.raises(AggregatorResponseError, match="transactionRequest is missing"):
        parse_quote(no_tx, source="GET /quote")
    assert parse_step(no_tx, source="t").transaction_request is None
    bad_to = copy.deepcopy(quote)
    bad_to["transactionRequest"]["to"] = "0x1234"
    with pytest.raises(AggregatorResponseError, match=r"transactionRequest\.to"):
        parse_quote(bad_to, source="t")
    bad_data = copy.deepcopy(quote)
    bad_data["transactionRequest"]["data"] = "0xabc"
    with pytest.raises(AggregatorResponseError, match="hex bytes"):
        parse_quote(bad_data, source="t")


def test_status_rules() -> None:
    assert parse_status({"status": "NOT_FOUND"}, source="t").status == "NOT_FOUND"
    with pytest.raises(AggregatorResponseError, match="sending is missing"):
        parse_status({"status": "PENDING"}, source="t")
    with pytest.raises(AggregatorResponseError, match="must be one of"):
        parse_status({"status": "SETTLED"}, source="t")
    pending = parse_status(fixture("status_pending_source.json"), source="t")
    assert not pending.is_final and pending.substatus == "WAIT_SOURCE_CONFIRMATIONS"


# --- request validation ------------------------------------------------------------------


def test_transfer_request_resolves_names_and_symbols() -> None:
    req = TransferRequest.build("Arbitrum", "opt", "usdc", "USDC", 100_000_000, SENDER.lower())
    assert (req.from_chain, req.to_chain) == (42161, 10)
    assert req.from_token == "0xaf88d065e77c8cC2239327C5EDb3A432268e5831"
    assert req.from_address == SENDER  # checksummed
    params = req.quote_params("my-app")
    assert params["fromAmount"] == "100000000" and params["integrator"] == "my-app"
    body = req.routes_body("my-app")
    assert body["options"] == {"integrator": "my-app"} and body["fromChainId"] == 42161


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"from_amount": 1.5}, InvalidAmountError, "smallest units"),
        ({"from_amount": "100"}, InvalidAmountError, "smallest units"),
        ({"from_amount": 0}, InvalidAmountError, "greater than zero"),
        ({"from_amount": True}, InvalidAmountError, "smallest units"),
        (
            {"from_address": "0x0000000000000000000000000000000000000000"},
            InvalidAddressError,
            "zero",
        ),
        ({"from_address": "0x1234"}, InvalidAddressError, "40 hex"),
        ({"from_chain": "arbitrun"}, UnknownOptionError, "did you mean 'arbitrum'"),
        ({"from_chain": "sepolia"}, UnknownOptionError, "pass a chain id"),
        ({"from_token": "USDX"}, UnknownOptionError, "did you mean 'USDC'"),
        ({"slippage": 5}, SettlementValueError, "fraction"),
        ({"order": "cheap"}, UnknownOptionError, "CHEAPEST"),
    ],
)
def test_bad_requests_are_refused(
    kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    args: dict[str, Any] = {
        "from_chain": 42161,
        "to_chain": 10,
        "from_token": "USDC",
        "to_token": "USDC",
        "from_amount": 100_000_000,
        "from_address": SENDER,
        **kwargs,
    }
    with pytest.raises(error, match=match):
        TransferRequest.build(
            args.pop("from_chain"),
            args.pop("to_chain"),
            args.pop("from_token"),
            args.pop("to_token"),
            args.pop("from_amount"),
            args.pop("from_address"),
            **args,
        )


# --- retry arithmetic --------------------------------------------------------------------


def test_parse_retry_after() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("0.05") == 0.05
    assert parse_retry_after("Thu, 01 Jan 2026 12:00:30 GMT", now=now) == 30.0
    assert parse_retry_after("Thu, 01 Jan 2026 11:00:00 GMT", now=now) == 0.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("-1") is None


def test_parse_rate_limit_reads_what_lifi_sends_and_invents_nothing() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    headers = {"RateLimit-Limit": "200", "ratelimit-remaining": "0", "ratelimit-reset": "42"}
    assert parse_rate_limit(headers, now=now) == RateLimit(200, 0, 42.0, now)
    # the structured form (first item, parameters dropped); a missing header stays unknown
    partial = parse_rate_limit({"ratelimit-limit": "100, 100;w=60"}, now=now)
    assert partial == RateLimit(100, None, None, now)
    assert parse_rate_limit({}, now=now) is None
    assert parse_rate_limit({"ratelimit-limit": "lots", "x-other": "1"}, now=now) is None
    assert parse_rate_limit({"ratelimit-reset": "-5"}, now=now) is None
    text = RateLimit(100, 0, 42.0, now).describe()
    assert text == "0 of 100 requests left, window resets in 42 s (seen 12:00:00 UTC)"
    assert RateLimit(None, None, 1.5, now).describe() == (
        "window resets in 1.5 s (seen 12:00:00 UTC)"
    )


def test_backoff_grows_exponentially_with_bounded_jitter() -> None:
    policy = RetryPolicy(backoff_base=0.5, backoff_max=4.0, jitter=0.5)
    rng = random.Random(7)
    for attempt, ceiling in enumerate([0.5, 1.0, 2.0, 4.0, 4.0, 4.0]):
        delays = [backoff_delay(attempt, policy, rng) for _ in range(50)]
        assert all(ceiling * 0.5 <= d <= ceiling for d in delays)
        assert len(set(delays)) > 1  # jittered
    no_jitter = RetryPolicy(backoff_base=0.25, jitter=0)
    assert backoff_delay(2, no_jitter, rng) == 1.0
    with pytest.raises(SettlementValueError):
        RetryPolicy(max_retries=-1)
    with pytest.raises(SettlementValueError):
        RetryPolicy(jitter=2)


# --- plans -------------------------------------------------------------------------------


def test_plan_approves_exactly_the_amount_for_erc20() -> None:
    quote = parse_quote(fixture("quote_arb_usdc_to_op_usdc.json"), source="t")
    approve, step = plan_step(quote.step)
    assert approve.kind == "approve" and step.kind == "step"
    assert approve.to == quote.action.from_token.address
    assert approve.data.startswith("0x095ea7b3")
    spender, amount = decode(["address", "uint256"], bytes.fromhex(approve.data[10:]))
    assert spender.lower() == quote.estimate.approval_address.lower()
    assert amount == quote.action.from_amount == 100_000_000
    assert step.to == quote.transaction_request.to  # type: ignore[union-attr]
    assert step.as_tx()["chainId"] == 42161 and step.as_tx()["gas"] == step.gas_limit


def test_plan_of_native_source_has_no_approval() -> None:
    data = fixture("quote_arb_usdc_to_op_usdc.json")
    data["action"]["fromToken"] = fixture("tokens.json")["tokens"]["42161"][0]  # ETH
    (only,) = plan_step(parse_quote(data, source="t").step)
    assert only.kind == "step"
    unpopulated = copy.deepcopy(data)
    del unpopulated["transactionRequest"]
    with pytest.raises(SettlementValueError, match="no transactionRequest"):
        plan_step(parse_step(unpopulated, source="t"))
