"""Every value of erc7824-vectors.json (made by the official SDK, sdk-oracle/vectors.js),
reproduced by our code: ids, packed states, hashes, signatures, digests and frame texts."""

from __future__ import annotations

from typing import Any

import pytest
from erc7824_strategies import (
    ADJUDICATOR,
    BROKER_KEY,
    CHAIN_ID,
    CHALLENGE_UUID,
    CUSTODY,
    SESSION_KEY,
    TOKEN,
    USER_KEY,
    load_vectors,
)

from settlement_widgets.channel.v0_5.core import (
    CHALLENGE_STATE_TYPEHASH,
    STATE_TYPEHASH,
    Allocation,
    AuthPolicy,
    Channel,
    Response,
    State,
    StateIntent,
    auth_digest,
    auth_request_message,
    auth_verify_jwt_message,
    challenge_hash,
    channel_id,
    close_channel_message,
    create_channel_message,
    custody_domain,
    decode_resize_data,
    eip191_digest,
    get_config_message,
    get_ledger_balances_message,
    packed_challenge,
    packed_state,
    parse_frame,
    parse_request,
    ping_message,
    recover_state_signer,
    resize_channel_message,
    resize_data,
    sign_auth,
    sign_request,
    sign_state,
    state_eip712_digest,
    state_hash,
    transfer_message,
)
from settlement_widgets.keys import PrivateKey

V = load_vectors()
USER = PrivateKey(USER_KEY)
BROKER = PrivateKey(BROKER_KEY)
SESSION = PrivateKey(SESSION_KEY)


def hx(data: bytes) -> str:
    return "0x" + data.hex()


@pytest.fixture(scope="module")
def cid() -> str:
    return channel_id(CHANNEL, CHAIN_ID)


CHANNEL = Channel((USER.address, BROKER.address), ADJUDICATOR, 3600, 1_700_000_000_000)
ZERO_ALLOCS = (Allocation(USER.address, TOKEN, 0), Allocation(BROKER.address, TOKEN, 0))
INIT = State(StateIntent.INITIALIZE, 0, b"", ZERO_ALLOCS)
RESIZE = State(StateIntent.RESIZE, 1, resize_data([5_000_000, -5_000_000]), ZERO_ALLOCS)
FINAL = State(
    StateIntent.FINALIZE,
    2,
    b"",
    (Allocation(USER.address, TOKEN, 1_234_567), Allocation(BROKER.address, TOKEN, 0)),
)


def test_addresses_and_channel_inputs() -> None:
    assert V["addresses"] == {
        "user": USER.address,
        "broker": BROKER.address,
        "session": SESSION.address,
    }
    ch = V["channel"]
    assert list(CHANNEL.participants) == ch["participants"]
    assert CHANNEL.adjudicator == ch["adjudicator"]
    assert f"{CHANNEL.challenge}n" == ch["challenge"]
    assert f"{CHANNEL.nonce}n" == ch["nonce"]
    assert {k: v for k, v in V["StateIntent"].items() if not k.isdigit()} == {
        i.name: i.value for i in StateIntent
    }


def test_channel_id(cid: str) -> None:
    assert cid == V["channelId"]


def test_initialize_state(cid: str) -> None:
    packed = packed_state(cid, INIT)
    assert hx(packed) == V["init_packed"]
    assert len(packed) == 416
    assert state_hash(cid, INIT) == V["init_stateHash"]
    assert sign_state(cid, INIT, USER) == V["init_sig_user_rawECDSA"]
    assert sign_state(cid, INIT, USER, scheme="eip191") == V["init_sig_user_EIP191"]
    assert sign_state(cid, INIT, BROKER) == V["init_sig_broker_rawECDSA"]
    assert hx(eip191_digest(packed)) == V["check_eip191_digest"]
    assert (
        recover_state_signer(cid, INIT, V["init_sig_user_EIP191"], scheme="eip191")
        == V["check_recover_eip191"]
    )
    assert recover_state_signer(cid, INIT, V["init_sig_user_rawECDSA"]) == V["check_recover_raw"]


