"""The pure parts of ``settlement_widgets.compare``: the intent's validation, the curve and
its break-even points, the projection, and the comparison JSON's round trip and strict
parser. The runs here are built by hand (no chain): the integration test measures real ones.
"""

from __future__ import annotations

import copy
import json
from decimal import Decimal
from typing import Any

import pytest

import settlement_widgets
from settlement_widgets.addresses import validate_address
from settlement_widgets.compare import (
    SEPOLIA_PROFILE,
    Comparison,
    Intent,
    MethodRun,
    NetworkProfile,
    TxRecord,
    break_even,
    comparison_curve,
    profile_of,
    project,
)
from settlement_widgets.compare.curve import solve_break_even
from settlement_widgets.errors import (
    InvalidAddressError,
    InvalidAmountError,
    InvalidComparisonError,
    SettlementValueError,
)

ALICE = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
BOB = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
SOLVER = validate_address("0x90f79bf6eb2c796fc3bc0bd1b0d18d39b2d1a1e3")


def _tx(
    n: int, step: str, phase: str, gas: int, payer: str = ALICE, payment: int | None = None
) -> TxRecord:
    return TxRecord(
        hash="0x" + f"{n:064x}",
        chain_id=31337,
        step=step,
        phase=phase,
        payment=payment,
        gas_used=gas,
        effective_gas_price_wei=10**9,
        payer=payer,
        value_wei=0,
        block=n,
        explorer_url=f"http://127.0.0.1:1/explorer/tx/0x{n:064x}",
    )


def _run(
    method: str,
    label: str,
    txs: list[TxRecord],
    *,
    payments: int,
    seconds: tuple[float, float, float],
) -> MethodRun:
    return MethodRun(
        method=method,
        variant=label,
        label=label,
        asset="USDC",
        decimals=6,
        chain_ids=(31337,),
        payments=payments,
        txs=tuple(txs),
        fees_base_units={"bridge": 1} if method == "aggregator" else {},
        sent_base_units=100 * 10**6,
        received_base_units=100 * 10**6 - (1 if method == "aggregator" else 0),
        wall_seconds=sum(seconds),
        phase_seconds=dict(zip(("open", "payments", "close"), seconds, strict=True)),
        blocks=len(txs),
        signature_prompts=1,
        transaction_prompts=len([t for t in txs if t.payer == ALICE]),
        off_chain_operations=payments if method == "channel" else 0,
        locked_base_units=100 * 10**6 if method == "channel" else 0,
        locked_seconds=seconds[1],
        dispute_window_seconds=3600 if method == "channel" else None,
        cost_usd=None,
        payer=ALICE,
        trust="who can delay",
        if_counterparty_vanishes="what then",
        scope="what was done",
    )


def _comparison(payments: int = 4) -> Comparison:
    # a channel: 300k to open, 100k to close, nothing per payment
    channel = _run(
        "channel",
        "channel (x)",
        [_tx(1, "create", "open", 300_000), _tx(2, "close", "close", 100_000)],
        payments=payments,
        seconds=(1.0, 0.1 * payments, 0.5),
    )
    # v4: 50k once, 150k per payment (a solver pays the settlement)
    v4 = _run(
        "v4",
        "v4 (y)",
        [_tx(3, "approve", "open", 50_000)]
        + [
            _tx(10 + i, "settleIntent", "payment", 150_000, SOLVER, payment=i)
            for i in range(payments)
        ],
        payments=payments,
        seconds=(0.2, 0.3 * payments, 0.0),
    )
    return Comparison(
        network="local",
        measured_at="2026-11-29T01:00:00Z",
        intent=Intent(
            "100", source_chain=31337, destination_chain=31338, payments=payments, counterparty=BOB
        ),
        runs=(channel, v4),
        unavailable={"aggregator": "this sandbox runs one chain"},
    )


# --- the intent ---------------------------------------------------------------------------


