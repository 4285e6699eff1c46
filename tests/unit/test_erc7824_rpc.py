"""RPC frames: raw slices kept verbatim, JS-exact JSON, signatures, strict validation."""

from __future__ import annotations

import json
from typing import Any

import pytest
from erc7824_strategies import BROKER_KEY, SESSION_KEY, USER_KEY, private_keys
from eth_account import Account
from eth_hash.auto import keccak
from hypothesis import given, settings
from hypothesis import strategies as st

from settlement_widgets.channel.v0_5.core import (
    Request,
    Response,
    check_timestamp,
    error_response,
    make_request,
    make_response,
    notification,
    parse_frame,
    parse_request,
    parse_response,
    sign_request,
    transfer_message,
)
from settlement_widgets.channel.v0_5.core.wire_json import dumps, loads_members
from settlement_widgets.errors import (
    ExpiredError,
    InvalidAmountError,
    InvalidFrameError,
    InvalidSignatureError,
    RelayError,
    SettlementValueError,
)
from settlement_widgets.keys import SECP256K1_N, PrivateKey

USER = PrivateKey(USER_KEY)
BROKER = PrivateKey(BROKER_KEY)
SESSION = PrivateKey(SESSION_KEY)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.text(max_size=12),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
params_st = st.dictionaries(st.text(max_size=8), json_values, max_size=5)
uint64 = st.integers(min_value=0, max_value=2**64 - 1)
methods = st.text(min_size=1, max_size=20)


@settings(max_examples=150, deadline=None)
@given(rid=uint64, method=methods, params=params_st, ts=uint64, key=private_keys)
def test_built_request_round_trips_and_signature_is_eth_accounts(
    rid: int, method: str, params: dict[str, Any], ts: int, key: PrivateKey
) -> None:
    req = make_request(method, params, request_id=rid, timestamp=ts, key=key)
    frame = req.to_frame()
    # the frame is valid JSON whose req is the same value
    assert json.loads(frame)["req"] == json.loads(req.req_text)
    parsed = parse_request(frame)
    assert parsed.raw == req.raw
    assert (parsed.request_id, parsed.method, parsed.timestamp) == (rid, method, ts)
    assert parsed.signers() == (key.address,)
    assert parsed.is_signed_by(key.address)
    # eth-account, over the same bytes, makes the same signature
    ref = Account.unsafe_sign_hash(keccak(req.raw), key.secret_hex()).signature
    assert req.sigs[0] == "0x" + bytes(ref).hex()
    assert sign_request(req.req_text, key) == req.sigs[0]


@settings(max_examples=100, deadline=None)
@given(
    rid=uint64,
    params=params_st,
    ts=uint64,
    ws=st.lists(st.sampled_from([" ", "\n", "\t", "\r\n", "  "]), min_size=8, max_size=8),
    sig_first=st.booleans(),
)
def test_parser_keeps_the_exact_raw_bytes(
    rid: int, params: dict[str, Any], ts: int, ws: list[str], sig_first: bool
) -> None:
    """A peer may format its frame however it likes; the signature covers its bytes."""
    a, b, c, d, e, f, g, h = ws
    req_text = f"[{a}{rid},{b}{json.dumps('m')}{c},{json.dumps(params, indent=1)},{d}{ts}{e}]"
    sig = sign_request(req_text, SESSION)
    members = [f'"req"{f}:{g}{req_text}', f'"sig":["{sig}"]']
    if sig_first:
        members.reverse()
    frame = h + "{" + f",{a}".join(members) + "}" + h
    parsed = parse_request(frame)
    assert parsed.raw == req_text.encode()
    assert parsed.params == params
    assert parsed.signers() == (SESSION.address,)
    # a re-serialisation differs whenever the peer spaced its text, and would not verify
    canonical = dumps(json.loads(req_text)).encode()
    assert canonical != parsed.raw
    assert sign_request(canonical, SESSION) != sig


def test_non_ascii_raw_bytes_and_bytes_input() -> None:
    req_text = '[7,"transfer",{"memo":"café ✓ \\u00e9"},1700000000000]'
    frame = ('{"req":' + req_text + ',"sig":["' + sign_request(req_text, USER) + '"]}').encode()
    parsed = parse_request(frame)
    assert parsed.raw == req_text.encode("utf-8")
    assert parsed.params["memo"] == "café ✓ é"
    assert parsed.signers() == (USER.address,)
    with pytest.raises(InvalidFrameError, match="UTF-8"):
        parse_frame(b'{"req":[1,"m",{"x":"\xff"},1],"sig":[]}')


