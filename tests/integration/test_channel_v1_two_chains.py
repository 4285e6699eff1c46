"""Nitrolite v1 on both sandbox chains (``LocalSandbox(protocol="v1", aggregator=True)``).

One Nitronode serves our ChannelHub on the sandbox's chain (31337) and on its second chain
(31338). A wallet's balance is one per asset across chains, its home channel may live on
either, and an off-chain transfer moves value between users whose home channels live on
different chains: the payee closes on its own chain and is paid there, out of the node's
vault on that chain. Both chain backends; every step is checked at once (no sleeps) against
the node, both hubs and both chains' token balances.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from channel_helpers import BACKENDS, U
from two_chain_helpers import SECOND, chain_of, fund_on, two_chain_sandbox

from settlement_widgets.channel.v1 import ChannelProviderV1
from settlement_widgets.channel.v1.chain.hub import ChannelHubClient
from settlement_widgets.errors import (
    ChannelStateError,
    InvalidNetworkError,
    RelayError,
    RelayUnavailableError,
)
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
        request.param, tmp_path_factory.mktemp("sandbox-v1-two-chains")
    ) as sandbox:
        yield sandbox


async def _wallet(sb: LocalSandbox, network: Network, tokens: int) -> WalletClient:
    """A new key on ``network``'s chain with gas and ``tokens`` of the v1 token there."""
    wallet = chain_of(sb, network.chain_id).wallet_for(PrivateKey.generate())
    await fund_on(sb, network, wallet.address, tokens)
    return wallet


async def _home_hub_holds(
    provider: ChannelProviderV1, channel_id: str, state: Any, allocation: int
) -> None:
    """The home hub's last state of ``channel_id`` is ``state`` (the node put the escrow's
    states there), allocating the user ``allocation``."""
    home = await provider.hub.get_channel_data(channel_id)
    assert int(home.last_state["version"]) == int(state["version"])
    assert int(home.last_state["homeLedger"]["userAllocation"]) == allocation


async def _tokens(sb: LocalSandbox, network: Network, address: str) -> int:
    probe = ChannelHubClient(
        chain_of(sb, network.chain_id).wallet(0), network.contracts.channel_hub
    )
    assert network.token is not None
    return await probe.token_balance(network.token, address)


async def test_the_node_serves_the_hub_and_the_token_on_both_chains(sb: LocalSandbox) -> None:
    first, second = sb.network, sb.network.on_chain(SECOND)
    assert first.chain_ids() == (first.chain_id, SECOND)
    assert second.contracts.channel_hub != first.contracts.channel_hub
    assert second.token != first.token and second.node_url == first.node_url
    with pytest.raises(InvalidNetworkError, match="31339"):
        first.on_chain(31339)
    probe = await ChannelProviderV1(second, await _wallet(sb, second, 0)).connect()
    try:
        config = await probe.client.get_config()
        hubs = {int(c["id"]): c["channelHubAddress"] for c in config["blockchains"]}
        assert {k: v.lower() for k, v in hubs.items()} == {
            first.chain_id: str(first.contracts.channel_hub).lower(),
            SECOND: str(second.contracts.channel_hub).lower(),
        }
        assets = await probe.client.get_assets()
        (asset,) = [a for a in assets if a["symbol"] == probe.asset]
        tokens = {int(t["blockchain_id"]): str(t["address"]).lower() for t in asset["tokens"]}
        assert tokens == {
            first.chain_id: str(first.token).lower(),
            SECOND: str(second.token).lower(),
        }
    finally:
        await probe.close()


