"""``ChannelProviderV1`` on ``LocalSandbox(protocol="v1")``: the v0.5 provider's public API
over Nitrolite v1 (our Nitronode, our ChannelHub), on both chain backends.

Each operation is followed at once (no sleeps) by reads that must already show it: the
provider's store, the node's ledger (``balances``), the hub (``get_channel_data``) and the
wallet's token balance.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from channel_helpers import BACKENDS, fresh_wallet

from settlement_widgets.channel.models import Transfer
from settlement_widgets.channel.v1 import ChannelProviderV1
from settlement_widgets.channel.v1.client.store import V1Store
from settlement_widgets.errors import (
    ChannelNotFoundError,
    ChannelStateError,
    ConfigurationError,
    InsufficientBalanceError,
    InvalidAmountError,
    RelayUnavailableError,
    SettlementError,
    TransactionFailedError,
)
from settlement_widgets.keys import PrivateKey
from settlement_widgets.sandbox import LocalSandbox
from settlement_widgets.wallet import WalletClient

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

U = 10**6


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=BACKENDS)
async def sb(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[LocalSandbox]:
    data = tmp_path_factory.mktemp("sandbox-v1")
    async with LocalSandbox(
        chain=request.param, protocol="v1", v4=False, wallets=1, data_dir=data
    ) as sandbox:
        yield sandbox


async def _provider(sb: LocalSandbox, wallet: WalletClient, **kw: Any) -> ChannelProviderV1:
    return await ChannelProviderV1(sb.network, wallet, **kw).connect()


async def _wallet_tokens(sb: LocalSandbox, address: str) -> int:
    assert sb.chain is not None
    probe = ChannelProviderV1(sb.network, sb.chain.wallet(0))
    return await probe.hub.token_balance(sb.token, address)


async def test_the_sandbox_profile_names_v1(sb: LocalSandbox) -> None:
    net = sb.network
    assert net.protocol == "nitrolite-v1"
    assert net.contracts.channel_hub is not None and sb.hub is not None
    assert net.contracts.channel_hub == sb.hub.hub
    assert sb.nitronode is not None and net.node_url == sb.nitronode.url


async def test_home_channel_lifecycle_back_to_back(sb: LocalSandbox) -> None:
    alice, bob = await fresh_wallet(sb), await fresh_wallet(sb, tokens=0)
    pa, pb = await _provider(sb, alice), await _provider(sb, bob)
    try:
        start = await _wallet_tokens(sb, alice.address)
        channel = await pa.create_channel(pa.node_address, sb.token, 5 * U)
        assert channel.status == "active" and channel.amount == 5 * U and channel.version == 1
        data = await pa.hub.get_channel_data(channel.id)
        assert data.status == "OPERATING" and data.locked_funds == 5 * U
        assert await _wallet_tokens(sb, alice.address) == start - 5 * U

        sent = [await pa.transfer(channel.id, amount, bob.address) for amount in (U, U // 2, 1)]
        assert [t.amount for t in sent] == [U, U // 2, 1] and len({t.id for t in sent}) == 3
        assert await pa.balances() == {pa.asset: 5 * U - U - U // 2 - 1}
        # bob has no channel: the node holds the receive states for him
        assert await pb.balances() == {pb.asset: U + U // 2 + 1}
        await pb.sync()
        received = [t for t in pb.transfers() if t.direction == "in"]
        assert [(t.amount, t.sender) for t in received] == [
            (U, alice.address),
            (U // 2, alice.address),
            (1, alice.address),
        ]
        await pb.sync()  # nothing new: no second row
        assert len([t for t in pb.transfers() if t.direction == "in"]) == 3

        tx = await pa.withdraw(U)
        assert tx.status == 1 and tx.step == "withdraw"
        assert await _wallet_tokens(sb, alice.address) == start - 4 * U
        assert pa.get_channel(channel.id).amount == 5 * U - 2 * U - U // 2 - 1

        closing = await pa.close_channel(channel.id)
        after = pa.get_channel(channel.id)
        assert after.status == "final" and after.tx_hashes["close"] == closing.hash
        assert (await pa.hub.get_channel_data(channel.id)).status == "CLOSED"
        assert await _wallet_tokens(sb, alice.address) == start - U - U // 2 - 1
        assert await pa.balances() == {pa.asset: 0}
        with pytest.raises(ChannelStateError, match="closed"):
            await pa.transfer(channel.id, 1, bob.address)
    finally:
        await pa.close()
        await pb.close()


async def test_create_with_zero_then_close_and_reopen(sb: LocalSandbox) -> None:
    carol = await fresh_wallet(sb)
    pc = await _provider(sb, carol)
    try:
        empty = await pc.create_channel(pc.node_address, pc.asset, 0)
        assert empty.status == "active" and empty.amount == 0 and empty.intent == "OPERATE"
        tx = await pc.close_channel(empty.id)
        assert tx.status == 1 and pc.get_channel(empty.id).status == "final"
        # a new epoch: a new channel with a deposit, right after
        again = await pc.create_channel(pc.node_address, pc.asset, 2 * U)
        assert again.id != empty.id and again.amount == 2 * U and again.version == 1
        await pc.close_channel(again.id)
        assert [c.status for c in pc.channels()] == ["final", "final"]
    finally:
        await pc.close()


async def test_a_challenge_then_close_after_the_period(sb: LocalSandbox) -> None:
    assert sb.chain is not None
    dave, erin = await fresh_wallet(sb), await fresh_wallet(sb, tokens=0)
    pd = await _provider(sb, dave)
    try:
        start = await _wallet_tokens(sb, dave.address)
        channel = await pd.create_channel(pd.node_address, pd.asset, 3 * U)
        await pd.transfer(channel.id, U, erin.address)
        tx = await pd.challenge(channel.id)
        assert tx.status == 1 and pd.get_channel(channel.id).status == "dispute"
        data = await pd.hub.get_channel_data(channel.id)
        assert data.status == "DISPUTED" and data.challenge_expiry > 0
        with pytest.raises(TransactionFailedError):
            await pd.close_channel(channel.id)  # the period has not passed
        await sb.chain.time_travel(channel.challenge_period + 1)
        await pd.close_channel(channel.id)
        assert pd.get_channel(channel.id).status == "final"
        # paid out the challenged (latest co-signed) state: 3 - 1
        assert await _wallet_tokens(sb, dave.address) == start - U
    finally:
        await pd.close()


async def test_an_app_session_between_two_users(sb: LocalSandbox) -> None:
    frank, grace = await fresh_wallet(sb), await fresh_wallet(sb)
    pf, pg = await _provider(sb, frank), await _provider(sb, grace)
    try:
        await pf.create_channel(pf.node_address, pf.asset, 4 * U)
        await pg.create_channel(pg.node_address, pg.asset, 0)
        session = await pf.create_app_session(
            [frank.address, grace.address], application_id="chess", cosigners=[pg]
        )
        assert session.version == 1 and session.status == "open"
        session = await pf.deposit_to_app_session(session.id, 3 * U, cosigners=[pg])
        assert session.version == 2 and session.allocations[frank.address] == 3 * U
        assert await pf.balances() == {pf.asset: U}
        session = await pf.submit_app_state(
            session.id, {frank.address: U, grace.address: 2 * U}, cosigners=[pg]
        )
        assert session.version == 3
        closed = await pf.close_app_session(session.id, cosigners=[pg])
        assert closed.status == "closed" and closed.version == 4
        # the node released each allocation into its participant's channel
        assert await pf.balances() == {pf.asset: 2 * U}
        assert await pg.balances() == {pg.asset: 2 * U}
        released = await pg.sync()
        assert released is not None and released["user_sig"]  # acknowledged
        await pg.close_channel()
        assert await _wallet_tokens(sb, grace.address) >= 2 * U
    finally:
        await pf.close()
        await pg.close()


async def test_bad_input_is_refused_before_anything_is_signed(sb: LocalSandbox) -> None:
    hank = await fresh_wallet(sb, tokens=U)
    ph = await _provider(sb, hank)
    try:
        with pytest.raises(ChannelStateError, match="always opened with the node"):
            await ph.create_channel(hank.address, ph.asset, 0)
        with pytest.raises(InvalidAmountError):
            await ph.create_channel(ph.node_address, ph.asset, -1)
        with pytest.raises(InsufficientBalanceError, match=f"2 {ph.asset} are needed"):
            await ph.create_channel(ph.node_address, ph.asset, 2 * U)
        with pytest.raises(ChannelNotFoundError):
            await ph.transfer(None, 1, hank.address)
        channel = await ph.create_channel(ph.node_address, ph.asset, U)
        with pytest.raises(InsufficientBalanceError) as asked:
            await ph.withdraw(2 * U)
        # in token units with the symbol (issue 34), never raw smallest units
        assert str(asked.value) == f"the channel holds 1 {ph.asset}, 2 {ph.asset} were asked"
        with pytest.raises(InvalidAmountError):
            await ph.transfer(channel.id, 0, hank.address)
        assert ph.store.latest_state(ph.asset)["version"] == "1"  # nothing else was signed
    finally:
        await ph.close()


async def test_a_v05_network_is_refused() -> None:
    from settlement_widgets.networks import SEPOLIA

    with pytest.raises(ConfigurationError, match="nitrolite-v1"):
        ChannelProviderV1(SEPOLIA, WalletClient(PrivateKey.generate()))


# --- recovery: a crash never loses a signed state ------------------------------------------


async def test_a_lost_reply_is_adopted_and_an_unsent_state_resubmitted(sb: LocalSandbox) -> None:
    ivan, judy = await fresh_wallet(sb), await fresh_wallet(sb, tokens=0)
    pi = await _provider(sb, ivan)
    store_path = pi.store.path
    channel = await pi.create_channel(pi.node_address, pi.asset, 2 * U)

    # 1. the node accepts the transfer, the reply is lost (the process dies there)
    submit = pi.client.channels_v1_submit_state

    async def reply_lost(state: Any) -> dict[str, Any]:
        await submit(state)
        raise RelayUnavailableError("connection lost before the reply")

    pi.client.channels_v1_submit_state = reply_lost  # type: ignore[method-assign]
    with pytest.raises(RelayUnavailableError):
        await pi.transfer(channel.id, U // 4, judy.address)
    await pi.close()
    mine = V1Store(store_path).latest_state(pi.asset)
    assert mine is not None and mine["version"] == "2" and "node_sig" not in mine

    again = await _provider(sb, ivan)  # recovers on connect
    state = again.store.latest_state(again.asset)
    assert state is not None and state["version"] == "2" and state["node_sig"]
    # the transfer happened (the node co-signed it): its line is in the history once
    lines = [(t.amount, t.recipient, t.direction) for t in again.transfers()]
    assert lines == [(U // 4, judy.address, "out")]

    # 2. the wallet signed, the node never saw it
    async def never_sent(state: Any) -> dict[str, Any]:
        raise RelayUnavailableError("connection lost before the request")

    again.client.channels_v1_submit_state = never_sent  # type: ignore[method-assign]
    with pytest.raises(RelayUnavailableError):
        await again.transfer(channel.id, U // 4, judy.address)
    await again.close()
    third = await _provider(sb, ivan)
    try:
        state = third.store.latest_state(third.asset)
        assert state is not None and state["version"] == "3" and state["node_sig"]
        assert await third.balances() == {third.asset: 2 * U - U // 2}
        assert [t.amount for t in third.transfers()] == [U // 4, U // 4]
    finally:
        await third.close()


async def test_a_transfer_whose_unsynced_rows_a_power_cut_took_comes_back_from_the_node(
    sb: LocalSandbox,
) -> None:
    """A transfer out is written unsynced (write-ahead and reply): the node fsynced it
    before co-signing. A power cut may take those rows; the next transfer builds on the
    node's latest and sync() gives the history line back: nothing acknowledged is lost.
    Everything else the wallet signs (here a deposit) stays fsynced."""
    kate, leo = await fresh_wallet(sb), await fresh_wallet(sb, tokens=0)
    pk = await _provider(sb, kate)
    store_path = pk.store.path
    transaction = pk.store.transaction
    channel = await pk.create_channel(pk.node_address, pk.asset, 3 * U)

    def recording(*, durable: bool = True) -> Any:
        if not pk.store._depth:  # a nested write joins the outer one's commit
            durable_log.append(durable)
        return transaction(durable=durable)

    durable_log: list[bool] = []
    pk.store.transaction = recording  # type: ignore[method-assign]
    await pk.transfer(channel.id, U, leo.address)
    assert durable_log == [False, False]  # write-ahead and reply: unsynced
    durable_log.clear()
    await pk.deposit(U, channel_id=channel.id)
    assert durable_log[0] is True  # the deposit's write-ahead: fsynced
    pk.store.transaction = transaction  # type: ignore[method-assign]
    sent = await pk.transfer(channel.id, U // 2, leo.address)
    lost = pk.store.latest_state(pk.asset)
    assert lost is not None and lost["node_sig"]
    await pk.close()

    # the power cut: the last transfer's unsynced rows never reached the disk
    with sqlite3.connect(store_path) as conn:
        conn.execute(
            "DELETE FROM states WHERE asset = ? AND version = ?", (pk.asset, int(lost["version"]))
        )
        conn.execute("DELETE FROM transfers WHERE tx_id = ?", (lost["transition"]["tx_id"],))
    again = await _provider(sb, kate)
    try:
        held = again.store.latest_state(again.asset)
        assert held is not None and int(held["version"]) == int(lost["version"]) - 1
        await again.transfer(channel.id, 1, leo.address)  # the node is ahead: it builds on it
        await again.sync()
        lines = sorted((t.amount, t.direction, t.recipient) for t in again.transfers())
        assert lines == sorted(
            [(1, "out", leo.address), (U // 2, "out", leo.address), (U, "out", leo.address)]
        )
        assert sent.amount == U // 2
        assert await again.balances() == {again.asset: 3 * U + U - U - U // 2 - 1}
        mine = again.store.latest_state(again.asset)
        node = await again.client.get_latest_state(kate.address, again.asset, False)
        assert mine is not None and node is not None
        assert (mine["version"], mine["node_sig"]) == (node["version"], node["node_sig"])
    finally:
        await again.close()


async def test_a_cosigned_deposit_whose_transaction_never_went_out_is_sent(
    sb: LocalSandbox,
) -> None:
    kim = await fresh_wallet(sb)
    pk = await _provider(sb, kim)
    store_path = pk.store.path
    channel = await pk.create_channel(pk.node_address, pk.asset, U)

    async def crash(*args: Any, **kw: Any) -> Any:
        raise KeyboardInterrupt  # the process is killed before the transaction is sent

    pk.hub.deposit_to_channel = crash  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        await pk.deposit(2 * U, channel_id=channel.id)
    await pk.close()
    assert [r["step"] for r in V1Store(store_path).onchain(status="pending")] == ["deposit"]

    again = await _provider(sb, kim)
    try:
        assert again.store.onchain(status="pending") == []
        assert (await again.hub.get_channel_data(channel.id)).locked_funds == 3 * U
        assert again.get_channel(channel.id).amount == 3 * U
    finally:
        await again.close()


async def test_the_faucet_pays_by_a_v1_transfer_that_a_new_channel_carries(
    sb: LocalSandbox,
) -> None:
    from settlement_widgets.channel import request_faucet_tokens

    liam = await fresh_wallet(sb, tokens=0)
    pl = await _provider(sb, liam)
    try:
        paid = await request_faucet_tokens(liam.address, sb.network)
        assert paid["amount"] == "10" and paid["destination"] == liam.address
        assert paid["txId"].startswith("0x") and len(paid["txId"]) == 66  # the node's tx id
        assert await pl.balances() == {pl.asset: 10 * U}  # held for liam, who has no channel
        await pl.sync()
        assert [(t.amount, t.direction) for t in pl.transfers()] == [(10 * U, "in")]
        channel = await pl.create_channel(pl.node_address, pl.asset, 0)
        assert channel.amount == 10 * U  # the receive state is carried into the new channel
        await pl.close_channel(channel.id)
        assert await _wallet_tokens(sb, liam.address) == 10 * U  # now on chain, in the wallet
    finally:
        await pl.close()


async def test_a_transfer_is_one_request_until_the_node_has_moved_on(sb: LocalSandbox) -> None:
    """Built on the state the wallet holds, a transfer is one ``submit_state``; when the node
    has moved on (a transfer received), the node refuses that state, the refused state
    leaves the store, and the SDK's two requests make the transfer on the node's latest."""
    alice, bob = await fresh_wallet(sb), await fresh_wallet(sb)
    pa, pb = await _provider(sb, alice), await _provider(sb, bob)
    sent: list[str] = []
    call = pa.client.call

    async def counted(method: str, params: Any = None) -> dict[str, Any]:
        sent.append(method)
        return await call(method, params)

    pa.client.call = counted  # type: ignore[method-assign]
    try:
        mine = await pa.create_channel(pa.node_address, sb.token, 5 * U)
        theirs = await pb.create_channel(pb.node_address, sb.token, 5 * U)
        sent.clear()
        await pa.transfer(mine.id, U, bob.address)
        assert sent == ["channels.v1.submit_state"]

        await pb.transfer(theirs.id, 2 * U, alice.address)  # alice's latest is now the node's
        sent.clear()
        await pa.transfer(mine.id, U, bob.address)
        assert sent == [
            "channels.v1.submit_state",  # built on what alice held: refused as stale
            "channels.v1.get_latest_state",
            "channels.v1.submit_state",
        ]
        sent.clear()
        await pa.transfer(mine.id, 1, bob.address)
        assert sent == ["channels.v1.submit_state"]

        assert await pa.balances() == {pa.asset: 5 * U - U + 2 * U - U - 1}
        states = pa.store.states(pa.asset)
        versions = [int(s["version"]) for s in states]
        assert versions == sorted(set(versions))  # the refused state left no row behind
        assert states[-1]["user_sig"] and states[-1]["node_sig"]
        node = await pa.client.get_latest_state(alice.address, pa.asset, False)
        assert node is not None and node["version"] == states[-1]["version"]
        assert node["home_ledger"]["user_balance"] == states[-1]["home_ledger"]["user_balance"]
    finally:
        await pa.close()
        await pb.close()


# --- pipelined transfers (issue 37) ------------------------------------------------------


def _count_submits_in_flight(provider: ChannelProviderV1) -> dict[str, int]:
    """Count ``submit_state`` requests between their send and their reply, on the client's
    transport (the real one, wrapped): ``most`` above 1 means a state was sent before the
    one ahead of it was answered."""
    seen = {"now": 0, "most": 0, "sent": 0}
    exchange = provider.client.exchange_encoded  # what the core calls, with the text

    async def counted(request: Any, text: str) -> Any:
        if request.method != "channels.v1.submit_state":
            return await exchange(request, text)
        seen["now"] += 1
        seen["sent"] += 1
        seen["most"] = max(seen["most"], seen["now"])
        try:
            return await exchange(request, text)
        finally:
            seen["now"] -= 1

    provider.client.exchange_encoded = counted  # type: ignore[method-assign]
    return seen


async def _store_and_node_agree(provider: ChannelProviderV1) -> dict[str, Any]:
    """Every state in the store is co-signed, versions run without a gap, and the latest
    is the node's latest (version, signatures, balance). Returns it."""
    states = provider.store.states(provider.asset)
    versions = [int(s["version"]) for s in states]
    assert versions == list(range(versions[0], versions[0] + len(versions)))
    assert all(s.get("user_sig") and s.get("node_sig") for s in states)
    node = await provider.client.get_latest_state(provider.address, provider.asset, False)
    mine = states[-1]
    assert node is not None and node["version"] == mine["version"]
    assert node["node_sig"] == mine["node_sig"] and node["user_sig"] == mine["user_sig"]
    assert node["home_ledger"]["user_balance"] == mine["home_ledger"]["user_balance"]
    return mine


