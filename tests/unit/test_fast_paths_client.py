"""The v0.5 client's hot paths (issue 37) against the general code they bypass.

``parse_frame`` of received bytes (``_fast_bytes``) must give exactly what the general
path gives for the same frame as text: the same frame (fields, ``raw``) or the same error;
``Response.verify`` must accept and refuse exactly what ``recover_address_bytes`` does;
the store's memoised timestamp must be ``datetime``'s text.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from settlement_widgets.channel.v0_5.client.store_schema import utc_timestamp
from settlement_widgets.channel.v0_5.core import rpc
from settlement_widgets.errors import InvalidFrameError, InvalidSignatureError
from settlement_widgets.keys import SECP256K1_N, PrivateKey, recover_address_bytes

KEY = PrivateKey("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d")
OTHER = PrivateKey("0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a")

text_values = st.text(max_size=10) | st.sampled_from(["\u2028", '"\\/', "\x00\x1f", "é€😀"])
results = st.dictionaries(
    text_values,
    st.recursive(
        st.none() | st.booleans() | st.integers(-(2**80), 2**80) | text_values,
        lambda inner: st.lists(inner, max_size=3),
        max_leaves=6,
    ),
    max_size=4,
)


def _general(frame: bytes) -> object:
    """The general path: the same frame as text, the fast members' parser switched off."""
    original = rpc._fast_members
    rpc._fast_members = lambda text: None  # type: ignore[assignment]
    try:
        return rpc.parse_frame(frame.decode("utf-8", "surrogatepass"))
    except InvalidFrameError as exc:
        return f"error: {exc}"
    finally:
        rpc._fast_members = original


def _fast(frame: bytes) -> object:
    try:
        return rpc.parse_frame(frame)
    except InvalidFrameError as exc:
        return f"error: {exc}"


def _same(frame: bytes) -> None:
    fast, general = _fast(frame), _general(frame)
    assert fast == general
    if not isinstance(fast, str):
        assert isinstance(general, rpc.Request | rpc.Response)
        assert type(fast) is type(general) and fast.raw == general.raw  # type: ignore[union-attr]
        assert fast.sigs == general.sigs  # type: ignore[union-attr]


@settings(max_examples=300, deadline=None)
@given(
    result=results,
    request_id=st.integers(0, 2**64 - 1),
    timestamp=st.integers(0, 2**64 - 1),
    response=st.booleans(),
)
def test_frames_from_bytes_equal_the_general_path(
    result: dict[str, object], request_id: int, timestamp: int, response: bool
) -> None:
    if response:
        frame = rpc.make_response(request_id, "m", result, timestamp=timestamp, key=KEY)
    else:
        frame = rpc.make_request("m", result, request_id=request_id, timestamp=timestamp, key=KEY)
    _same(frame.to_frame().encode())


@pytest.mark.parametrize(
    "frame",
    [
        b'{"res":[18446744073709551616,"m",{},1],"sig":[]}',  # beyond uint64
        b'{"res":[-1,"m",{},1],"sig":[]}',
        b'{"res":[1,"",{},1],"sig":[]}',
        b'{"res":[1,5,{},1],"sig":[]}',
        b'{"res":[1,"m",{},true],"sig":[]}',
        b'{"res":[1,"m",5,1],"sig":[]}',
        b'{"res":[1,"m","text",1],"sig":[]}',
        b'{"res":[1,"m",null,1],"sig":[]}',
        b'{"res":[1,"m",[1,2],1],"sig":[]}',
        b'{"res":[1,"error",{},1],"sig":[]}',
        b'{"res":[1,"error",{"error":5},1],"sig":[]}',
        b'{"res":[1,"error",{"error":"no"},1],"sig":[]}',
        b'{"res":[1,"m",{},1,5],"sig":[]}',
        b'{"res":[1,"m",{}],"sig":[]}',
        b'{"res":{"a":1},"sig":[]}',
        b'{"res":[1,"m",{},1],"sig":"0x00"}',
        b'{"res":[1,"m",{},1],"sig":[5]}',
        b'{"res":[1,"m",{},1],"sig":["00"]}',
        b'{"res":[1,"m",{},1],"sig":["0xzz"]}',
        b'{"res":[-1,"m",{},1],"sig":[5]}',  # two errors: the general path's first
        b'{"res":[1,"m",{"a":1e3},1],"sig":[]}',
        b'{"res":[1,"m",{"a":1.5},1],"sig":[]}',
        b'{"res":[1,"m",{"a":"\\u00e9"},1],"sig":[]}',
        b'{"res":[1,"m",{"a":"\\ud800"},1],"sig":[]}',
        b'{"res":[1,"m",{},1] ,"sig":[]}',
        b'{"res":[1,"m",{},1],"sid":"x","sig":[]}',
        b'{"res":[1,"m",{},1],"res":[2,"m",{},1],"sig":[]}',
        b'{"res":[1,"m",{},1],"sig":[],"sig":[]}',
        b'{"req":[1,"m",{},1],"sig":[]}',
        b'{"req":[1,"m",[],1],"sig":[]}',
        b'{"req":[1,"m",{},1],"sid":"s","sig":[]}',
        b'{"req":[-1,"m",[],1],"sig":[]}',
        b'{"res":[1,"m",{"a":"\xc3\xa9"},1],"sig":[]}',
        b'{"res":[1,"m",{},1],"sig":[]}  ',
        b"not json",
        b"",
    ],
)
def test_unusual_frames_from_bytes_equal_the_general_path(frame: bytes) -> None:
    _same(frame)


