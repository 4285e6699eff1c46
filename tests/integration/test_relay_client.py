"""``RelayClient`` against a real relay node (chain-less, loopback) and against small loopback
servers that misbehave on purpose: forged signatures, silence, dropped connections.

The misbehaving servers are real WebSocket servers speaking the wire format through the
protocol core (``make_response(..., key=...)``); only their key or their manners differ.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from channel_helpers import dead_port
from relay_helpers import ASSET, CHAIN_ID, TOKEN, relay_config
from websockets.asyncio.server import ServerConnection, serve

from settlement_widgets.channel import RelayClient
from settlement_widgets.channel.v0_5.core.rpc import make_response, notification, parse_request
from settlement_widgets.channel.v0_5.node import RelayNode
from settlement_widgets.errors import (
    InvalidSignatureError,
    RelayError,
    RelayUnavailableError,
    SettlementTimeoutError,
)
from settlement_widgets.keys import PrivateKey

ALICE = PrivateKey("0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80")
BROKER = PrivateKey("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d")
FORGER = PrivateKey("0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a")


@pytest_asyncio.fixture
async def node(tmp_path: Path) -> AsyncIterator[RelayNode]:
    relay = RelayNode(relay_config(tmp_path / "relay.sqlite", faucet_account=BROKER.address))
    await relay.start()
    try:
        yield relay
    finally:
        await relay.aclose()


async def login(
    client: RelayClient, session: PrivateKey, tokens: list[str], jwt: str | None = None
) -> Any:
    return await client.authenticate(
        ALICE,
        session,
        application="relay client tests",
        allowances=[(ASSET, "100")],
        expires_at=int(time.time()) + 3600,
        jwt=jwt,
        on_jwt=tokens.append,
    )


async def test_connects_verifies_the_broker_and_matches_replies_by_id(node: RelayNode) -> None:
    async with RelayClient(node.url) as client:
        assert client.broker_address == node.broker_address
        assert client.config["networks"][0]["chain_id"] == CHAIN_ID
        # many requests in flight at once, each answered to its own caller
        results = await asyncio.gather(
            *(client.get_assets(CHAIN_ID) for _ in range(10)),
            *(client.ping() for _ in range(10)),
        )
        expected = [{"token": TOKEN, "chain_id": CHAIN_ID, "symbol": ASSET, "decimals": 6}]
        assert all(r == expected for r in results[:10])
        assert all(isinstance(rtt, float) for rtt in results[10:])
        assert client.assets and client.assets[0]["symbol"] == ASSET  # pushed on connect
        assert client.rejected_frames == 0
        with pytest.raises(RelayError) as refused:
            await client.call("no_such_method", signed=False)
        assert refused.value.message == "unknown method: no_such_method"


async def test_login_notifications_and_jwt_relogin(node: RelayNode) -> None:
    session = PrivateKey.generate()
    tokens: list[str] = []
    balances: list[Any] = []
    async with RelayClient(node.url) as client:
        client.on("bu", lambda frame: balances.append(frame.result))
        auth = await login(client, session, tokens)
        assert (auth.wallet, auth.session_key) == (ALICE.address, session.address)
        assert tokens == [auth.jwt] and auth.jwt
        channels = await client.next_notification("channels", timeout=5)
        assert channels.result == {"channels": []}
        await client.next_notification("bu", timeout=5)
        assert balances and "balance_updates" in balances[0]
        assert await client.get_ledger_balances() == []  # a private method, signed by the key
        with pytest.raises(RelayError, match="insufficient funds"):
            await client.transfer(BROKER.address, [(ASSET, "1")])
    assert node.ledger is not None
    keys = dict(node.ledger.session_keys)
    # a second connection logs in with the JWT alone: no new signature, no new key
    async with RelayClient(node.url) as again:
        await login(again, session, tokens, jwt=tokens[0])
        assert tokens == [tokens[0]]  # on_jwt was not called: no full login happened
        assert await again.get_ledger_balances() == []
    assert dict(node.ledger.session_keys).keys() == keys.keys()
    # a JWT the relay refuses falls back to the full login
    async with RelayClient(node.url) as third:
        await login(third, session, tokens, jwt="not.a.jwt")
        assert len(tokens) == 2


async def test_reconnects_and_logs_in_again_after_the_relay_restarts(node: RelayNode) -> None:
    session = PrivateKey.generate()
    tokens: list[str] = []
    client = RelayClient(node.url, backoff=(0.05, 0.2))
    reconnected = asyncio.Event()
    client.on_reconnect(reconnected.set)
    try:
        await client.connect()
        await login(client, session, tokens)
        config = replace(node.config, port=node.port)
        await node.aclose()
        with pytest.raises(RelayUnavailableError):
            await client.get_ledger_balances()  # the relay is down: said at once
        restarted = RelayNode(config)
        await restarted.start()
        try:
            await asyncio.wait_for(reconnected.wait(), 10)
            assert client.connected and client.reconnects >= 1
            assert await client.get_ledger_balances() == []  # logged in again
            assert len(tokens) == 1  # with the JWT
        finally:
            await restarted.aclose()
    finally:
        await client.close()


async def test_relay_down_is_a_clear_error_without_waiting() -> None:
    client = RelayClient(f"ws://127.0.0.1:{dead_port()}/ws")
    started = time.perf_counter()
    with pytest.raises(RelayUnavailableError, match="cannot reach the relay"):
        await client.connect()
    with pytest.raises(RelayUnavailableError):
        await client.call("ping", signed=False)
    assert time.perf_counter() - started < 5
    await client.close()


Behaviour = Callable[[ServerConnection, Any], Awaitable[None]]


@contextlib.asynccontextmanager
async def fake_relay(on_request: Behaviour, config_key: PrivateKey = BROKER) -> AsyncIterator[str]:
    """A loopback server answering ``get_config`` (naming BROKER, signed by ``config_key``),
    and other requests with ``on_request(ws, request)``."""

    async def handler(ws: ServerConnection) -> None:
        async for text in ws:
            req = parse_request(text)
            if req.method == "get_config":
                result = {"broker_address": BROKER.address, "networks": []}
                await ws.send(
                    make_response(req.request_id, "get_config", result, key=config_key).to_frame()
                )
            else:
                await on_request(ws, req)

    async with serve(handler, "127.0.0.1", 0, compression=None) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        yield f"ws://127.0.0.1:{port}/ws"


async def test_forged_replies_raise_and_forged_notifications_are_dropped() -> None:
    async def forge(ws: ServerConnection, req: Any) -> None:
        await ws.send(notification("bu", {"balance_updates": []}, key=FORGER).to_frame())
        await ws.send(notification("bu", {"balance_updates": []}, key=BROKER).to_frame())
        await ws.send(make_response(req.request_id, "pong", None, key=FORGER).to_frame())

    async with fake_relay(forge) as url, RelayClient(url) as client:
        seen: list[Any] = []
        client.on("bu", seen.append)
        with pytest.raises(InvalidSignatureError, match="forged"):
            await client.call("ping", signed=False)
        assert len(seen) == 1  # only the broker-signed notification got through
        assert client.rejected_frames == 2


async def test_a_pinned_broker_must_match() -> None:
    async def never(ws: ServerConnection, req: Any) -> None:
        return None

    async with fake_relay(never) as url:
        client = RelayClient(url, broker_address=FORGER.address)
        with pytest.raises(InvalidSignatureError, match="pinned"):
            await client.connect()
        await client.close()


async def test_an_unanswered_request_times_out_and_is_forgotten() -> None:
    async def silent(ws: ServerConnection, req: Any) -> None:
        return None

    async with fake_relay(silent) as url, RelayClient(url, request_timeout=0.3) as client:
        with pytest.raises(SettlementTimeoutError, match=r"did not answer ping within 0\.3 s"):
            await client.call("ping", signed=False)
        assert client._pending == {}


async def test_a_dropped_connection_fails_the_request_in_flight() -> None:
    async def hang_up(ws: ServerConnection, req: Any) -> None:
        await ws.close()

    async with fake_relay(hang_up) as url, RelayClient(url, reconnect=False) as client:
        with pytest.raises(RelayUnavailableError, match="lost before it answered"):
            await client.call("ping", signed=False)
        assert not client.connected


async def test_a_get_config_not_signed_by_the_broker_it_names_is_refused() -> None:
    async def never(ws: ServerConnection, req: Any) -> None:
        return None

    async with fake_relay(never, config_key=FORGER) as url:
        client = RelayClient(url)
        with pytest.raises(InvalidSignatureError, match="not by the broker"):
            await client.connect()
        assert client.broker_address is None and not client.connected
        await client.close()


async def test_requests_of_one_turn_leave_in_one_write(node: RelayNode) -> None:
    """Concurrent requests are framed at once and written together at the end of the loop
    turn (one syscall, one wake-up of the relay); the only request in flight is written at
    once (so is the first of a burst: nothing else was in flight when it was sent)."""
    async with RelayClient(node.url) as client:
        ws = client._ws
        assert ws is not None
        writes: list[int] = []
        real_write = ws.transport.write

        def counting(data: bytes) -> None:
            writes.append(len(data))
            real_write(data)

        ws.transport.write = counting
        try:
            results = await asyncio.gather(*(client.get_assets(CHAIN_ID) for _ in range(16)))
            assert len(results) == 16 and all(r == results[0] for r in results)
            assert len(writes) == 2  # the first frame at once, the fifteen others in one write
            assert writes[1] == 15 * writes[0]
            writes.clear()
            assert await client.get_assets(CHAIN_ID) == results[0]
            assert len(writes) == 1
        finally:
            ws.transport.write = real_write


async def test_a_burst_of_requests_is_verified_on_two_threads_with_the_same_answers(
    node: RelayNode,
) -> None:
    """Requests that reach the relay in one read have their signers recovered on the signer
    thread and the loop thread together; each still gets exactly its own answer, and a
    forged or malformed signature in the burst its own precise error."""
    from settlement_widgets.channel.v0_5.core import messages as M
    from settlement_widgets.channel.v0_5.core.rpc import Request

    pool = node._signers
    assert pool is not None
    async with RelayClient(node.url) as client:
        await login(client, PrivateKey.generate(), [])
        bursts = pool.bursts
        forged = M.get_ledger_balances_message(PrivateKey.generate(), request_id=client._next_id())
        unsigned = M.get_ledger_balances_message(None, request_id=client._next_id())
        malformed = Request(
            unsigned.request_id + 1000,
            unsigned.method,
            unsigned.params,
            unsigned.timestamp,
            sigs=("0x" + "00" * 65,),
        )
        answers = await asyncio.gather(
            *(client.get_ledger_balances() for _ in range(16)),
            client.request(forged),
            client.request(malformed),
            return_exceptions=True,
        )
        assert answers[:16] == [[]] * 16
        assert isinstance(answers[16], RelayError) and answers[16].message == "invalid signature"
        assert isinstance(answers[17], RelayError)
        assert answers[17].message == "failed to verify signer"
        assert pool.bursts > bursts  # the burst was split between the two threads


async def test_the_relay_can_verify_on_its_loop_thread_alone(tmp_path: Path) -> None:
    config = relay_config(tmp_path / "r.sqlite", faucet_account=BROKER.address)
    async with RelayNode(replace(config, signer_threads=False)) as relay:
        assert relay._signers is None
        async with RelayClient(relay.url) as client:
            await login(client, PrivateKey.generate(), [])
            answers = await asyncio.gather(*(client.get_ledger_balances() for _ in range(16)))
            assert answers == [[]] * 16
