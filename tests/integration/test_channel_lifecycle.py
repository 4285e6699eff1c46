"""The channel method end to end on the local sandbox (in-process EVM and anvil), through
``ChannelProvider`` only: faucet -> create with an initial amount -> off-chain transfers ->
cooperative close -> withdrawal, the proof log it leaves, and the dispute path.

Every on-chain claim is checked against the chain itself (receipts read back by hash and
decoded independently, token balances), every off-chain claim against the relay's ledger as
the second wallet's own provider sees it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channel_helpers import ASSET, U, fresh_wallet, provider, sandbox, token_balance

from settlement_widgets.channel import ChannelProvider, Transfer, request_faucet_tokens
from settlement_widgets.channel.v0_5.chain.custody_events import Closed, EventDecoder
from settlement_widgets.channel.v0_5.core.types import StateIntent
from settlement_widgets.errors import ChannelStateError
from settlement_widgets.proofs import list_proofs
from settlement_widgets.sandbox import LocalSandbox

pytestmark = pytest.mark.asyncio(loop_scope="module")
__all__ = ["sandbox"]  # the module-scoped fixture, imported


async def test_faucet_create_transfer_close_withdraw(sandbox: LocalSandbox) -> None:
    await _faucet_create_transfer_close_withdraw(sandbox)


async def test_the_lifecycle_twenty_times_in_a_row(sandbox: LocalSandbox) -> None:
    """The lifecycle failed 7 runs in 8 on anvil while close_channel returned before the
    relay applied the Closed event; back to back, with nothing in between, it must hold
    every time."""
    for _ in range(20):
        await _faucet_create_transfer_close_withdraw(sandbox)


async def _faucet_create_transfer_close_withdraw(sandbox: LocalSandbox) -> None:
    alice = await fresh_wallet(sandbox, tokens=50 * U)
    bob = await fresh_wallet(sandbox, tokens=0)
    received: list[Transfer] = []
    all_received = asyncio.Event()
    amounts = [1_500_000, 250_000, 1, 3 * U]

    def on_transfer(transfer: Transfer) -> None:
        received.append(transfer)
        if len(received) == len(amounts):
            all_received.set()

    async with provider(sandbox, alice) as pa, provider(sandbox, bob) as pb:
        pb.on("transfer", on_transfer)
        faucet = await request_faucet_tokens(alice.address, sandbox.network)
        assert (faucet["amount"], faucet["asset"]) == ("10", ASSET)
        assert await pa.balances() == {ASSET: 10 * U}

        channel = await pa.create_channel(sandbox.broker_address, sandbox.token, 5 * U)
        assert channel.status == "active"
        assert (channel.intent, channel.version) == ("RESIZE", 1)
        assert channel.participants == (alice.address, sandbox.broker_address)
        assert channel.adjudicator == sandbox.network.contracts.adjudicator
        assert channel.challenge_period == 3600
        assert {"create", "approve", "deposit", "resize"} <= set(channel.tx_hashes)
        assert await token_balance(sandbox, alice.address) == 45 * U
        assert await pa.balances() == {ASSET: 15 * U}  # faucet + initial amount, exact

        for amount in amounts:
            sent = await pa.transfer(channel.id, amount, bob.address)
            assert (sent.amount, sent.recipient, sent.gas_fee) == (amount, bob.address, 0)
        total = sum(amounts)
        assert await pa.balances() == {ASSET: 15 * U - total}
        assert await pb.balances() == {ASSET: total}
        await asyncio.wait_for(all_received.wait(), 10)  # bob's provider saw each one arrive
        assert sorted(t.amount for t in received) == sorted(amounts)
        assert {(t.direction, t.sender, t.gas_fee) for t in received} == {("in", alice.address, 0)}

        before = await token_balance(sandbox, alice.address)
        tx = await pa.close_channel(channel.id)
        assert tx.explorer_url == f"{sandbox.network.explorer_base}/tx/{tx.hash}"
        assert tx.receipt["status"] == 1

        # the receipt as the chain has it, decoded independently
        w3 = alice.w3
        receipt = await w3.eth.get_transaction_receipt(tx.hash)  # type: ignore[arg-type]
        assert receipt["status"] == 1
        decoder = EventDecoder(pa.custody.abi, sandbox.network.contracts.custody)
        (closed,) = [e for e in decoder.decode_logs(receipt["logs"]) if isinstance(e, Closed)]
        assert closed.channel_id.lower() == channel.id
        final = pa.store.find_state(channel.id, closed.final_state.version, StateIntent.FINALIZE)
        assert final is not None and final.status == "onchain"
        assert closed.final_state == final.state  # byte for byte, signatures included
        assert closed.final_state.allocations[0].destination == alice.address
        assert closed.final_state.allocations[0].amount == 15 * U - total

        # withdrawn: the whole off-chain balance is now in the wallet
        assert tx.withdrawal is not None and tx.withdrawal.status == 1
        assert (
            tx.withdrawal.explorer_url == f"{sandbox.network.explorer_base}/tx/{tx.withdrawal.hash}"
        )
        assert await token_balance(sandbox, alice.address) == before + 15 * U - total
        assert await pa.balances() == {ASSET: 0}
        assert await pb.balances() == {ASSET: total}

        closed_channel = pa.get_channel(channel.id)
        assert closed_channel.status == "final"
        assert closed_channel.settlement_tx == tx.hash
        assert closed_channel.tx_hashes["withdraw"] == tx.withdrawal.hash
        work = pa.pending_work()
        assert work == {
            "operations": [],
            "unsubmitted_states": [],
            "pending_txs": [],
            "pending_transfers": [],
        }
        history = pa.history(channel.id)
        assert list(history["event"]).count("transfer sent") == len(amounts)
        assert history["event"].iloc[-1] == "withdrawn to wallet"
        assert history["explorer_url"].dropna().str.startswith(sandbox.network.explorer_base).all()
        with pytest.raises(ChannelStateError, match="already closed"):
            await pa.close_channel(channel.id)


async def test_a_lifecycle_leaves_on_chain_proofs_with_explorer_links(
    sandbox: LocalSandbox,
) -> None:
    wallet = await fresh_wallet(sandbox)
    async with provider(sandbox, wallet) as p:
        channel = await p.create_channel(sandbox.broker_address, sandbox.token, 2 * U)
        await p.transfer(channel.id, U, (await fresh_wallet(sandbox, tokens=0)).address)
        tx = await p.close_channel(channel.id)
    # close() waited for the proofs written in the background
    log = list_proofs("channel", sandbox.network)
    assert log["chainId"] == sandbox.network.chain_id
    on_chain = {p["step"]: p for p in log["proofs"] if p["type"] == "on-chain"}
    assert {"create_channel", "resize_channel", "close_channel", "withdraw"} <= set(on_chain)
    for proof in on_chain.values():
        assert proof["explorerUrl"] == f"{sandbox.network.explorer_base}/tx/{proof['txHash']}"
    assert on_chain["close_channel"]["txHash"] == tx.hash
    assert tx.withdrawal is not None and on_chain["withdraw"]["txHash"] == tx.withdrawal.hash
    off_chain = [p for p in log["proofs"] if p["type"] == "off-chain"]
    assert [p["data"]["amount"] for p in off_chain if p["step"] == "transfer"] == ["1"]


async def test_dispute_challenge_then_close_after_the_challenge_period(
    sandbox: LocalSandbox,
) -> None:
    wallet = await fresh_wallet(sandbox)
    async with provider(sandbox, wallet) as p:
        statuses: list[str] = []
        challenged: list[object] = []
        closed: list[object] = []
        p.on("channel_updated", lambda c: statuses.append(c.status))
        p.on("channel_challenged", challenged.append)
        p.on("channel_closed", closed.append)
        channel = await p.create_channel(sandbox.broker_address, sandbox.token, 2 * U)
        stored = p.store.latest_onchain_state(channel.id)
        assert stored is not None and stored.intent == StateIntent.RESIZE

        tx = await p.challenge(channel.id)
        event = tx.event("Challenged")
        assert event is not None and event.state == stored  # the stored state, as signed
        disputed = p.get_channel(channel.id)
        assert disputed.status == "dispute"
        block = await wallet.w3.eth.get_block(tx.block_number)
        assert disputed.challenge_expiry == int(block["timestamp"]) + 3600
        assert [c.status for c in challenged] == ["dispute"]  # type: ignore[attr-defined]

        with pytest.raises(ChannelStateError, match="in dispute until"):
            await p.close_channel(channel.id)
        with pytest.raises(ChannelStateError, match="dispute"):
            await p.transfer(channel.id, 1, sandbox.broker_address)

        assert sandbox.chain is not None
        await sandbox.chain.time_travel(3600 + 1)
        tx = await p.close_channel(channel.id)
        assert tx.receipt["status"] == 1 and tx.closed is not None
        assert tx.withdrawal is None  # funds followed the challenged state: nothing locked
        assert p.get_channel(channel.id).status == "final"
        assert [c.status for c in closed] == ["final"]  # type: ignore[attr-defined]
        # reported in order: active, then dispute, then final (each once)
        seen = [s for i, s in enumerate(statuses) if i == 0 or statuses[i - 1] != s]
        assert seen.index("active") < seen.index("dispute") < seen.index("final")
        assert seen.count("dispute") == 1 and seen[-1] == "final"
        assert await sandbox.custody(wallet).channel_status(channel.id) == 0  # VOID


async def test_a_dispute_close_the_relay_reports_first_still_shows_its_transaction(
    sandbox: LocalSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Closing a disputed channel puts the challenged state on chain, so the relay's
    ``closed`` report (``cu``) leaves the record exactly as the ``Closed`` event will. When
    that report arrives before our own receipt (the Sepolia twin's interval mining made it
    the usual order), the receipt must still show the channel with its closing transaction:
    the last ``channel_updated`` carried no ``settlement_tx`` before. (No custody watcher:
    only the relay's report and our receipt are in play, in that order.)"""
    wallet = await fresh_wallet(sandbox)
    async with provider(sandbox, wallet, watch_interval=None) as p:
        channel = await p.create_channel(sandbox.broker_address, sandbox.token, 2 * U)
        await p.challenge(channel.id)
        assert sandbox.chain is not None
        await sandbox.chain.time_travel(3600 + 1)
        shown: list[Any] = []
        relay_said_final = asyncio.Event()

        def seen(c: Any) -> None:
            shown.append(c)
            if c.status == "final":
                relay_said_final.set()

        p.on("channel_updated", seen)
        receipt_of = wallet.wait

        async def receipt_after_the_relay(tx_hash: str, **kwargs: Any) -> Any:
            receipt = await receipt_of(tx_hash, **kwargs)
            await asyncio.wait_for(relay_said_final.wait(), 60)  # the relay's cu comes first
            return receipt

        monkeypatch.setattr(wallet, "wait", receipt_after_the_relay)
        tx = await p.close_channel(channel.id)
        assert shown[0].status == "final" and shown[0].settlement_tx is None  # the relay's
        assert shown[-1].status == "final" and shown[-1].settlement_tx == tx.hash
        assert p.get_channel(channel.id).settlement_tx == tx.hash


