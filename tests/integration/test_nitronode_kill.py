"""Crash safety of the Nitronode process: SIGKILL it during a stream of transfers, restart it
on the same database and port, and check that every acknowledged state is still there.

Mirrors test_relay_kill.py. Alice pipelines TOTAL signed transfer_send states (each built on
the previous one, so they must be applied in order) through ``python -m
settlement_widgets.channel.v1.node``; the node is SIGKILLed after KILL_AFTER replies. After
the restart her latest state must be at least the last acknowledged version, each
acknowledged state must be stored with the very node signature that was sent back, and Bob
must hold the receive state of each of them. Re-sending the stream then applies exactly the
states that were not committed and refuses the ones that were.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest
from nitronode_helpers import (
    ALICE,
    ASSET,
    BOB,
    CHAIN_ID,
    HUB,
    NODE_KEY,
    USDC,
    V1Client,
    advance,
    creation_state,
    definition,
    deposit,
    send,
)

from settlement_widgets.channel.v1.core.wire import Frame, MessageType
from settlement_widgets.channel.v1.node import NitronodeProcess

pytestmark = pytest.mark.slow

TOTAL = 200
KILL_AFTER = 40
WINDOW = 32


@pytest.mark.parametrize("durability", ["full", "normal"])
async def test_sigkill_loses_no_acknowledged_state(tmp_path: Path, durability: str) -> None:
    node = NitronodeProcess(
        db_path=tmp_path / "node.sqlite",
        node_key=NODE_KEY,
        chain_id=CHAIN_ID,
        hub=HUB,
        assets=[USDC],
        durability=durability,
        # a crash-safety test, not a rate test: the pipelined stream would trip the real
        # node's per-connection limit (10/s, burst 20; test_nitronode_rate_limits.py)
        rate_limit_per_sec=1000,
        rate_limit_burst=2 * TOTAL,
    )
    await node.start()
    try:
        assert node.ready["nodeAddress"] == NODE_KEY.address
        assert NODE_KEY.secret_hex()[2:] not in node.stderr_tail()
        d = definition()
        opening = creation_state(ALICE, deposit(str(TOTAL)), d)
        states = [opening]
        for _ in range(TOTAL):
            states.append(advance(ALICE, states[-1], send(BOB.address, "1")))
        transfers = states[1:]
        acked: dict[str, str] = {}  # version -> node signature
        async with V1Client(node.url) as client:
            await client.ok(
                "channels.v1.request_creation", {"state": opening, "channel_definition": d}
            )
            futures: list[asyncio.Future[Frame]] = []
            enough = asyncio.Event()

            def on_reply(version: str, future: asyncio.Future[Frame]) -> None:
                if future.cancelled() or future.exception() is not None:
                    return
                frame = future.result()
                assert frame.type == MessageType.RESPONSE, frame.error
                acked[version] = frame.payload["signature"]
                if len(acked) >= KILL_AFTER:
                    enough.set()

            async def stream() -> None:
                for i, state in enumerate(transfers):
                    if i >= WINDOW:
                        with contextlib.suppress(Exception):
                            await futures[i - WINDOW]
                    future = client.request("channels.v1.submit_state", {"state": state})
                    future.add_done_callback(lambda f, v=state["version"]: on_reply(v, f))
                    futures.append(future)

            sender = asyncio.create_task(stream())
            await asyncio.wait_for(enough.wait(), 60)
            await node.kill()
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await sender
            await client.closed.wait()
        assert KILL_AFTER <= len(acked) < TOTAL

        await node.restart()
        async with V1Client(node.url) as client:
            latest = (
                await client.ok(
                    "channels.v1.get_latest_state",
                    {"wallet": ALICE.address, "asset": ASSET, "only_signed": True},
                )
            )["state"]
            survived = int(latest["version"]) - 1
            assert survived >= max(int(v) for v in acked) - 1
            txs = await client.ok(
                "user.v1.get_transactions",
                {"wallet": BOB.address, "pagination": {"limit": 1000, "sort": "asc"}},
            )
            stored = {t["sender_new_state_id"] for t in txs["transactions"]}
            assert txs["metadata"]["total_count"] == survived
            by_version = {s["version"]: s for s in transfers}
            for version in acked:
                assert by_version[version]["id"] in stored
            # the stored acknowledged states carry the signatures that were sent back
            assert latest["node_sig"] == acked.get(latest["version"], latest["node_sig"])
            assert latest["id"] == by_version[latest["version"]]["id"]
            # re-send everything: committed states are refused, the rest applied in order
            applied = 0
            for state in transfers:
                frame = await client.call("channels.v1.submit_state", {"state": state})
                if frame.type == MessageType.RESPONSE:
                    applied += 1
                    if state["version"] in acked:
                        raise AssertionError(f"acknowledged version {state['version']} was lost")
                else:
                    assert (frame.error or "").startswith(
                        "invalid state transition: version mismatch: expected="
                    )
            assert survived + applied == TOTAL
            balances = await client.ok("user.v1.get_balances", {"wallet": BOB.address})
            assert balances["balances"][0]["amount"] == str(TOTAL)
            alice = await client.ok("user.v1.get_balances", {"wallet": ALICE.address})
            assert alice["balances"][0]["amount"] == "0"
    finally:
        await node.aclose()
    assert node.returncode in (0, None)
