"""A SIGKILL of the Nitronode process while ``ChannelProviderV1`` streams transfers loses
nothing the provider was told was done, on both chain backends.

The home channel is real (our ChannelHub on the chain); the node runs as a child process
(``python -m settlement_widgets.channel.v1.node``) on a database of its own. Alice's
provider sends transfers back to back; after KILL_AFTER of them returned, the node is
SIGKILLed. The transfers that returned are exactly those the provider acknowledged: after a
restart on the same database and port, each is in the node's history, and a new provider
over Alice's store (a restarted notebook) recovers the one in flight, if any, by adopting the
node's signature or resubmitting it, so both sides agree on her latest state.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from settlement_widgets.addresses import ZERO_ADDRESS
from settlement_widgets.channel.v1 import ChannelProviderV1, V1Store
from settlement_widgets.channel.v1.client.rpc_client import V1RpcClient
from settlement_widgets.channel.v1.core.decimals import to_units
from settlement_widgets.channel.v1.node import NitronodeProcess, NodeAsset, NodeToken
from settlement_widgets.channel.v1.node.deploy import deploy_channel_hub
from settlement_widgets.errors import SettlementError
from settlement_widgets.networks import Network, local
from settlement_widgets.sandbox import Chain
from settlement_widgets.sandbox.local import sandbox_key

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

U = 10**6
#: room for the transfers that still complete while the kill lands (SIGKILL and the socket
#: closing take a few ms, during which a fast client and node finish dozens of pipelined
#: transfers; with 60 all of them sometimes did, and nothing was in flight to lose)
TOTAL = 200
KILL_AFTER = 15


async def test_a_killed_node_loses_no_acknowledged_transfer(chain: Chain, tmp_path: Path) -> None:
    alice, bob = chain.wallet(1), chain.wallet(2)
    async with _killable_node(chain, tmp_path) as (node, network):
        store_path = tmp_path / "alice.sqlite"
        provider = ChannelProviderV1(network, alice, store=V1Store(store_path))
        try:
            await provider.connect()
            channel = await provider.create_channel(provider.node_address, "usdc", 100 * U)
            acknowledged: list[int] = []
            due, killed = asyncio.Event(), asyncio.Event()

            async def kill_when_due() -> None:
                await due.wait()  # KILL_AFTER transfers returned; the stream goes on meanwhile
                await node.kill()
                killed.set()

            killer = asyncio.ensure_future(kill_when_due())
            for i in range(TOTAL):
                try:
                    await provider.transfer(channel.id, 1000 + i, bob.address)
                except SettlementError:
                    break  # the node is gone: this one was never acknowledged
                acknowledged.append(1000 + i)
                if len(acknowledged) == KILL_AFTER:
                    due.set()
            await killer
            assert killed.is_set() and KILL_AFTER <= len(acknowledged) < TOTAL
            await provider.close()
            provider.store.close()

            await node.start()  # same database, same port
            again = ChannelProviderV1(network, alice, store=V1Store(store_path))
            try:
                await again.connect()  # recovers the transfer in flight, if any
                history = await again.client.get_transactions(
                    bob.address, asset="usdc", tx_type=30, pagination={"limit": 1000, "sort": "asc"}
                )
                amounts = [to_units(t["amount"], 6) for t in history["transactions"]]
                # every acknowledged transfer is there, in order; at most one more (in flight)
                assert amounts[: len(acknowledged)] == acknowledged
                assert len(amounts) - len(acknowledged) in (0, 1)
                mine = again.store.latest_state("usdc")
                theirs = await again.client.get_latest_state(alice.address, "usdc", False)
                assert mine is not None and theirs is not None
                assert (
                    mine["version"] == theirs["version"] and mine["node_sig"] == theirs["node_sig"]
                )
                # and the channel goes on: one more transfer, then the close
                await again.transfer(channel.id, 1, bob.address)
                await again.close_channel(channel.id)
                assert again.get_channel(channel.id).status == "final"
            finally:
                await again.close()
        finally:
            with contextlib.suppress(Exception):
                await provider.close()


@contextlib.asynccontextmanager
async def _killable_node(
    chain: Chain, tmp_path: Path, **limits: float
) -> AsyncIterator[tuple[NitronodeProcess, Network]]:
    """A Nitronode child process on its own database, with a fresh ChannelHub (``limits``:
    its request rate limits), and the network profile a provider uses for it."""
    deployer, alice = chain.wallet(0), chain.wallet(1)
    node_key = sandbox_key("broker")
    hub = await deploy_channel_hub(chain, deployer, node_key.address, fund=[alice.address])
    asset = NodeAsset("usdc", 6, (NodeToken(chain.chain_id, hub.token, 6),))
    node = NitronodeProcess(
        db_path=tmp_path / "node.sqlite",
        node_key=node_key,
        chain_id=chain.chain_id,
        hub=hub.hub,
        assets=[asset],
        durability="full",
        **limits,
    )
    await node.start()
    try:
        network = local(
            chain_id=chain.chain_id,
            custody=ZERO_ADDRESS,
            adjudicator=ZERO_ADDRESS,
            policy_hook=ZERO_ADDRESS,
            settlement_adapter=ZERO_ADDRESS,
            pool_manager=ZERO_ADDRESS,
            node_url=node.url,
            faucet_url="http://127.0.0.1:9/faucet/requestTokens",
            explorer_base="http://127.0.0.1:9/explorer",
            token=hub.token,
            channel_hub=hub.hub,
            protocol="nitrolite-v1",
        )
        yield node, replace(network, asset_symbol="usdc")
    finally:
        await node.aclose()


async def test_a_killed_node_loses_no_acknowledged_pipelined_transfer(
    chain: Chain, tmp_path: Path
) -> None:
    """The same with TOTAL transfers in flight at once (pipelined: several states sent and
    unanswered when the node dies). After the restart, the provider's recovery settles every
    pending state: the node's history is one unbroken run of the transfers in the order
    they were signed, holding every acknowledged one, each with its line in Alice's store,
    and her latest state is the node's."""
    alice, bob = chain.wallet(1), chain.wallet(2)
    # no request limit on either side: the states go out as fast as they are signed, so
    # many are in flight when the node dies
    unlimited = {"rate_limit_per_sec": 1e9, "rate_limit_burst": 1e9}
    async with _killable_node(chain, tmp_path, **unlimited) as (node, network):
        store_path = tmp_path / "alice.sqlite"
        client = V1RpcClient(network.node_url, requests_per_sec=None)
        provider = ChannelProviderV1(network, alice, store=V1Store(store_path), client=client)
        try:
            await provider.connect()
            channel = await provider.create_channel(provider.node_address, "usdc", 100 * U)
            acknowledged: list[int] = []
            due = asyncio.Event()

            async def kill_when_due() -> None:
                await due.wait()
                await node.kill()

            async def one(amount: int) -> None:
                await provider.transfer(channel.id, amount, bob.address)
                acknowledged.append(amount)
                if len(acknowledged) == KILL_AFTER:
                    due.set()

            killer = asyncio.ensure_future(kill_when_due())
            sent = [1000 + i for i in range(TOTAL)]
            results = await asyncio.gather(*(one(a) for a in sent), return_exceptions=True)
            await killer
            failed = [r for r in results if r is not None]
            assert failed and all(isinstance(r, SettlementError) for r in failed), failed
            assert KILL_AFTER <= len(acknowledged) < TOTAL
            await provider.close()
            provider.store.close()

            await node.start()  # same database, same port
            again = ChannelProviderV1(network, alice, store=V1Store(store_path))
            try:
                await again.connect()  # recovers every state in flight
                history = await again.client.get_transactions(
                    bob.address,
                    asset="usdc",
                    tx_type=30,
                    pagination={"limit": 1000, "sort": "asc"},
                )
                amounts = [to_units(t["amount"], 6) for t in history["transactions"]]
                assert amounts == sent[: len(amounts)]  # in order, none lost in between
                assert set(acknowledged) <= set(amounts)
                lines = [t.amount for t in again.transfers() if t.direction == "out"]
                assert sorted(lines) == amounts
                mine = again.store.latest_state("usdc")
                theirs = await again.client.get_latest_state(alice.address, "usdc", False)
                assert mine is not None and theirs is not None
                assert mine["version"] == theirs["version"]
                assert mine["node_sig"] == theirs["node_sig"]
                await again.transfer(channel.id, 1, bob.address)
                await again.close_channel(channel.id)
                assert again.get_channel(channel.id).status == "final"
            finally:
                await again.close()
        finally:
            with contextlib.suppress(Exception):
                await provider.close()