def test_resize_state(cid: str) -> None:
    assert hx(RESIZE.data) == V["resize_data"]
    assert decode_resize_data(V["resize_data"]) == (5_000_000, -5_000_000)
    packed = packed_state(cid, RESIZE)
    assert hx(packed) == V["resize_packed"]
    assert len(packed) == 544
    assert state_hash(cid, RESIZE) == V["resize_stateHash"]
    assert sign_state(cid, RESIZE, BROKER) == V["resize_sig_broker_rawECDSA"]


def test_finalize_state_and_challenge(cid: str) -> None:
    assert state_hash(cid, FINAL) == V["final_stateHash"]
    assert sign_state(cid, FINAL, USER) == V["final_sig_user_rawECDSA"]
    # the SDK vector is the last 10 bytes of getPackedChallengeState: 0x00 || "challenge"
    assert packed_challenge(cid, FINAL)[-10:].hex() == V["challenge_packed_suffix"]
    assert challenge_hash(cid, FINAL) == V["challenge_hash_of_final"]


def test_eip712_constants_and_state_digest(cid: str) -> None:
    domain = custody_domain(CHAIN_ID, CUSTODY)
    assert hx(domain.separator) == V["domainSeparator"]
    assert hx(STATE_TYPEHASH) == V["STATE_TYPEHASH"]
    assert hx(CHALLENGE_STATE_TYPEHASH) == V["CHALLENGE_STATE_TYPEHASH"]
    # the vector is viem hashTypedData: strict EIP-712 array encoding
    standard = state_eip712_digest(cid, FINAL, domain, encoding="eip712")
    assert hx(standard) == V["eip712_state_digest_final"]
    # the custody contract hashes allocations as one abi.encode: a different digest
    assert state_eip712_digest(cid, FINAL, domain) != standard


def test_rpc_request_hash_and_signature() -> None:
    req = get_ledger_balances_message(SESSION, request_id=42, timestamp=1_700_000_000_000)
    assert req.req_text == V["rpc_payload_json"]
    assert hx(req.payload_hash) == V["rpc_payload_hash"]
    assert sign_request(V["rpc_payload_json"], SESSION) == V["rpc_payload_sig"]
    assert req.sigs == (V["rpc_payload_sig"],)
    assert req.to_frame() == V["rpc_msg_get_ledger_balances"]


@pytest.mark.parametrize(
    ("vector", "build"),
    [
        (
            "rpc_msg_create_channel",
            lambda cid: create_channel_message(
                SESSION, CHAIN_ID, TOKEN, request_id=43, timestamp=1_700_000_000_001
            ),
        ),
        (
            "rpc_msg_resize",
            lambda cid: resize_channel_message(
                SESSION,
                cid,
                USER.address,
                resize_amount=5_000_000,
                allocate_amount=-5_000_000,
                request_id=44,
                timestamp=1_700_000_000_002,
            ),
        ),
        (
            "rpc_msg_close",
            lambda cid: close_channel_message(
                SESSION, cid, USER.address, request_id=45, timestamp=1_700_000_000_003
            ),
        ),
        (
            "rpc_msg_transfer",
            lambda cid: transfer_message(
                SESSION,
                [("ytest.usd", "1.5")],
                destination=BROKER.address,
                request_id=46,
                timestamp=1_700_000_000_004,
            ),
        ),
        ("rpc_msg_ping", lambda cid: ping_message(request_id=47, timestamp=1_700_000_000_005)),
        (
            "rpc_msg_get_config",
            lambda cid: get_config_message(request_id=48, timestamp=1_700_000_000_006),
        ),
        (
            "rpc_msg_auth_request",
            lambda cid: auth_request_message(
                USER.address,
                SESSION.address,
                "Test app",
                [{"asset": "ytest.usd", "amount": "100"}],
                1_900_000_000,
                "console",
                request_id=1,
                timestamp=1_700_000_000_000,
            ),
        ),
        (
            "rpc_msg_auth_verify_jwt",
            lambda cid: auth_verify_jwt_message(
                "eyJ.test.jwt", request_id=3, timestamp=1_700_000_000_200
            ),
        ),
    ],
)
def test_frames_are_byte_identical(cid: str, vector: str, build: Any) -> None:
    req = build(cid)
    assert req.to_frame() == V[vector]
    # and the SDK's frame parses back to the same request, raw bytes preserved
    parsed = parse_request(V[vector])
    assert parsed.raw == req.raw
    assert parsed.params == req.params
    assert parsed.sigs == req.sigs
    for signer in parsed.signers():
        assert signer == SESSION.address


