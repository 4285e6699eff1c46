"""Best-rate ranking: the net received value decides, not the headline toAmount."""

from __future__ import annotations

import copy
import json
from decimal import Decimal
from importlib import resources
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from settlement_widgets.aggregator import (
    Route,
    net_value,
    rank_routes,
)
from settlement_widgets.aggregator.models import parse_quote, parse_routes
from settlement_widgets.aggregator.ranking import best


def recorded(name: str) -> Any:
    files = resources.files("settlement_widgets.aggregator")
    return json.loads(files.joinpath("recorded", name).read_text())


def recorded_routes() -> list[Route]:
    return parse_routes(recorded("routes_arb_usdc_to_op_usdc.json"), source="test")


def by_tool(routes: list[Route]) -> dict[str, Route]:
    return {r.tools[0]: r for r in routes}


def test_highest_to_amount_is_not_the_best_net() -> None:
    routes = recorded_routes()
    highest = max(routes, key=lambda r: r.to_amount)
    assert highest.tools == ("stargateV2",)
    # the naive rule of the original dashboard (highest toAmount) and LI.FI's order agree ...
    assert routes[0].id == highest.id
    ranked = rank_routes(routes)
    # ... but the LayerZero fee is paid on top of the transfer, so it keeps the least
    assert ranked[0].tools == ("relay",)
    assert ranked[-1].id == highest.id
    assert [r.rank for r in ranked] == [1, 2, 3, 4]
    stargate = net_value(highest)
    assert stargate is not None
    assert stargate.received_usd == Decimal("99.94")
    assert stargate.fees_usd == Decimal("0.92")  # included: false
    assert stargate.included_fees_usd == Decimal("0.06")  # already out of toAmount
    assert stargate.gas_usd == Decimal("0.04")
    assert stargate.net_usd == Decimal("98.98")
    assert ranked[0].net_usd == Decimal("99.87") > highest.net_usd  # type: ignore[operator]


def test_equal_net_is_broken_by_duration() -> None:
    tools = by_tool(recorded_routes())
    relay, across = tools["relay"], tools["across"]
    assert relay.net_usd == across.net_usd == Decimal("99.87")
    assert relay.duration < across.duration
    for order in ([relay, across], [across, relay]):
        assert [r.tools[0] for r in rank_routes(order)] == ["relay", "across"]


def test_included_fees_are_not_subtracted_twice() -> None:
    data = recorded("routes_arb_usdc_to_op_usdc.json")
    route = next(r for r in data["routes"] if r["steps"][0]["tool"] == "across")
    fee = route["steps"][0]["estimate"]["feeCosts"][0]
    assert fee["included"] is True
    before = net_value(parse_routes({"routes": [route]}, source="t")[0])
    fee["included"] = False
    after = net_value(parse_routes({"routes": [route]}, source="t")[0])
    assert before is not None and after is not None
    assert before.net_usd - after.net_usd == Decimal(fee["amountUSD"])


def test_gas_falls_back_to_step_gas_costs_and_sum_entries() -> None:
    data = recorded("routes_arb_usdc_to_op_usdc.json")
    route = copy.deepcopy(data["routes"][1])
    del route["gasCostUSD"]
    gas = route["steps"][0]["estimate"]["gasCosts"]
    send = gas[0]
    gas.append({**send, "type": "APPROVE", "amountUSD": "0.02"})
    value = net_value(parse_routes({"routes": [route]}, source="t")[0])
    assert value is not None
    assert value.gas_usd == Decimal(send["amountUSD"]) + Decimal("0.02")
    gas.append({**send, "type": "SUM", "amountUSD": "0.07"})
    value = net_value(parse_routes({"routes": [route]}, source="t")[0])
    assert value is not None and value.gas_usd == Decimal("0.07")  # SUM already totals them


def test_to_amount_usd_falls_back_to_price_and_unpriceable_routes_rank_last() -> None:
    data = recorded("routes_arb_usdc_to_op_usdc.json")
    routes = copy.deepcopy(data["routes"])
    del routes[0]["toAmountUSD"]  # stargate: priced from toToken.priceUSD instead
    value = net_value(parse_routes({"routes": [routes[0]]}, source="t")[0])
    assert value is not None
    assert value.received_usd == Decimal(99_950_000).scaleb(-6) * Decimal("0.9999")
    # a route that cannot be priced at all ranks after every priced one
    del routes[2]["toAmountUSD"]
    del routes[2]["toToken"]["priceUSD"]
    unpriced = parse_routes({"routes": routes}, source="t")
    ranked = rank_routes(unpriced)
    assert ranked[-1].tools == ("relay",)
    assert ranked[-1].net_usd is None


def test_quote_is_valued_like_a_route() -> None:
    quote = parse_quote(recorded("quote_arb_usdc_to_op_usdc.json"), source="t")
    relay = by_tool(recorded_routes())["relay"]
    assert quote.net_usd == relay.net_usd == Decimal("99.87")


def test_ranking_is_pure_and_total() -> None:
    routes = recorded_routes()
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
            st.integers(min_value=0, max_value=500),  # fee on top, cents
            st.integers(min_value=0, max_value=500),  # gas, cents
            st.integers(min_value=1, max_value=3600),  # duration
        ),
        min_size=1,
        max_size=8,
    )
)
def test_ranked_order_follows_the_documented_rule(specs: list[tuple[int, int, int, int]]) -> None:
    template = recorded("routes_arb_usdc_to_op_usdc.json")["routes"][0]
    routes = []
    for i, (to_amount, fee_cents, gas_cents, duration) in enumerate(specs):
        r = copy.deepcopy(template)
        r["id"] = f"route-{i}"
        r["toAmount"] = str(to_amount)
        r["toAmountMin"] = str(to_amount)
        r["toAmountUSD"] = str(Decimal(to_amount).scaleb(-6))
        r["gasCostUSD"] = str(Decimal(gas_cents).scaleb(-2))
        est = r["steps"][0]["estimate"]
        est["feeCosts"][0]["amountUSD"] = str(Decimal(fee_cents).scaleb(-2))
        est["executionDuration"] = duration
        routes.append(r)
    ranked = rank_routes(parse_routes({"routes": routes}, source="t"))
    keys = [(-(r.net_usd or 0), r.duration) for r in ranked]
    assert keys == sorted(keys)
