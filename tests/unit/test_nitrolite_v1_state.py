"""Nitrolite v1 state packing, calldata and app-session hashing against the SDK vectors.

Every vector of the groups below must be reproduced exactly (whole ``outputs`` dict) from its
``inputs`` and ``meta`` alone; the bad-input tests pin our clear errors.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from settlement_widgets.channel.v1.core import (
    abi,
    app_sessions,
    calldata,
    lifecycle,
    state,
    transitions,
)
from settlement_widgets.channel.v1.core.vectors import compute_vector
from settlement_widgets.errors import (
    InvalidAddressError,
    InvalidAmountError,
    InvalidSignatureError,
    InvalidStateError,
    SettlementValueError,
    UnknownOptionError,
)
from settlement_widgets.keys import PrivateKey, recover_address

VECTOR_FILE = Path(__file__).resolve().parent / "data" / "nitrolite-v1-vectors.json"


Compute = Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]]
TABLES: dict[str, Compute] = {
    **state.VECTORS,
    **lifecycle.VECTORS,
    **calldata.VECTORS,
    **app_sessions.VECTORS,
}
EXPECTED_COUNTS = {
    "state_packing_kat": 2,
    "contract_calldata": 6,
    "channel_session_key": 2,
    "session_key_state_signature": 1,
    "app_session": 9,
    "app_session_key": 2,
    "state_lifecycle": 14,
}


def _document() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(VECTOR_FILE.read_text())
    return document


DOC = _document()
CASES = [
    pytest.param(group, vector, id=vector["id"])
    for group in EXPECTED_COUNTS
    for vector in DOC["vectors"].get(group, [])
]


def test_groups_are_all_registered() -> None:
    assert set(EXPECTED_COUNTS) <= set(TABLES)
    for group, count in EXPECTED_COUNTS.items():
        assert len(DOC["vectors"][group]) == count


@pytest.mark.parametrize(("group", "vector"), CASES)
def test_vector_reproduced(group: str, vector: dict[str, Any]) -> None:
    assert compute_vector(TABLES[group], vector, DOC["meta"]) == vector["outputs"]


def _kat_state() -> dict[str, Any]:
    return copy.deepcopy(DOC["vectors"]["state_packing_kat"][0]["inputs"])


def test_signature_recovers_the_signer() -> None:
    inputs = _kat_state()
    lookup = state.decimals_from_map(inputs["token_decimals"])
    key = PrivateKey(DOC["meta"]["keys"]["user"]["private_key"])
    signature = state.sign_state(inputs["state"], key, lookup)
    assert signature[0] == state.SIG_VALIDATOR_DEFAULT and len(signature) == 66
    digest = state.eip191_digest(state.pack_state(inputs["state"], lookup))
    assert recover_address(digest, signature[1:]) == key.address


def test_too_many_fractional_digits_is_refused() -> None:
    inputs = _kat_state()
    inputs["state"]["home_ledger"]["user_balance"] = "0.000000001"  # 9 digits, token has 8
    with pytest.raises(
        InvalidAmountError,
        match=r"^amount 1e-9 exceeds maximum decimal precision: max 8 decimals allowed$",
    ):
        state.pack_state(inputs["state"], state.decimals_from_map(inputs["token_decimals"]))


def test_unknown_token_decimals_is_an_invalid_state() -> None:
    inputs = _kat_state()
    with pytest.raises(InvalidStateError, match="no token decimals"):
        state.pack_state(inputs["state"], state.decimals_from_map({}))


def test_missing_channel_id_and_unknown_transition() -> None:
    inputs = _kat_state()
    lookup = state.decimals_from_map(inputs["token_decimals"])
    no_id = copy.deepcopy(inputs["state"])
    no_id["home_channel_id"] = None
    with pytest.raises(InvalidStateError, match="home_channel_id"):
        state.pack_state(no_id, lookup)
    bad_type = copy.deepcopy(inputs["state"])
    bad_type["transition"]["type"] = 99
    with pytest.raises(InvalidStateError, match="unknown transition type"):
        state.pack_state(bad_type, lookup)


def test_lenient_bytes32_rules() -> None:
    assert transitions.lenient_bytes32("") == bytes(32)
    assert transitions.lenient_bytes32("account2") == bytes(31) + b"\xac"
    assert transitions.lenient_bytes32("0xabc") == bytes(30) + b"\x0a\xbc"
    with pytest.raises(InvalidStateError, match="at most 32 fit in a bytes32"):
        transitions.lenient_bytes32("0x" + "11" * 33)


def test_abi_encode_rejects_out_of_range() -> None:
    with pytest.raises(SettlementValueError, match="uint8"):
        abi.abi_encode(["uint8"], [256])
    with pytest.raises(InvalidAddressError):
        abi.abi_encode(["address"], ["0x1234"])


def test_calldata_bad_inputs() -> None:
    vector = DOC["vectors"]["contract_calldata"][1]["inputs"]
    with pytest.raises(UnknownOptionError, match="unknown ChannelHub function"):
        calldata.encode_call("resizeChannel", vector["args"])
    unsigned = copy.deepcopy(vector["args"])
    unsigned[1]["nodeSig"] = "0x"
    with pytest.raises(InvalidSignatureError, match="nodeSig is empty"):
        calldata.encode_call("checkpointChannel", unsigned)
    with pytest.raises(SettlementValueError, match="challenger_idx"):
        calldata.challenge_channel_calldata(vector["args"][0], vector["args"][1], "0x00", 2)


def test_contract_state_from_wire_matches_packing() -> None:
    inputs = DOC["vectors"]["session_key_state_signature"][0]["inputs"]
    lookup = state.decimals_from_asset_table(DOC["meta"]["asset_table"])
    contract = calldata.contract_state_from_wire(inputs["state"], lookup)
    assert contract["intent"] == 0
    assert contract["homeLedger"]["userAllocation"] == "99000000"
    assert contract["nonHomeLedger"]["chainId"] == "0"


def test_app_session_bad_inputs() -> None:
    update = copy.deepcopy(DOC["vectors"]["app_session"][4]["inputs"]["update"])
    update["allocations"][0]["amount"] = 20
    with pytest.raises(InvalidAmountError, match="decimal string"):
        app_sessions.update_hash(update)
    update["allocations"][0]["amount"] = "20"
    update["appSessionId"] = "0x1234"
    with pytest.raises(SettlementValueError, match="32 bytes"):
        app_sessions.update_hash(update)
    definition = copy.deepcopy(DOC["vectors"]["app_session"][3]["inputs"]["definition"])
    definition["quorum"] = 256
    with pytest.raises(SettlementValueError, match="uint8"):
        app_sessions.app_session_id(definition)
    key = PrivateKey(DOC["meta"]["keys"]["user"]["private_key"])
    with pytest.raises(InvalidSignatureError, match="32-byte hash"):
        app_sessions.quorum_signature(b"short", key)


def test_session_key_registration_needs_the_right_keys() -> None:
    vector_state = DOC["vectors"]["channel_session_key"][0]["inputs"]["state"]
    peer = PrivateKey(DOC["meta"]["keys"]["peer"]["private_key"])
    with pytest.raises(InvalidSignatureError, match="user_address"):
        state.sign_channel_session_key_state(vector_state, peer, None)
    key_state = DOC["vectors"]["app_session_key"][1]["inputs"]["state"]
    with pytest.raises(InvalidSignatureError, match="user_address"):
        app_sessions.sign_app_session_key_state(key_state, peer, None)


def test_wire_and_camel_case_updates_hash_alike() -> None:
    inputs = DOC["vectors"]["app_session"][5]["inputs"]
    assert app_sessions.update_hash(inputs["update"]) == app_sessions.update_hash(
        inputs["wire_form"]
    )


def test_lifecycle_rejections() -> None:
    vectors = DOC["vectors"]["state_lifecycle"]
    previous = vectors[1]["inputs"]["previous_state"]
    proposed = copy.deepcopy(vectors[1]["outputs"]["state"])
    assert lifecycle.validate_advancement(previous, proposed) == "ok"
    proposed["home_ledger"]["user_balance"] = "81"
    assert lifecycle.validate_advancement(previous, proposed) == (
        "rejected: home ledger mismatch: user balance mismatch: expected=80, proposed=81"
    )
    skeleton = lifecycle.next_state(vectors[13]["inputs"]["previous_state"])
    with pytest.raises(InvalidStateError, match="migrate transition not implemented yet"):
        lifecycle.apply_transition(skeleton, {"type": 100, "amount": "1"})
    no_channel = lifecycle.next_state(vectors[0]["inputs"]["previous_state"])
    with pytest.raises(InvalidStateError, match=r"^missing home channel ID$"):
        lifecycle.apply_transition(no_channel, {"type": 11, "amount": "1"})
