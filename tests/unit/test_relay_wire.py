"""Pure pieces of the relay: frame parsing (fast raw slice == exact scanner), response
signing, JWTs, the JSON-RPC value mapping and the explorer's escaping."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from settlement_widgets.channel.v0_5.core import make_request, parse_frame, parse_response
from settlement_widgets.channel.v0_5.node.jwt import decode_jwt, encode_jwt
from settlement_widgets.channel.v0_5.node.wire import FrameError, parse_incoming, signed_frame
from settlement_widgets.errors import ExpiredError, InvalidSignatureError
from settlement_widgets.keys import PrivateKey
from settlement_widgets.sandbox.explorer import EventView, address_page, tx_page
from settlement_widgets.sandbox.jsonrpc import to_wire

KEY = PrivateKey("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d")

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(params=st.dictionaries(st.text(max_size=8), json_values, max_size=5), spaced=st.booleans())
def test_raw_req_bytes_are_exactly_what_was_sent(params: dict[str, object], spaced: bool) -> None:
    req = make_request("transfer", params, request_id=7, timestamp=1_700_000_000_000, key=KEY)
    frame = req.to_frame()
    if spaced:  # another client's layout: the slow path must find the same bytes
        frame = frame.replace('{"req":', '{ "req" : ', 1)
    parsed = parse_incoming(frame.encode())
    assert parsed.raw == req.raw
    assert parsed.params == params
    assert parsed.sigs == list(req.sigs)
    assert parse_frame(frame).raw == parsed.raw  # the protocol core agrees


@pytest.mark.parametrize(
    ("text", "request_id"),
    [
        ("nope", 0),
        ("[1,2]", 0),
        ('{"sig":[]}', 0),
        ('{"req":[1,"ping",{}],"sig":[]}', 0),
        ('{"req":[1,"ping",[],1],"sig":[]}', 1),
        ('{"req":[-1,"ping",{},1],"sig":[]}', 0),
        ('{"req":[3,"ping",{},1],"sig":"0x00"}', 3),
        ('{"req":[3,"",{},1],"sig":[]}', 3),
    ],
)
def test_malformed_frames_are_invalid_message_format(text: str, request_id: int) -> None:
    with pytest.raises(FrameError) as caught:
        parse_incoming(text)
    assert (caught.value.message, caught.value.request_id) == ("invalid message format", request_id)


def test_a_response_frame_sent_to_the_node_fails_validation() -> None:
    with pytest.raises(FrameError, match="message validation failed"):
        parse_incoming('{"res":[1,"pong",null,1],"sig":[]}')


def test_a_duplicated_req_key_never_takes_the_fast_path() -> None:
    signed = make_request("ping", {}, request_id=1, timestamp=1, key=KEY)
    frame = '{"req":' + signed.req_text + ',"sig":[],"req":[2,"ping",{},1],"sig":[]}'
    with pytest.raises(FrameError):
        parse_incoming(frame)


def test_signed_frames_verify_over_their_exact_bytes() -> None:
    frame = signed_frame(
        KEY, 9, "transfer", {"transactions": [{"amount": "1.5"}]}, 1_700_000_000_000
    )
    parsed = parse_response(frame)
    parsed.verify(KEY.address)
    assert (parsed.request_id, parsed.method, parsed.result["transactions"][0]["amount"]) == (
        9,
        "transfer",
        "1.5",
    )
    assert frame.startswith(b'{"res":[9,"transfer",')


def test_jwt_round_trip_forgery_and_expiry() -> None:
    token = encode_jwt({"wallet": KEY.address, "exp": 2000}, b"secret")
    assert decode_jwt(token, b"secret", now=1999)["wallet"] == KEY.address
    with pytest.raises(ExpiredError):
        decode_jwt(token, b"secret", now=2000)
    with pytest.raises(InvalidSignatureError):
        decode_jwt(token, b"other secret", now=1)
    head, _body, mac = token.split(".")
    tampered = encode_jwt({"wallet": "0x" + "00" * 20, "exp": 2000}, b"x").split(".")[1]
    with pytest.raises(InvalidSignatureError):
        decode_jwt(f"{head}.{tampered}.{mac}", b"secret", now=1)
    with pytest.raises(InvalidSignatureError):
        decode_jwt("not.a.jwt!", b"secret", now=1)


def test_json_rpc_values_are_written_as_a_node_writes_them() -> None:
    block = {
        "number": 12,
        "logs_bloom": 1,
        "parent_hash": "0xab",
        "transactions": [b"\x01\x02"],
        "removed": False,
        "base_fee_per_gas": 7,
    }
    assert to_wire(block) == {
        "number": "0xc",
        "logsBloom": "0x" + "00" * 255 + "01",
        "parentHash": "0xab",
        "transactions": ["0x0102"],
        "removed": False,
        "baseFeePerGas": "0x7",
    }


def test_explorer_pages_escape_every_dynamic_string() -> None:
    evil = "<script>alert('x')</script>"
    page = tx_page(
        "/explorer",
        {"hash": evil, "from": evil, "to": None, "value": 0, "input": evil},
        {"status": 0, "gasUsed": 1, "logs": []},
        [EventView(evil, ((evil, evil),))],
        {evil: evil},
    )
    assert "<script>" not in page and "&lt;script&gt;" in page
    page = address_page(
        "/explorer",
        evil,
        label=evil,
        eth_wei=10**18,
        nonce=1,
        code_size=0,
        balances=[(evil, evil)],
        channels=[evil],
    )
    assert "<script>" not in page and "1 ETH" in page
    assert json.dumps(page)  # plain text, no bytes


@settings(max_examples=50, deadline=None)
@given(message=st.binary(min_size=1, max_size=64))
def test_fast_signer_recovery_agrees_with_the_reference(message: bytes) -> None:
    from settlement_widgets.channel.v0_5.core.keccak import keccak256
    from settlement_widgets.channel.v0_5.node.wire import recover_signer
    from settlement_widgets.keys import recover_address_bytes

    digest = keccak256(message)
    signature = KEY.sign_hash_hex(digest)
    assert recover_signer(digest, signature) == recover_address_bytes(digest, signature)
    assert recover_signer(digest, signature) == KEY.address_bytes
    with pytest.raises(InvalidSignatureError):
        recover_signer(digest, signature[:-2])
