"""Migrating a Nitrolite v1 home channel from one sandbox chain to the other, end to end.

``LocalSandbox(protocol="v1", aggregator=True)``: one Nitronode (ours) serves our ChannelHub on
31337 and 31338. ``ChannelProviderV1.migrate(to_chain)`` runs our migration protocol (upstream
has none: ``core/migration.py``): the ``migrate`` state, ``initiateMigration`` on the new
chain (the node's lock, MIGRATING_IN), the ``migrate_finalize`` state (co-signed once that
chain shows the lock) and ``finalizeMigration`` there; the node then finalizes the old chain
(its funds back to the node's vault, MIGRATED_OUT). Both chain backends; every balance is
checked exactly on both chains, both hubs, both node vaults and the node's ledger.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from channel_helpers import BACKENDS, U
from two_chain_helpers import SECOND, chain_of, fund_on, two_chain_sandbox

from settlement_widgets.channel.v1 import ChannelProviderV1
from settlement_widgets.channel.v1.chain.hub import ChannelHubClient
from settlement_widgets.channel.v1.core.lifecycle import next_state
from settlement_widgets.channel.v1.core.migration import migrate_state
from settlement_widgets.channel.v1.core.state import decimals_from_map, pack_state
from settlement_widgets.errors import InvalidNetworkError, RelayError, RelayUnavailableError
from settlement_widgets.keys import PrivateKey
from settlement_widgets.networks import Network
from settlement_widgets.sandbox import LocalSandbox
from settlement_widgets.wallet import WalletClient

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=BACKENDS)
async def sb(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[LocalSandbox]:
    async with two_chain_sandbox(
        request.param, tmp_path_factory.mktemp("sandbox-v1-migration")
    ) as sandbox:
        yield sandbox


def _hub(sb: LocalSandbox, network: Network) -> ChannelHubClient:
    """A read-only view of ``network``'s hub (the deployer's wallet, never the user's)."""
    assert network.contracts.channel_hub is not None
    return ChannelHubClient(chain_of(sb, network.chain_id).wallet(0), network.contracts.channel_hub)


async def _user(sb: LocalSandbox, tokens_a: int = 0, tokens_b: int = 0) -> WalletClient:
    """A new key with gas on both chains and the v1 token on each as asked; its wallet on the
    first chain (the provider's network)."""
    first, second = sb.network, sb.network.on_chain(SECOND)
    wallet = chain_of(sb, first.chain_id).wallet_for(PrivateKey.generate())
    await fund_on(sb, first, wallet.address, tokens_a)
    await fund_on(sb, second, wallet.address, tokens_b)
    return wallet


class _Books:
    """Both chains' token balance of one wallet and both node vaults, read at once."""

    def __init__(self, sb: LocalSandbox, wallet: str) -> None:
        self.first, self.second = sb.network, sb.network.on_chain(SECOND)
        self.hub_a, self.hub_b = _hub(sb, self.first), _hub(sb, self.second)
        self.wallet = wallet

    async def read(self) -> tuple[int, int, int, int]:
        """(wallet on A, wallet on B, node vault on A, node vault on B)."""
        token_a, token_b = str(self.first.token), str(self.second.token)
        return (
            await self.hub_a.token_balance(token_a, self.wallet),
            await self.hub_b.token_balance(token_b, self.wallet),
            await self.hub_a.get_node_balance(token_a),
            await self.hub_b.get_node_balance(token_b),
        )


async def _settled(sb: LocalSandbox) -> None:
    """The node's on-chain steps after the last commit are done (the old chain's release)."""
    assert sb.nitronode is not None
    await sb.nitronode.settled()


