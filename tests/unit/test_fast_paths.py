"""The hand-tuned hot-path code (issue 12) against the library path it replaces.

Each fast path must produce exactly what the straightforward code produces: JSON text
(orjson vs the stdlib encoder), request signing (no ``dataclasses.replace``), signature
checks on bytes (vs ``split_signature`` on integers), the session-key row, the memoised
timestamps and amounts.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from settlement_widgets.channel.v0_5.core import rpc
from settlement_widgets.channel.v0_5.core.amounts import parse_decimal_amount
from settlement_widgets.channel.v0_5.core.messages import transfer_message
from settlement_widgets.channel.v0_5.core.wire_json import dumps
from settlement_widgets.channel.v0_5.node.ledger import SessionKeyRecord
from settlement_widgets.channel.v0_5.node.service import _rfc3339, _units
from settlement_widgets.channel.v0_5.node.wire import _compact_signature, recover_signer
from settlement_widgets.errors import InvalidFrameError, InvalidSignatureError, SettlementError
from settlement_widgets.keys import SECP256K1_N, PrivateKey, split_signature

KEY = PrivateKey("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d")
STDLIB = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)

# every control character, quotes, backslashes, non-BMP text, separators JS treats specially
tricky_text = st.text(
    alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=("Cs",)),
    max_size=12,
) | st.sampled_from(["\u2028", "\u2029", '"\\/', "\x00\x1f\x7f", "é€😀", ""])
values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**80), 2**80) | tricky_text,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(tricky_text.filter(lambda k: not (k[:1].isdigit())), inner, max_size=4)
    ),
    max_leaves=15,
)


@settings(max_examples=400, deadline=None)
@given(value=values)
def test_dumps_writes_what_the_stdlib_encoder_writes(value: object) -> None:
    assert dumps(value) == STDLIB.encode(value)


@pytest.mark.parametrize("codepoint", range(0x00, 0x80))
def test_dumps_escapes_every_ascii_character_like_the_stdlib(codepoint: int) -> None:
    text = "a" + chr(codepoint) + "b"
    assert dumps([text, {text: text}]) == STDLIB.encode([text, {text: text}])


def test_dumps_keeps_the_js_rules_on_the_fast_path() -> None:
    # index-like keys first in ascending order, as a JS object orders them
    assert dumps({"b": 1, "10": 2, "2": 3, "a": {"1": None, "x": 0}}) == (
        '{"2":3,"10":2,"b":1,"a":{"1":null,"x":0}}'
    )
    assert dumps((1, ("a",))) == '[1,["a"]]'  # tuples are arrays
    assert dumps(2**64) == str(2**64)  # beyond orjson's 64 bits: the stdlib writes it
    for bad in (1.5, {1: "a"}, {"a": object()}, "\ud800"):
        with pytest.raises(InvalidFrameError):
            dumps(bad)


def test_signed_requests_equal_the_replace_based_copy() -> None:
    base = rpc.make_request("transfer", {"destination": KEY.address}, request_id=9, timestamp=1)
    fast = base.signed(KEY)
    slow = replace(base, sigs=(*base.sigs, rpc.sign_payload(base.raw, KEY)))
    assert fast == slow
    assert fast.to_frame() == slow.to_frame()
    twice = fast.signed(KEY)
    assert twice.sigs == (fast.sigs[0], fast.sigs[0]) and base.sigs == ()
    res = rpc.make_response(9, "transfer", {"ok": True}, timestamp=2, key=KEY)
    assert res.verify(KEY.address).sigs == (rpc.sign_payload(res.raw, KEY),)


def test_frame_signature_lists_match_the_encoder() -> None:
    frame = transfer_message(
        KEY, [("ytest.usd", "1")], destination=KEY.address, request_id=3, timestamp=4
    ).to_frame()
    parsed = json.loads(frame)
    assert frame.endswith(',"sig":' + STDLIB.encode(parsed["sig"]) + "}")
    # whitespace that bytes.fromhex tolerates must still be escaped like JSON wants it
    odd = rpc.Request(1, "m", {}, 1_700_000_000_000, ("0xab\ncd",))
    assert json.loads(odd.to_frame())["sig"] == ["0xab\ncd"]
    assert rpc.Request(1, "m", {}, 1_700_000_000_000).to_frame().endswith(',"sig":[]}')


def _sig(r: int, s: int, v: int) -> str:
    return "0x" + r.to_bytes(32, "big").hex() + s.to_bytes(32, "big").hex() + f"{v:02x}"


def test_compact_signatures_match_split_signature() -> None:
    for _ in range(200):
        sig = KEY.sign_hash(os.urandom(32))
        r, s, v = split_signature(sig)
        expected = r.to_bytes(32, "big") + s.to_bytes(32, "big") + bytes((v - 27,))
        assert _compact_signature("0x" + sig.hex()) == expected
        assert _compact_signature(sig.hex()) == expected
        assert _compact_signature("0x" + (sig[:64] + bytes((v - 27,))).hex()) == expected
    half = SECP256K1_N // 2
    for r, s, v, ok in [
        (1, half, 27, True),
        (SECP256K1_N - 1, 1, 28, True),
        (1, half + 1, 27, False),  # high s
        (0, 1, 27, False),
        (SECP256K1_N, 1, 27, False),
        (1, 0, 27, False),
        (1, 1, 29, False),
        (1, 1, 2, False),
    ]:
        text = _sig(r, s, v)
        if ok:
            assert _compact_signature(text)[:64] == bytes.fromhex(text[2:130])
        else:
            with pytest.raises(InvalidSignatureError) as fast:
                _compact_signature(text)
            with pytest.raises(InvalidSignatureError) as slow:
                split_signature(text)
            assert str(fast.value) == str(slow.value)  # the same precise message
    for junk in ("0x12", "zz", "0x" + "00" * 66):
        with pytest.raises(InvalidSignatureError):
            _compact_signature(junk)


def test_recover_signer_returns_the_signers_raw_address() -> None:
    digest = os.urandom(32)
    assert recover_signer(digest, KEY.sign_hash_hex(digest)) == KEY.address_bytes


def test_session_key_rows_are_the_stdlib_json() -> None:
    record = SessionKeyRecord(
        1, KEY.address, KEY.address, "app", "all", [("ytest.usd", "10.5"), ("é", 'x"')],
        {"ytest.usd": 12, "é": 1}, 2_000_000_000, 1,
    )  # fmt: skip
    row = record.row()
    assert json.loads(row[5]) == [["ytest.usd", "10.5"], ["é", 'x"']]
    assert json.loads(row[6]) == {"ytest.usd": "12", "é": "1"}
    record.allowances = [("\ud800", "1")]  # a lone surrogate orjson refuses: stdlib fallback
    assert json.loads(record.row()[5]) == [["\ud800", "1"]]


def test_memoised_timestamps_and_amounts() -> None:
    now_ms = int(time.time() * 1000)
    for ms in (0, 999, 1000, now_ms, now_ms + 1):
        seconds, rest = divmod(ms, 1000)
        base = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
        assert _rfc3339(ms, millis=True) == f"{base}.{rest:03d}Z"
        assert _rfc3339(ms) == base + "Z"
    assert _units("1.5", 6) == parse_decimal_amount("1.5", 6) == 1_500_000
    for _ in range(2):  # errors are raised every time, never cached as values
        with pytest.raises(SettlementError):
            _units("1.0000001", 6)


frame_params = st.dictionaries(
    tricky_text.filter(lambda k: not (k[:1].isdigit())),
    st.recursive(
        st.none() | st.booleans() | st.integers(-(2**70), 2**70) | tricky_text,
        lambda inner: st.lists(inner, max_size=3),
        max_leaves=6,
    ),
    max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(params=frame_params, request_id=st.integers(0, 2**64 - 1), response=st.booleans())
def test_the_fast_frame_parser_equals_the_exact_scanner(
    params: dict[str, object], request_id: int, response: bool
) -> None:
    if response:
        text = rpc.make_response(request_id, "m", params, timestamp=1, key=KEY).to_frame()
    else:
        text = rpc.make_request("m", params, request_id=request_id, timestamp=1, key=KEY).to_frame()
    fast = rpc.parse_frame(text)
    original = rpc._fast_members
    rpc._fast_members = lambda text: None  # type: ignore[assignment]
    try:
        exact = rpc.parse_frame(text)
    finally:
        rpc._fast_members = original
    assert fast == exact and fast.raw == exact.raw


@pytest.mark.parametrize(
    "text",
    [
        '{"res":[18446744073709551616,"m",{},1],"sig":[]}',  # beyond uint64: orjson reads a float
        '{"res":[1,"m",{"a":1e3},1],"sig":[]}',  # a float written back differently
        '{"res":[1,"m",{"a":"\\u00e9"},1],"sig":[]}',  # an escape: the slice is kept verbatim
        '{"res":[1,"m",{},1] ,"sig":[]}',
        '{"res":[1,"m",{},1],"sid":"x","sig":[]}',
        '{"res":[1,"m",{},1],"res":[2,"m",{},1],"sig":[]}',
    ],
)
def test_unusual_frames_take_the_exact_path(text: str) -> None:
    assert rpc._fast_members(text) is None
    try:
        exact: object = rpc.parse_frame(text)
    except InvalidFrameError as exc:
        exact = str(exc)
    original = rpc._fast_members
    rpc._fast_members = lambda text: None  # type: ignore[assignment]
    try:
        try:
            reference: object = rpc.parse_frame(text)
        except InvalidFrameError as exc:
            reference = str(exc)
    finally:
        rpc._fast_members = original
    assert exact == reference