def test_auth_verify_and_digest() -> None:
    policy = AuthPolicy(
        USER.address,
        SESSION.address,
        "Test app",
        ({"asset": "ytest.usd", "amount": "100"},),
        1_900_000_000,
        "console",
    )
    assert (
        policy.request(request_id=1, timestamp=1_700_000_000_000).to_frame()
        == V["rpc_msg_auth_request"]
    )
    digest = auth_digest(
        CHALLENGE_UUID,
        "console",
        USER.address,
        SESSION.address,
        1_900_000_000,
        [("ytest.usd", "100")],
        "Test app",
    )
    assert hx(digest) == V["eip712_auth_digest"]
    assert hx(policy.digest(CHALLENGE_UUID)) == V["eip712_auth_digest"]
    frame = policy.verify_request(CHALLENGE_UUID, USER, request_id=2, timestamp=1_700_000_000_100)
    assert frame.to_frame() == V["rpc_msg_auth_verify"]
    sig = sign_auth(
        USER,
        CHALLENGE_UUID,
        "console",
        SESSION.address,
        1_900_000_000,
        [("ytest.usd", "100")],
        "Test app",
    )
    assert sig == parse_request(V["rpc_msg_auth_verify"]).sigs[0]
    assert policy.recover(CHALLENGE_UUID, sig) == USER.address


def test_sdk_parsed_server_frames_parse_here() -> None:
    """The server frames vectors.js fed to the SDK's parseAnyRPCResponse, rebuilt from its
    parsed output, parse in Python with the same values."""
    cc = V["parsed_create_channel"]
    frame = (
        '{"res":[43,"create_channel",{"channel_id":"' + cc["params"]["channelId"] + '",'
        '"channel":{"participants":["' + USER.address + '","' + BROKER.address + '"],'
        '"adjudicator":"' + ADJUDICATOR + '","challenge":3600,"nonce":1700000000000},'
        '"state":{"intent":1,"version":0,"state_data":"0x","allocations":['
        '{"destination":"' + USER.address + '","token":"' + TOKEN + '","amount":"0"},'
        '{"destination":"' + BROKER.address + '","token":"' + TOKEN + '","amount":"0"}]},'
        '"server_signature":"' + cc["params"]["serverSignature"] + '"},1700000000050],'
        '"sig":["0x00"]}'
    )
    res = parse_frame(frame)
    assert isinstance(res, Response)
    assert (res.request_id, res.method, res.timestamp) == (43, "create_channel", 1_700_000_000_050)
    state = State.from_rpc(res.result["state"])
    assert state == INIT
    assert Channel.from_rpc(res.result["channel"]) == CHANNEL
    # the server signature in it is the broker's raw signature over the INITIALIZE state
    assert (
        recover_state_signer(res.result["channel_id"], state, res.result["server_signature"])
        == BROKER.address
    )
    err = parse_frame(
        '{"res":[49,"error",{"error":"authentication required"},1700000000070],"sig":[]}'
    )
    assert isinstance(err, Response) and err.is_error
    assert err.error == V["parsed_error"]["params"]["error"]
    bu = parse_frame(
        '{"res":[0,"bu",{"balance_updates":[{"asset":"ytest.usd","amount":"10"}]},'
        '1700000000080],"sig":[]}'
    )
    assert isinstance(bu, Response) and bu.is_notification
    assert (
        bu.result["balance_updates"][0]["amount"]
        == V["parsed_bu"]["params"]["balanceUpdates"][0]["amount"]
    )
