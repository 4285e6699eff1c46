"""Best-rate ranking: the worst-case net (toAmountMin, minus fees on top and gas with the
approval) decides, not the headline toAmount."""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from settlement_widgets.aggregator import APPROVAL_GAS, Route, net_value, rank_routes
from settlement_widgets.aggregator.models import parse_quote, parse_routes
from settlement_widgets.aggregator.ranking import best
from tests.lifi_synthetic import fixture

ROUTES = "routes_arb_usdc_to_op_usdc.json"
NATIVE = fixture("tokens.json")["tokens"]["42161"][0]  # ETH on Arbitrum
# 46,000 gas at the fixtures' 0.05 gwei, ETH at $3128.45
APPROVAL_USD = Decimal(APPROVAL_GAS * 50_000_000).scaleb(-18) * Decimal("3128.45")


def synthetic_routes() -> list[Route]:
    return parse_routes(fixture(ROUTES), source="test")


def parse_one(route: dict[str, Any]) -> Route:
    (parsed,) = parse_routes({"routes": [route]}, source="t")
    return parsed


def by_tool(routes: list[Route]) -> dict[str, Route]:
    return {r.tools[0]: r for r in routes}


def route_json(tool: str) -> dict[str, Any]:
    return next(r for r in fixture(ROUTES)["routes"] if r["steps"][0]["tool"] == tool)


def test_approval_gas_is_a_documented_constant_priced_from_gas_costs() -> None:
    assert APPROVAL_GAS == 46_000
    value = net_value(by_tool(synthetic_routes())["relay"])
    assert value is not None and value.approval_gas_known and value.note is None
    assert value.approval_gas_usd == APPROVAL_USD == Decimal("0.007195435")
    assert value.gas_usd == Decimal("0.03") + APPROVAL_USD  # LI.FI's gasCostUSD + approval


def test_highest_to_amount_loses_because_of_a_fee_on_top() -> None:
    routes = synthetic_routes()
    highest = max(routes, key=lambda r: r.to_amount)
    assert highest.tools == ("stargateV2",)
    # the naive rule (highest toAmount) and LI.FI's order agree; so does the highest
    # toAmountMin: only the fee paid on top makes this route the worst
    assert routes[0].id == highest.id
    assert highest.to_amount_min == max(r.to_amount_min for r in routes)
    ranked = rank_routes(routes)
    assert [r.tools[0] for r in ranked] == ["relay", "across", "cbridge", "stargateV2"]
    assert [r.rank for r in ranked] == [1, 2, 3, 4]
    stargate = net_value(highest)
    assert stargate is not None
    assert stargate.received_usd == Decimal("99.94")
    assert stargate.received_min_usd == Decimal("99.94") * 99_450_250 / 99_950_000
    assert stargate.fees_usd == Decimal("0.92")  # included: false
    assert stargate.included_fees_usd == Decimal("0.06")  # already out of toAmount
    assert stargate.gas_usd == Decimal("0.04") + APPROVAL_USD
    assert stargate.net_usd == Decimal("98.98") - APPROVAL_USD
    assert stargate.net_min_usd == stargate.received_min_usd - Decimal("0.96") - APPROVAL_USD
    relay = ranked[0]
    assert relay.net_min_usd == Decimal("99.4005") - Decimal("0.03") - APPROVAL_USD
    assert relay.net_usd == Decimal("99.87") - APPROVAL_USD
    assert relay.net_min_usd > highest.net_min_usd  # type: ignore[operator]
    # without the fee on top, the same route would be the best
    data = route_json("stargateV2")
    data["steps"][0]["estimate"]["feeCosts"][0]["included"] = True
    unfeed = parse_one(data)
    assert rank_routes([*routes[1:], unfeed])[0].id == unfeed.id


