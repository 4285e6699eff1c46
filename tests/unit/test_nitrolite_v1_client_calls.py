"""The v1 client core (:mod:`settlement_widgets.channel.v1.core.client_calls`) on bad input.

The 24 ``rpc_client_frames`` vectors (test_nitrolite_v1_vectors.py) show the happy paths
byte for byte; here: node error frames, replies that answer another request, malformed
results, calls that must refuse before sending, and signing through a duck-typed wallet
(the shape of :class:`settlement_widgets.signer.Signer`), checked against the vectors' sigs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from settlement_widgets.channel.v1.core.client_calls import (
    ChannelDefaultSigner,
    ChannelSessionKeySigner,
    KeyMessageSigner,
    V1ClientCore,
    check_reply,
    run_without_suspending,
    sdk_error_message,
    sign_app_session_key_ownership,
    sign_channel_session_key_ownership,
)
from settlement_widgets.channel.v1.core.wire import Frame, MessageType, decode_frame
from settlement_widgets.errors import (
    InvalidFrameError,
    InvalidSignatureError,
    InvalidStateError,
    RelayError,
)
from settlement_widgets.keys import PrivateKey

DATA = Path(__file__).resolve().parent / "data" / "nitrolite-v1-vectors.json"
VECTORS: dict[str, Any] = json.loads(DATA.read_text())
META = VECTORS["meta"]
FRAMES = {v["id"]: v for v in VECTORS["vectors"]["rpc_client_frames"]}
USER = PrivateKey(META["keys"]["user"]["private_key"])
SESSION = PrivateKey(META["keys"]["session_key"]["private_key"])

Reply = Callable[[Frame], Frame]


class FakeTransport:
    """Answers each request with ``reply(request)``; remembers what was sent."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.sent: list[Frame] = []

    async def exchange(self, request: Frame) -> Frame:
        self.sent.append(request)
        return self.reply(request)


def answer(payload: Mapping[str, Any]) -> Reply:
    return lambda req: Frame(MessageType.RESPONSE, req.request_id, req.method, payload, 1)


def core(reply: Reply, **kwargs: Any) -> tuple[V1ClientCore, FakeTransport]:
    transport = FakeTransport(reply)
    kwargs.setdefault("state_signer", ChannelDefaultSigner(KeyMessageSigner(USER)))
    return V1ClientCore(transport, **kwargs), transport


def run(coro: Any) -> Any:
    return run_without_suspending(coro)


def test_an_error_frame_is_a_relay_error_with_the_node_text() -> None:
    client, _ = core(
        lambda req: Frame(
            MessageType.ERROR, req.request_id, req.method, {"error": "failed to parse parameters"}
        )
    )
    with pytest.raises(RelayError) as info:
        run(client.ping())
    assert info.value.message == "failed to parse parameters"
    assert info.value.code == "node.v1.ping"
    assert sdk_error_message(info.value) == "rpc returned error: failed to parse parameters"


@pytest.mark.parametrize(
    ("reply", "text"),
    [
        (lambda r: Frame(MessageType.RESPONSE, r.request_id + 1, r.method, {}), "request id"),
        (lambda r: Frame(MessageType.RESPONSE, r.request_id, "node.v1.other", {}), "names method"),
        (lambda r: Frame(MessageType.EVENT, r.request_id, r.method, {}), "type 3"),
        (lambda r: Frame(MessageType.REQUEST, r.request_id, r.method, {}), "type 1"),
    ],
)
def test_a_reply_that_does_not_answer_the_request_is_refused(reply: Reply, text: str) -> None:
    client, _ = core(reply)
    with pytest.raises(InvalidFrameError, match=text):
        run(client.ping())


def test_an_error_frame_for_another_id_is_not_taken_as_this_calls_error() -> None:
    request = Frame(MessageType.REQUEST, 7, "node.v1.ping", {}, 1)
    invalid = decode_frame('[4,0,"",{"error":"invalid message format"},1]')
    with pytest.raises(InvalidFrameError, match="request id 0"):
        check_reply(request, invalid)


def test_a_v05_frame_never_decodes() -> None:
    with pytest.raises(InvalidFrameError):
        decode_frame('{"res":[1,"assets",{"assets":[]},1],"sig":["0x00"]}')


@pytest.mark.parametrize(
    ("payload", "call"),
    [
        ({"state": {"id": "0x01"}}, lambda c: c.get_latest_state(USER.address, "yusd")),
        ({"state": "nope"}, lambda c: c.get_latest_state(USER.address, "yusd")),
        ({"assets": {"yusd": 1}}, lambda c: c.get_assets()),
        ({"assets": [{"symbol": "yusd"}]}, lambda c: c.get_assets()),
        ({"balances": None}, lambda c: c.get_balances(USER.address)),
        ({"channel": []}, lambda c: c.get_home_channel(USER.address, "yusd")),
        ({"blockchains": "x"}, lambda c: c.get_config()),
        ({"status": "open"}, lambda c: c.create_app_session(
            {"applicationId": "a", "participants": [], "quorum": 1, "nonce": 1}, "", [])),
    ],
)  # fmt: skip
def test_malformed_results_are_invalid_frames(payload: dict[str, Any], call: Any) -> None:
    client, _ = core(answer(payload))
    with pytest.raises(InvalidFrameError):
        run(call(client))


def _replay(vector_id: str, *, tamper: Callable[[int, str], str] | None = None) -> Reply:
    """The vector's scripted replies, re-addressed to whatever id we drew."""
    script = [e["scripted_response_frame"] for e in FRAMES[vector_id]["inputs"]["exchanges"]]
    count = iter(range(len(script)))

    def reply(req: Frame) -> Frame:
        k = next(count)
        text = tamper(k, script[k]) if tamper else script[k]
        frame = decode_frame(text)
        return Frame(frame.type, req.request_id, frame.method, frame.payload, frame.timestamp_ms)

    return reply