async def test_a_transfer_between_home_channels_on_two_chains_is_paid_out_on_the_payees(
    sb: LocalSandbox,
) -> None:
    first, second = sb.network, sb.network.on_chain(SECOND)
    alice_wallet = await _wallet(sb, first, 10 * U)
    bob_wallet = await _wallet(sb, second, 2 * U)
    alice = await ChannelProviderV1(first, alice_wallet).connect()
    bob = await ChannelProviderV1(second, bob_wallet).connect()
    try:
        mine = await alice.create_channel(alice.node_address, alice.asset, 10 * U)
        theirs = await bob.create_channel(bob.node_address, bob.asset, 2 * U)
        assert await _tokens(sb, first, alice_wallet.address) == 0
        assert await _tokens(sb, second, bob_wallet.address) == 0

        await alice.transfer(mine.id, 3 * U, bob_wallet.address)  # chain A -> chain B, off chain
        await bob.sync()
        assert await alice.balances() == {alice.asset: 7 * U}
        assert await bob.balances() == {bob.asset: 5 * U}

        # bob closes on his chain and is paid there: 2 deposited + 3 received
        vault_before = await ChannelHubClient(
            chain_of(sb, SECOND).wallet(0), second.contracts.channel_hub
        ).get_node_balance(second.token)
        await bob.close_channel(theirs.id)
        assert await _tokens(sb, second, bob_wallet.address) == 5 * U
        hub_b = ChannelHubClient(chain_of(sb, SECOND).wallet(0), second.contracts.channel_hub)
        assert (await hub_b.get_channel_data(theirs.id)).status == "CLOSED"
        assert await hub_b.get_node_balance(second.token) == vault_before - 3 * U
        # and nothing moved on the first chain for bob, nor on the second for alice
        assert await _tokens(sb, first, bob_wallet.address) == 0
        assert await _tokens(sb, second, alice_wallet.address) == 0

        await alice.close_channel(mine.id)
        assert await _tokens(sb, first, alice_wallet.address) == 7 * U
    finally:
        await alice.close()
        await bob.close()


async def test_a_deposit_from_the_other_chain_is_escrowed_there_and_credited_at_home(
    sb: LocalSandbox,
) -> None:
    """deposit_from: the tokens leave the wallet on the second chain into an escrow of our
    hub there, the home balance grows by the same amount at once, and the node finalizes
    the escrow to its vault on that chain (settled when the call's effects are visible)."""
    first, second = sb.network, sb.network.on_chain(SECOND)
    key = PrivateKey.generate()
    home_wallet = chain_of(sb, first.chain_id).wallet_for(key)
    await fund_on(sb, first, home_wallet.address, 4 * U)
    await fund_on(sb, second, home_wallet.address, 3 * U)  # the same key holds tokens there
    carol = await ChannelProviderV1(first, home_wallet).connect()
    hub_b = ChannelHubClient(chain_of(sb, SECOND).wallet(0), second.contracts.channel_hub)
    vault_before = await hub_b.get_node_balance(str(second.token))
    try:
        channel = await carol.create_channel(carol.node_address, carol.asset, 4 * U)
        tx = await carol.deposit_from(SECOND, 2 * U, channel_id=channel.id)
        assert f"/chain/{SECOND}/" in tx.explorer_url
        assert await _tokens(sb, second, home_wallet.address) == U  # 3 - 2 left there
        assert await carol.balances() == {carol.asset: 6 * U}
        latest = carol.store.latest_state(carol.asset)
        assert latest is not None and int(latest["transition"]["type"]) == 20
        assert latest["user_sig"] and latest["node_sig"]

        assert sb.nitronode is not None
        await sb.nitronode.settled()
        escrow = await hub_b.get_escrow_deposit_data(str(latest["escrow_channel_id"]))
        assert (escrow.status, escrow.locked_amount) == ("FINALIZED", 0)
        assert await hub_b.get_node_balance(str(second.token)) == vault_before + 2 * U
        # the second chain's explorer names the hub and both escrow events
        assert sb.nitronode.service is not None
        record = sb.nitronode.service.ledger.escrows[str(latest["escrow_channel_id"])]
        async with httpx.AsyncClient() as http:
            initiated = (await http.get(tx.explorer_url)).text
            release = second.explorer.tx_url(record["txs"]["escrow_release"])
            finalized = (await http.get(release)).text
            on_home = (await http.get(first.explorer.tx_url(record["txs"]["home_credit"]))).text
        assert "EscrowDepositInitiated" in initiated and "ChannelHub" in initiated
        assert "EscrowDepositFinalized" in finalized
        assert "EscrowDepositFinalizedOnHome" in on_home
        # the home hub holds the credit as the channel's last state: the user's latest state
        # is enforceable there (a challenge with it is accepted)
        await _home_hub_holds(carol, channel.id, latest, 6 * U)

        # the credit is spendable and enforced on chain: closing pays 6 on the home chain
        await carol.close_channel(channel.id)
        assert await _tokens(sb, first, home_wallet.address) == 6 * U
    finally:
        await carol.close()


