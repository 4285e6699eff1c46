"""``V1RpcClient`` against a loopback WebSocket server written here.

The server replays the published ``rpc_client_frames`` sessions: for each request it
receives it checks the text **byte for byte** against the vector's recorded request frame
and answers with the recorded response. The client gets the recorded request ids,
timestamps and channel nonces, so all 24 sessions (reads, deposit → request_creation,
transfer/withdraw/close → submit_state, acknowledge, app sessions, session keys, node
errors), and the 14 read sessions built from the SDK source
(``data/nitrolite-v1-client-queries.json``), run through the real socket path. Then the
connection cases: timeouts, a dropped connection, a v0.5 node, unsolicited frames.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve

from settlement_widgets.channel.v1 import V1RpcClient
from settlement_widgets.channel.v1.core.client_calls import (
    KeyMessageSigner,
    sdk_error_message,
    vector_state_signer,
)
from settlement_widgets.channel.v1.core.client_vectors import call_by_sdk_name
from settlement_widgets.errors import (
    InvalidFrameError,
    RelayError,
    RelayProtocolError,
    RelayUnavailableError,
    SettlementTimeoutError,
)
from settlement_widgets.keys import PrivateKey

DATA = Path(__file__).resolve().parent / "data" / "nitrolite-v1-vectors.json"
VECTORS: dict[str, Any] = json.loads(DATA.read_text())
META = VECTORS["meta"]
# the published sessions, and the client reads constructed from the SDK source
QUERIES = Path(__file__).resolve().parent / "data" / "nitrolite-v1-client-queries.json"
SESSIONS = [
    *VECTORS["vectors"]["rpc_client_frames"],
    *json.loads(QUERIES.read_text())["vectors"]["rpc_client_frames"],
]

Handler = Callable[[ServerConnection], Awaitable[None]]


@asynccontextmanager
async def loopback(handler: Handler) -> AsyncIterator[str]:
    async with serve(handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        yield f"ws://127.0.0.1:{port}/v1/ws"


def _take(values: list[int]) -> Callable[[], int]:
    queue = list(values)
    return lambda: queue.pop(0)


@pytest.mark.parametrize("vector", SESSIONS, ids=[v["id"] for v in SESSIONS])
async def test_every_recorded_session_replays_byte_for_byte(vector: dict[str, Any]) -> None:
    inputs, outputs = vector["inputs"], vector["outputs"]
    expected = [(f["request_frame"], f["response_frame"]) for f in outputs["frames"]]
    received: list[str] = []

    async def node(ws: ServerConnection) -> None:
        async for message in ws:
            assert isinstance(message, str)
            k = len(received)
            received.append(message)
            await ws.send(expected[k][1] if message == expected[k][0] else '[4,0,"",{}]')

    exchanges = inputs["exchanges"]
    spec = inputs["client"].get("state_signer")
    async with loopback(node) as url:
        client = V1RpcClient(
            url,
            state_signer=None if spec is None else vector_state_signer(spec, META),
            asset_cache=inputs["client"].get("asset_store_cache") or (),
            request_ids=_take([e["request_id"] for e in exchanges]),
            clock_ms=_take([e["timestamp_ms"] for e in exchanges]),
            nonces=_take([int(n) for n in inputs["generated_channel_nonces"]]),
            request_timeout=5,
        )
        async with client:
            result: Any = None
            error: str | None = None
            try:
                result = await call_by_sdk_name(
                    client, inputs["call"]["api"], inputs["call"]["args"]
                )
            except (RelayError, InvalidFrameError) as exc:
                error = sdk_error_message(exc)
    assert received == [request for request, _ in expected]
    assert (result, error) == (outputs["result"], outputs["error"])


async def test_a_node_error_is_a_relay_error_and_the_connection_stays_up() -> None:
    async def node(ws: ServerConnection) -> None:
        async for message in ws:
            _, rid, method, _, ts = json.loads(message)
            if method == "node.v1.ping":
                await ws.send(json.dumps([2, rid, method, {}, ts]))
            else:
                await ws.send(
                    json.dumps([4, rid, method, {"error": f"unknown method: {method}"}, ts])
                )

    async with loopback(node) as url, V1RpcClient(url) as client:
        with pytest.raises(RelayError, match=r"unknown method: channels\.v1\.get_channels"):
            await client.get_channels("0x1a642f0E3c3aF545E7AcBD38b07251B3990914F1")
        await client.ping()
        assert client.connected


async def test_no_answer_is_a_timeout() -> None:
    async def node(ws: ServerConnection) -> None:
        async for _ in ws:
            pass

    async with loopback(node) as url, V1RpcClient(url, request_timeout=0.2) as client:
        with pytest.raises(SettlementTimeoutError, match=r"node\.v1\.ping"):
            await client.ping()


async def test_a_dropped_connection_fails_the_pending_request_then_reconnects() -> None:
    calls = 0

    async def node(ws: ServerConnection) -> None:
        nonlocal calls
        async for message in ws:
            calls += 1
            if calls == 1:
                await ws.close()
                return
            _, rid, method, _, ts = json.loads(message)
            await ws.send(json.dumps([2, rid, method, {}, ts]))

    async with loopback(node) as url, V1RpcClient(url, request_timeout=5) as client:
        with pytest.raises(RelayUnavailableError, match="lost"):
            await client.ping()
        await client.ping()  # a new connection on the next request
        assert client.reconnects == 1


async def test_an_unreachable_node_is_relay_unavailable() -> None:
    client = V1RpcClient("ws://127.0.0.1:9/v1/ws", connect_timeout=1)
    with pytest.raises(RelayUnavailableError):
        await client.ping()


async def test_a_v05_node_is_named_not_waited_for() -> None:
    async def clearnode(ws: ServerConnection) -> None:
        await ws.send('{"res":[0,"assets",{"assets":[]},1767225600000],"sig":["0x00"]}')
        async for _ in ws:
            pass

    async with loopback(clearnode) as url:
        client = V1RpcClient(url, request_timeout=5)
        with pytest.raises(RelayProtocolError, match=r"v0\.5") as info:
            await client.ping()
        assert info.value.found == "nitrolite-v0.5"
        with pytest.raises(RelayProtocolError):  # and it does not try again
            await client.ping()
        await client.close()


async def test_a_v05_answer_to_our_first_request_is_a_protocol_error() -> None:
    async def clearnode(ws: ServerConnection) -> None:
        async for _ in ws:
            await ws.send(
                '{"res":[1767225600000,"error",{"error":"invalid message format"},1],"sig":[]}'
            )

    async with loopback(clearnode) as url:
        client = V1RpcClient(url, request_timeout=5)
        with pytest.raises(RelayProtocolError):
            await client.ping()
        await client.close()


async def test_unmatched_frames_are_events() -> None:
    seen: list[Any] = []

    async def node(ws: ServerConnection) -> None:
        async for message in ws:
            _, rid, method, _, ts = json.loads(message)
            await ws.send(json.dumps([3, 0, "channels.v1.home_channel_created", {"x": 1}, ts]))
            await ws.send(json.dumps([2, rid + 1, method, {}, ts]))  # nobody asked for this id
            await ws.send("not json")
            await ws.send(json.dumps([2, rid, method, {}, ts]))

    async with loopback(node) as url, V1RpcClient(url, request_timeout=5) as client:
        client.on_event(seen.append)
        await client.ping()
        first = await asyncio.wait_for(client.events.get(), 1)
        second = await asyncio.wait_for(client.events.get(), 1)
    assert (first.method, first.request_id) == ("channels.v1.home_channel_created", 0)
    assert second.method == "node.v1.ping"
    assert len(seen) == 2
    assert client.rejected_frames == 1


async def test_for_signer_signs_with_a_signer_shaped_wallet() -> None:
    """What a browser wallet would be asked: raw bytes in, 0x-hex EIP-191 signature out."""
    wallet = KeyMessageSigner(PrivateKey(META["keys"]["user"]["private_key"]))
    client = V1RpcClient.for_signer("ws://127.0.0.1:9/v1/ws", wallet)
    assert client.state_signer is not None
    assert client.state_signer.address == wallet.address
    signature = await client.state_signer.sign_state(b"\x00" * 32)
    assert signature.startswith("0x00") and len(signature) == 2 + 2 * 66