def test_intent_normalises_and_splits() -> None:
    intent = Intent(" 100.50 ", payments=3, counterparty=BOB.lower())
    assert intent.decimal_amount == Decimal("100.50") and intent.counterparty == BOB
    assert intent.base_units(6) == 100_500_000
    assert intent.instalments(6) == (33_500_000, 33_500_000, 33_500_000)
    odd = Intent("1", payments=3).instalments(6)
    assert sum(odd) == 10**6 and odd[-1] - odd[0] == 1  # the remainder goes last
    assert Intent(Decimal("2"), payments=1).instalments(0) == (2,)
    assert settlement_widgets.ComparisonIntent is Intent
    resolved = Intent("1").resolved(1, 2, BOB)
    assert (resolved.source_chain, resolved.destination_chain, resolved.counterparty) == (1, 2, BOB)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"amount": 0.1}, InvalidAmountError, "float"),
        ({"amount": True}, InvalidAmountError, "float"),
        ({"amount": "0"}, InvalidAmountError, "positive"),
        ({"amount": "-5"}, InvalidAmountError, "positive"),
        ({"amount": "abc"}, InvalidAmountError, "decimal number"),
        ({"amount": "NaN"}, InvalidAmountError, "positive"),
        ({"amount": [1]}, InvalidAmountError, "list"),
        ({"amount": "1", "payments": 0}, SettlementValueError, "payments"),
        ({"amount": "1", "payments": 2.0}, SettlementValueError, "payments"),
        ({"amount": "1", "payments": True}, SettlementValueError, "payments"),
        ({"amount": "1", "counterparty": "0x12"}, InvalidAddressError, "counterparty"),
        ({"amount": "1", "counterparty": "0x" + "0" * 40}, InvalidAddressError, "counterparty"),
        ({"amount": "1", "asset": " "}, SettlementValueError, "asset"),
        ({"amount": "1", "source_chain": 0}, SettlementValueError, "source_chain"),
        ({"amount": "1", "max_slippage_bps": 10_000}, SettlementValueError, "slippage"),
    ],
)
def test_intent_rejects(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        Intent(**kwargs)


def test_intent_amounts_too_fine_or_too_small() -> None:
    with pytest.raises(InvalidAmountError, match="more decimals"):
        Intent("0.0000001").base_units(6)
    with pytest.raises(InvalidAmountError, match="cannot be split"):
        Intent("0.000001", payments=2).instalments(6)


# --- the curve and the break-even points --------------------------------------------------


def test_profile_amortises_the_channel_and_charges_per_settlement() -> None:
    comparison = _comparison(payments=4)
    channel, v4 = (profile_of(r) for r in comparison.runs)
    assert (channel.fixed_gas, channel.per_payment_gas) == (400_000, 0)
    assert (v4.fixed_gas, v4.per_payment_gas) == (50_000, 150_000)
    assert channel.fixed_seconds == 1.5 and channel.per_payment_seconds == pytest.approx(0.1)
    curve = comparison_curve(comparison, up_to=6)
    assert len(curve) == 12 and curve.attrs["measuredPayments"] == 4
    per = curve[curve["label"] == "channel (x)"].set_index("payments")["cost_per_payment_wei"]
    assert list(per) == sorted(per, reverse=True)  # the channel's cost per payment falls
    at3 = curve[(curve["label"] == "v4 (y)") & (curve["payments"] == 3)].iloc[0]
    assert at3["cumulative_gas"] == 50_000 + 3 * 150_000
    assert at3["cumulative_cost_wei"] == (50_000 + 3 * 150_000) * 10**9
    assert curve["cumulative_cost_usd"].isna().all()  # no price: no USD


def test_break_even_is_where_the_lines_cross() -> None:
    comparison = _comparison(payments=4)
    points = break_even(comparison)
    # 400k <= 50k + n * 150k from n = 3 (2 gives 350k)
    assert points.to_dict("records") == [
        {"channel": "channel (x)", "against": "v4 (y)", "metric": "cost", "break_even_payments": 3}
    ]
    channel, v4 = (profile_of(r) for r in comparison.runs)
    assert solve_break_even(channel, v4, "seconds") is not None
    assert solve_break_even(v4, channel) is None  # cheaper at first, dearer for good from 3
    assert solve_break_even(channel, channel) == 1
    with pytest.raises(SettlementValueError, match="metric"):
        solve_break_even(channel, v4, "gas")
    with pytest.raises(SettlementValueError, match="up_to"):
        comparison_curve(comparison, up_to=0)


# --- the projection -----------------------------------------------------------------------


def test_projection_labels_its_columns_and_states_assumptions() -> None:
    comparison = _comparison(payments=2)
    profile = NetworkProfile("testnet", 12.0, 3 * 10**9, 2, 2000.0, "stated for the test")
    projection = project(comparison, profile)
    frame = projection.frame
    assert frame.attrs["kind"] == "projection"
    measured = {"label", "method", "payments"}
    assert all(c in measured or c.startswith(("projected_", "measured_")) for c in frame)
    channel = frame.set_index("label").loc["channel (x)"]
    assert channel["projected_cost_native_wei"] == 400_000 * 3 * 10**9
    assert channel["projected_cost_usd"] == pytest.approx(400_000 * 3e9 / 1e18 * 2000)
    assert channel["projected_chain_seconds"] == (2 + 2) * 12.0
    assert channel["projected_seconds"] == pytest.approx((2 + 2) * 12.0 + 0.2)
    assert projection.assumptions["gas_price_wei"] == 3 * 10**9
    assert projection.assumptions["source"] == "stated for the test"
    sepolia = project(comparison, SEPOLIA_PROFILE)
    assert sepolia.frame["projected_cost_usd"].isna().all()
    assert "assumed" in sepolia.assumptions["source"] and "sepolia" in repr(sepolia)
    with pytest.raises(SettlementValueError):
        NetworkProfile("x", 0.0, 1, 1, None, "s")


# --- the JSON -----------------------------------------------------------------------------


def test_json_round_trip() -> None:
    comparison = _comparison()
    data = comparison.to_json()
    assert data["version"] == 1 and data["cheapest"] == "channel (x)"
    assert data["runs"][0]["costNativeWei"] == str(400_000 * 10**9)
    assert data["runs"][1]["payerCostNativeWei"] == str(50_000 * 10**9)
    assert data["runs"][0]["feesBaseUnits"] == {
        "bridge": "0",
        "pool": "0",
        "slippage": "0",
        "node": "0",
    }
    assert Comparison.from_json(data) == comparison
    assert Comparison.from_json(json.dumps(data)) == comparison
    frame = comparison.frame()
    assert list(frame["label"]) == ["channel (x)", "v4 (y)"]
    assert frame.attrs["kind"] == "measured" and frame.attrs["unavailable"]
    assert comparison.transactions()["hash"].is_unique


def _broken(edit: Any) -> dict[str, Any]:
    data = copy.deepcopy(_comparison().to_json())
    edit(data)
    return data


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda d: d.update(version=2), r"comparison\.version must be 1"),
        (lambda d: d.update(extra=1), r"unknown field\(s\) \['extra'\]"),
        (lambda d: d.pop("runs"), r"lacks field\(s\) \['runs'\]"),
        (lambda d: d["runs"][0].update(gasUsed=1), r"runs\[0\]\.gasUsed disagrees"),
        (lambda d: d["runs"][0].update(costNativeWei="1"), r"costNativeWei disagrees"),
        (lambda d: d["runs"][0].update(costNativeWei=5), "decimal string"),
        (lambda d: d["runs"][0].update(method="bank"), r"method must be one of"),
        (lambda d: d["runs"][0].update(wallSeconds="fast"), "non-negative number"),
        (lambda d: d["runs"][0].update(blocks=True), "integer"),
        (lambda d: d["runs"][0]["txs"][0].update(hash="0x12"), r"txs\[0\]\.hash"),
        (lambda d: d["runs"][0]["txs"][0].update(payer="bob"), r"txs\[0\]\.payer"),
        (lambda d: d["runs"][0]["txs"][0].update(payment=0), r"txs\[0\]\.payment"),
        (lambda d: d["runs"][0]["txs"][0].pop("step"), r"txs\[0\] lacks"),
        (lambda d: d["runs"][0]["feesBaseUnits"].update(tip="1"), "unknown field"),
        (lambda d: d["runs"][1].update(label="channel (x)"), "distinct labels"),
        (lambda d: d.update(cheapest="v4 (y)"), r"comparison\.cheapest disagrees"),
        (lambda d: d.update(fastest=None), r"comparison\.fastest disagrees"),
        (lambda d: d.update(nativeUsd=3000.0), "priceSource"),
        (lambda d: d["intent"].update(amount="-1"), r"comparison\.intent"),
        (lambda d: d["intent"].update(counterparty=None), r"intent\.counterparty"),
        (lambda d: d["unavailable"].update(v4=""), "non-empty reason"),
        (lambda d: d.update(runs={}), "must be a list"),
    ],
)
def test_strict_parser_names_what_is_wrong(edit: Any, match: str) -> None:
    with pytest.raises(InvalidComparisonError, match=match):
        Comparison.from_json(_broken(edit))