async def test_a_credit_committed_while_the_nodes_lock_step_is_mined_is_still_settled(
    sb: LocalSandbox,
) -> None:
    """The node puts a deposit's lock on the home hub after co-signing it; the user's credit
    (escrow_deposit) may be committed while that transaction is on its way. The step's
    record written after it lands must keep the credit: a copy taken before it undid the
    credit's record, and the escrow stayed on the escrow chain with nothing owed on it (the
    reliability model found it under load). Here the lock step is held, once its
    transaction is mined, until the whole deposit_from has returned."""
    first, second = sb.network, sb.network.on_chain(SECOND)
    wallet = chain_of(sb, first.chain_id).wallet_for(PrivateKey.generate())
    await fund_on(sb, first, wallet.address, 2 * U)
    await fund_on(sb, second, wallet.address, U)
    gina = await ChannelProviderV1(first, wallet).connect()
    hub_b = ChannelHubClient(chain_of(sb, SECOND).wallet(0), second.contracts.channel_hub)
    node = sb.nitronode
    assert node is not None and node.service is not None
    service = node.service
    action = service._escrow_action
    mined, release = asyncio.Event(), asyncio.Event()

    async def held(escrow: Any, step: str) -> Any:
        tx = await action(escrow, step)
        if step == "home_lock":
            mined.set()
            await release.wait()
        return tx

    service._escrow_action = held  # type: ignore[method-assign]
    try:
        vault = await hub_b.get_node_balance(str(second.token))
        channel = await gina.create_channel(gina.node_address, gina.asset, 2 * U)
        await gina.deposit_from(SECOND, U, channel_id=channel.id)
        await mined.wait()  # the lock's step landed and is held; the credit is committed
        latest = gina.store.latest_state(gina.asset)
        assert latest is not None and int(latest["transition"]["type"]) == 20
        escrow_id = str(latest["escrow_channel_id"])
        assert service.ledger.escrows[escrow_id]["status"] == "credited"
        release.set()
        await node.settled()
        record = service.ledger.escrows[escrow_id]
        assert record["status"] == "settled"
        assert record["done"] == ["home_lock", "home_credit", "escrow_release"]
        data = await hub_b.get_escrow_deposit_data(escrow_id)
        assert (data.status, data.locked_amount) == ("FINALIZED", 0)
        assert await hub_b.get_node_balance(str(second.token)) == vault + U
        await _home_hub_holds(gina, channel.id, latest, 3 * U)
    finally:
        release.set()
        service._escrow_action = action  # type: ignore[method-assign]
        await gina.close()


async def test_the_node_refuses_to_credit_an_escrow_the_other_chain_does_not_hold(
    sb: LocalSandbox,
) -> None:
    """The escrow_deposit state before initiateEscrowDeposit on the escrow chain: refused
    (never unbacked funds), and nothing changes at the node."""
    first = sb.network
    wallet = chain_of(sb, first.chain_id).wallet_for(PrivateKey.generate())
    await fund_on(sb, first, wallet.address, 4 * U)
    dave = await ChannelProviderV1(first, wallet).connect()
    try:
        await dave.create_channel(dave.node_address, dave.asset, 4 * U)
        lock = await dave.client.mutual_lock(dave.asset, SECOND, "1")
        with pytest.raises(RelayError, match="escrow deposit is not locked on its chain yet"):
            await dave.client.escrow_deposit(lock, "1")
        assert await dave.balances() == {dave.asset: 4 * U}
        node = await dave.client.get_latest_state(wallet.address, dave.asset, False)
        assert node is not None and int(node["transition"]["type"]) == 120
    finally:
        await dave.close()


