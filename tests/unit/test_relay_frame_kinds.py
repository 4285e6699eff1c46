"""Which protocol a relay's frame belongs to: v0.5 frames (ours), Nitrolite v1 frames (the
shapes of Nitrolite v1.4.1: ``[type, id, method, payload, ts]``) and everything else."""

from __future__ import annotations

import json

import pytest

from settlement_widgets.channel.frames import identify_frame
from settlement_widgets.channel.v0_5.core.rpc import make_request, make_response

KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"  # a public dev key
TS = 1767225600000


def test_our_own_frames_are_v05() -> None:
    response = make_response(3, "get_config", {"broker_address": "0x" + "11" * 20}, key=KEY)
    request = make_request("ping", {}, request_id=4, timestamp=TS)
    for frame in (response.to_frame(), request.to_frame()):
        seen = identify_frame(frame)
        assert seen.kind == "nitrolite-v0.5" and seen.is_v05


@pytest.mark.parametrize(
    "frame,kind_word",
    [
        (f'[1,1,"node.v1.ping",{{}},{TS}]', "request"),
        (f'[2,1,"node.v1.ping",{{}},{TS}]', "response"),
        (f'[3,0,"user.v1.balance_update",{{"balances":[]}},{TS}]', "event"),
        (f'[4,0,"",{{"error":"invalid message format"}},{TS}]', "error response"),
    ],
)
def test_v1_frames_are_named_with_their_type(frame: str, kind_word: str) -> None:
    seen = identify_frame(frame)
    assert seen.kind == "nitrolite-v1" and not seen.is_v05
    assert f"Nitrolite v1 (Nitronode) {kind_word} frame" in seen.found
    if kind_word == "error response":
        assert "'invalid message format'" in seen.found


@pytest.mark.parametrize(
    "frame,kind",
    [
        ("<html>502 Bad Gateway</html>", "text"),
        ("", "text"),
        (json.dumps({"jsonrpc": "2.0", "id": 1, "result": "0x1"}), "json"),
        (json.dumps([1, 1, "node.v1.ping", {}]), "json"),  # four elements: not v1
        (json.dumps([9, 1, "x", {}, TS]), "json"),  # no such v1 type
        (json.dumps([True, 1, "x", {}, TS]), "json"),  # a bool is not a type code
        (json.dumps({"res": [1, "ping"]}), "json"),  # v0.5 needs four elements
        (b"\xff\xfe\x00", "binary"),
        (b'[2,1,"node.v1.ping",{},1767225600000]', "nitrolite-v1"),  # bytes that are UTF-8
    ],
)
def test_everything_else_is_named_without_raising(frame: str | bytes, kind: str) -> None:
    assert identify_frame(frame).kind == kind


def test_the_sample_is_one_short_line() -> None:
    seen = identify_frame("garbage\n" * 100)
    assert "\n" not in seen.sample and len(seen.sample) <= 120 and seen.sample.endswith("…")
