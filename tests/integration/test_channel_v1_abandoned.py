"""The Nitronode takes back what a user abandons (``LocalSandbox(protocol="v1")`` with its
second chain, both backends).

An escrow withdrawal lock the user never finishes: the node waits for its deadline (escrow
chain time, ``NitronodeConfig.abandoned_lock_secs``), challenges the record on the escrow
chain, and once the hub's day of dispute has passed finalizes it, so the lock goes back to its
vault there (ChannelHub v1.4.1 ``challengeEscrowWithdrawal`` / ``finalizeEscrowWithdrawal``).
The user's home channel then takes its next state again, and the withdrawal's second state
never. The same for a migration the user never finalizes: the node challenges the
MIGRATING_IN channel on the new chain with the migrate state and closes it once the dispute
expired, which pays the node's lock to the node's address; the user goes on on the old chain.
Every step is checked on both hubs at once; the node is told to look
(:meth:`NitronodeNode.check_abandoned`) after each move of the chain's clock instead of
waiting for its periodic look.
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
from settlement_widgets.channel.v1.node import NitronodeNode
from settlement_widgets.channel.v1.node.config import DEFAULT_ABANDONED_LOCK_SECS
from settlement_widgets.contracts import load_artifact
from settlement_widgets.errors import RelayError, RelayUnavailableError
from settlement_widgets.keys import PrivateKey
from settlement_widgets.networks import Network
from settlement_widgets.sandbox import LocalSandbox
from settlement_widgets.wallet import WalletClient

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

DAY = 24 * 3600


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=BACKENDS)
async def sb(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[LocalSandbox]:
    async with two_chain_sandbox(
        request.param, tmp_path_factory.mktemp("sandbox-v1-abandoned")
    ) as sandbox:
        yield sandbox


def _node(sb: LocalSandbox) -> NitronodeNode:
    node = sb.nitronode
    assert node is not None and node.service is not None
    return node


async def _user(sb: LocalSandbox, tokens: int) -> tuple[ChannelProviderV1, WalletClient]:
    """A new wallet with gas on both chains and ``tokens`` on the first, its home channel
    there holding them all."""
    first = sb.network
    wallet = chain_of(sb, first.chain_id).wallet_for(PrivateKey.generate())
    await fund_on(sb, first, wallet.address, tokens)
    await fund_on(sb, first.on_chain(SECOND), wallet.address, 0)  # gas only
    provider = await ChannelProviderV1(first, wallet).connect()
    await provider.create_channel(provider.node_address, provider.asset, tokens)
    return provider, wallet


def _hub(sb: LocalSandbox, network: Network) -> ChannelHubClient:
    return ChannelHubClient(chain_of(sb, network.chain_id).wallet(0), network.contracts.channel_hub)


async def _balances(sb: LocalSandbox) -> tuple[int, int]:
    """(the node's vault on the second chain, the tokens its hub holds there)."""
    second = sb.network.on_chain(SECOND)
    hub = _hub(sb, second)
    assert second.token is not None
    return (
        await hub.get_node_balance(second.token),
        await hub.token_balance(second.token, str(second.contracts.channel_hub)),
    )


async def _look(sb: LocalSandbox) -> dict[str, Any]:
    """The node's look for abandoned locks, done; returns nothing but lets callers read."""
    node = _node(sb)
    await node.check_abandoned()
    return node.service.ledger.escrows  # type: ignore[union-attr,no-any-return]


async def test_an_abandoned_withdrawal_lock_goes_back_to_the_nodes_vault(
    sb: LocalSandbox,
) -> None:
    """The user's escrow is initiated on the second chain (the node's vault locked 2) and the
    user never asks for the debit: nothing before the deadline; past it the node challenges;
    a node restarted during the dispute finalizes once it expired, and the vault holds the 2
    again; the debit is refused for good, the home channel closes with the user's 5."""
    first, second = sb.network, sb.network.on_chain(SECOND)
    hub_b = _hub(sb, second)
    vault, held = await _balances(sb)
    ann, wallet = await _user(sb, 5 * U)
    try:

        async def dies(*_a: Any, **_k: Any) -> Any:
            raise RelayUnavailableError("the user's process died after the escrow's start")

        ann._pay_out_escrow = dies  # type: ignore[method-assign]
        with pytest.raises(RelayUnavailableError):
            await ann.withdraw_to(SECOND, 2 * U)
        lock = ann.store.latest_state(ann.asset)
        assert lock is not None and int(lock["transition"]["type"]) == 110
        escrow_id = str(lock["escrow_channel_id"])
        assert (await hub_b.get_escrow_withdrawal_data(escrow_id)).status == "INITIALIZED"
        assert await _balances(sb) == (vault - 2 * U, held)

        escrows = await _look(sb)
        deadline = int(escrows[escrow_id]["reclaim_deadline"])
        now = await chain_of(sb, SECOND).timestamp()
        assert deadline - DEFAULT_ABANDONED_LOCK_SECS <= now < deadline

        # just before the deadline: nothing happens
        await chain_of(sb, SECOND).time_travel(deadline - now - 5)
        escrows = await _look(sb)
        assert escrows[escrow_id]["status"] == "locked"
        assert (await hub_b.get_escrow_withdrawal_data(escrow_id)).status == "INITIALIZED"
        assert await _balances(sb) == (vault - 2 * U, held)

        # past it: the node challenges; the debit is refused from now on
        await chain_of(sb, SECOND).time_travel(10)
        escrows = await _look(sb)
        assert escrows[escrow_id]["status"] == "reclaiming"
        assert escrows[escrow_id]["done"][-1] == "reclaim_challenge"
        record = await hub_b.get_escrow_withdrawal_data(escrow_id)
        assert (record.status, record.locked_amount) == ("DISPUTED", 2 * U)
        with pytest.raises(RelayError, match="abandoned past its deadline"):
            await ann.client.escrow_withdraw(lock, "2")
        with pytest.raises(RelayError, match="the node is taking its lock back"):
            await ann.client.close_home_channel(ann.asset)

        # a node that sent its challenge and died before recording it (its record as it was
        # written ahead), restarted during the dispute: the chain shows the challenge done,
        # so it is not sent again, and the node waits for the dispute's end
        node = _node(sb)
        assert node.service is not None
        before = dict(node.service.ledger.escrows[escrow_id])
        before["status"] = "locked"
        before["done"] = [a for a in before["done"] if a != "reclaim_challenge"]
        before.pop("txs", None)
        node.service.ledger.put_escrow(before)
        await node.flush()
        await sb.restart_nitronode()
        escrows = await _look(sb)
        assert escrows[escrow_id]["status"] == "reclaiming"
        assert "reclaim_challenge" not in escrows[escrow_id]["done"]
        assert (await hub_b.get_escrow_withdrawal_data(escrow_id)).status == "DISPUTED"
        assert await _balances(sb) == (vault - 2 * U, held)

        await chain_of(sb, SECOND).time_travel(DAY + 1)
        escrows = await _look(sb)
        assert escrows[escrow_id]["status"] == "reclaimed"
        assert escrows[escrow_id]["done"][-2:] == ["reclaim_finalize", "reclaimed"]
        assert list(escrows[escrow_id]["txs"]) == ["reclaim_finalize"]
        record = await hub_b.get_escrow_withdrawal_data(escrow_id)
        assert (record.status, record.locked_amount) == ("FINALIZED", 0)
        assert await _balances(sb) == (vault, held)
        assert await hub_b.token_balance(str(second.token), wallet.address) == 0

        # the withdrawal's second state never; the home channel goes on without the escrow
        with pytest.raises(RelayError, match="took its lock back"):
            await ann.client.escrow_withdraw(lock, "2")
        (balance,) = await ann.client.get_balances(wallet.address)
        assert (balance["amount"], balance["enforced"]) == ("5", "5")
    finally:
        await ann.close()
    # the user's next provider: its recovery leaves the lock (the node refuses the debit for
    # good) and the channel closes with the whole balance over the lock on the home hub
    again = await ChannelProviderV1(first, wallet).connect()
    try:
        assert await again.balances() == {again.asset: 5 * U}
        await again.close_channel(str(lock["home_channel_id"]))
        final = again.store.latest_state(again.asset)
        assert final is not None and "escrow_ledger" not in final
        hub_a = _hub(sb, first)
        assert first.token is not None
        assert await hub_a.token_balance(first.token, wallet.address) == 5 * U
        assert await _balances(sb) == (vault, held)
        assert await again.recover() == []
    finally:
        await again.close()


async def test_a_lock_never_put_on_chain_is_spent_there_by_the_node(sb: LocalSandbox) -> None:
    """The user has the lock co-signed and never initiates it on the second chain: past the
    deadline the node initiates it itself (so nobody can lock its vault with it later),
    challenges, and after the day finalizes; its vault ends where it began."""
    hub_b = _hub(sb, sb.network.on_chain(SECOND))
    vault, held = await _balances(sb)
    bea, _wallet = await _user(sb, 3 * U)
    try:
        lock = await bea.client.escrow_lock(bea.asset, SECOND, "1")
        escrow_id = str(lock["escrow_channel_id"])
        escrows = await _look(sb)
        assert escrows[escrow_id]["status"] == "locked"
        assert (await hub_b.get_escrow_withdrawal_data(escrow_id)).status == "VOID"

        await chain_of(sb, SECOND).time_travel(DEFAULT_ABANDONED_LOCK_SECS + 1)
        escrows = await _look(sb)
        assert escrows[escrow_id]["done"][-2:] == ["reclaim_initiate", "reclaim_challenge"]
        record = await hub_b.get_escrow_withdrawal_data(escrow_id)
        assert (record.status, record.locked_amount) == ("DISPUTED", U)
        assert await _balances(sb) == (vault - U, held)

        await chain_of(sb, SECOND).time_travel(DAY + 1)
        escrows = await _look(sb)
        assert escrows[escrow_id]["status"] == "reclaimed"
        assert (await hub_b.get_escrow_withdrawal_data(escrow_id)).status == "FINALIZED"
        assert await _balances(sb) == (vault, held)
        # the user's channel receives and sends transfers again
        cy, _cy_wallet = await _user(sb, U)
        try:
            await cy.client.transfer(bea.address, cy.asset, "1")
        finally:
            await cy.close()
        received = await bea.client.get_latest_state(bea.address, bea.asset, False)
        assert received is not None and int(received["transition"]["type"]) == 31
        assert "escrow_ledger" not in received
        peer = PrivateKey.generate().address
        sent = await bea.client.transfer(peer, bea.asset, "2")
        assert "escrow_ledger" not in sent and sent["node_sig"]
        (balance,) = await bea.client.get_balances(bea.address)
        assert balance["amount"] == "2"
    finally:
        await bea.close()


async def _node_tokens(sb: LocalSandbox, network: Network) -> int:
    assert network.token is not None
    return await _hub(sb, network).token_balance(network.token, _node(sb).node_address)


async def test_an_abandoned_migration_is_closed_on_the_new_chain_for_the_node(
    sb: LocalSandbox,
) -> None:
    """The user's migrate is initiated on the second chain (MIGRATING_IN, the node's vault
    locked 4) and never finalized: nothing before the deadline; past it the node challenges
    the channel there with the migrate state; a restarted node closes it once the channel's
    dispute expired, paying the 4 to the node's address; migrate_finalize is refused for good,
    a new migration there too (the hub would refuse a CLOSED channel), and the user's channel
    goes on on the first chain, closing with the whole balance."""
    first, second = sb.network, sb.network.on_chain(SECOND)
    hub_a, hub_b = _hub(sb, first), _hub(sb, second)
    assert first.token is not None and second.token is not None
    vault, held = await _balances(sb)
    node_tokens = await _node_tokens(sb, second)
    cid, wallet = await _user(sb, 4 * U)
    try:

        async def dies(*_a: Any, **_k: Any) -> Any:
            raise RelayUnavailableError("the user's process died after initiateMigration")

        cid._finish_migration = dies  # type: ignore[method-assign]
        with pytest.raises(RelayUnavailableError):
            await cid.migrate(SECOND)
        migrate = cid.store.latest_state(cid.asset)
        assert migrate is not None and int(migrate["transition"]["type"]) == 100
        channel_id, record_id = str(migrate["home_channel_id"]), str(migrate["escrow_channel_id"])
        there = await hub_b.get_channel_data(channel_id)
        assert (there.status, there.locked_funds) == ("MIGRATING_IN", 4 * U)
        assert await _balances(sb) == (vault - 4 * U, held)

        escrows = await _look(sb)
        deadline = int(escrows[record_id]["reclaim_deadline"])
        now = await chain_of(sb, SECOND).timestamp()
        await chain_of(sb, SECOND).time_travel(deadline - now - 5)
        escrows = await _look(sb)
        assert escrows[record_id]["status"] == "migrating"
        assert (await hub_b.get_channel_data(channel_id)).status == "MIGRATING_IN"

        await chain_of(sb, SECOND).time_travel(10)
        escrows = await _look(sb)
        assert escrows[record_id]["status"] == "reclaiming"
        assert escrows[record_id]["done"][-1] == "reclaim_challenge"
        there = await hub_b.get_channel_data(channel_id)
        assert there.status == "DISPUTED"
        with pytest.raises(RelayError, match="abandoned past its deadline"):
            await cid.client.finalize_migration(migrate)

        await sb.restart_nitronode()
        escrows = await _look(sb)
        assert (await hub_b.get_channel_data(channel_id)).status == "DISPUTED"
        challenge = int(_node(sb).service.ledger.channels[channel_id]["challenge_duration"])  # type: ignore[union-attr]
        await chain_of(sb, SECOND).time_travel(challenge + 1)
        escrows = await _look(sb)
        assert escrows[record_id]["status"] == "reclaimed"
        assert escrows[record_id]["done"][-2:] == ["reclaim_close", "reclaimed"]
        there = await hub_b.get_channel_data(channel_id)
        assert (there.status, there.locked_funds) == ("CLOSED", 0)
        # the lock left the vault for the node's address; nobody else got anything there
        assert await _balances(sb) == (vault - 4 * U, held - 4 * U)
        assert await _node_tokens(sb, second) == node_tokens + 4 * U
        assert await hub_b.token_balance(second.token, wallet.address) == 0

        with pytest.raises(RelayError, match="took its lock back"):
            await cid.client.finalize_migration(migrate)
        with pytest.raises(RelayError, match="the channel there is CLOSED"):
            await cid.migrate(SECOND)
        assert (await hub_a.get_channel_data(channel_id)).locked_funds == 4 * U
    finally:
        await cid.close()
    # the user's funds never left the first chain's hub: the next provider leaves the
    # migration (refused for good) and the channel closes there with the whole balance
    again = await ChannelProviderV1(first, wallet).connect()
    try:
        assert again.get_channel(channel_id).chain_id == first.chain_id
        assert await again.balances() == {again.asset: 4 * U}
        await again.close_channel(channel_id)
        final = again.store.latest_state(again.asset)
        assert final is not None and "escrow_ledger" not in final
        assert await hub_a.token_balance(first.token, wallet.address) == 4 * U
        assert (await hub_a.get_channel_data(channel_id)).status == "CLOSED"
        assert await _balances(sb) == (vault - 4 * U, held - 4 * U)
        assert await again.recover() == []
    finally:
        await again.close()


async def _depositor(sb: LocalSandbox, home: int, there: int) -> tuple[ChannelProviderV1, Any]:
    """A wallet with ``home`` in its home channel on the first chain and ``there`` tokens on
    the second, whose escrow deposit dies after the escrow is initiated there (the user's
    process never asks for the credit)."""
    provider, wallet = await _user(sb, home)
    second = sb.network.on_chain(SECOND)
    abi = load_artifact("TestToken").abi
    deployer = chain_of(sb, SECOND).wallet(0)
    token = deployer.w3.eth.contract(address=second.token, abi=abi)  # type: ignore[call-overload]
    await deployer.transact(token.functions.mint(wallet.address, there), abis=[abi])

    async def dies(*_a: Any, **_k: Any) -> Any:
        raise RelayUnavailableError("the user's process died before asking for the credit")

    provider._credit_escrow = dies  # type: ignore[method-assign]
    with pytest.raises(RelayUnavailableError):
        await provider.deposit_from(SECOND, there)
    return provider, wallet


async def test_an_abandoned_escrow_deposit_unlocked_to_the_vault_is_still_credited(
    sb: LocalSandbox,
) -> None:
    """Nobody finalizes an escrow deposit: after the hub's three hours it is purged to the
    node's vault on the escrow chain (the hub's rule; no dispute is possible any more). The
    node's ledger agrees: the deposit is its own, so when the user asks (the next provider's
    recovery) it credits the user at home with its lock there, exactly as if it had finalized
    the deposit itself; its step on the escrow chain is then found done."""
    first, second = sb.network, sb.network.on_chain(SECOND)
    hub_a, hub_b = _hub(sb, first), _hub(sb, second)
    assert first.token is not None and second.token is not None
    vault_b, held_b = await _balances(sb)
    vault_a = await hub_a.get_node_balance(first.token)
    dan, wallet = await _depositor(sb, U, 2 * U)
    await dan.close()
    lock = dan.store.latest_state(dan.asset)
    assert lock is not None and int(lock["transition"]["type"]) == 120
    escrow_id = str(lock["escrow_channel_id"])
    assert await _balances(sb) == (vault_b, held_b + 2 * U)
    await _node(sb).settled()
    escrows = _node(sb).service.ledger.escrows  # type: ignore[union-attr]
    assert escrows[escrow_id]["status"] == "locked"  # nothing credited

    await chain_of(sb, SECOND).time_travel(3 * 3600 + 1)
    await hub_b.purge_escrow_deposits(64)
    record = await hub_b.get_escrow_deposit_data(escrow_id)
    assert (record.status, record.locked_amount) == ("FINALIZED", 0)
    assert await _balances(sb) == (vault_b + 2 * U, held_b + 2 * U)
    assert escrows[escrow_id]["status"] == "locked"

    again = await ChannelProviderV1(first, wallet).connect()  # recover(): asks for the credit
    try:
        assert await again.balances() == {again.asset: 3 * U}
        await _node(sb).settled()
        escrows = _node(sb).service.ledger.escrows  # type: ignore[union-attr]
        assert escrows[escrow_id]["status"] == "settled"
        assert "escrow_release" not in escrows[escrow_id].get("txs", {})  # the purge did it
        home = await hub_a.get_channel_data(str(lock["home_channel_id"]))
        assert int(home.last_state["homeLedger"]["userAllocation"]) == 3 * U
        assert await hub_a.get_node_balance(first.token) == vault_a - 2 * U
        await again.close_channel(str(lock["home_channel_id"]))
        assert await hub_a.token_balance(first.token, wallet.address) == 3 * U
        assert await _balances(sb) == (vault_b + 2 * U, held_b + 2 * U)
    finally:
        await again.close()


async def test_a_deposit_the_user_disputed_and_took_back_is_never_credited(
    sb: LocalSandbox,
) -> None:
    """The other outcome of the hub's rules: the user disputes the escrow before it unlocks
    and takes it back after the day; the record is FINALIZED as after a purge, but it was
    DISPUTED at its unlock time, so the node refuses the credit."""
    second = sb.network.on_chain(SECOND)
    hub_b = _hub(sb, second)
    eve, wallet = await _depositor(sb, U, 2 * U)
    try:
        lock = eve.store.latest_state(eve.asset)
        assert lock is not None
        await eve.challenge_escrow_deposit()
        await chain_of(sb, SECOND).time_travel(DAY + 1)
        await eve.reclaim_escrow_deposit()
        record = await hub_b.get_escrow_deposit_data(str(lock["escrow_channel_id"]))
        assert record.status == "FINALIZED"
        assert second.token is not None
        assert await hub_b.token_balance(second.token, wallet.address) == 2 * U
        with pytest.raises(RelayError, match="escrow deposit is not locked on its chain yet"):
            await eve.client.escrow_deposit(lock, "2")
        assert await eve.client.get_balances(wallet.address) == [
            {"asset": eve.asset, "amount": "1", "enforced": "1"}
        ]
    finally:
        await eve.close()
