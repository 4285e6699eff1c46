"""routes_frame: stable columns and dtypes, exact integer amounts beside human units, the
worst-case and headline nets side by side; routes_styler: the same routes as a table for
people, escaped."""

from __future__ import annotations

import copy
import math
from typing import Any

import pandas as pd
import pytest

from settlement_widgets.aggregator import (
    ROUTE_COLUMNS,
    ROUTE_TABLE_COLUMNS,
    routes_frame,
    routes_styler,
)
from settlement_widgets.aggregator.core.parse import parse_routes
from settlement_widgets.errors import SettlementValueError
from tests.lifi_synthetic import fixture

# The contract, spelled out: a change here is a breaking change for notebooks.
EXPECTED = {
    "rank": "Int64",
    "route_id": "string",
    "tools": "string",
    "steps": "Int64",
    "from_chain_id": "Int64",
    "to_chain_id": "Int64",
    "from_token": "string",
    "to_token": "string",
    "from_amount": "object",
    "from_amount_units": "float64",
    "to_amount": "object",
    "to_amount_units": "float64",
    "to_amount_min": "object",
    "to_amount_min_units": "float64",
    "from_amount_usd": "float64",
    "to_amount_usd": "float64",
    "fees_usd": "float64",
    "included_fees_usd": "float64",
    "gas_usd": "float64",
    "approval_gas_usd": "float64",
    "net_usd": "float64",
    "net_min_usd": "float64",
    "duration_s": "float64",
    "tags": "string",
}


def routes_json() -> dict[str, Any]:
    return fixture("routes_arb_usdc_to_op_usdc.json")  # type: ignore[no-any-return]


def dtypes(frame: pd.DataFrame) -> dict[str, str]:
    return {name: str(dtype) for name, dtype in frame.dtypes.items()}


def test_columns_and_dtypes_are_stable() -> None:
    assert ROUTE_COLUMNS == EXPECTED
    full = routes_frame(parse_routes(routes_json(), source="t"))
    empty = routes_frame([])
    one = routes_frame(parse_routes(routes_json(), source="t")[:1])
    for frame in (full, empty, one):
        assert list(frame.columns) == list(EXPECTED)
        assert dtypes(frame) == EXPECTED
    assert len(full) == 4 and len(empty) == 0


def test_rows_are_ranked_and_hold_the_breakdown() -> None:
    frame = routes_frame(parse_routes(routes_json(), source="t"))
    assert list(frame["rank"]) == [1, 2, 3, 4]
    assert list(frame["tools"]) == ["relay", "across", "cbridge", "stargateV2"]
    assert frame["net_min_usd"].is_monotonic_decreasing  # the ranking key
    top = frame.iloc[0]
    assert math.isclose(top["net_usd"], top["to_amount_usd"] - top["fees_usd"] - top["gas_usd"])
    worst_case = top["to_amount_usd"] * top["to_amount_min"] / top["to_amount"]
    assert math.isclose(top["net_min_usd"], worst_case - top["fees_usd"] - top["gas_usd"])
    assert math.isclose(top["approval_gas_usd"], 0.007195435)  # part of gas_usd
    assert math.isclose(top["gas_usd"], 0.03 + top["approval_gas_usd"])
    assert (frame["net_min_usd"] < frame["net_usd"]).all()
    stargate = frame.iloc[-1]
    assert stargate["to_amount"] == frame["to_amount"].max()  # highest toAmount, ranked last
    assert stargate["fees_usd"] == 0.92 and stargate["tags"] == "CHEAPEST"


def test_amounts_are_exact_python_ints_alongside_units() -> None:
    data = routes_json()
    route = copy.deepcopy(data["routes"][0])
    big = 2**70 + 3  # beyond int64: must not be rounded or overflow
    route["toAmount"] = str(big)
    route["toAmountMin"] = str(big - 1)
    route["toToken"]["decimals"] = 18
    frame = routes_frame(parse_routes({"routes": [route, data["routes"][1]]}, source="t"))
    row = frame[frame["route_id"] == route["id"]].iloc[0]
    assert type(row["to_amount"]) is int and row["to_amount"] == big
    assert type(row["to_amount_min"]) is int and row["to_amount_min"] == big - 1
    assert math.isclose(row["to_amount_units"], big / 10**18)
    for column in ("from_amount", "to_amount", "to_amount_min"):
        assert all(type(v) is int for v in frame[column])
    relay_like = frame[frame["route_id"] == data["routes"][1]["id"]].iloc[0]
    assert relay_like["to_amount"] == 99_912_345 and relay_like["to_amount_units"] == 99.912345


def test_unpriced_routes_have_nan_usd_and_keep_dtypes() -> None:
    data = routes_json()
    route = copy.deepcopy(data["routes"][3])
    del route["toAmountUSD"]
    del route["toToken"]["priceUSD"]
    frame = routes_frame(parse_routes({"routes": [route, data["routes"][0]]}, source="t"))
    assert dtypes(frame) == EXPECTED
    last = frame.iloc[-1]
    assert last["route_id"] == route["id"] and math.isnan(last["net_usd"])
    assert math.isnan(last["net_min_usd"]) and math.isnan(last["approval_gas_usd"])