async def test_a_migration_moves_the_home_channel_and_the_balance_follows(
    sb: LocalSandbox,
) -> None:
    wallet = await _user(sb, tokens_a=10 * U)
    books = _Books(sb, wallet.address)
    alice = await ChannelProviderV1(sb.network, wallet).connect()
    try:
        channel = await alice.create_channel(alice.node_address, alice.asset, 10 * U)
        before = await books.read()
        assert before[:2] == (0, 0)

        tx = await alice.migrate(SECOND)
        assert f"/chain/{SECOND}/" in tx.explorer_url
        await _settled(sb)

        # the node's lock of 10 on B is the user's channel there; A's 10 went to its vault
        wallet_a, wallet_b, vault_a, vault_b = await books.read()
        assert (wallet_a, wallet_b) == (0, 0)
        assert vault_a == before[2] + 10 * U
        assert vault_b == before[3] - 10 * U
        old = await books.hub_a.get_channel_data(channel.id)
        assert (old.status, old.locked_funds) == ("MIGRATED_OUT", 0)
        new = await books.hub_b.get_channel_data(channel.id)
        assert (new.status, new.locked_funds) == ("OPERATING", 10 * U)
        assert int(new.last_state["homeLedger"]["userAllocation"]) == 10 * U
        assert await books.hub_a.get_open_channels(wallet.address) == []
        assert await books.hub_b.get_open_channels(wallet.address) == [channel.id]
        assert await alice.balances() == {alice.asset: 10 * U}
        moved = alice.get_channel(channel.id)
        assert (moved.chain_id, moved.amount, moved.status) == (SECOND, 10 * U, "active")
        assert moved.token.lower() == str(books.second.token).lower()
        assert sb.nitronode is not None and sb.nitronode.service is not None
        ledger = sb.nitronode.service.ledger
        assert ledger.channels[channel.id]["blockchain_id"] == str(SECOND)
        latest = alice.store.latest_state(alice.asset)
        assert latest is not None and int(latest["transition"]["type"]) == 101
        record = ledger.escrows[str(latest["escrow_channel_id"])]
        assert (record["kind"], record["status"]) == ("migration", "settled")
        assert "old_release" in record["txs"]

        # the channel lives on B now: a transfer, a withdrawal and the close all run there
        bob_wallet = await _user(sb)
        bob = await ChannelProviderV1(sb.network, bob_wallet).connect()
        try:
            await alice.transfer(channel.id, 3 * U, bob_wallet.address)
            assert await bob.balances() == {bob.asset: 3 * U}
        finally:
            await bob.close()
        withdrawal = await alice.withdraw(2 * U)
        assert f"/chain/{SECOND}/" in withdrawal.explorer_url
        assert (await books.read())[:2] == (0, 2 * U)
        await alice.close_channel(channel.id)
        wallet_a, wallet_b, vault_a, vault_b = await books.read()
        assert (wallet_a, wallet_b) == (0, 7 * U)
        # B's vault paid the 10 the user migrated, got back the 3 sent to bob (held for him
        # off chain): exactly what the user took out there is the vault's cost
        assert vault_b == before[3] - 7 * U
        assert vault_a == before[2] + 10 * U
        assert (await books.hub_b.get_channel_data(channel.id)).status == "CLOSED"
    finally:
        await alice.close()


async def test_a_migration_cut_short_is_finished_by_recover(sb: LocalSandbox) -> None:
    """The process dies after the migrate state is co-signed, before initiateMigration: the
    next provider's recover() (run on connect) sends it, has the finalizing state co-signed
    and finalizes on the new chain; the node releases the old one. Then it dies after the
    finalizing state is co-signed (before finalizeMigration): recover() finishes that too."""
    wallet = await _user(sb, tokens_a=4 * U)
    books = _Books(sb, wallet.address)
    carol = await ChannelProviderV1(sb.network, wallet).connect()
    channel = await carol.create_channel(carol.node_address, carol.asset, 4 * U)
    before = await books.read()

    async def dies(*_a: Any, **_k: Any) -> Any:
        raise RelayUnavailableError("the process died before sending initiateMigration")

    carol._hub_on(SECOND).initiate_migration = dies  # type: ignore[method-assign]
    with pytest.raises(RelayUnavailableError):
        await carol.migrate(SECOND)
    await carol.close()
    assert (await books.hub_b.get_channel_data(channel.id)).status == "VOID"

    again = await ChannelProviderV1(sb.network, wallet).connect()  # recover() on connect
    try:
        await _settled(sb)
        assert (await books.hub_b.get_channel_data(channel.id)).status == "OPERATING"
        assert (await books.hub_a.get_channel_data(channel.id)).status == "MIGRATED_OUT"
        _wa, _wb, vault_a, vault_b = await books.read()
        assert (vault_a, vault_b) == (before[2] + 4 * U, before[3] - 4 * U)
        assert await again.balances() == {again.asset: 4 * U}
        assert again.get_channel(channel.id).chain_id == SECOND
        assert await again.recover() == []  # nothing left: migrated once

        # back to the first chain, cut after the finalizing state is co-signed
        async def lost(*_a: Any, **_k: Any) -> Any:
            raise RelayUnavailableError("the process died before sending finalizeMigration")

        again.hub.finalize_migration = lost  # type: ignore[method-assign]
        with pytest.raises(RelayUnavailableError):
            await again.migrate(sb.network.chain_id)
    finally:
        await again.close()
    third = await ChannelProviderV1(sb.network, wallet).connect()
    try:
        await _settled(sb)
        assert (await books.hub_a.get_channel_data(channel.id)).status == "OPERATING"
        assert (await books.hub_b.get_channel_data(channel.id)).status == "MIGRATED_OUT"
        assert (await books.read())[2:] == before[2:]  # both vaults as before the round trip
        assert await third.balances() == {third.asset: 4 * U}
        await third.close_channel(channel.id)
        assert (await books.read())[:2] == (4 * U, 0)
    finally:
        await third.close()