async def test_a_restarted_node_settles_the_escrow_it_credited(sb: LocalSandbox) -> None:
    """The credit is committed with the escrow's record; if the node cannot finalize the
    escrow on its chain then (here: the first attempt fails), a restarted node, reading the
    record back, does it."""
    first, second = sb.network, sb.network.on_chain(SECOND)
    key = PrivateKey.generate()
    wallet = chain_of(sb, first.chain_id).wallet_for(key)
    await fund_on(sb, first, wallet.address, 2 * U)
    await fund_on(sb, second, wallet.address, U)
    erin = await ChannelProviderV1(first, wallet).connect()
    hub_b = ChannelHubClient(chain_of(sb, SECOND).wallet(0), second.contracts.channel_hub)
    node = sb.nitronode
    assert node is not None and node.service is not None
    settle = node.service.settle_escrow

    async def unreachable(escrow: Any) -> Any:
        raise RuntimeError("the escrow chain is unreachable")

    node.service.settle_escrow = unreachable  # type: ignore[method-assign]
    try:
        await erin.create_channel(erin.node_address, erin.asset, 2 * U)
        await erin.deposit_from(SECOND, U)
        await node.settled()
        latest = erin.store.latest_state(erin.asset)
        assert latest is not None
        escrow_id = str(latest["escrow_channel_id"])
        assert (await hub_b.get_escrow_deposit_data(escrow_id)).status == "INITIALIZED"
        assert node.service.ledger.escrows[escrow_id]["status"] == "credited"
    finally:
        node.service.settle_escrow = settle  # type: ignore[method-assign]
    vault = await hub_b.get_node_balance(str(second.token))
    await sb.restart_nitronode()
    try:
        restarted = sb.nitronode
        assert restarted is not None and restarted is not node
        await restarted.settled()
        data = await hub_b.get_escrow_deposit_data(escrow_id)
        assert (data.status, data.locked_amount) == ("FINALIZED", 0)
        assert await hub_b.get_node_balance(str(second.token)) == vault + U
        assert restarted.service is not None
        assert restarted.service.ledger.escrows[escrow_id]["status"] == "settled"
        assert await erin.balances() == {erin.asset: 3 * U}  # the provider reconnects
    finally:
        await erin.close()