def test_a_reply_without_a_node_signature_fails_the_transfer() -> None:
    cache = FRAMES["rpc_client_frames-010"]["inputs"]["client"]["asset_store_cache"]
    drop_sig = lambda k, t: t if k == 0 else t.replace('"signature"', '"sig"')  # noqa: E731
    client, sent = core(_replay("rpc_client_frames-010", tamper=drop_sig), asset_cache=cache)
    with pytest.raises(InvalidFrameError, match="signature"):
        run(client.transfer(META["keys"]["peer"]["address"], "yusd", "25.5"))
    assert [f.method for f in sent.sent] == [
        "channels.v1.get_latest_state",
        "channels.v1.submit_state",
    ]


def test_too_many_decimals_are_refused_before_anything_is_signed() -> None:
    cache = FRAMES["rpc_client_frames-010"]["inputs"]["client"]["asset_store_cache"]
    client, sent = core(_replay("rpc_client_frames-010"), asset_cache=cache)
    # the SDK's StateAdvancerV1 text, checked before the state is signed
    with pytest.raises(InvalidStateError, match="max 6 decimals allowed, got 7"):
        run(client.transfer(META["keys"]["peer"]["address"], "yusd", "0.0000001"))
    assert [f.method for f in sent.sent] == ["channels.v1.get_latest_state"]


def test_reads_work_without_a_signer_but_signed_calls_refuse() -> None:
    client, sent = core(answer({}), state_signer=None)
    assert run(client.get_latest_state(USER.address, "yusd")) is None
    with pytest.raises(InvalidSignatureError, match="no state signer"):
        run(client.close_home_channel("yusd"))
    assert len(sent.sent) == 1


def test_close_without_a_channel_and_double_acknowledge_are_refused() -> None:
    client, _ = core(answer({}))
    with pytest.raises(InvalidStateError, match="no channel exists"):
        run(client.close_home_channel("yusd"))
    signed_state = json.loads(
        FRAMES["rpc_client_frames-010"]["inputs"]["exchanges"][0]["scripted_response_frame"]
    )[3]
    client, sent = core(answer(signed_state))
    with pytest.raises(InvalidStateError, match="already acknowledged"):
        run(client.acknowledge("yusd"))
    assert len(sent.sent) == 1


class DuckWallet:
    """Looks like :class:`settlement_widgets.signer.Signer` to the client: address and an
    async EIP-191 ``sign_message`` answering 0x-hex (a browser wallet does the same)."""

    def __init__(self, key: PrivateKey) -> None:
        self._inner = KeyMessageSigner(key)
        self.asked = 0

    @property
    def address(self) -> str:
        return self._inner.address

    async def sign_message(self, message: bytes) -> str:
        self.asked += 1
        return await self._inner.sign_message(message)


def test_a_signer_shaped_wallet_reproduces_the_session_key_registrations() -> None:
    wallet = DuckWallet(USER)
    client, _ = core(answer({}), state_signer=ChannelDefaultSigner(wallet))
    channel_state = dict(FRAMES["rpc_client_frames-018"]["inputs"]["call"]["args"]["state"])
    app_state = dict(FRAMES["rpc_client_frames-020"]["inputs"]["call"]["args"]["state"])
    assert run(client.sign_channel_session_key_state(channel_state)) == channel_state["user_sig"]
    assert run(client.sign_app_session_key_state(app_state)) == app_state["user_sig"]
    session = KeyMessageSigner(SESSION)
    assert (
        run(sign_channel_session_key_ownership(channel_state, session))
        == (channel_state["session_key_sig"])
    )
    assert run(sign_app_session_key_ownership(app_state, session)) == app_state["session_key_sig"]
    assert wallet.asked == 2


def test_a_session_key_signer_cannot_sign_registrations() -> None:
    spec = FRAMES["rpc_client_frames-019"]["inputs"]["client"]["state_signer"]
    signer = ChannelSessionKeySigner(
        KeyMessageSigner(SESSION), spec["wallet"], spec["metadata_hash"], spec["auth_signature"]
    )
    client, _ = core(answer({}), state_signer=signer)
    state = FRAMES["rpc_client_frames-018"]["inputs"]["call"]["args"]["state"]
    with pytest.raises(InvalidSignatureError, match="default wallet signer"):
        run(client.sign_channel_session_key_state(state))


def test_a_wallet_answering_garbage_is_refused() -> None:
    class Broken(DuckWallet):
        async def sign_message(self, message: bytes) -> str:
            return "0x1234"

    cache = FRAMES["rpc_client_frames-010"]["inputs"]["client"]["asset_store_cache"]
    client, _ = core(
        _replay("rpc_client_frames-010"),
        state_signer=ChannelDefaultSigner(Broken(USER)),
        asset_cache=cache,
    )
    with pytest.raises(InvalidSignatureError, match="2-byte"):
        run(client.transfer(META["keys"]["peer"]["address"], "yusd", "25.5"))


def test_typed_get_transactions_sends_numbers_the_raw_call_sends_what_it_is_given() -> None:
    client, sent = core(answer({"transactions": [], "metadata": {}}))
    run(client.get_transactions(USER.address, asset="yusd", from_time=1767225600))
    run(client.user_v1_get_transactions({"wallet": USER.address, "from_time": "1767225600"}))
    assert '"from_time":1767225600' in sent.sent[0].encode()
    assert '"from_time":"1767225600"' in sent.sent[1].encode()
