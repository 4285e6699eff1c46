"""The SDK ``Client``'s reads in our client core, frame by frame.

Every read of the Nitrolite v1.4.1 TS ``Client`` (``sdk/ts/src/client.ts``) that was
missing (``getBlockchains``, ``getEscrowChannel``, ``getAppDefinition``,
``getAppSessions``, ``getLastChannelKeyStates``, ``getLastKeyStates``) or sent another
payload than the SDK (``getChannels``, ``getTransactions``) has vectors in
``data/nitrolite-v1-client-queries.json``, in the published ``rpc_client_frames`` shape, with
request frames written by hand from the SDK source. The compute command must reproduce
them; the tests below also pin each method's request frame literally.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

import pytest

from settlement_widgets.channel.v1.core import vectors as vector_cli
from settlement_widgets.channel.v1.core.client_calls import (
    ChannelDefaultSigner,
    KeyMessageSigner,
    V1ClientCore,
    run_without_suspending,
)
from settlement_widgets.channel.v1.core.wire import Frame, MessageType
from settlement_widgets.errors import InvalidFrameError, InvalidStateError
from settlement_widgets.keys import PrivateKey

DATA = Path(__file__).resolve().parent / "data"
QUERIES: dict[str, Any] = json.loads((DATA / "nitrolite-v1-client-queries.json").read_text())
CASES = QUERIES["vectors"]["rpc_client_frames"]
PUBLISHED: dict[str, Any] = json.loads((DATA / "nitrolite-v1-vectors.json").read_text())
USER = PrivateKey(PUBLISHED["meta"]["keys"]["user"]["private_key"])
ASSETS = PUBLISHED["vectors"]["rpc_client_frames"][8]["inputs"]["client"]["asset_store_cache"]
WALLET = USER.address


@pytest.mark.parametrize("vector", CASES, ids=[v["id"] for v in CASES])
def test_the_compute_command_reproduces_each_read(vector: dict[str, Any]) -> None:
    document = {"meta": QUERIES["meta"], "vectors": {"rpc_client_frames": [vector]}}
    computed, report = vector_cli.compute_document(document)
    assert report.failed == [] and report.computed == 1
    outputs = computed["vectors"]["rpc_client_frames"][0]["outputs"]
    expected = vector["outputs"]
    assert [f["request_frame"] for f in outputs["frames"]] == [
        f["request_frame"] for f in expected["frames"]
    ]
    assert outputs == expected


def test_the_compute_command_line_fills_the_outputs(tmp_path: Path) -> None:
    stripped = {
        "meta": QUERIES["meta"],
        "vectors": {
            "rpc_client_frames": [
                {k: v for k, v in case.items() if k != "outputs"} for case in CASES
            ]
        },
    }
    source, target = tmp_path / "in.json", tmp_path / "out.json"
    source.write_text(json.dumps(stripped))
    assert vector_cli.main(["compute", str(source), str(target)]) == 0
    written = json.loads(target.read_text())["vectors"]["rpc_client_frames"]
    assert [w["outputs"] for w in written] == [case["outputs"] for case in CASES]


class Recorder:
    """A transport that answers ``payload`` and keeps the request texts."""

    def __init__(self, payload: Mapping[str, Any]) -> None:
        self.payload = payload
        self.sent: list[str] = []

    async def exchange(self, request: Frame) -> Frame:
        self.sent.append(request.encode())
        return Frame(MessageType.RESPONSE, request.request_id, request.method, self.payload, 5)


def _client(payload: Mapping[str, Any], **kwargs: Any) -> tuple[V1ClientCore, Recorder]:
    transport = Recorder(payload)
    ids = iter(range(7, 100))
    client = V1ClientCore(transport, request_ids=lambda: next(ids), clock_ms=lambda: 5, **kwargs)
    return client, transport


def _frames(
    call: Callable[[V1ClientCore], Any], payload: Mapping[str, Any] | None = None
) -> list[str]:
    client, transport = _client(payload or {})
    run_without_suspending(call(client))
    return transport.sent


def test_get_blockchains_sends_get_config() -> None:
    assert _frames(
        lambda c: c.get_blockchains(),
        {
            "blockchains": [],
            "node_address": "0x01",
            "node_version": "v",
            "supported_sig_validators": [],
        },
    ) == ['[1,7,"node.v1.get_config",{},5]']


def test_get_escrow_channel_frame_and_absent_channel() -> None:
    client, transport = _client({})
    assert run_without_suspending(client.get_escrow_channel("0xab")) is None
    assert transport.sent == [
        '[1,7,"channels.v1.get_escrow_channel",{"escrow_channel_id":"0xab"},5]'
    ]
    bad, _ = _client({"channel": ["not", "an", "object"]})
    with pytest.raises(InvalidFrameError, match="not an object"):
        run_without_suspending(bad.get_escrow_channel("0xab"))


def test_get_app_definition_frame() -> None:
    payload = {"definition": {"application_id": "a", "participants": [], "quorum": 1, "nonce": 3}}
    client, transport = _client(payload)
    assert run_without_suspending(client.get_app_definition("0xcd"))["nonce"] == "3"
    assert transport.sent == [
        '[1,7,"app_sessions.v1.get_app_definition",{"app_session_id":"0xcd"},5]'
    ]


@pytest.mark.parametrize(
    ("kwargs", "payload"),
    [
        ({}, "{}"),
        ({"wallet": WALLET, "page": 3, "page_size": 4},
         f'{{"participant":"{WALLET}","pagination":{{"offset":8,"limit":4}}}}'),
        ({"app_session_id": "0x1", "status": "closed", "page": 0, "page_size": 4},
         '{"app_session_id":"0x1","status":"closed"}'),
    ],
)  # fmt: skip
def test_get_app_sessions_frames(kwargs: dict[str, Any], payload: str) -> None:
    sent = _frames(lambda c: c.get_app_sessions(**kwargs), {"app_sessions": [], "metadata": {}})
    assert sent == [f'[1,7,"app_sessions.v1.get_app_sessions",{payload},5]']


def test_get_app_sessions_without_a_list_is_refused() -> None:
    client, _ = _client({"app_sessions": None})
    with pytest.raises(InvalidFrameError, match="'app_sessions' must be an array"):
        run_without_suspending(client.get_app_sessions(wallet=WALLET))


def test_key_state_reads_frames() -> None:
    states: dict[str, Any] = {"states": []}
    assert _frames(lambda c: c.get_last_channel_key_states(WALLET), states) == [
        f'[1,7,"channels.v1.get_last_key_states",{{"user_address":"{WALLET}"}},5]'
    ]
    assert _frames(lambda c: c.get_last_key_states(WALLET, "0x3"), states) == [
        f'[1,7,"app_sessions.v1.get_last_key_states",'
        f'{{"user_address":"{WALLET}","session_key":"0x3"}},5]'
    ]


def test_get_channels_sends_only_offset_and_limit() -> None:
    sent = _frames(
        lambda c: c.get_channels(WALLET, asset="yusd", pagination={"limit": 2, "sort": "asc"}),
        {"channels": []},
    )
    assert sent == [
        f'[1,7,"channels.v1.get_channels",'
        f'{{"wallet":"{WALLET}","asset":"yusd","pagination":{{"limit":2}}}},5]'
    ]


def test_get_transactions_key_order_and_time_encoding() -> None:
    def call(times_as: Literal["number", "string"]) -> Callable[[V1ClientCore], Any]:
        return lambda c: c.get_transactions(
            WALLET, to_time=9, from_time=1, tx_type=2, page=2, page_size=5, times_as=times_as
        )

    head = f'[1,7,"user.v1.get_transactions",{{"wallet":"{WALLET}","tx_type":2,'
    tail = ',"pagination":{"offset":5,"limit":5}},5]'
    # the Go node reads uint64 numbers (default); the SDK sends its bigints as strings
    assert _frames(call("number")) == [head + '"from_time":1,"to_time":9' + tail]
    assert _frames(call("string")) == [head + '"from_time":"1","to_time":"9"' + tail]


def test_set_home_blockchain_follows_the_sdk_rules() -> None:
    client, transport = _client({"assets": ASSETS})
    run_without_suspending(client.set_home_blockchain("yusd", 84532))
    assert client.home_blockchains == {"yusd": 84532}
    assert transport.sent == ['[1,7,"node.v1.get_assets",{},5]']  # empty cache: one fetch
    with pytest.raises(InvalidStateError, match="already set for asset yusd to 84532"):
        run_without_suspending(client.set_home_blockchain("yusd", 11155111))
    with pytest.raises(InvalidStateError, match="asset eth not supported on blockchain 80002"):
        run_without_suspending(client.set_home_blockchain("eth", 80002))
    assert len(transport.sent) == 1  # eth was cached by then: no second fetch
    cached, transport = _client({"assets": ASSETS}, asset_cache=ASSETS)
    with pytest.raises(InvalidStateError, match="asset btc not supported on blockchain 1"):
        run_without_suspending(cached.set_home_blockchain("btc", 1))
    assert transport.sent == ['[1,7,"node.v1.get_assets",{},5]']  # a miss: one fetch


def test_get_user_address_and_validate_and_sign_state() -> None:
    signer = ChannelDefaultSigner(KeyMessageSigner(USER))
    client, transport = _client({}, state_signer=signer, asset_cache=ASSETS)
    assert client.get_user_address() == USER.address
    lifecycle = PUBLISHED["vectors"]["state_lifecycle"]
    advanced = next(
        v for v in lifecycle if v["inputs"]["state_advancer"]["validate_advancement"] is True
    )
    previous = advanced["inputs"]["previous_state"]
    proposed = advanced["outputs"]["state"]
    signature = run_without_suspending(client.validate_and_sign_state(previous, proposed))
    assert signature == proposed["user_sig"]
    assert transport.sent == []  # everything it needed was cached
    with pytest.raises(InvalidStateError):
        run_without_suspending(client.validate_and_sign_state(proposed, proposed))
