"""The relay's transport shortcuts (issue 12) keep the protocol's guarantees.

Messages are handled straight from ``data_received`` instead of a handler task's ``recv()``:
a request that arrives in the same packet as the HTTP upgrade must still be answered after
the ``assets`` greeting, fragmented messages must be reassembled, and control frames must
still work. WAL checkpoints run in a background thread instead of inside a COMMIT.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio
from relay_helpers import relay_config
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Response as HttpResponse
from websockets.uri import parse_uri

from settlement_widgets.channel.v0_5.core import messages as M
from settlement_widgets.channel.v0_5.core import rpc
from settlement_widgets.channel.v0_5.node import RelayNode
from settlement_widgets.keys import PrivateKey

ALICE = PrivateKey("0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80")
TIMEOUT = 20.0


@pytest_asyncio.fixture
async def node(tmp_path: Path) -> AsyncIterator[RelayNode]:
    relay = RelayNode(relay_config(tmp_path / "relay.sqlite", faucet_account=ALICE.address))
    await relay.start()
    try:
        yield relay
    finally:
        await relay.aclose()


class RawClient:
    """websockets' sans-I/O client over asyncio streams: full control of what goes out in
    which write."""

    def __init__(self, node: RelayNode) -> None:
        self.node = node
        self.proto = ClientProtocol(parse_uri(node.url))
        self.reader: asyncio.StreamReader
        self.writer: asyncio.StreamWriter
        self.frames: list[rpc.Response] = []
        self.events: list[object] = []

    async def open(self, first_bytes: bytes = b"") -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.node.port)
        self.proto.send_request(self.proto.connect())
        self.writer.write(b"".join(self.proto.data_to_send()) + first_bytes)

    def send(self, data: bytes) -> None:
        self.writer.write(data)

    def flush(self) -> None:
        self.writer.write(b"".join(self.proto.data_to_send()))

    async def until(self, count: int) -> list[rpc.Response]:
        """Read until ``count`` text messages arrived; each is verified as the broker's."""

        async def read() -> None:
            while len(self.frames) < count:
                data = await self.reader.read(65536)
                assert data, "the relay closed the connection"
                self.proto.receive_data(data)
                for event in self.proto.events_received():
                    self.events.append(event)
                    if isinstance(event, Frame) and event.opcode is Opcode.TEXT:
                        frame = rpc.parse_response(event.data)
                        frame.verify(self.node.broker_address)
                        self.frames.append(frame)

        await asyncio.wait_for(read(), TIMEOUT)
        return self.frames

    async def close(self) -> None:
        self.writer.close()


async def test_a_request_in_the_upgrade_packet_is_answered_after_the_greeting(
    node: RelayNode,
) -> None:
    ping = M.ping_message(request_id=77).to_frame().encode()
    early = Frame(Opcode.TEXT, ping).serialize(mask=True, extensions=[])
    c = RawClient(node)
    await c.open(first_bytes=early)  # the handshake and a request in one write
    try:
        frames = await c.until(2)
        assert isinstance(c.events[0], HttpResponse) and c.events[0].status_code == 101
        assert [(f.request_id, f.method) for f in frames] == [(0, "assets"), (77, "pong")]
    finally:
        await c.close()


async def test_fragmented_messages_are_reassembled(node: RelayNode) -> None:
    c = RawClient(node)
    await c.open()
    try:
        await c.until(1)  # assets
        text = M.get_config_message(request_id=5).to_frame().encode()
        c.proto.send_text(text[:10], fin=False)
        c.proto.send_continuation(text[10:20], fin=False)
        c.proto.send_continuation(text[20:], fin=True)
        c.proto.send_text(M.ping_message(request_id=6).to_frame().encode())
        c.flush()
        frames = await c.until(3)
        assert [(f.request_id, f.method) for f in frames[1:]] == [(5, "get_config"), (6, "pong")]
        assert frames[1].result["broker_address"] == node.broker_address
        # a ping control frame still gets its pong from websockets
        c.proto.send_ping(b"are you there")
        c.flush()

        async def pong() -> None:
            while not any(isinstance(e, Frame) and e.opcode is Opcode.PONG for e in c.events):
                data = await c.reader.read(65536)
                assert data
                c.proto.receive_data(data)
                c.events.extend(c.proto.events_received())

        await asyncio.wait_for(pong(), TIMEOUT)
    finally:
        await c.close()


async def test_invalid_json_still_gets_the_nodes_error(node: RelayNode) -> None:
    c = RawClient(node)
    await c.open()
    try:
        await c.until(1)
        c.proto.send_text(b'{"req": [1, "ping", {}, ')
        c.flush()
        frames = await c.until(2)
        assert frames[1].method == "error"
        assert json.dumps(frames[1].result) == '{"error": "invalid message format"}'
    finally:
        await c.close()


async def test_wal_checkpoints_run_in_the_background(node: RelayNode) -> None:
    committer = node.committer
    assert committer is not None and committer.checkpointer is not None
    checkpointer = committer.checkpointer
    checkpointer.checkpointed.clear()
    await node.transfer_from(ALICE.address, PrivateKey.generate().address, "ytest.usd", 5)
    checkpointer.poke()
    done = await asyncio.to_thread(checkpointer.checkpointed.wait, TIMEOUT)
    assert done and checkpointer.checkpoints >= 1