def test_js_compatible_json_text() -> None:
    # compact, non-ASCII as is, control characters as JSON.stringify writes them
    assert dumps({"a": [1, "é", None, True], "b": '\n\t\x01"\\'}) == (
        '{"a":[1,"é",null,true],"b":"\\n\\t\\u0001\\"\\\\"}'
    )
    # integer-like keys come first, ascending, as in a JS object
    assert dumps({"b": 1, "10": 2, "2": 3, "01": 4}) == '{"2":3,"10":2,"b":1,"01":4}'
    with pytest.raises(InvalidFrameError, match="float"):
        dumps({"amount": 1.5})
    with pytest.raises(InvalidFrameError, match="keys must be strings"):
        dumps({1: "x"})
    with pytest.raises(InvalidFrameError, match="lone surrogate"):
        dumps("\ud800")
    with pytest.raises(InvalidFrameError, match="cannot put a set"):
        dumps({"x": {1}})


def test_response_notification_and_error_frames() -> None:
    res = make_response(
        5, "get_config", {"broker_address": BROKER.address}, timestamp=1, key=BROKER
    )
    parsed = parse_response(res.to_frame())
    assert parsed.verify(BROKER.address) is parsed
    assert not parsed.is_notification and not parsed.is_error
    assert parsed.raise_for_error() is parsed
    with pytest.raises(InvalidSignatureError, match="not by the broker"):
        parsed.verify(USER.address)
    with pytest.raises(InvalidSignatureError, match="no broker signature"):
        parse_response(make_response(5, "get_config", {}, timestamp=1).to_frame()).verify(
            BROKER.address
        )
    bu = notification("bu", {"balance_updates": []}, timestamp=2, key=BROKER)
    assert bu.request_id == 0 and bu.is_notification
    assert parse_response(bu.to_frame()).verify(BROKER.address).is_notification
    err = error_response(9, "invalid message timestamp", timestamp=3, key=BROKER)
    assert err.to_frame().startswith('{"res":[9,"error",{"error":"invalid message timestamp"},3]')
    perr = parse_response(err.to_frame()).verify(BROKER.address)
    assert perr.is_error and perr.error == "invalid message timestamp"
    with pytest.raises(RelayError, match="invalid message timestamp") as info:
        perr.raise_for_error()
    assert info.value.message == "invalid message timestamp"
    pong = parse_response('{"res":[1,"pong",null,5],"sig":[]}')
    assert pong.result is None and pong.method == "pong"
    # a tampered result no longer verifies
    tampered = res.to_frame().replace(BROKER.address, USER.address)
    with pytest.raises(InvalidSignatureError):
        parse_response(tampered).verify(BROKER.address)


def test_sid_round_trip() -> None:
    req = make_request("message", {"x": 1}, request_id=1, timestamp=2, sid="0xabc", key=USER)
    assert req.to_frame().startswith('{"req":[1,"message",{"x":1},2],"sid":"0xabc","sig":["0x')
    assert parse_request(req.to_frame()).sid == "0xabc"


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        ("", "not valid JSON"),
        ("not json", "not valid JSON"),
        ('{"req":[1,"ping",{},1]', "not valid JSON"),
        ('{"req":[1,"ping",{},1]} x', "extra data"),
        ("[1,2,3]", "must be a JSON object"),
        ('"req"', "must be a JSON object"),
        ("{}", "neither 'req' nor 'res'"),
        ('{"sig":[]}', "neither 'req' nor 'res'"),
        ('{"req":[1,"a",{},1],"res":[1,"a",{},1]}', "exactly one of"),
        ('{"req":[1,"a",{},1],"req":[2,"a",{},1]}', "repeats the key 'req'"),
        ('{"req":[1,"a",{},1],"extra":1}', "unknown key"),
        ('{"req":{"id":1},"sig":[]}', "must be a JSON array"),
        ('{"req":[1,"ping",{}],"sig":[]}', "exactly 4 elements"),
        ('{"req":[1,"ping",{},1,5],"sig":[]}', "exactly 4 elements"),
        ('{"req":["1","ping",{},1],"sig":[]}', "request id must be an unsigned integer"),
        ('{"req":[-1,"ping",{},1],"sig":[]}', "outside uint64"),
        ('{"req":[18446744073709551616,"ping",{},1],"sig":[]}', "outside uint64"),
        ('{"req":[true,"ping",{},1],"sig":[]}', "request id"),
        ('{"req":[1,"",{},1],"sig":[]}', "method must be a non-empty string"),
        ('{"req":[1,7,{},1],"sig":[]}', "method must be a non-empty string"),
        ('{"req":[1,"ping",[],1],"sig":[]}', "params must be a JSON object"),
        ('{"req":[1,"ping",{},"1700000000000"],"sig":[]}', "timestamp must be"),
        ('{"req":[1,"ping",{},1.7e12],"sig":[]}', "timestamp must be"),
        ('{"req":[1,"ping",{},-5],"sig":[]}', "timestamp -5 is outside"),
        ('{"req":[1,"ping",{},NaN],"sig":[]}', "NaN"),
        ('{"req":[1,"ping",{},1],"sig":"0x00"}', "sig must be a list"),
        ('{"req":[1,"ping",{},1],"sig":[42]}', r"sig\[0\] must be a 0x-hex string"),
        ('{"req":[1,"ping",{},1],"sig":["0xzz"]}', r"sig\[0\] is not valid hex"),
        ('{"req":[1,"ping",{},1],"sid":5}', "sid must be a string"),
        ('{"res":[1,"x",{},1],"sid":"a"}', "no 'sid'"),
        ('{"res":[1,"x","text",1],"sig":[]}', "object, array or null"),
        ('{"res":[1,"error",{"message":"x"},1],"sig":[]}', '"error" response must carry'),
        ('{"req":[1,"ping",{"a":"\x01"},1]}', "not valid JSON"),
    ],
)
def test_malformed_frames_raise_clear_errors(frame: str, message: str) -> None:
    with pytest.raises(InvalidFrameError, match=message):
        parse_frame(frame)