async def test_64_transfers_in_flight_are_pipelined(sb: LocalSandbox) -> None:
    """64 concurrent transfers on one provider: states are sent before the ones ahead are
    answered, and each completes once, with its own history line, store and node agreeing."""
    alice, bob = await fresh_wallet(sb), await fresh_wallet(sb, tokens=0)
    pa = await _provider(sb, alice)
    try:
        channel = await pa.create_channel(pa.node_address, pa.asset, 50 * U)
        flight = _count_submits_in_flight(pa)
        amounts = [1000 + i for i in range(64)]
        done = await asyncio.gather(*(pa.transfer(channel.id, a, bob.address) for a in amounts))
        assert [t.amount for t in done] == amounts
        assert len({t.id for t in done}) == 64
        assert flight["most"] > 1  # pipelined, not one round trip after another
        assert flight["sent"] == 64  # and no state was refused and sent again
        assert await pa.balances() == {pa.asset: 50 * U - sum(amounts)}
        await _store_and_node_agree(pa)
        lines = [(t.amount, t.recipient) for t in pa.transfers() if t.direction == "out"]
        assert sorted(lines) == sorted((a, bob.address) for a in amounts)
        history = await pa.client.get_transactions(
            alice.address, asset=pa.asset, tx_type=30, pagination={"limit": 100}
        )
        assert len(history["transactions"]) == 64
    finally:
        await pa.close()