def test_parser_refuses_non_json_and_non_objects() -> None:
    with pytest.raises(InvalidComparisonError, match="not JSON"):
        Comparison.from_json("{nope")
    with pytest.raises(InvalidComparisonError, match="must be an object"):
        Comparison.from_json("[]")
    with pytest.raises(InvalidComparisonError, match="unknown fee kind"):
        _run("channel", "c", [], payments=1, seconds=(0, 0, 0)).__class__(
            **{**_run("channel", "c", [], payments=1, seconds=(0, 0, 0)).__dict__,
               "fees_base_units": {"tip": 1}}
        )  # fmt: skip


# --- which methods run: the v1 cross-chain route ------------------------------------------

_TWO_CHAINS = {
    "v1Chains": [
        {
            "chainId": 31338,
            "channelHub": "0x" + "22" * 20,
            "token": "0x" + "33" * 20,
            "rpcUrl": "http://127.0.0.1:1/chain/31338/rpc",
            "explorerBase": "http://127.0.0.1:1/explorer/chain/31338",
        }
    ]
}


def test_methods_accept_the_v1_crosschain_route() -> None:
    from settlement_widgets.compare.run import METHOD_KEYS, _selected
    from settlement_widgets.errors import UnknownOptionError

    key = "channel/nitrolite-v1-crosschain"
    assert key in METHOD_KEYS and key in _selected(None)
    assert _selected([key]) == {key}
    # "channel" names every variant of the channel, this one too
    assert _selected(["channel"]) == {
        "channel",
        "channel/nitrolite-v0.5",
        "channel/nitrolite-v1",
        key,
    }
    with pytest.raises(UnknownOptionError, match="did you mean 'channel/nitrolite-v1-crosschain'"):
        _selected(["channel/nitrolite-v1-crosschian"])


