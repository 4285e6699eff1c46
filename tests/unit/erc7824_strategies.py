"""Hypothesis strategies and fixed inputs shared by the tests/unit/test_erc7824_* files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from settlement_widgets.addresses import to_checksum
from settlement_widgets.channel.v0_5.core import Allocation, Channel, State, StateIntent
from settlement_widgets.keys import SECP256K1_N, PrivateKey
from settlement_widgets.networks import SEPOLIA

# the vectors of the official SDK 0.5.3, run offline
VECTORS_PATH = Path(__file__).resolve().parent / "data" / "erc7824-vectors.json"


def load_vectors() -> dict[str, Any]:
    return json.loads(VECTORS_PATH.read_text())


# well-known anvil test keys; never hold real funds with them
USER_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
BROKER_KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"
SESSION_KEY = "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a"
# the Sepolia deployment the vectors were generated for
ADJUDICATOR = SEPOLIA.contracts.adjudicator
assert SEPOLIA.token is not None
TOKEN: str = SEPOLIA.token
CUSTODY = SEPOLIA.contracts.custody
CHAIN_ID = SEPOLIA.chain_id
CHALLENGE_UUID = "550e8400-e29b-41d4-a716-446655440000"

addresses = st.binary(min_size=20, max_size=20).map(lambda b: to_checksum("0x" + b.hex()))
nonzero_addresses = addresses.filter(lambda a: int(a, 16) != 0)
uint64s = st.integers(min_value=0, max_value=2**64 - 1)
uint256s = st.one_of(
    st.integers(min_value=0, max_value=2**64), st.integers(min_value=0, max_value=2**256 - 1)
)
secrets = st.integers(min_value=1, max_value=SECP256K1_N - 1).map(lambda v: v.to_bytes(32, "big"))
private_keys = secrets.map(PrivateKey)
channel_ids = st.binary(min_size=32, max_size=32)
chain_ids = st.integers(min_value=1, max_value=2**256 - 1)


@st.composite
def channels(draw: st.DrawFn) -> Channel:
    a = draw(nonzero_addresses)
    b = draw(nonzero_addresses.filter(lambda x: x != a))
    return Channel((a, b), draw(nonzero_addresses), draw(uint64s), draw(uint64s))


allocations = st.builds(Allocation, addresses, addresses, uint256s)


@st.composite
def states(draw: st.DrawFn, max_allocations: int = 4) -> State:
    return State(
        draw(st.sampled_from(list(StateIntent))),
        draw(uint256s),
        draw(st.binary(max_size=200)),
        tuple(draw(st.lists(allocations, max_size=max_allocations))),
    )