def test_bytes_that_are_not_utf8_or_too_large_are_refused_like_text() -> None:
    with pytest.raises(InvalidFrameError, match="UTF-8"):
        rpc.parse_frame(b'{"res":[1,"m",{"a":"\xff"},1],"sig":[]}')
    frame = rpc.make_response(1, "m", {"a": "x" * 100}, timestamp=1, key=KEY).to_frame().encode()
    with pytest.raises(InvalidFrameError, match="limit"):
        rpc.parse_frame(frame, max_bytes=len(frame) - 1)
    assert rpc.parse_frame(frame, max_bytes=len(frame)).result == {"a": "x" * 100}


def test_verify_accepts_and_refuses_what_recover_address_bytes_does() -> None:
    res = rpc.make_response(7, "transfer", {"ok": True}, timestamp=1, key=KEY)
    assert rpc.parse_frame(res.to_frame().encode()).verify(KEY.address) is not None  # type: ignore[union-attr]
    with pytest.raises(InvalidSignatureError, match="not by the broker"):
        res.verify(OTHER.address)
    assert recover_address_bytes(res.payload_hash, res.sigs[0]) == KEY.address_bytes
    unsigned = rpc.make_response(7, "transfer", {}, timestamp=1)
    with pytest.raises(InvalidSignatureError, match="no broker signature"):
        unsigned.verify(KEY.address)
    sig = res.sigs[0]
    r, s, v = int(sig[2:66], 16), int(sig[66:130], 16), int(sig[130:], 16)
    high_s = "0x" + f"{r:064x}{SECP256K1_N - s:064x}{v ^ 7:02x}"  # 27 <-> 28
    for bad in (sig[:-2], sig[:-2] + "1d", "0x" + "00" * 65, high_s, sig + "00"):
        forged = rpc.Response(7, "transfer", {"ok": True}, 1, (bad,))
        with pytest.raises(InvalidSignatureError) as fast_error:
            forged.verify(KEY.address)
        try:
            recover_address_bytes(forged.payload_hash, bad)
        except InvalidSignatureError as exc:
            assert str(exc) == str(fast_error.value)


@settings(max_examples=300, deadline=None)
@given(ns=st.integers(0, 253402300799 * 10**9 + 999_999_999))
def test_store_timestamps_are_datetimes_text(ns: int) -> None:
    reference = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=ns // 1000)
    expected = reference.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert utc_timestamp(ns) == expected


def test_store_timestamp_now_is_current() -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    stamp = datetime.fromisoformat(utc_timestamp().replace("Z", "+00:00"))
    assert before <= stamp <= datetime.now(UTC)