def test_the_source_lives_in_attrs() -> None:
    live = routes_frame(parse_routes(routes_json(), source="t"))
    assert live.attrs == {"source": "live"}
    local = routes_frame(parse_routes(routes_json(), source="t"), source="local")
    assert local.attrs == {"source": "local"}
    assert routes_frame([], source="local").attrs == {"source": "local"}
    with pytest.raises(SettlementValueError, match="source"):
        routes_frame([], source="recorded")  # type: ignore[arg-type]


# --- routes_styler: the table people read ----------------------------------------------------


def _cells(html: str) -> list[list[str]]:
    """The text of each row's cells (header row first), from the Styler's HTML."""
    import re

    rows = re.findall(r"<tr>(.*?)</tr>", html, flags=re.S)
    return [[c.strip() for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", r, re.S)] for r in rows]


def test_route_table_has_human_headers_units_and_best_first() -> None:
    frame = routes_frame(parse_routes(routes_json(), source="t"))
    html = routes_styler(frame).to_html()
    header, *rows = _cells(html)
    assert header == [
        "#",
        "Tool",
        "You receive",
        "At least",
        "Fees (USD)",
        "Gas (USD)",
        "Net, worst case (USD)",
        "Est. duration",
    ]
    assert header == list(ROUTE_TABLE_COLUMNS)
    assert ROUTE_TABLE_COLUMNS["Net, worst case (USD)"] == "net_min_usd"  # the ranking key
    assert "to_amount_units" not in html and "net_min_usd" not in html
    assert [r[:2] for r in rows] == [
        ["1", "relay"],
        ["2", "across"],
        ["3", "cbridge"],
        ["4", "stargateV2"],
    ]
    assert rows[1][2] == "99.912345 USDC"  # with the token's symbol, exact to 6 decimals
    assert rows[1][3] == "99.412783 USDC"  # toAmountMin: what the ranking counts on
    assert rows[3][4] == "0.92"  # USD with two decimals
    assert rows[0][5] == "0.04"  # 0.03 of LI.FI's gas + 0.0072 for the approval
    assert rows[0][6] == "99.36"
    for row in rows:
        assert row[7].endswith((" s", " min")), row
    # the same HTML on every run (nbval compares notebook outputs): a fixed table id
    assert html == routes_styler(frame).to_html() and 'id="T_sw_routes"' in html
    # in the theme's colours, at a legible size
    assert "var(--jp-ui-font-color1" in html and "font-size: 13px" in html


def test_route_table_labels_the_estimate_and_shows_the_measured_time() -> None:
    """The API's duration is an estimate and says so; a route a run executed shows the time
    it took beside it (a bridge estimated at 2 s that took 17 s reads as such)."""
    frame = routes_frame(parse_routes(routes_json(), source="t"))
    header, *rows = _cells(routes_styler(frame).to_html())
    assert "Est. duration" in header and "Duration" not in header and "Measured" not in header
    best = str(frame.iloc[0]["route_id"])
    header, *rows = _cells(routes_styler(frame, {best: 17.25}).to_html())
    assert header[-2:] == ["Est. duration", "Measured"]
    assert rows[0][-1] == "17.2 s" or rows[0][-1] == "17.3 s"
    assert [r[-1] for r in rows[1:]] == ["not run"] * 3
    assert rows[0][-2] == f"{round(float(frame.iloc[0]['duration_s']))} s"  # the estimate stays
    header, *rows = _cells(routes_styler(frame, {best: 125.0}).to_html())
    assert rows[0][-1] == "2 min 5 s"


def test_route_table_escapes_what_the_api_says() -> None:
    data = routes_json()
    route = copy.deepcopy(data["routes"][0])
    for step in (route["steps"][0], *route["steps"][0]["includedSteps"]):
        step["tool"] = "<img src=x onerror=alert(1)>"
    route["toToken"]["symbol"] = '"><script>alert(1)</script>'
    html = routes_styler(routes_frame(parse_routes({"routes": [route]}, source="t"))).to_html()
    assert "<img" not in html and "<script>" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "99.95 &#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_route_table_of_unpriced_and_no_routes() -> None:
    data = routes_json()
    route = copy.deepcopy(data["routes"][3])
    del route["toAmountUSD"]
    del route["toToken"]["priceUSD"]
    frame = routes_frame(parse_routes({"routes": [route]}, source="t"))
    (row,) = _cells(routes_styler(frame).to_html())[1:]
    assert row[6] == "n/a"  # net unknown without a price
    header, *rows = _cells(routes_styler(routes_frame([])).to_html())
    assert header[1] == "Tool" and rows == []