async def test_resize_in_and_out_and_withdraw_through_the_channel(
    sandbox: LocalSandbox,
) -> None:
    wallet = await fresh_wallet(sandbox, tokens=20 * U)
    async with provider(sandbox, wallet) as p:
        channel = await p.create_channel(sandbox.broker_address, sandbox.token)
        assert (channel.version, channel.intent) == (0, "INITIALIZE")
        assert await p.balances() in ({}, {ASSET: 0})
        tx = await p.resize(channel.id, 8 * U)
        assert tx.event("Resized") is not None
        assert await p.balances() == {ASSET: 8 * U}
        assert await token_balance(sandbox, wallet.address) == 12 * U
        tx = await p.resize(channel.id, -3 * U)  # off-chain -> the wallet's custody ledger
        assert await p.balances() == {ASSET: 5 * U}
        assert await sandbox.custody(wallet).balance(sandbox.token) == 3 * U
        out = await p.withdraw()  # everything the custody holds for the wallet
        assert out.step == "withdraw"
        assert await token_balance(sandbox, wallet.address) == 15 * U
        out = await p.withdraw(2 * U, channel_id=channel.id)
        assert await p.balances() == {ASSET: 3 * U}
        assert await token_balance(sandbox, wallet.address) == 17 * U
        assert p.get_channel(channel.id).version == 3
        assert p.get_channel(channel.id).status == "active"
        other: ChannelProvider = provider(sandbox, wallet)  # a second provider over the store
        try:
            assert [c.id for c in other.channels()] == [channel.id]
            assert other.get_channel(channel.id) == p.get_channel(channel.id)
        finally:
            await other.close()


async def test_the_provider_singleton(sandbox: LocalSandbox) -> None:
    from settlement_widgets import providers

    wallet = await fresh_wallet(sandbox)
    config = providers.create_local_channel_config(sandbox)
    assert config.custody == sandbox.network.contracts.custody and config.challenge_period == 3600
    created = providers.init_channel_provider(config, wallet)
    assert providers.get_channel_provider() is created
    assert await created.balances() == {}
    providers.reset_channel_provider()
    assert providers.get_channel_provider() is None
    await asyncio.gather(*providers._pending_closes)  # the close it scheduled
    assert created.relay is not None and not created.relay.connected