@pytest.mark.parametrize("size", [0, 1, 125, 126, 127, 65535, 65536, 70000])
def test_client_text_frames_are_websockets_bytes(
    size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``send_text_frame`` writes what ``ClientProtocol.send_text`` writes with the same
    masking key, at every length encoding; a server reads the text back."""
    import websockets.frames as ws_frames
    from websockets.client import ClientProtocol
    from websockets.frames import Frame, Opcode
    from websockets.protocol import Protocol, Side, State
    from websockets.uri import parse_uri

    from settlement_widgets import ws_write as relay_socket

    payload = ("é" * size).encode()[:size].decode("utf-8", "ignore").encode()
    ours, theirs = ClientProtocol(parse_uri("ws://h/")), ClientProtocol(parse_uri("ws://h/"))
    for proto in (ours, theirs):
        proto.state = State.OPEN
    pool = relay_socket.MaskPool()
    keys = [pool.take() for _ in range(3)]
    fixed = type("P", (), {"take": lambda self: keys[0]})()
    monkeypatch.setattr(relay_socket._MASKS, "pool", fixed)
    monkeypatch.setattr(ws_frames.secrets, "token_bytes", lambda n: keys[0])
    relay_socket.send_text_frame(ours, payload)
    theirs.send_text(payload)
    sent = b"".join(ours.data_to_send())
    assert sent == b"".join(theirs.data_to_send())
    assert len({*keys}) == 3 and all(len(k) == 4 for k in keys)
    server = Protocol(Side.SERVER)  # an open connection's frame reader
    server.receive_data(sent)
    [event] = server.events_received()
    assert isinstance(event, Frame) and event.opcode is Opcode.TEXT and event.data == payload


def test_client_text_frames_keep_websockets_refusals() -> None:
    from websockets.client import ClientProtocol
    from websockets.exceptions import InvalidState, ProtocolError
    from websockets.protocol import State
    from websockets.uri import parse_uri

    from settlement_widgets.ws_write import send_text_frame

    proto = ClientProtocol(parse_uri("ws://h/"))
    with pytest.raises(InvalidState):
        send_text_frame(proto, b"x")  # still connecting
    proto.state = State.OPEN
    proto.send_text(b"part", fin=False)
    with pytest.raises(ProtocolError):
        send_text_frame(proto, b"x")  # a fragmented message is in progress


@settings(max_examples=200, deadline=None)
@given(
    params=results,
    request_id=st.integers(0, 2**64 - 1),
    timestamp=st.integers(0, 2**64 - 1),
)
def test_signed_requests_equal_make_request(
    params: dict[str, object], request_id: int, timestamp: int
) -> None:
    fast = rpc.signed_request("transfer", params, request_id, timestamp, KEY)
    general = rpc.make_request(
        "transfer", params, request_id=request_id, timestamp=timestamp, key=KEY
    )
    assert fast == general and fast.raw == general.raw and fast.to_frame() == general.to_frame()
    assert fast.params is not params


@pytest.mark.parametrize(
    ("method", "params", "request_id", "timestamp"),
    [
        ("", {}, 1, 1),
        ("m", {}, -1, 1),
        ("m", {}, True, 1),
        ("m", {}, 1, 2**64),
        ("m", [1], 1, 1),
        ("m", {"f": 1.5}, 1, 1),
    ],
)
def test_signed_requests_refuse_what_make_request_refuses(
    method: str, params: object, request_id: int, timestamp: int
) -> None:
    with pytest.raises((InvalidFrameError, TypeError)) as general:
        rpc.make_request(method, params, request_id=request_id, timestamp=timestamp, key=KEY)  # type: ignore[arg-type]
    with pytest.raises((InvalidFrameError, TypeError)) as fast:
        rpc.signed_request(method, params, request_id, timestamp, KEY)  # type: ignore[arg-type]
    assert type(fast.value) is type(general.value) and str(fast.value) == str(general.value)


def test_transfer_messages_are_the_general_requests() -> None:
    from settlement_widgets.channel.v0_5.core.messages import transfer_message

    fast = transfer_message(
        KEY,
        [("usdc", "0.000001"), ("eth", "123456789012345678901234567890.5")],
        destination=OTHER.address.lower(),
        request_id=17,
        timestamp=1_764_440_000_000,
    )
    general = rpc.make_request(
        "transfer",
        {
            "destination": OTHER.address,
            "allocations": [
                {"asset": "usdc", "amount": "0.000001"},
                {"asset": "eth", "amount": "123456789012345678901234567890.5"},
            ],
        },
        request_id=17,
        timestamp=1_764_440_000_000,
        key=KEY,
    )
    assert fast == general and fast.to_frame() == general.to_frame()


@pytest.mark.parametrize("size", [0, 125, 126, 65536])
def test_server_text_frames_are_websockets_bytes(size: int) -> None:
    """The relay's replies (``Outbox``): unmasked, the bytes ``send_text`` writes."""
    from websockets.protocol import Protocol, Side

    from settlement_widgets.ws_write import send_text_frame

    payload = b"r" * size
    ours, theirs = Protocol(Side.SERVER), Protocol(Side.SERVER)
    send_text_frame(ours, payload)
    theirs.send_text(payload)
    assert ours.data_to_send() == theirs.data_to_send()
