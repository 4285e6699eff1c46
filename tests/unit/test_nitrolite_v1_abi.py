"""The v1 ABI encoder (types parsed once, then reused) against eth_abi, the upstream encoder.

The encoder caches each type string's parsed form; these tests draw values for the shapes
v1 hashes (the packed state, transitions, arrays of tuples, strings) and require the same
bytes as ``eth_abi.encode``, so a cache that mixed up two types or a compiled path that
lost a rule would fail here, not only in the published vectors.
"""

from __future__ import annotations

import pytest
from eth_abi import encode as eth_abi_encode
from hypothesis import given, settings
from hypothesis import strategies as st

from settlement_widgets.channel.v1.core.abi import abi_encode
from settlement_widgets.errors import SettlementValueError

LEDGER = "(uint64,address,uint8,uint256,int256,uint256,int256)"
STATE = ["uint64", "uint8", "bytes32", LEDGER, LEDGER]

addresses = st.binary(min_size=20, max_size=20).map(lambda b: "0x" + b.hex())
uint64 = st.integers(0, 2**64 - 1)
uint256 = st.integers(0, 2**256 - 1)
int256 = st.integers(-(2**255), 2**255 - 1)
ledgers = st.tuples(uint64, addresses, st.integers(0, 255), uint256, int256, uint256, int256)


def _same(types: list[str], values: list[object]) -> None:
    from eth_utils import to_checksum_address

    def upstream(value: object) -> object:  # eth_abi wants checksummed addresses
        if isinstance(value, str) and len(value) == 42 and value.startswith("0x"):
            return to_checksum_address(value)
        if isinstance(value, tuple | list):
            return type(value)(upstream(v) for v in value)
        return value

    assert abi_encode(types, values) == eth_abi_encode(types, [upstream(v) for v in values])


@settings(max_examples=200, deadline=None)
@given(uint64, st.integers(0, 255), st.binary(min_size=32, max_size=32), ledgers, ledgers)
def test_packed_state_layout_matches_eth_abi(version, intent, metadata, home, escrow) -> None:
    _same(STATE, [version, intent, metadata, home, escrow])
    inner = abi_encode(STATE, [version, intent, metadata, home, escrow])
    _same(["bytes32", "bytes"], [metadata, inner])


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 255),
    st.binary(min_size=32, max_size=32),
    st.binary(min_size=32, max_size=32),
    st.text(max_size=80),
    st.lists(st.tuples(addresses, st.text(max_size=10), uint256), max_size=4),
    st.lists(uint256, min_size=3, max_size=3),
)
def test_dynamic_shapes_match_eth_abi(kind, tx_id, account, amount, allocations, fixed) -> None:
    _same(["(uint8,bytes32,bytes32,string)"], [(kind, tx_id, account, amount)])
    _same(["(address,string,uint256)[]", "string"], [allocations, amount])
    _same(["uint256[3]", "bool", "bytes"], [fixed, bool(kind % 2), amount.encode()])


def test_the_same_type_reused_keeps_its_rules() -> None:
    """Out-of-range values are refused on every use of a cached type, not only the first."""
    assert abi_encode(["uint8"], [255]) == (255).to_bytes(32, "big")
    for _ in range(2):
        with pytest.raises(SettlementValueError, match="does not fit uint8"):
            abi_encode(["uint8"], [256])
        with pytest.raises(SettlementValueError, match="needs 3 items, got 2"):
            abi_encode(["uint256[3]"], [[1, 2]])
        with pytest.raises(SettlementValueError, match="unsupported type 'ufixed'"):
            abi_encode(["ufixed"], [1])
        with pytest.raises(SettlementValueError, match="2 types but 1 values"):
            abi_encode(["uint8", "uint8"], [1])


@settings(max_examples=200, deadline=None)
@given(
    uint64,
    st.sampled_from([1, 10, 11, 30, 200]),
    st.integers(0, 18),
    st.integers(0, 2**255 - 1),
    st.integers(-(2**255) + 1, 2**255 - 1),
    st.binary(min_size=32, max_size=32),
    addresses,
)
def test_the_packed_state_is_the_generic_encoding(
    version, kind, decimals, balance, flow, channel, token
) -> None:
    """``pack_state`` lays out its words directly; the bytes are the generic encoder's."""
    from settlement_widgets.channel.v1.core.decimals import from_units
    from settlement_widgets.channel.v1.core.state import (
        ledger_tuple,
        pack_state,
        transition_metadata_hash,
    )
    from settlement_widgets.channel.v1.core.transitions import transition_to_intent

    def text(units: int) -> str:
        return format(from_units(units, decimals), "f")

    ledger = {
        "blockchain_id": "31337",
        "token_address": token,
        "user_balance": text(balance),
        "user_net_flow": text(flow),
        "node_balance": text(balance // 3),
        "node_net_flow": text(-flow),
    }
    state = {
        "home_channel_id": "0x" + channel.hex(),
        "version": str(version),
        "transition": {"type": kind, "tx_id": "0x" + "ab" * 32, "account_id": "", "amount": "1"},
        "home_ledger": ledger,
    }

    def lookup(chain: int, address: str) -> int:
        return decimals

    inner = abi_encode(
        STATE,
        [
            version,
            int(transition_to_intent(kind)),
            transition_metadata_hash(state["transition"]),
            ledger_tuple(ledger, lookup),
            ledger_tuple(None, lookup),
        ],
    )
    assert pack_state(state, lookup) == abi_encode(["bytes32", "bytes"], [channel, inner])
