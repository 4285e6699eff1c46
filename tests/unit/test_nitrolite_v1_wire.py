"""Nitrolite v1 wire frames and decimal amounts against the SDK-generated vectors.

Every vector of the groups ``rpc_encoding``, ``decimal_scaling``, ``decimal_to_string`` and
``response_parsing`` must be reproduced exactly (whole ``outputs`` dict), because frames and
amount strings are compared byte for byte by peers and hashed into signed states.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from settlement_widgets.channel.v1.core import decimals, wire
from settlement_widgets.channel.v1.core.vectors import compute_vector
from settlement_widgets.errors import InvalidAmountError, InvalidFrameError, RelayError

#: the verbatim copy of the published vectors that travels with the tests
VECTOR_FILE = Path(__file__).parent / "data" / "nitrolite-v1-vectors.json"
GROUPS: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]]] = {
    **wire.VECTORS,
    **decimals.VECTORS,
}
EXPECTED_COUNTS = {
    "rpc_encoding": 15,
    "decimal_scaling": 9,
    "decimal_to_string": 11,
    "response_parsing": 1,
}


def _load() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(VECTOR_FILE.read_text(encoding="utf-8"))
    return data


def _cases() -> list[Any]:
    data = json.loads(VECTOR_FILE.read_text(encoding="utf-8"))
    return [
        pytest.param(group, vector, id=vector["id"])
        for group in EXPECTED_COUNTS
        for vector in data["vectors"][group]
    ]


def test_group_counts_match_the_published_file() -> None:
    data = _load()
    assert set(GROUPS) == set(EXPECTED_COUNTS)
    for group, count in EXPECTED_COUNTS.items():
        assert len(data["vectors"][group]) == count
        assert data["meta"]["vector_counts"][group] == count


@pytest.mark.parametrize(("group", "vector"), _cases())
def test_vector_reproduced(group: str, vector: dict[str, Any]) -> None:
    meta = _load()["meta"]
    assert compute_vector(GROUPS[group], vector, meta) == vector["outputs"]


# --- frames: behaviour ------------------------------------------------------------------


def test_roundtrip_keeps_key_order_and_unicode() -> None:
    text = '[1,9,"x.v1.y",{"b":1,"a":"€\\n","c":[true,null,1.5]},1767225600000]'
    frame = wire.decode_frame(text)
    assert frame.type is wire.MessageType.REQUEST
    assert list(frame.payload) == ["b", "a", "c"]
    assert frame.encode() == text
    assert wire.decode_frame(text.encode("utf-8")) == frame


def test_sdk_replacer_forces_uint64_keys_to_strings() -> None:
    frame = wire.Frame(
        wire.MessageType.REQUEST,
        5,
        "example.v1.numbers",
        {"epoch": 3, "state": {"version": 7, "nonce": 42}, "other": 5, "amount": Decimal("0.10")},
        1,
    )
    assert frame.encode() == (
        '[1,5,"example.v1.numbers",{"epoch":"3","state":{"version":"7","nonce":"42"},'
        '"other":5,"amount":"0.1"},1]'
    )


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.5, "1.5"),
        (-0.0, "0"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1e-7, "1e-7"),
        (1e-6, "0.000001"),
        (123.456e-10, "1.23456e-8"),
        (2.5e16, "25000000000000000"),
    ],
)
def test_floats_use_javascript_number_formatting(value: float, text: str) -> None:
    assert wire.encode_json(value) == text


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        ("not json", "invalid JSON"),
        ("", "invalid JSON"),
        ("[1,1,NaN,{},1]", "invalid JSON"),
        ("[]", "invalid RPCData: expected 5 elements in array"),
        ('[1,1,"m",{},1,6]', "invalid RPCData: expected 5 elements in array"),
        ('{"res":[1,"m",{},1]}', "invalid RPCData: expected 5 elements in array"),
        ('[true,1,"m",{},1]', "invalid type: expected number"),
        ('[9,1,"m",{},1]', "invalid type: unknown message type 9"),
        ('[1,"1","m",{},1]', "invalid requestId: expected number"),
        ('[1,-1,"m",{},1]', "invalid requestId: -1 is out of range"),
        ('[1,1.5,"m",{},1]', "invalid requestId: expected an integer"),
        ("[1,1,2,{},1]", "invalid method: expected string"),
        ('[1,1,"m",[],1]', "invalid payload: expected object"),
        ('[1,1,"m",{},"1"]', "invalid timestamp: expected number"),
    ],
)
def test_malformed_frames_give_clear_errors(frame: str, message: str) -> None:
    with pytest.raises(InvalidFrameError, match="^" + message.replace("[", r"\[")):
        wire.decode_frame(frame)


def test_invalid_frames_are_value_errors_and_bytes_must_be_utf8() -> None:
    with pytest.raises(ValueError, match="not UTF-8"):
        wire.decode_frame(b"\xff\xfe")


def test_encode_refuses_what_the_node_would_reject() -> None:
    with pytest.raises(InvalidFrameError, match="invalid payload"):
        wire.encode_frame(wire.Frame(wire.MessageType.REQUEST, 1, "m", None, 1))  # type: ignore[arg-type]
    with pytest.raises(InvalidFrameError, match="non-finite"):
        wire.encode_json({"x": float("nan")})
    with pytest.raises(InvalidFrameError, match="cannot encode"):
        wire.encode_json({"x": object()})


def test_error_frames() -> None:
    frame = wire.error_frame(
        7, "channels.v1.nope", wire.unknown_method_error("channels.v1.nope"), 1
    )
    assert (
        frame.encode() == '[4,7,"channels.v1.nope",{"error":"unknown method: channels.v1.nope"},1]'
    )
    assert frame.error == "unknown method: channels.v1.nope"
    with pytest.raises(RelayError, match="unknown method") as info:
        wire.raise_for_error(frame)
    assert info.value.message == "unknown method: channels.v1.nope"
    ok = wire.Frame(wire.MessageType.RESPONSE, 7, "node.v1.ping", {}, 1)
    assert wire.raise_for_error(ok) is ok and ok.error is None


def test_node_config_rejects_bad_validators() -> None:
    payload = {
        "node_address": "0x00",
        "node_version": "v1",
        "supported_sig_validators": "%%%",
        "blockchains": [],
    }
    with pytest.raises(InvalidFrameError, match="supported_sig_validators"):
        wire.parse_node_config(payload)


# --- decimals: behaviour ----------------------------------------------------------------


def test_plain_string_never_uses_exponents() -> None:
    assert decimals.plain_decimal_string("1e-8") == "0.00000001"
    assert decimals.plain_decimal_string("1e21") == "1000000000000000000000"
    assert decimals.plain_decimal_string("-5.000") == "-5"
    assert decimals.plain_decimal_string("0.10") == "0.1"


def test_units_roundtrip_exactly() -> None:
    assert decimals.from_units(1230000, 6) == Decimal("1.23")
    assert decimals.to_units(decimals.from_units(10**30 + 1, 18), 18) == 10**30 + 1
    assert decimals.to_units("1.500", 1) == 15


@pytest.mark.parametrize("bad", ["", " 1", "NaN", "Infinity", "1_000", "abc", 1.5, True])
def test_bad_amounts_are_refused(bad: Any) -> None:
    with pytest.raises(InvalidAmountError):
        decimals.to_units(bad, 6)


@pytest.mark.parametrize("bad", [-1, 256, True, 6.0])
def test_bad_decimals_are_refused(bad: Any) -> None:
    with pytest.raises(InvalidAmountError, match="decimals"):
        decimals.to_units("1", bad)


def test_huge_amounts_are_refused_before_building_the_integer() -> None:
    with pytest.raises(InvalidAmountError, match="uint256"):
        decimals.to_units("1e999999999", 6)
    with pytest.raises(InvalidAmountError, match="uint256"):
        decimals.to_units(str(2**256), 0)
    assert decimals.to_units(str(2**256 - 1), 0) == 2**256 - 1