async def test_a_refusal_in_the_middle_of_a_pipeline(sb: LocalSandbox) -> None:
    """The 5th of 10 pipelined transfers is refused by the node (to the wallet itself): that
    call raises, the states sent behind it (refused too: their predecessor is not the
    node's latest) leave the store and are sent again, and every other call completes
    exactly once. Then the 5th of 10 asks more than the channel holds: refused before it
    is sent, the others go on."""
    carol, dave = await fresh_wallet(sb), await fresh_wallet(sb, tokens=0)
    pc = await _provider(sb, carol)
    try:
        channel = await pc.create_channel(pc.node_address, pc.asset, 10 * U)
        flight = _count_submits_in_flight(pc)
        to = [dave.address] * 10
        to[4] = carol.address
        results = await asyncio.gather(
            *(pc.transfer(channel.id, U // 10, who) for who in to), return_exceptions=True
        )
        assert isinstance(results[4], SettlementError) and "to self" in str(results[4])
        sent = [r for i, r in enumerate(results) if i != 4]
        assert all(isinstance(r, Transfer) for r in sent), results
        assert flight["most"] > 1
        assert await pc.balances() == {pc.asset: 10 * U - 9 * (U // 10)}
        await _store_and_node_agree(pc)
        assert len([t for t in pc.transfers() if t.direction == "out"]) == 9

        amounts = [U // 10] * 10
        amounts[4] = 100 * U
        results = await asyncio.gather(
            *(pc.transfer(channel.id, a, dave.address) for a in amounts), return_exceptions=True
        )
        assert isinstance(results[4], SettlementError)
        assert all(isinstance(r, Transfer) for i, r in enumerate(results) if i != 4), results
        assert await pc.balances() == {pc.asset: 10 * U - 18 * (U // 10)}
        await _store_and_node_agree(pc)
        assert len([t for t in pc.transfers() if t.direction == "out"]) == 18
    finally:
        await pc.close()


async def test_the_node_moves_on_during_a_pipeline(sb: LocalSandbox) -> None:
    """Someone pays the wallet while its transfers are in flight (two of them unanswered,
    before a third leaves): the node's latest is then its own state, the states built on
    ours are refused, and each of those transfers is made again on the node's latest; all
    complete, once."""
    erin, frank = await fresh_wallet(sb), await fresh_wallet(sb)
    pe, pf = await _provider(sb, erin), await _provider(sb, frank)
    try:
        channel = await pe.create_channel(pe.node_address, pe.asset, 10 * U)
        theirs = await pf.create_channel(pf.node_address, pf.asset, 10 * U)
        flight = _count_submits_in_flight(pe)
        exchange = pe.client.exchange_encoded

        paid = asyncio.Event()

        async def paid_with_two_in_flight(request: Any, text: str) -> Any:
            # before a pipelined state leaves behind two unanswered ones (only pipelined
            # states leave while others are in flight, until one is refused)
            pipelined = request.method == "channels.v1.submit_state" and flight["now"] >= 2
            if pipelined and not paid.is_set():
                paid.set()
                await pf.transfer(theirs.id, 3 * U, erin.address)
            return await exchange(request, text)

        pe.client.exchange_encoded = paid_with_two_in_flight  # type: ignore[method-assign]
        amounts = [U // 10 + i for i in range(12)]
        done = await asyncio.gather(*(pe.transfer(channel.id, a, frank.address) for a in amounts))
        assert [t.amount for t in done] == amounts
        assert paid.is_set()
        assert flight["sent"] > 12  # some states were refused and sent again
        assert await pe.balances() == {pe.asset: 10 * U - sum(amounts) + 3 * U}
        lines = [t.amount for t in pe.transfers() if t.direction == "out"]
        assert sorted(lines) == amounts
        await _store_and_node_agree_on_latest(pe)
        states = pe.store.states(pe.asset)  # ours only: the node's receive is not stored
        assert all(s.get("user_sig") and s.get("node_sig") for s in states)
    finally:
        await pe.close()
        await pf.close()


def _lose_replies(provider: ChannelProviderV1) -> None:
    """The node takes the first two states submitted and their replies are lost; the third
    never leaves (as if the process died there)."""
    submit = provider.client.channels_v1_submit_state
    calls = 0

    async def lose_replies(state: Any) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise RelayUnavailableError("connection lost before the request")
        await submit(state)  # the node takes it; its reply is lost
        raise RelayUnavailableError("connection lost before the reply")

    provider.client.channels_v1_submit_state = lose_replies  # type: ignore[method-assign]


@pytest.mark.parametrize("paid_meanwhile", [False, True], ids=["resubmitted", "dropped"])
async def test_recover_settles_several_pending_transfer_states(
    sb: LocalSandbox, paid_meanwhile: bool
) -> None:
    """The process dies with three pipelined transfers signed and unanswered: the node took
    the first two (their replies lost), the third never left. On the next connect the two
    are adopted (history lines, the node's signature on its latest) and the third is
    resubmitted on them; or, if the node moved on before the restart (a payment received),
    the two it took are kept and the third is dropped."""
    gina, hal = await fresh_wallet(sb), await fresh_wallet(sb)
    pg = await _provider(sb, gina)
    store_path = pg.store.path
    channel = await pg.create_channel(pg.node_address, pg.asset, 10 * U)
    _lose_replies(pg)
    results = await asyncio.gather(
        *(pg.transfer(channel.id, a, hal.address) for a in (U, 2 * U, 4 * U)),
        return_exceptions=True,
    )
    assert all(isinstance(r, RelayUnavailableError) for r in results), results
    await pg.close()
    pending = [s for s in V1Store(store_path).states(pg.asset) if not s.get("node_sig")]
    assert [int(s["version"]) for s in pending] == [2, 3, 4]

    received = 0
    if paid_meanwhile:
        ph = await _provider(sb, hal)
        try:
            await ph.create_channel(ph.node_address, ph.asset, 10 * U)
            await ph.transfer(None, U // 2, gina.address)
            received = U // 2
        finally:
            await ph.close()
    again = await _provider(sb, gina)  # recovers on connect
    try:
        sent = [U, 2 * U] if paid_meanwhile else [U, 2 * U, 4 * U]
        assert await again.balances() == {again.asset: 10 * U - sum(sent) + received}
        assert [t.amount for t in again.transfers() if t.direction == "out"] == sent
        versions = [int(s["version"]) for s in again.store.states(again.asset)]
        assert versions == [1, 2, 3] if paid_meanwhile else [1, 2, 3, 4]
        if paid_meanwhile:
            await again.sync()  # co-signs the node's latest (the payment)
        await _store_and_node_agree_on_latest(again)
        await again.transfer(channel.id, 1, hal.address)  # and the channel goes on
        await _store_and_node_agree_on_latest(again)
    finally:
        await again.close()


async def _store_and_node_agree_on_latest(provider: ChannelProviderV1) -> None:
    latest = provider.store.latest_state(provider.asset)
    node = await provider.client.get_latest_state(provider.address, provider.asset, False)
    assert latest is not None and node is not None
    assert latest["version"] == node["version"] and latest["node_sig"] == node["node_sig"]
    assert node["home_ledger"]["user_balance"] == latest["home_ledger"]["user_balance"]