def test_frame_kind_and_size_checks() -> None:
    ping = '{"req":[1,"ping",{},1],"sig":[]}'
    with pytest.raises(InvalidFrameError, match="expected a response"):
        parse_response(ping)
    with pytest.raises(InvalidFrameError, match="expected a request"):
        parse_request('{"res":[1,"pong",null,1],"sig":[]}')
    with pytest.raises(InvalidFrameError, match="limit"):
        parse_frame(ping.encode(), max_bytes=10)
    with pytest.raises(InvalidFrameError, match="limit"):
        parse_frame(ping, max_bytes=10)
    with pytest.raises(InvalidFrameError, match="JSON text"):
        parse_frame(123)  # type: ignore[arg-type]
    # sig may be absent; a missing sig is an empty one
    assert parse_request('{"req":[1,"ping",{},1]}').sigs == ()
    # whitespace-only and escaped keys are JSON too
    assert parse_request(' {"\\u0072eq" : [1,"ping",{},1] } ').raw == b'[1,"ping",{},1]'


def test_request_signature_errors() -> None:
    req = make_request("ping", {}, request_id=1, timestamp=2, key=USER)
    raw = bytes.fromhex(req.sigs[0][2:])
    s = int.from_bytes(raw[32:64], "big")
    high = "0x" + (raw[:32] + (SECP256K1_N - s).to_bytes(32, "big") + bytes([55 - raw[64]])).hex()
    frame = '{"req":' + req.req_text + ',"sig":["' + high + '"]}'
    with pytest.raises(InvalidSignatureError, match="high s"):
        parse_request(frame).signers()
    short = '{"req":' + req.req_text + ',"sig":["' + req.sigs[0][:-4] + '"]}'
    with pytest.raises(InvalidSignatureError, match="65 bytes"):
        parse_request(short).is_signed_by(USER.address)
    assert not parse_request(req.to_frame()).is_signed_by(BROKER.address)


def test_direct_construction_is_validated() -> None:
    with pytest.raises(InvalidFrameError, match="params must be a JSON object"):
        Request(1, "m", [], 1)  # type: ignore[arg-type]
    with pytest.raises(InvalidFrameError, match="outside uint64"):
        Request(2**64, "m", {}, 1)
    with pytest.raises(InvalidFrameError, match="float"):
        make_request("m", {"x": 0.5}, request_id=1, timestamp=1)
    with pytest.raises(InvalidFrameError, match="error"):
        Response(1, "error", {"error": 5}, 1)


def test_timestamp_window() -> None:
    now = 1_700_000_060_000
    check_timestamp(1_700_000_000_000, now=now)  # exactly 60 s old: accepted
    check_timestamp(1_800_000_000_000, now=now)  # future: accepted (as the ClearNode does)
    with pytest.raises(ExpiredError, match="invalid message timestamp: 60001 ms old"):
        check_timestamp(1_699_999_999_999, now=now)
    with pytest.raises(ExpiredError, match="13 digits"):
        check_timestamp(1_700_000_000, now=now)  # seconds, not milliseconds
    with pytest.raises(ExpiredError, match="13 digits"):
        check_timestamp("1700000000000", now=now)  # type: ignore[arg-type]


def test_builder_input_errors() -> None:
    with pytest.raises(SettlementValueError, match="exactly one of destination"):
        transfer_message(USER, [("usdc", "1")], request_id=1, timestamp=1)
    with pytest.raises(InvalidAmountError, match="decimal string"):
        transfer_message(USER, [("usdc", 1.5)], destination=BROKER.address)  # type: ignore[list-item]
    with pytest.raises(InvalidAmountError, match="decimal string"):
        transfer_message(USER, [("usdc", "1e3")], destination=BROKER.address)


def test_default_ids_and_timestamps_are_fresh() -> None:
    a = make_request("ping")
    b = make_request("ping")
    assert len(str(a.timestamp)) == 13
    assert a.request_id >= a.timestamp - 1000
    check_timestamp(a.timestamp)
    assert b.timestamp >= a.timestamp


def test_loads_members_spans() -> None:
    text = ' { "a" : [1, 2] , "b":{"c":"d"} } '
    members = loads_members(text)
    assert [(k, text[s:e]) for k, _, s, e in members] == [("a", "[1, 2]"), ("b", '{"c":"d"}')]
    assert loads_members("{}") == []
