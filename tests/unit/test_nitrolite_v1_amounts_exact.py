"""Nitrolite v1 amounts are exact over the whole uint256 range at 0..18 decimals.

Python's default decimal context keeps 28 significant digits; a uint256 at 18 decimals has
78. Any context-limited operation (``Decimal.scaleb``, ``+``, ``-``) would round a large
balance, and the state would pack and sign another number than the one shown. These tests
push amounts through every step a state takes: the display text, the state builder
(``next_state`` / ``apply_channel_creation`` / ``apply_transition``), the packer (the signed
ledger words) and the wire (frame encode/decode), and require the integer units back bit
for bit.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from settlement_widgets.channel.v1.core.decimals import (
    exact_add,
    exact_sub,
    from_units,
    plain_decimal_string,
    sdk_decimal_string,
    to_units,
)
from settlement_widgets.channel.v1.core.lifecycle import (
    apply_channel_creation,
    apply_transition,
    check_advancement,
    next_state,
)
from settlement_widgets.channel.v1.core.state import (
    decimals_from_map,
    pack_state,
    state_signing_data,
)
from settlement_widgets.channel.v1.core.wire import Frame, MessageType, decode_frame, encode_frame
from settlement_widgets.errors import InvalidAmountError

UINT256_MAX = 2**256 - 1
INT256_MAX = 2**255 - 1
CHAIN = 11155111
TOKEN = "0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238"
NODE = "0x5050A4F4b3f9338C3472dcC01A87C76A144b3c9c"
USER = "0x1a642f0E3c3aF545E7AcBD38b07251B3990914F1"
PEER = "0x2B5AD5c4795c026514f8317c7a215E218DcCD6cF"

units_256 = st.integers(min_value=0, max_value=UINT256_MAX)
decimals_0_18 = st.integers(min_value=0, max_value=18)


def _lookup(decimals: int) -> Any:
    return decimals_from_map({f"{CHAIN}:{TOKEN}": decimals})


def _void(asset: str = "yusd") -> dict[str, Any]:
    return {
        "id": "",
        "transition": {"type": 0, "tx_id": "", "account_id": "", "amount": "0"},
        "asset": asset,
        "user_wallet": USER,
        "epoch": "0",
        "version": "0",
        "home_ledger": {
            "token_address": "0x0",
            "blockchain_id": "0",
            "user_balance": "0",
            "user_net_flow": "0",
            "node_balance": "0",
            "node_net_flow": "0",
        },
    }


def _opened_with_deposit(amount: str) -> dict[str, Any]:
    """The first state of a channel: creation plus a home deposit of ``amount``."""
    state = next_state(_void())
    definition = {"nonce": "1", "challenge": 86400, "approvedSigValidators": "0x01"}
    apply_channel_creation(state, definition, str(CHAIN), TOKEN, NODE)
    apply_transition(state, {"type": 10, "amount": amount})
    state["user_sig"] = "0x00"  # stands for a signature: the next state starts afresh
    return state


def _ledger_words(state: dict[str, Any], decimals: int) -> list[int]:
    """The signed home-ledger words: chain, token, decimals, user balance, user net flow,
    node balance, node net flow (net flows as signed int256)."""
    data = state_signing_data(state, _lookup(decimals))
    words = [int.from_bytes(data[i : i + 32], "big") for i in range(96, 96 + 7 * 32, 32)]
    for i in (4, 6):
        if words[i] >= 2**255:
            words[i] -= 2**256
    return words


@settings(max_examples=400, deadline=None)
@given(units=units_256, decimals=decimals_0_18)
def test_display_text_round_trips_every_uint256(units: int, decimals: int) -> None:
    amount = from_units(units, decimals)
    for text in (sdk_decimal_string(amount), plain_decimal_string(amount)):
        assert to_units(text, decimals) == units
    assert to_units(amount, decimals) == units


@settings(max_examples=200, deadline=None)
@given(user=units_256, node=units_256, flow=st.integers(-INT256_MAX, INT256_MAX),
       decimals=decimals_0_18)  # fmt: skip
def test_the_packer_signs_the_exact_units(user: int, node: int, flow: int, decimals: int) -> None:
    state = _opened_with_deposit("1")
    state["home_ledger"].update(
        user_balance=sdk_decimal_string(from_units(user, decimals)),
        node_balance=plain_decimal_string(from_units(node, decimals)),
        user_net_flow=sdk_decimal_string(from_units(flow, decimals)),
        node_net_flow=plain_decimal_string(from_units(-flow, decimals)),
    )
    words = _ledger_words(state, decimals)
    assert words == [CHAIN, int(TOKEN, 16), decimals, user, flow, node, -flow]
    packed = pack_state(state, _lookup(decimals))
    assert state_signing_data(state, _lookup(decimals)) in packed


@settings(max_examples=200, deadline=None)
@given(deposit=st.integers(1, INT256_MAX), data=st.data(), decimals=decimals_0_18)
def test_the_state_builder_adds_and_subtracts_exactly(
    deposit: int, data: st.DataObject, decimals: int
) -> None:
    """Deposit, then transfer part of it: balances, flows and the signed words are exact,
    and the SDK's advancement check accepts the result."""
    sent = data.draw(st.integers(1, deposit), label="sent")
    first = _opened_with_deposit(sdk_decimal_string(from_units(deposit, decimals)))
    assert _ledger_words(first, decimals)[3:] == [deposit, deposit, 0, 0]
    second = next_state(first)
    apply_transition(
        second,
        {"type": 30, "account_id": PEER, "amount": sdk_decimal_string(from_units(sent, decimals))},
    )
    check_advancement(first, second, asset_decimals=decimals)
    assert _ledger_words(second, decimals)[3:] == [deposit - sent, deposit, 0, -sent]
    assert to_units(second["transition"]["amount"], decimals) == sent