def test_the_v1_crosschain_route_says_why_it_cannot_run() -> None:
    from dataclasses import replace

    from settlement_widgets.compare.run import _crosschain_refusal
    from settlement_widgets.networks import SEPOLIA, SEPOLIA_V1

    two = replace(SEPOLIA_V1, chain_id=31337, extra=_TWO_CHAINS)
    across = Intent("1", source_chain=31337, destination_chain=31338)
    assert _crosschain_refusal(two, across, payee=object()) is None
    assert _crosschain_refusal(two, across, payee=None) == (
        "the payee withdraws on the destination chain with its own key: the counterparty is "
        "not one of this sandbox's wallets"
    )
    assert _crosschain_refusal(
        two, Intent("1", source_chain=31338, destination_chain=31338), payee=object()
    ) == ("the intent stays on one chain: channel/nitrolite-v1 serves it")
    assert _crosschain_refusal(
        two, Intent("1", source_chain=31337, destination_chain=10), payee=object()
    ) == ("the Nitrolite v1 node serves chains [31337, 31338], not [10]")
    one = SEPOLIA_V1
    assert one.chain_ids() == (11155111,)
    assert _crosschain_refusal(one, across, payee=object()) == (
        "this network's Nitrolite v1 node serves one chain (11155111): start the sandbox "
        "with protocol='v1', aggregator=True for a home channel on a second chain"
    )
    assert "speaks Nitrolite v0.5" in str(_crosschain_refusal(SEPOLIA, across, payee=object()))


def test_a_v1_store_seen_from_the_second_chain_is_its_own_file() -> None:
    from dataclasses import replace

    from settlement_widgets.channel.v1.client.base import default_v1_store_path
    from settlement_widgets.networks import SEPOLIA_V1

    first = replace(SEPOLIA_V1, name="local", chain_id=31337, extra=_TWO_CHAINS)
    second = first.on_chain(31338)
    here, there = default_v1_store_path(first, BOB), default_v1_store_path(second, BOB)
    assert here.name == f"local-v1-{BOB}.sqlite"  # unchanged for the profile's own chain
    assert there.name == f"local-v1-31338-{BOB}.sqlite"
