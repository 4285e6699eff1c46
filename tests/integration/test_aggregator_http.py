"""The LI.FI client against a loopback LI.FI (real HTTP on 127.0.0.1, serving the synthetic
fixtures): retries, backoff, Retry-After and LI.FI's ratelimit-* headers, error mapping,
malformed bodies, unknown fields, timeouts, status tracking."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from settlement_widgets.aggregator import (
    APPROVAL_GAS,
    AggregatorProvider,
    RateLimit,
    RetryEvent,
    Status,
)
from settlement_widgets.errors import (
    AggregatorError,
    AggregatorResponseError,
    AggregatorServerError,
    AggregatorUnavailableError,
    InvalidAmountError,
    NoRouteError,
    RateLimitedError,
    SettlementTimeoutError,
    SettlementValueError,
)
from tests.lifi_synthetic import Fault, LifiTestServer, fixture, synthetic_tx_hashes

SENDER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
REQUEST = (42161, 10, "USDC", "USDC", 100_000_000, SENDER)
ROUTES = ("POST", "/advanced/routes")
# the approval LI.FI's gas leaves out: 46,000 gas at the fixtures' 0.05 gwei, ETH at $3128.45
APPROVAL_USD = Decimal(APPROVAL_GAS * 50_000_000).scaleb(-18) * Decimal("3128.45")


@pytest.fixture
def server() -> Iterator[LifiTestServer]:
    with LifiTestServer() as srv:
        yield srv


def fast(server: LifiTestServer, **kwargs: Any) -> AggregatorProvider:
    """A provider whose backoff waits are milliseconds."""
    kwargs.setdefault("backoff_base", 0.001)
    kwargs.setdefault("backoff_max", 0.004)
    kwargs.setdefault("poll_interval", 0)
    return AggregatorProvider(base_url=server.url, **kwargs)


# --- the happy path ----------------------------------------------------------------------


async def test_routes_quote_chains_tokens_over_http(server: LifiTestServer) -> None:
    provider = fast(server, api_key="secret-key-123", integrator="nb-test")
    assert "secret-key-123" not in repr(provider)
    routes = await provider.routes(*REQUEST)
    assert [r.rank for r in routes] == [1, 2, 3, 4]
    assert routes[0].tools == ("relay",)
    assert routes[0].net_usd == Decimal("99.87") - APPROVAL_USD
    assert routes[0].net_min_usd == Decimal("99.4005") - Decimal("0.03") - APPROVAL_USD
    assert provider.source == "local"  # a loopback server is never called live
    best = await provider.best_route(*REQUEST)
    assert best.id == routes[0].id
    quote = await provider.quote("arbitrum", "optimism", "USDC", "USDC", 100_000_000, SENDER)
    assert quote.transaction_request is not None and quote.tool == "relay"
    chains = await provider.chains()
    tokens = await provider.tokens(["arbitrum"])
    assert 42161 in {c.id for c in chains} and list(tokens) == [42161]
    await provider.close()

    posted = [r for r in server.requests if r.path.endswith("/advanced/routes")]
    assert posted[0].headers["x-lifi-api-key"] == "secret-key-123"
    body = posted[0].json()
    assert body["options"]["integrator"] == "nb-test"
    assert body["fromAmount"] == "100000000" and body["fromAddress"] == SENDER
    (quote_req,) = [r for r in server.requests if r.path.endswith("/quote")]
    assert quote_req.query["integrator"] == ["nb-test"]
    assert quote_req.query["fromChain"] == ["42161"] and quote_req.query["toChain"] == ["10"]
    (tokens_req,) = [r for r in server.requests if r.path.endswith("/tokens")]
    assert tokens_req.query["chains"] == ["42161"]


async def test_no_api_key_header_without_a_key(
    server: LifiTestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LIFI_API_KEY", raising=False)
    provider = fast(server)
    await provider.chains()
    assert "x-lifi-api-key" not in server.requests[0].headers
    monkeypatch.setenv("LIFI_API_KEY", "from-env")
    await fast(server).chains()
    assert server.requests[1].headers["x-lifi-api-key"] == "from-env"


# --- retries -----------------------------------------------------------------------------


async def test_429_then_200_succeeds_after_waiting_retry_after(server: LifiTestServer) -> None:
    server.inject(*ROUTES, Fault.rate_limited(retry_after="0.05"))
    events: list[RetryEvent] = []
    provider = fast(server, on_retry=events.append)
    routes = await provider.routes(*REQUEST)
    assert len(routes) == 4
    first, second = [r for r in server.requests if r.path.endswith("/advanced/routes")]
    assert second.at - first.at >= 0.05  # measured on the server's clock
    (event,) = events
    assert event.status == 429 and event.retry_after == 0.05 and event.delay >= 0.05


async def test_429_without_retry_after_backs_off_exponentially(server: LifiTestServer) -> None:
    server.inject(
        *ROUTES, Fault.rate_limited(retry_after=None), Fault.rate_limited(retry_after=None)
    )
    events: list[RetryEvent] = []
    provider = fast(server, on_retry=events.append, backoff_base=0.002, backoff_max=1)
    assert len(await provider.routes(*REQUEST)) == 4
    assert server.count(*ROUTES) == 3
    assert [e.attempt for e in events] == [1, 2]
    assert 0.001 <= events[0].delay <= 0.002 and 0.002 <= events[1].delay <= 0.004


async def test_429_with_a_long_retry_after_is_not_waited_out(server: LifiTestServer) -> None:
    server.inject(*ROUTES, Fault.rate_limited(retry_after="3600"))
    provider = fast(server, max_retry_after=30)
    with pytest.raises(RateLimitedError, match="wait 3600 s") as info:
        await provider.routes(*REQUEST)
    assert info.value.retry_after == 3600 and info.value.status == 429
    assert info.value.code == 1005
    assert server.count(*ROUTES) == 1


async def test_429_every_time_raises_rate_limited(server: LifiTestServer) -> None:
    server.inject(*ROUTES, *[Fault.rate_limited(retry_after="0")] * 5)
    provider = fast(server, max_retries=2)
    with pytest.raises(RateLimitedError, match="after 3 attempts"):
        await provider.routes(*REQUEST)
    assert server.count(*ROUTES) == 3


async def test_429_without_retry_after_waits_for_the_ratelimit_reset(
    server: LifiTestServer,
) -> None:
    limits = {"limit": "100", "remaining": "0", "reset": "0.2"}
    server.inject(*ROUTES, Fault.rate_limited(retry_after=None, ratelimit=limits))
    events: list[RetryEvent] = []
    provider = fast(server, on_retry=events.append)  # backoff alone would be milliseconds
    assert len(await provider.routes(*REQUEST)) == 4
    first, second = [r for r in server.requests if r.path.endswith("/advanced/routes")]
    assert second.at - first.at >= 0.2  # LI.FI's window, measured on the server's clock
    (event,) = events
    assert event.retry_after == 0.2 and event.delay >= 0.2
    assert event.rate_limit is not None
    assert (event.rate_limit.limit, event.rate_limit.remaining) == (100, 0)
    # the successful answer carried no headers: the last state seen is kept
    assert provider.client.rate_limit == event.rate_limit


async def test_retry_after_wins_over_the_ratelimit_reset(server: LifiTestServer) -> None:
    limits = {"limit": "100", "remaining": "0", "reset": "30"}
    server.inject(*ROUTES, Fault.rate_limited(retry_after="0.05", ratelimit=limits))
    events: list[RetryEvent] = []
    provider = fast(server, on_retry=events.append)
    assert len(await provider.routes(*REQUEST)) == 4
    (event,) = events
    assert event.retry_after == 0.05 and event.delay < 1  # not the 30 s window


async def test_rate_limit_state_is_read_from_successful_answers_too(
    server: LifiTestServer,
) -> None:
    headers = {"ratelimit-limit": "200", "ratelimit-remaining": "199", "ratelimit-reset": "60"}
    server.inject("GET", "/chains", Fault(headers=headers))
    provider = fast(server)
    assert provider.client.rate_limit is None  # nothing seen yet, nothing assumed
    await provider.chains()
    seen = provider.client.rate_limit
    assert isinstance(seen, RateLimit)
    assert (seen.limit, seen.remaining, seen.reset_seconds) == (200, 199, 60.0)
    assert seen.seen_at.tzinfo is not None


async def test_giving_up_on_429_says_what_lifi_said_about_the_limit(
    server: LifiTestServer,
) -> None:
    limits = {"limit": "100", "remaining": "0", "reset": "0"}
    # the last 429 carries no ratelimit-* headers: the last state seen is what is reported
    server.inject(
        *ROUTES,
        Fault.rate_limited(retry_after=None, ratelimit=limits),
        Fault.rate_limited(retry_after="0"),
    )
    provider = fast(server, max_retries=1)
    with pytest.raises(RateLimitedError, match="after 2 attempts") as info:
        await provider.routes(*REQUEST)
    message = str(info.value)
    assert "0 of 100 requests left" in message and "window resets in 0 s" in message
    assert info.value.rate_limit == provider.client.rate_limit
    assert info.value.rate_limit is not None and info.value.rate_limit.remaining == 0


async def test_a_ratelimit_reset_beyond_max_retry_after_is_not_waited_out(
    server: LifiTestServer,
) -> None:
    limits = {"limit": "100", "remaining": "0", "reset": "3600"}
    server.inject(*ROUTES, Fault.rate_limited(retry_after=None, ratelimit=limits))
    with pytest.raises(RateLimitedError, match="wait 3600 s") as info:
        await fast(server, max_retry_after=30).routes(*REQUEST)
    assert info.value.retry_after == 3600 and "window resets in 3600 s" in str(info.value)
    assert server.count(*ROUTES) == 1


async def test_500_n_times_gives_up_with_a_clear_error(server: LifiTestServer) -> None:
    server.inject(*ROUTES, *[Fault.server_error(message="Upstream bridge API failed")] * 10)
    provider = fast(server, max_retries=3)
    with pytest.raises(AggregatorServerError) as info:
        await provider.routes(*REQUEST)
    err = info.value
    assert server.count(*ROUTES) == 4  # 1 + 3 retries, then it stops
    assert err.status == 500 and err.code == 1006
    assert "Upstream bridge API failed" in str(err) and "after 4 attempts" in str(err)
    assert isinstance(err, AggregatorUnavailableError) and isinstance(err, AggregatorError)


async def test_503_then_200_recovers(server: LifiTestServer) -> None:
    server.inject(*ROUTES, Fault.server_error(503, "Service Unavailable"), Fault.server_error(502))
    assert len(await fast(server).routes(*REQUEST)) == 4
    assert server.count(*ROUTES) == 3


async def test_400_is_not_retried_and_keeps_message_and_code(server: LifiTestServer) -> None:
    server.inject(*ROUTES, Fault.error(400, "Invalid fromAddress: must not be 0x0", 1011))
    server.inject(*ROUTES, Fault.error(400, "second request would get this", 1011))
    provider = fast(server, max_retries=5)
    with pytest.raises(AggregatorError) as info:
        await provider.routes(*REQUEST)
    err = info.value
    assert type(err) is AggregatorError
    assert err.status == 400 and err.code == 1011
    assert "Invalid fromAddress: must not be 0x0" in str(err)
    assert "Check the request parameters" in str(err)
    assert server.count(*ROUTES) == 1  # counted on the server: exactly one request


async def test_no_route_is_its_own_error(server: LifiTestServer) -> None:
    provider = fast(server)
    with pytest.raises(NoRouteError) as info:
        await provider.routes(42161, 10, "USDC", "USDC", 7, SENDER)  # no fixture for 7
    assert info.value.status == 404 and info.value.code == 1002
    assert server.count(*ROUTES) == 1


async def test_empty_route_list_means_no_best_route(server: LifiTestServer) -> None:
    empty = json.dumps({"routes": [], "unavailableRoutes": {"filteredOut": [], "failed": []}})
    server.inject(*ROUTES, Fault(body=empty.encode()), Fault(body=empty.encode()))
    provider = fast(server)
    assert await provider.routes(*REQUEST) == []
    with pytest.raises(NoRouteError, match="found no route"):
        await provider.best_route(*REQUEST)


# --- malformed answers -------------------------------------------------------------------


async def test_malformed_json_is_a_clear_error_and_not_retried(server: LifiTestServer) -> None:
    server.inject(*ROUTES, Fault.malformed())
    with pytest.raises(AggregatorResponseError, match="not JSON") as info:
        await fast(server).routes(*REQUEST)
    assert "POST /advanced/routes" in str(info.value) and "truncated" in str(info.value)
    assert server.count(*ROUTES) == 1


async def test_html_error_page_keeps_a_snippet(server: LifiTestServer) -> None:
    server.inject("GET", "/quote", Fault(status=403, body=b"<html>Forbidden by proxy</html>"))
    with pytest.raises(AggregatorError, match="Forbidden by proxy") as info:
        await fast(server).quote(*REQUEST)
    assert info.value.status == 403 and info.value.code is None


@pytest.mark.parametrize(
    ("drop", "expected"),
    [
        ("routes.1.toAmount", r"routes\[1\]\.toAmount is missing"),
        ("routes.0.steps.0.estimate.gasCosts.0.amountUSD", r"gasCosts\[0\]\.amountUSD is missing"),
        ("routes.2.toToken", r"routes\[2\]\.toToken must be a JSON object, got null"),
    ],
)
async def test_missing_fields_are_clear_errors(
    server: LifiTestServer, drop: str, expected: str
) -> None:
    server.inject(*ROUTES, Fault.missing(drop))
    with pytest.raises(AggregatorResponseError, match=expected):
        await fast(server).routes(*REQUEST)
    assert server.count(*ROUTES) == 1


async def test_quote_without_estimate_is_a_clear_error(server: LifiTestServer) -> None:
    server.inject("GET", "/quote", Fault.missing("estimate"))
    with pytest.raises(
        AggregatorResponseError, match=r"GET /quote .* estimate must be a JSON object"
    ):
        await fast(server).quote(*REQUEST)


async def test_unknown_fields_in_routes_steps_and_status_are_ignored(
    server: LifiTestServer,
) -> None:
    plain = await fast(server).routes(*REQUEST)
    data = fixture("routes_arb_usdc_to_op_usdc.json")
    data["someNewField"] = {"x": 1}
    for route in data["routes"]:
        route["fromAddress"] = route["toAddress"] = SENDER
        route["insurance"]["newInsuranceField"] = True
        route["newRouteField"] = [1, "two", None]
        step = route["steps"][0]
        step["action"]["fromAddress"] = step["action"]["toAddress"] = SENDER
        step["newStepField"] = {"nested": {"deeper": []}}
        step["estimate"]["newEstimateField"] = "0.1"
        for included in step["includedSteps"]:
            included["newIncludedField"] = 0
            included["action"]["fromAddress"] = included["action"]["toAddress"] = SENDER
    server.inject(*ROUTES, Fault.json(data))
    assert await fast(server).routes(*REQUEST) == plain

    done = fixture("status_done.json")
    done.update(newStatusField={"a": 1}, metadata={"integrator": "x", "extra": True})
    done["receiving"]["newReceivingField"] = "y"
    server.inject("GET", "/status", Fault.json(done))
    status = await fast(server).status(synthetic_tx_hashes()[0])
    assert status.done and status.receiving is not None
    assert status.receiving.amount == 99_905_000


# --- unreachable, slow, bad input --------------------------------------------------------


async def test_slow_answers_time_out_and_say_so(server: LifiTestServer) -> None:
    server.inject(*ROUTES, Fault.slow(5.0), Fault.slow(5.0))
    provider = fast(server, timeout=0.2, max_retries=1)
    with pytest.raises(AggregatorUnavailableError, match=r"timed out after 0\.2 s") as info:
        await provider.routes(*REQUEST)
    assert "No rates are invented" in str(info.value)
    assert server.count(*ROUTES) == 2


async def test_unreachable_api_is_an_error_never_a_made_up_rate() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = AggregatorProvider(
        base_url=f"http://127.0.0.1:{port}/v1", max_retries=1, backoff_base=0.001
    )
    with pytest.raises(AggregatorUnavailableError, match="cannot be reached") as info:
        await provider.best_route(*REQUEST)
    assert "No rates are invented" in str(info.value)
    assert not isinstance(info.value, AggregatorError)


async def test_bad_input_sends_nothing(server: LifiTestServer) -> None:
    provider = fast(server)
    with pytest.raises(InvalidAmountError):
        await provider.routes(42161, 10, "USDC", "USDC", 0, SENDER)
    with pytest.raises(SettlementValueError, match="64 hex"):
        await provider.status("0x1234")
    assert server.count() == 0


# --- status tracking ---------------------------------------------------------------------


async def test_track_polls_until_done_and_reports_progress(server: LifiTestServer) -> None:
    tx_hash = synthetic_tx_hashes()[0]
    server.inject("GET", "/status", Fault(body=b'{"status": "NOT_FOUND"}'))
    seen: list[Status] = []

    async def on_progress(status: Status) -> None:
        seen.append(status)

    final = await fast(server).track(tx_hash, on_progress=on_progress, poll_interval=0)
    assert final.done and final.substatus == "COMPLETED"
    assert [(s.status, s.substatus) for s in seen] == [
        ("NOT_FOUND", None),
        ("PENDING", "WAIT_SOURCE_CONFIRMATIONS"),
        ("PENDING", "WAIT_DESTINATION_TRANSACTION"),
        ("DONE", "COMPLETED"),
    ]
    assert server.count("GET", "/status") == 4
    assert server.requests[0].query["txHash"] == [tx_hash]


async def test_track_keeps_polling_while_the_transaction_is_not_indexed(
    server: LifiTestServer,
) -> None:
    """LI.FI answers 200 ``NOT_FOUND`` until it has indexed the transaction: not an error,
    not final, so ``track`` polls on (and reports NOT_FOUND once)."""
    not_found = {"status": "NOT_FOUND", "message": "Not yet indexed", "newField": [1]}
    server.inject("GET", "/status", *[Fault.json(not_found)] * 5)
    seen: list[str] = []
    final = await fast(server).track(
        synthetic_tx_hashes()[0], on_progress=lambda s: seen.append(s.status), poll_interval=0
    )
    assert final.done
    assert seen == ["NOT_FOUND", "PENDING", "PENDING", "DONE"]  # two PENDING substatuses
    assert server.count("GET", "/status") == 5 + 3  # five NOT_FOUND, then the fixtures' three


async def test_track_returns_failed_and_reports_unchanged_status_once(
    server: LifiTestServer,
) -> None:
    pending = json.dumps(fixture("status_pending_source.json")).encode()
    failed = fixture("status_pending_source.json")
    failed.update(status="FAILED", substatus="SLIPPAGE_EXCEEDED")
    server.inject(
        "GET",
        "/status",
        Fault(body=pending),
        Fault(body=pending),
        Fault(body=json.dumps(failed).encode()),
    )
    seen: list[str] = []
    final = await fast(server).track(
        synthetic_tx_hashes()[0], on_progress=lambda s: seen.append(s.status)
    )
    assert final.failed and final.substatus == "SLIPPAGE_EXCEEDED"
    assert seen == ["PENDING", "FAILED"]  # the repeated PENDING is reported once
    assert server.count("GET", "/status") == 3


async def test_track_times_out(server: LifiTestServer) -> None:
    pending = json.dumps(fixture("status_pending_source.json")).encode()
    server.inject("GET", "/status", *[Fault(body=pending)] * 200)
    with pytest.raises(SettlementTimeoutError, match="still PENDING/WAIT_SOURCE_CONFIRMATIONS"):
        await fast(server).track(synthetic_tx_hashes()[0], poll_interval=0.01, timeout=0.1)


# --- execution plans ---------------------------------------------------------------------


async def test_execute_plan_populates_steps_and_sends_nothing(server: LifiTestServer) -> None:
    provider = fast(server)
    best = await provider.best_route(*REQUEST)
    plan = await provider.execute_plan(best)
    assert server.count("POST", "/advanced/stepTransaction") == 1
    posted = next(r for r in server.requests if r.path.endswith("/stepTransaction")).json()
    assert posted["id"] == best.steps[0].id  # the step object goes back as LI.FI sent it
    assert [t.kind for t in plan.transactions] == ["approve", "step"]
    assert not plan.sent and plan.tx_hashes == ()
    assert plan.from_address == SENDER
    with pytest.raises(SettlementValueError, match="needs wallet"):
        await provider.execute_plan(best, send=True)
    quote = await provider.quote(*REQUEST)
    before = server.count("POST", "/advanced/stepTransaction")
    assert len((await provider.execute_plan(quote)).transactions) == 2
    assert server.count("POST", "/advanced/stepTransaction") == before  # a quote is populated


def test_one_provider_survives_event_loop_changes(server: LifiTestServer) -> None:
    provider = fast(server)
    first = asyncio.run(provider.chains())
    second = asyncio.run(provider.chains())  # a new loop: the client reconnects
    assert first == second and server.count("GET", "/chains") == 2
    asyncio.run(provider.close())