def test_higher_to_amount_with_wider_slippage_loses() -> None:
    tight = route_json("relay")
    wide = copy.deepcopy(tight)
    wide["id"], wide["steps"][0]["id"] = "wide-slippage", "wide-step"
    wide["toAmount"] = "99950000"  # more than tight's 99905000 ...
    wide["toAmountUSD"] = "99.95"
    wide["toAmountMin"] = "96951500"  # ... but 3 % may be lost, tight risks 0.5 %
    wide["steps"][0]["action"]["slippage"] = 0.03
    routes = [parse_one(wide), parse_one(tight)]
    assert routes[0].net_usd > routes[1].net_usd  # type: ignore[operator]
    assert routes[0].net_min_usd < routes[1].net_min_usd  # type: ignore[operator]
    ranked = rank_routes(routes)
    assert [r.id for r in ranked] == [tight["id"], "wide-slippage"]
    assert (
        ranked[1].net_min_usd
        == Decimal("99.95") * 96_951_500 / 99_950_000 - Decimal("0.03") - APPROVAL_USD
    )


def test_to_amount_min_is_valued_at_the_token_price_without_to_amount_usd() -> None:
    data = route_json("relay")
    del data["toAmountUSD"]
    value = net_value(parse_one(data))
    assert value is not None
    price = Decimal("0.9999")
    assert value.received_usd == Decimal(99_905_000).scaleb(-6) * price
    assert value.received_min_usd == Decimal(99_405_475).scaleb(-6) * price


def test_equal_worst_case_is_broken_by_duration_then_headline_then_id() -> None:
    template = route_json("relay")
    del template["toAmountUSD"]  # both valued at toToken.priceUSD: equal toAmountMin, equal value

    def variant(route_id: str, to_amount: int, duration: int) -> Route:
        r = copy.deepcopy(template)
        r["id"] = route_id
        r["toAmount"] = str(to_amount)
        r["steps"][0]["estimate"]["executionDuration"] = duration
        return parse_one(r)

    slow_high = variant("a-slow-high", 99_990_000, 60)
    fast_low = variant("b-fast-low", 99_500_000, 9)
    fast_high = variant("c-fast-high", 99_900_000, 9)
    twin = variant("d-fast-high", 99_900_000, 9)
    assert len({r.net_min_usd for r in (slow_high, fast_low, fast_high, twin)}) == 1
    for order in ([slow_high, fast_low, twin, fast_high], [twin, fast_high, fast_low, slow_high]):
        assert [r.id for r in rank_routes(order)] == [
            "c-fast-high",  # fastest, then the higher headline, then the id
            "d-fast-high",
            "b-fast-low",
            "a-slow-high",  # the highest headline, but the slowest
        ]


def test_included_fees_are_not_subtracted_twice() -> None:
    route = route_json("across")
    fee = route["steps"][0]["estimate"]["feeCosts"][0]
    assert fee["included"] is True
    before = net_value(parse_one(route))
    fee["included"] = False
    after = net_value(parse_one(route))
    assert before is not None and after is not None
    assert before.net_usd - after.net_usd == Decimal(fee["amountUSD"])
    assert before.net_min_usd - after.net_min_usd == Decimal(fee["amountUSD"])


def test_gas_falls_back_to_step_gas_costs_and_sum_entries() -> None:
    route = copy.deepcopy(fixture(ROUTES)["routes"][1])
    del route["gasCostUSD"]
    gas = route["steps"][0]["estimate"]["gasCosts"]
    send = gas[0]
    value = net_value(parse_one(route))
    assert value is not None
    assert value.gas_usd == Decimal(send["amountUSD"]) + APPROVAL_USD
    # LI.FI priced the approval itself: it is counted once, as LI.FI priced it
    gas.append({**send, "type": "APPROVE", "amountUSD": "0.02"})
    value = net_value(parse_one(route))
    assert value is not None
    assert value.gas_usd == Decimal(send["amountUSD"]) + Decimal("0.02")
    assert value.approval_gas_usd == Decimal("0.02")
    gas.append({**send, "type": "SUM", "amountUSD": "0.07"})
    value = net_value(parse_one(route))
    assert value is not None and value.gas_usd == Decimal("0.07")  # SUM already totals them


