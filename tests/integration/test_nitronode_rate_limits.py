"""The Nitronode's per-connection limits, and the v1 client that paces itself and recovers.

The limits are the Go node's (Nitrolite v1.4.1 ``nitronode/runtime.go``,
``nitronode/api/rate_limits.go``, ``pkg/rpc/connection.go``): 10 requests/s with a burst of
20 (the 21st request of a burst is answered ``rate limit exceeded``, the connection stays),
256 KiB/s of inbound bytes with a 1 MiB burst (over it the connection is dropped) and
128 KiB frames (above: close 1009). Time is a hand-driven clock shared by the node's and
the client's buckets; the client's waits advance it, so nothing here sleeps.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import websockets
from nitronode_helpers import node_config

from settlement_widgets.channel.v1.client.rpc_client import RateLimitedError, V1RpcClient
from settlement_widgets.channel.v1.core.client_calls import sdk_error_message
from settlement_widgets.channel.v1.core.rate_limit import RATE_LIMIT_EXCEEDED
from settlement_widgets.channel.v1.node import NitronodeNode


class Clock:
    """Monotonic seconds that move only when told (the node's and the client's clock)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []
        self.client: V1RpcClient | None = None

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        """The client's wait, with no real sleep: first every request already sent is
        answered (on a real clock the node reads them while the client waits), then the
        time passes at once."""
        if self.client is not None:
            answers = [future for _method, future in self.client._pending.values()]
            await asyncio.gather(*answers, return_exceptions=True)
        self.slept.append(seconds)
        self.now += seconds

    def client_for(self, url: str, **kwargs: Any) -> V1RpcClient:
        self.client = V1RpcClient(url, monotonic=self, sleep=self.sleep, **kwargs)
        return self.client


@pytest.fixture
def clock() -> Clock:
    return Clock()


async def _node(tmp_path: Path, clock: Clock, **limits: float) -> NitronodeNode:
    defaults = {"rate_limit_burst": 20.0}  # the helper's rule-test default is unlimited
    config = node_config(tmp_path / "node.sqlite", clock=clock, **{**defaults, **limits})
    return await NitronodeNode(config).start()


@pytest.fixture
async def node(tmp_path: Path, clock: Clock) -> AsyncIterator[NitronodeNode]:
    started = await _node(tmp_path, clock)
    try:
        yield started
    finally:
        await started.aclose()


def _ping(request_id: int) -> str:
    return json.dumps([1, request_id, "node.v1.ping", {}, 1])


async def test_the_21st_request_of_a_burst_is_refused_with_the_real_text(
    node: NitronodeNode, clock: Clock
) -> None:
    assert node.config.rate_limit_per_sec == 10 and node.config.rate_limit_burst == 20
    async with websockets.connect(node.url) as ws:
        for request_id in range(1, 21):
            await ws.send(_ping(request_id))
            assert json.loads(await ws.recv())[:4] == [2, request_id, "node.v1.ping", {}]
        await ws.send(_ping(21))
        refused = json.loads(await ws.recv())
        assert refused[:4] == [4, 21, "node.v1.ping", {"error": RATE_LIMIT_EXCEEDED}]
        assert refused[3] == {"error": "rate limit exceeded"}
        # answered before the limiter, as the Go router does: no token needed, none taken
        await ws.send(json.dumps([1, 22, "node.v1.nope", {}, 1]))
        assert json.loads(await ws.recv())[3] == {"error": "unknown method: node.v1.nope"}
        await ws.send("not json")
        assert json.loads(await ws.recv())[3] == {"error": "invalid message format"}
        # the connection stays up; a tenth of a second later there is one token again
        clock.now += 0.1
        await ws.send(_ping(23))
        assert json.loads(await ws.recv())[:2] == [2, 23]
        await ws.send(_ping(24))
        assert json.loads(await ws.recv())[3] == {"error": RATE_LIMIT_EXCEEDED}
        # another connection has its own bucket
        async with websockets.connect(node.url) as other:
            await other.send(_ping(1))
            assert json.loads(await other.recv())[0] == 2
        # a quiet connection refills up to the burst, not beyond it
        clock.now += 60
        for request_id in range(100, 120):
            await ws.send(_ping(request_id))
            assert json.loads(await ws.recv())[0] == 2
        await ws.send(_ping(120))
        assert json.loads(await ws.recv())[3] == {"error": RATE_LIMIT_EXCEEDED}


