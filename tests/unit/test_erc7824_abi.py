"""The hand-rolled encoders are byte-equal to eth_abi (the reference) on random inputs."""

from __future__ import annotations

import eth_abi
import pytest
from erc7824_strategies import (
    addresses,
    chain_ids,
    channel_ids,
    channels,
    states,
    uint64s,
    uint256s,
)
from eth_hash.auto import keccak as eth_hash_keccak
from hypothesis import given, settings
from hypothesis import strategies as st

from settlement_widgets.channel.v0_5.core import (
    Channel,
    State,
    channel_id,
    packed_state,
    state_hash,
)
from settlement_widgets.channel.v0_5.core.abi import (
    ALLOCATION_TUPLE,
    CHANNEL_ID_TYPES,
    PACKED_STATE_TYPES,
    decode_int256_array,
    encode_allocations,
    encode_channel_id_preimage,
    encode_int256_array,
    encode_packed_state,
)
from settlement_widgets.channel.v0_5.core.keccak import BACKEND, keccak256
from settlement_widgets.errors import InvalidStateError

int256s = st.integers(min_value=-(2**255), max_value=2**255 - 1)
allocation_tuples = st.tuples(addresses, addresses, uint256s)


@settings(max_examples=300, deadline=None)
@given(
    cid=channel_ids,
    intent=st.integers(min_value=0, max_value=255),
    version=uint256s,
    data=st.binary(max_size=300),
    allocs=st.lists(allocation_tuples, max_size=5),
)
def test_packed_state_equals_eth_abi(
    cid: bytes, intent: int, version: int, data: bytes, allocs: list[tuple[str, str, int]]
) -> None:
    ours = encode_packed_state(cid, intent, version, data, allocs)
    assert ours == eth_abi.encode(list(PACKED_STATE_TYPES), [cid, intent, version, data, allocs])


@settings(max_examples=200, deadline=None)
@given(
    parts=st.lists(addresses, max_size=4),
    adj=addresses,
    challenge=uint64s,
    nonce=uint64s,
    chain=chain_ids,
)
def test_channel_id_preimage_equals_eth_abi(
    parts: list[str], adj: str, challenge: int, nonce: int, chain: int
) -> None:
    ours = encode_channel_id_preimage(parts, adj, challenge, nonce, chain)
    assert ours == eth_abi.encode(list(CHANNEL_ID_TYPES), [parts, adj, challenge, nonce, chain])


@settings(max_examples=200, deadline=None)
@given(allocs=st.lists(allocation_tuples, max_size=5))
def test_allocations_equal_eth_abi(allocs: list[tuple[str, str, int]]) -> None:
    assert encode_allocations(allocs) == eth_abi.encode([ALLOCATION_TUPLE + "[]"], [allocs])


@settings(max_examples=200, deadline=None)
@given(values=st.lists(int256s, max_size=6))
def test_int256_array_round_trips_and_equals_eth_abi(values: list[int]) -> None:
    encoded = encode_int256_array(values)
    assert encoded == eth_abi.encode(["int256[]"], [values])
    assert decode_int256_array(encoded) == tuple(values)
    assert eth_abi.decode(["int256[]"], encoded) == (tuple(values),)


@settings(max_examples=100, deadline=None)
@given(channel=channels(), chain=chain_ids, state=states(), cid=channel_ids)
def test_public_functions_match_the_reference(
    channel: Channel, chain: int, state: State, cid: bytes
) -> None:
    ref_id = eth_hash_keccak(
        eth_abi.encode(
            list(CHANNEL_ID_TYPES),
            [
                list(channel.participants),
                channel.adjudicator,
                channel.challenge,
                channel.nonce,
                chain,
            ],
        )
    )
    assert channel_id(channel, chain) == "0x" + ref_id.hex()
    ref_packed = eth_abi.encode(
        list(PACKED_STATE_TYPES),
        [
            cid,
            int(state.intent),
            state.version,
            state.data,
            [a.to_abi() for a in state.allocations],
        ],
    )
    assert packed_state(cid, state) == ref_packed
    assert packed_state("0x" + cid.hex(), state) == ref_packed
    assert state_hash(cid, state) == "0x" + eth_hash_keccak(ref_packed).hex()


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=1000))
def test_keccak_backend_agrees_with_eth_hash(data: bytes) -> None:
    assert keccak256(data) == eth_hash_keccak(data)


def test_keccak_backend_is_a_fast_one() -> None:
    # the package depends on pycryptodome (eth-hash's default); safe-pysha3 is faster
    assert BACKEND in {"pysha3", "pycryptodome"}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "not a whole number"),
        (bytes(63), "not a whole number"),
        ((64).to_bytes(32, "big") + bytes(32), "offset is 64"),
        ((32).to_bytes(32, "big") + (3).to_bytes(32, "big") + bytes(64), "does not match 3"),
        ((32).to_bytes(32, "big") + (2**255).to_bytes(32, "big"), "does not match"),
    ],
)
def test_int256_array_decoder_is_strict(data: bytes, message: str) -> None:
    with pytest.raises(InvalidStateError, match=message):
        decode_int256_array(data)


@pytest.mark.parametrize("bad", [2**255, -(2**255) - 1, True, "1", 1.0])
def test_int256_array_encoder_rejects_out_of_range(bad: object) -> None:
    with pytest.raises(InvalidStateError, match="not an int256"):
        encode_int256_array([bad])  # type: ignore[list-item]