async def test_a_migration_is_refused_before_signing(sb: LocalSandbox) -> None:
    """To a chain the node does not serve, and over a pending escrow lock: the node signs
    nothing (its latest state stays), the provider's own check refuses first."""
    wallet = await _user(sb, tokens_a=4 * U, tokens_b=U)
    dave = await ChannelProviderV1(sb.network, wallet).connect()
    try:
        await dave.create_channel(dave.node_address, dave.asset, 4 * U)
        with pytest.raises(InvalidNetworkError, match="31339"):
            await dave.migrate(31339)
        latest = await dave.client.get_latest_state(wallet.address, dave.asset, False)
        assert latest is not None

        # a hand-built migrate state to an unserved chain reaches the node: refused unsigned
        token = str(sb.network.token)
        state = migrate_state(latest, blockchain_id=31339, token=token)
        decimals = decimals_from_map({f"{sb.network.chain_id}:{token}": 6, f"31339:{token}": 6})
        assert dave.client.state_signer is not None
        state["user_sig"] = await dave.client.state_signer.sign_state(pack_state(state, decimals))
        with pytest.raises(RelayError, match="not supported on blockchain 31339"):
            await dave.client.channels_v1_submit_state(state)

        # over a pending escrow deposit lock: refused by the provider and by the node
        lock = await dave.client.mutual_lock(dave.asset, SECOND, "1")
        with pytest.raises(Exception, match="escrow operation is pending"):
            await dave.migrate(SECOND)
        forged = next_state(lock)
        forged.pop("escrow_ledger")
        forged.pop("escrow_channel_id")
        forged["home_ledger"]["node_balance"] = "0"
        forged["home_ledger"]["node_net_flow"] = lock["home_ledger"]["node_net_flow"]
        forged = migrate_state(
            {**lock, "home_ledger": forged["home_ledger"], "escrow_ledger": None},
            blockchain_id=SECOND,
            token=str(sb.network.on_chain(SECOND).token),
        )
        forged["user_sig"] = await dave.client.sign_state(forged)
        with pytest.raises(RelayError, match="escrow operation is pending"):
            await dave.client.channels_v1_submit_state(forged)
        node = await dave.client.get_latest_state(wallet.address, dave.asset, False)
        assert node is not None and int(node["transition"]["type"]) == 120
        assert (
            await _hub(sb, sb.network.on_chain(SECOND)).get_channel_data(lock["home_channel_id"])
        ).status == "VOID"
    finally:
        await dave.close()


async def test_a_restarted_node_releases_the_old_chain(sb: LocalSandbox) -> None:
    """The finalizing state is committed with the migration's record; if the node cannot
    finalize the old chain then (here: the first attempt fails), a restarted node, reading
    the record back, does it, and a step the chain shows done is not sent again."""
    wallet = await _user(sb, tokens_a=3 * U)
    books = _Books(sb, wallet.address)
    erin = await ChannelProviderV1(sb.network, wallet).connect()
    node = sb.nitronode
    assert node is not None and node.service is not None
    channel = await erin.create_channel(erin.node_address, erin.asset, 3 * U)
    before = await books.read()
    release = node.service.migration_action

    async def unreachable(*_a: Any, **_k: Any) -> Any:
        raise RuntimeError("the old chain is unreachable")

    node.service.migration_action = unreachable  # type: ignore[method-assign]
    try:
        await erin.migrate(SECOND)
        await node.settled()
        assert (await books.hub_a.get_channel_data(channel.id)).status == "OPERATING"
        latest = erin.store.latest_state(erin.asset)
        assert latest is not None
        migration_id = str(latest["escrow_channel_id"])
        assert node.service.ledger.escrows[migration_id]["status"] == "migrated"
    finally:
        node.service.migration_action = release  # type: ignore[method-assign]
    await sb.restart_nitronode()
    try:
        restarted = sb.nitronode
        assert restarted is not None and restarted is not node
        await restarted.settled()
        assert restarted.service is not None
        record = restarted.service.ledger.escrows[migration_id]
        assert record["status"] == "settled"
        old = await books.hub_a.get_channel_data(channel.id)
        assert (old.status, old.locked_funds) == ("MIGRATED_OUT", 0)
        assert (await books.read())[2:] == (before[2] + 3 * U, before[3] - 3 * U)
        # done on chain: the step is skipped, not sent again (it would revert)
        assert await restarted.service.migration_action(record, "old_release") is None
        assert await erin.balances() == {erin.asset: 3 * U}  # the provider reconnects
    finally:
        await erin.close()