def test_a_native_source_needs_no_approval() -> None:
    route = route_json("relay")
    route["fromToken"] = NATIVE
    route["steps"][0]["action"]["fromToken"] = NATIVE
    value = net_value(parse_one(route))
    assert value is not None and value.approval_gas_usd == 0 and value.approval_gas_known
    assert value.gas_usd == Decimal("0.03")


def test_an_unpriceable_approval_counts_as_zero_and_says_so() -> None:
    for missing in ("price", "priceUSD"):
        route = route_json("relay")
        for gas in route["steps"][0]["estimate"]["gasCosts"]:
            del (gas if missing == "price" else gas["token"])[missing]
        value = net_value(parse_one(route))
        assert value is not None, missing
        assert value.approval_gas_usd == 0 and not value.approval_gas_known
        assert value.gas_usd == Decimal("0.03")
        assert value.note is not None and "approval" in value.note and "$0" in value.note


def test_unpriceable_routes_rank_last_by_to_amount_min() -> None:
    routes = copy.deepcopy(fixture(ROUTES)["routes"])
    for r in routes[2:]:  # relay and cbridge cannot be priced at all
        del r["toAmountUSD"]
        del r["toToken"]["priceUSD"]
    ranked = rank_routes(parse_routes({"routes": routes}, source="t"))
    assert [r.tools[0] for r in ranked] == ["across", "stargateV2", "relay", "cbridge"]
    assert ranked[-1].net_usd is None and ranked[-1].net_min_usd is None
    assert ranked[-1].approval_gas_usd is None


def test_quote_is_valued_like_a_route() -> None:
    quote = parse_quote(fixture("quote_arb_usdc_to_op_usdc.json"), source="t")
    relay = by_tool(synthetic_routes())["relay"]
    assert quote.net_usd == relay.net_usd == Decimal("99.87") - APPROVAL_USD
    assert quote.net_min_usd == relay.net_min_usd
    assert quote.approval_gas_usd == APPROVAL_USD


def test_ranking_is_pure_and_total() -> None:
    routes = synthetic_routes()
    snapshot = list(routes)
    first = rank_routes(routes)
    assert routes == snapshot and all(r.rank is None for r in routes)
    assert rank_routes(reversed(routes)) == first
    assert best([]) is None
    top = best(routes)
    assert top is not None and top.id == first[0].id


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(min_value=1, max_value=10**12),  # toAmount
            st.integers(min_value=0, max_value=500),  # slippage, basis points
            st.integers(min_value=0, max_value=500),  # fee on top, cents
            st.integers(min_value=0, max_value=500),  # gas, cents
            st.integers(min_value=1, max_value=3600),  # duration
        ),
        min_size=1,
        max_size=8,
    )
)
def test_ranked_order_follows_the_documented_rule(
    specs: list[tuple[int, int, int, int, int]],
) -> None:
    template = fixture(ROUTES)["routes"][0]
    routes = []
    for i, (to_amount, bps, fee_cents, gas_cents, duration) in enumerate(specs):
        r = copy.deepcopy(template)
        r["id"] = f"route-{i}"
        r["toAmount"] = str(to_amount)
        r["toAmountMin"] = str(to_amount * (10_000 - bps) // 10_000)
        r["toAmountUSD"] = str(Decimal(to_amount).scaleb(-6))
        r["gasCostUSD"] = str(Decimal(gas_cents).scaleb(-2))
        est = r["steps"][0]["estimate"]
        est["feeCosts"][0]["amountUSD"] = str(Decimal(fee_cents).scaleb(-2))
        est["executionDuration"] = duration
        routes.append(r)
    ranked = rank_routes(parse_routes({"routes": routes}, source="t"))
    keys = [(-(r.net_min_usd or 0), r.duration, -(r.net_usd or 0), r.id) for r in ranked]
    assert keys == sorted(keys)
    for r in ranked:  # the worst case never beats the headline
        assert r.net_min_usd is not None and r.net_usd is not None
        assert r.net_min_usd <= r.net_usd