async def test_a_frame_over_128_kib_closes_with_1009(node: NitronodeNode) -> None:
    assert node.config.ws_max_message_size == 131072
    async with websockets.connect(node.url, max_size=None) as ws:
        await ws.send("[" + " " * (131072 - 2) + "]")  # exactly the cap: read and answered
        assert json.loads(await ws.recv())[3] == {"error": "invalid message format"}
        await ws.send("[" + " " * (131072 - 1) + "]")  # one byte more
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await ws.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009


async def test_the_byte_budget_drops_a_connection_that_floods(tmp_path: Path, clock: Clock) -> None:
    node = await _node(tmp_path, clock, ws_bytes_per_sec=1024.0, ws_bytes_burst=131072.0)
    try:
        async with websockets.connect(node.url, max_size=None) as ws:
            frame = "[" + " " * (65536 - 2) + "]"  # 64 KiB: two fit in the burst
            for _ in range(2):
                await ws.send(frame)
                assert json.loads(await ws.recv())[3] == {"error": "invalid message format"}
            await ws.send(frame)
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await ws.recv()
            # dropped without a close frame, as the Go node closes the socket
            assert closed.value.rcvd is None
        async with websockets.connect(node.url) as ws:  # a new connection, a new budget
            await ws.send(_ping(1))
            assert json.loads(await ws.recv())[0] == 2
    finally:
        await node.aclose()


async def test_a_paced_client_sends_a_100_request_burst_without_one_refusal(
    node: NitronodeNode, clock: Clock
) -> None:
    start = clock.now
    async with clock.client_for(node.url) as client:
        await asyncio.gather(*(client.ping() for _ in range(100)))
        assert client.rate_limited == 0
    # 19 at once (one token of the node's 20 kept back for arrival jitter), then one every
    # 100 ms: 8.1 s of (simulated) waiting, no more
    assert clock.now - start == pytest.approx(8.1)


async def test_the_client_backs_off_and_recovers_from_the_nodes_refusals(
    tmp_path: Path, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    # a node stricter than the client's pacing: 2 requests/s, burst 3
    node = await _node(tmp_path, clock, rate_limit_per_sec=2.0, rate_limit_burst=3.0)
    try:
        caplog.set_level(logging.WARNING, logger="settlement_widgets.channel.v1.client.rpc_client")
        async with clock.client_for(node.url) as client:
            for _ in range(10):
                await client.ping()
            config = await client.get_config()
            assert config["nodeAddress"].lower() == node.node_address.lower()
            assert client.rate_limited > 0
        retries = [r.getMessage() for r in caplog.records if "retrying in" in r.getMessage()]
        assert len(retries) == client.rate_limited
        assert all("refused node.v1." in m and RATE_LIMIT_EXCEEDED in m for m in retries)
    finally:
        await node.aclose()


async def test_exhausted_retries_raise_rate_limited_error(tmp_path: Path, clock: Clock) -> None:
    # one request ever: no refill
    node = await _node(tmp_path, clock, rate_limit_per_sec=0.0, rate_limit_burst=1.0)
    try:
        async with clock.client_for(node.url, rate_limit_retries=2) as client:
            await client.ping()
            with pytest.raises(RateLimitedError) as info:
                await client.ping()
        error = info.value
        assert error.message == RATE_LIMIT_EXCEEDED and error.code == "node.v1.ping"
        assert error.attempts == 3 and "3 times" in str(error)
        assert sdk_error_message(error) == "rpc returned error: rate limit exceeded"
        assert clock.slept[-2:] == pytest.approx([0.1, 0.2])  # the back-off doubles
    finally:
        await node.aclose()