async def test_the_node_finalizes_nothing_the_new_chain_does_not_hold(sb: LocalSandbox) -> None:
    """The migrate_finalize state before initiateMigration on the new chain: refused (the
    node's lock there is what backs it), and nothing changes at the node or on either hub."""
    wallet = await _user(sb, tokens_a=2 * U)
    books = _Books(sb, wallet.address)
    gina = await ChannelProviderV1(sb.network, wallet).connect()
    try:
        channel = await gina.create_channel(gina.node_address, gina.asset, 2 * U)
        before = await books.read()
        migrate = await gina.client.migrate(gina.asset, SECOND)
        assert migrate["node_sig"] and int(migrate["transition"]["type"]) == 100
        with pytest.raises(RelayError, match="migration is not initiated on its chain yet"):
            await gina.client.finalize_migration(migrate)
        node = await gina.client.get_latest_state(wallet.address, gina.asset, False)
        assert node is not None and int(node["transition"]["type"]) == 100
        # nor anything but its own finalizing state after a migrate
        with pytest.raises(RelayError, match="after migrate, only migrate finalize"):
            await gina.client.transfer(PrivateKey.generate().address, gina.asset, "1")
        assert (await books.hub_b.get_channel_data(channel.id)).status == "VOID"
        assert (await books.hub_a.get_channel_data(channel.id)).status == "OPERATING"
        assert await books.read() == before
        assert await gina.balances() == {gina.asset: 2 * U}
    finally:
        await gina.close()


async def test_a_migration_right_after_receiving_a_transfer_moves_it_too(
    sb: LocalSandbox,
) -> None:
    """A received transfer leaves the node-issued receive as the latest state (node-signed
    only, as every v1 credit is until the user's next state acknowledges it): the migrate
    state is that next state, so it moves the received funds along, as any other state would
    build on them (a migration refused there said 'migrate needs the last state co-signed')."""
    wallet = await _user(sb, tokens_a=2 * U)
    sender_wallet = await _user(sb, tokens_a=U)
    books = _Books(sb, wallet.address)
    hana = await ChannelProviderV1(sb.network, wallet).connect()
    sender = await ChannelProviderV1(sb.network, sender_wallet).connect()
    try:
        channel = await hana.create_channel(hana.node_address, hana.asset, 2 * U)
        await sender.create_channel(sender.node_address, sender.asset, U)
        await sender.transfer(None, U, wallet.address)
        latest = await hana.client.get_latest_state(wallet.address, hana.asset, False)
        assert latest is not None and int(latest["transition"]["type"]) == 31
        assert not latest.get("user_sig")  # the receive, not acknowledged yet
        before = await books.read()

        await hana.migrate(SECOND)
        await _settled(sb)

        assert await hana.balances() == {hana.asset: 3 * U}
        new = await books.hub_b.get_channel_data(channel.id)
        assert (new.status, new.locked_funds) == ("OPERATING", 3 * U)
        old = await books.hub_a.get_channel_data(channel.id)
        assert (old.status, old.locked_funds) == ("MIGRATED_OUT", 0)
        _wa, _wb, vault_a, vault_b = await books.read()
        # A's hub held 2 for the channel (the 1 received was the node's, off chain): both
        # go back to A's vault; B's vault locks the 3 the user now holds there
        assert (vault_a, vault_b) == (before[2] + 2 * U, before[3] - 3 * U)
    finally:
        await sender.close()
        await hana.close()