@settings(max_examples=200, deadline=None)
@given(units=units_256, decimals=decimals_0_18)
def test_the_wire_carries_the_exact_text(units: int, decimals: int) -> None:
    state = _opened_with_deposit("1")
    text = sdk_decimal_string(from_units(units, decimals))
    state["home_ledger"]["user_balance"] = text
    frame = Frame(
        MessageType.REQUEST,
        7,
        "channels.v1.submit_state",
        {"state": state, "amount": from_units(units, decimals)},
        1767225600000,
    )
    decoded = decode_frame(encode_frame(frame))
    assert decoded.payload["state"]["home_ledger"]["user_balance"] == text
    assert to_units(decoded.payload["state"]["home_ledger"]["user_balance"], decimals) == units
    assert to_units(decoded.payload["amount"], decimals) == units  # a Decimal goes as text
    assert encode_frame(decoded) == encode_frame(frame)


# --- plain regressions: each of these rounded with Python's 28-digit default context -----


BIG = "1234567890123456789012345678.9"  # 29 significant digits
BIG_UNITS = 1234567890123456789012345678900000000000000000  # at 18 decimals


def test_a_29_digit_deposit_is_built_and_packed_exactly() -> None:
    state = _opened_with_deposit(BIG)
    # decimal.js toString uses exponent form from 1e21 on; the value is the exact one
    assert state["home_ledger"]["user_balance"] == "1.2345678901234567890123456789e+27"
    assert Decimal(state["home_ledger"]["user_net_flow"]) == Decimal(BIG)
    assert state["transition"]["amount"] == "1.2345678901234567890123456789e+27"
    assert _ledger_words(state, 18)[3:5] == [BIG_UNITS, BIG_UNITS]


def test_a_29_digit_balance_minus_a_small_transfer_is_exact() -> None:
    first = _opened_with_deposit(BIG)
    second = next_state(first)
    apply_transition(second, {"type": 30, "account_id": PEER, "amount": "0.1"})
    assert Decimal(second["home_ledger"]["user_balance"]) == Decimal(
        "1234567890123456789012345678.8"
    )
    assert _ledger_words(second, 18)[3] == BIG_UNITS - 10**17


def test_exact_arithmetic_helpers_never_round() -> None:
    tiny_over_huge = "10000000000000000000000000000000000000000.000000000000000000000000000001"
    assert exact_add("1e40", "1e-30") == Decimal(tiny_over_huge)
    assert exact_sub(BIG, "0.1") == Decimal("1234567890123456789012345678.8")
    with pytest.raises(InvalidAmountError, match="cannot be represented"):
        exact_add("1e999999", "1")  # far beyond any token's range: refused, not rounded


def test_uint256_max_at_18_decimals_packs_bit_for_bit() -> None:
    state = _opened_with_deposit("1")
    state["home_ledger"]["user_balance"] = sdk_decimal_string(from_units(UINT256_MAX, 18))
    assert _ledger_words(state, 18)[3] == UINT256_MAX
    state["home_ledger"]["user_balance"] = sdk_decimal_string(from_units(UINT256_MAX + 1, 18))
    with pytest.raises(InvalidAmountError, match="does not fit in a uint256"):
        _ledger_words(state, 18)


plain_texts = st.from_regex(r"\A-?[0-9]{1,82}(\.[0-9]{0,22})?\Z", fullmatch=True)
other_texts = st.one_of(
    st.from_regex(r"\A[ +-]?[0-9]{0,4}(\.[0-9]{0,4})?([eE][+-]?[0-9]{1,3})?\s?\Z", fullmatch=True),
    st.text(max_size=12),
)


@settings(max_examples=600, deadline=None)
@given(text=st.one_of(plain_texts, other_texts), decimals=decimals_0_18)
def test_plain_text_takes_a_shortcut_that_agrees_with_the_exact_route(
    text: str, decimals: int
) -> None:
    """``to_units`` reads plain decimal text with integer arithmetic and leaves everything
    else (exponents, signs, spaces, other digits, too many places, too large) to the
    ``Decimal`` route: the two agree on every value, and a refusal is the exact route's."""
    from settlement_widgets.channel.v1.core.decimals import _exact_units, _plain_units

    try:
        expected: int | str = _exact_units(text, decimals)
    except InvalidAmountError as exc:
        expected = str(exc)
    shortcut = _plain_units(text, decimals)
    if shortcut is not None:
        assert shortcut == expected
    try:
        got: int | str = to_units(text, decimals)
    except InvalidAmountError as exc:
        got = str(exc)
    assert got == expected