async def test_a_deposit_from_cut_short_is_finished_by_the_next_provider(
    sb: LocalSandbox,
) -> None:
    """The process dies after the mutual lock is co-signed (before the escrow transaction),
    then again after the escrow is locked (before the credit): each time the next provider's
    recover() (run on connect) finishes the step, and the deposit is credited once."""
    first, second = sb.network, sb.network.on_chain(SECOND)
    wallet = chain_of(sb, first.chain_id).wallet_for(PrivateKey.generate())
    await fund_on(sb, first, wallet.address, 2 * U)
    await fund_on(sb, second, wallet.address, 2 * U)
    frank = await ChannelProviderV1(first, wallet).connect()
    store = frank.store.path
    await frank.create_channel(frank.node_address, frank.asset, 2 * U)

    hub = frank._hub_on(SECOND)

    async def dies(*_a: Any, **_k: Any) -> Any:
        raise RelayUnavailableError("the process died before sending the escrow transaction")

    hub.initiate_escrow_deposit = dies  # type: ignore[method-assign]
    with pytest.raises(RelayUnavailableError):
        await frank.deposit_from(SECOND, U)
    await frank.close()
    assert await _tokens(sb, second, wallet.address) == 2 * U  # nothing left the wallet yet

    again = await ChannelProviderV1(first, wallet).connect()  # recovers: escrow, then credit
    try:
        assert await _tokens(sb, second, wallet.address) == U
        assert await again.balances() == {again.asset: 3 * U}
        latest = again.store.latest_state(again.asset)
        assert latest is not None and int(latest["transition"]["type"]) == 20
        assert latest["node_sig"]
        assert again.store.path == store
    finally:
        await again.close()

    # the second cut: the escrow is locked, the credit never sent
    third = await ChannelProviderV1(first, wallet).connect()
    credit = third.client.escrow_deposit

    async def lost(*_a: Any, **_k: Any) -> Any:
        raise RelayUnavailableError("connection lost before the credit")

    third.client.escrow_deposit = lost  # type: ignore[method-assign]
    with pytest.raises(RelayUnavailableError):
        await third.deposit_from(SECOND, U // 2)
    third.client.escrow_deposit = credit  # type: ignore[method-assign]
    await third.close()
    fourth = await ChannelProviderV1(first, wallet).connect()
    try:
        assert await fourth.balances() == {fourth.asset: 3 * U + U // 2}
        assert await _tokens(sb, second, wallet.address) == U // 2
        assert sb.nitronode is not None
        await sb.nitronode.settled()
        again_done = await fourth.recover()  # nothing left to do: credited once
        assert again_done == []
    finally:
        await fourth.close()


async def test_a_withdrawal_to_the_other_chain_is_paid_there_from_the_nodes_vault(
    sb: LocalSandbox,
) -> None:
    """withdraw_to: the node's lock on the second chain, the debit at home, the payout to the
    wallet there; the node refuses a lock larger than the backed balance and a debit before
    its lock is on that chain."""
    first, second = sb.network, sb.network.on_chain(SECOND)
    wallet = chain_of(sb, first.chain_id).wallet_for(PrivateKey.generate())
    await fund_on(sb, first, wallet.address, 5 * U)
    await fund_on(sb, second, wallet.address, 0)
    gina = await ChannelProviderV1(first, wallet).connect()
    hub_b = ChannelHubClient(chain_of(sb, SECOND).wallet(0), second.contracts.channel_hub)
    vault = await hub_b.get_node_balance(str(second.token))
    try:
        channel = await gina.create_channel(gina.node_address, gina.asset, 5 * U)
        with pytest.raises(RelayError, match="insufficient backed funds"):
            await gina.withdraw_to(SECOND, 6 * U, channel_id=channel.id)
        payout = await gina.withdraw_to(SECOND, 2 * U, channel_id=channel.id)
        assert f"/chain/{SECOND}/" in payout.explorer_url
        assert await _tokens(sb, second, wallet.address) == 2 * U
        assert await _tokens(sb, first, wallet.address) == 0
        assert await gina.balances() == {gina.asset: 3 * U}
        assert await hub_b.get_node_balance(str(second.token)) == vault - 2 * U
        latest = gina.store.latest_state(gina.asset)
        assert latest is not None and int(latest["transition"]["type"]) == 21
        escrow = await hub_b.get_escrow_withdrawal_data(str(latest["escrow_channel_id"]))
        assert (escrow.status, escrow.locked_amount) == ("FINALIZED", 0)
        assert not gina.store.onchain(status="pending")
        assert sb.nitronode is not None
        await sb.nitronode.settled()  # the node puts the lock and the debit on the home hub
        await _home_hub_holds(gina, channel.id, latest, 3 * U)

        await gina.close_channel(channel.id)
        assert await _tokens(sb, first, wallet.address) == 3 * U
    finally:
        await gina.close()

    # the debit before the node's lock is on the second chain: refused, nothing moves
    other = chain_of(sb, first.chain_id).wallet_for(PrivateKey.generate())
    await fund_on(sb, first, other.address, 2 * U)
    hana = await ChannelProviderV1(first, other).connect()
    try:
        await hana.create_channel(hana.node_address, hana.asset, 2 * U)
        lock = await hana.client.escrow_lock(hana.asset, SECOND, "1")
        with pytest.raises(RelayError, match="escrow withdrawal is not locked on its chain yet"):
            await hana.client.escrow_withdraw(lock, "1")
        assert await hana.balances() == {hana.asset: 2 * U}
        # and over a pending lock, nothing but its withdrawal (a close would carry the
        # escrow ledger, which the hub refuses)
        with pytest.raises(RelayError, match="after escrow lock, only escrow withdraw"):
            await hana.client.close_home_channel(hana.asset)
    finally:
        await hana.close()


async def test_a_withdrawal_cut_short_is_finished_by_the_next_provider(sb: LocalSandbox) -> None:
    """The process dies after the escrow lock is co-signed (before the escrow transaction),
    then after the debit is co-signed (before the payout): the next provider's recover()
    finishes each, and the wallet on the other chain is paid once."""
    first, second = sb.network, sb.network.on_chain(SECOND)
    wallet = chain_of(sb, first.chain_id).wallet_for(PrivateKey.generate())
    await fund_on(sb, first, wallet.address, 4 * U)
    await fund_on(sb, second, wallet.address, 0)
    ivy = await ChannelProviderV1(first, wallet).connect()
    await ivy.create_channel(ivy.node_address, ivy.asset, 4 * U)

    async def dies(*_a: Any, **_k: Any) -> Any:
        raise RelayUnavailableError("the process died before sending the transaction")

    ivy._hub_on(SECOND).initiate_escrow_withdrawal = dies  # type: ignore[method-assign]
    with pytest.raises(RelayUnavailableError):
        await ivy.withdraw_to(SECOND, U)
    await ivy.close()
    again = await ChannelProviderV1(first, wallet).connect()  # lock, debit, payout
    try:
        assert await _tokens(sb, second, wallet.address) == U
        assert await again.balances() == {again.asset: 3 * U}
        again._hub_on(SECOND).finalize_escrow_withdrawal = dies  # type: ignore[method-assign]
        with pytest.raises(RelayUnavailableError):
            await again.withdraw_to(SECOND, U)
    finally:
        await again.close()
    third = await ChannelProviderV1(first, wallet).connect()  # the payout only
    try:
        assert await _tokens(sb, second, wallet.address) == 2 * U
        assert await third.balances() == {third.asset: 2 * U}
        assert not third.store.onchain(status="pending")
        assert await third.recover() == []
    finally:
        await third.close()


async def test_an_uncredited_escrow_deposit_is_reclaimed_after_a_challenge(
    sb: LocalSandbox,
) -> None:
    """The node does not credit an escrow deposit (here it refuses every credit): the user
    disputes it on the escrow chain before it unlocks, and once the day's dispute has passed
    takes it back there (the hub's rules: unchallenged, it would go to the node's vault)."""
    first, second = sb.network, sb.network.on_chain(SECOND)
    wallet = chain_of(sb, first.chain_id).wallet_for(PrivateKey.generate())
    await fund_on(sb, first, wallet.address, U)
    await fund_on(sb, second, wallet.address, 2 * U)
    kim = await ChannelProviderV1(first, wallet).connect()
    node = sb.nitronode
    assert node is not None and node.service is not None
    credit = node.service.check_escrow_deposit

    async def abandons(state: Any) -> None:
        raise RelayError("the node has gone quiet")

    node.service.check_escrow_deposit = abandons  # type: ignore[method-assign]
    try:
        await kim.create_channel(kim.node_address, kim.asset, U)
        with pytest.raises(RelayError, match="gone quiet"):
            await kim.deposit_from(SECOND, 2 * U)
        assert await _tokens(sb, second, wallet.address) == 0  # locked in the escrow
        assert await kim.balances() == {kim.asset: U}  # and not credited
        with pytest.raises(ChannelStateError, match="INITIALIZED"):
            await kim.reclaim_escrow_deposit()  # nothing to reclaim before a dispute

        await kim.challenge_escrow_deposit()
        hub_b = ChannelHubClient(chain_of(sb, SECOND).wallet(0), second.contracts.channel_hub)
        lock = kim.store.latest_state(kim.asset)
        assert lock is not None
        record = await hub_b.get_escrow_deposit_data(str(lock["escrow_channel_id"]))
        assert record.status == "DISPUTED"
        with pytest.raises(ChannelStateError, match="dispute ends at"):
            await kim.reclaim_escrow_deposit()
        # past the unlock time a purge does not take a disputed deposit for the node
        await chain_of(sb, SECOND).time_travel(3 * 3600 + 1)
        await hub_b.purge_escrow_deposits(64)
        assert (await hub_b.get_escrow_deposit_data(record.escrow_id)).status == "DISPUTED"

        await chain_of(sb, SECOND).time_travel(24 * 3600)
        tx = await kim.reclaim_escrow_deposit()
        assert f"/chain/{SECOND}/" in tx.explorer_url
        assert await _tokens(sb, second, wallet.address) == 2 * U
        data = await hub_b.get_escrow_deposit_data(record.escrow_id)
        assert (data.status, data.locked_amount) == ("FINALIZED", 0)
    finally:
        node.service.check_escrow_deposit = credit  # type: ignore[method-assign]
        await kim.close()


async def _eventually(check: Any, what: str, timeout: float = 30.0) -> None:
    """Wait until ``await check()`` is true: the node in its own process acts on the chains
    after it replies, and a chain read is the only thing that shows it (polled, bounded)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{what}: not seen within {timeout} s")
        await asyncio.sleep(0.05)


async def test_a_sigkilled_node_loses_no_escrow_credit_and_finishes_its_steps(
    sb: LocalSandbox, tmp_path: Path
) -> None:
    """The node in its own process, serving and reading both chains, is SIGKILLed the moment
    it has acknowledged an escrow deposit's credit (its on-chain steps maybe half done). On
    restart, over the same database and port, the credit is there with the signature sent
    back, and the node finishes its steps: the escrow released to its vault on the second
    chain, the lock and the credit on the home hub."""
    from dataclasses import replace

    from settlement_widgets.channel.v1.node import NitronodeProcess, NodeAsset, NodeToken

    first, second = sb.network, sb.network.on_chain(SECOND)
    assert sb.deployment is not None and first.token is not None and second.token is not None
    d = sb.deployment
    asset = NodeAsset(
        symbol=d.token_symbol,
        decimals=d.token_decimals,
        tokens=(
            NodeToken(first.chain_id, first.token, d.token_decimals),
            NodeToken(SECOND, second.token, d.token_decimals),
        ),
    )
    node = NitronodeProcess(
        db_path=tmp_path / "node.sqlite",
        node_key=sb._broker_key,  # the hubs' NODE
        chain_id=first.chain_id,
        hub=str(first.contracts.channel_hub),
        assets=[asset],
        rpc_url=first.rpc_url,
        extra_chains=[(SECOND, str(second.contracts.channel_hub), str(second.rpc_url))],
        rate_limit_per_sec=1000,
        rate_limit_burst=1000,
    )
    await node.start()
    try:
        net = replace(first, node_url=node.url)
        wallet = chain_of(sb, first.chain_id).wallet_for(PrivateKey.generate())
        await fund_on(sb, first, wallet.address, U)
        await fund_on(sb, second, wallet.address, 2 * U)
        lara = await ChannelProviderV1(net, wallet).connect()
        try:
            channel = await lara.create_channel(lara.node_address, lara.asset, U)
            credit = lara.client.escrow_deposit

            async def then_killed(*args: Any, **kw: Any) -> Any:
                state = await credit(*args, **kw)  # acknowledged: the reply is here
                await node.kill()
                return state

            lara.client.escrow_deposit = then_killed  # type: ignore[method-assign]
            await lara.deposit_from(SECOND, 2 * U)
            acked = lara.store.latest_state(lara.asset)
            assert acked is not None and int(acked["transition"]["type"]) == 20
        finally:
            await lara.close()

        await node.restart()
        again = await ChannelProviderV1(net, wallet).connect()
        try:
            latest = await again.client.get_latest_state(wallet.address, again.asset, True)
            assert latest is not None
            assert (latest["version"], latest["node_sig"]) == (acked["version"], acked["node_sig"])
            assert await again.balances() == {again.asset: 3 * U}
            hub_b = ChannelHubClient(chain_of(sb, SECOND).wallet(0), second.contracts.channel_hub)
            escrow_id = str(acked["escrow_channel_id"])

            async def released() -> bool:
                return (await hub_b.get_escrow_deposit_data(escrow_id)).status == "FINALIZED"

            async def on_home() -> bool:
                data = await again.hub.get_channel_data(channel.id)
                return int(data.last_state.get("version", 0)) == int(acked["version"])

            await _eventually(released, "the escrow released to the node's vault")
            await _eventually(on_home, "the credit on the home hub")
            assert await _tokens(sb, second, wallet.address) == 0
        finally:
            await again.close()
    finally:
        await node.aclose()
