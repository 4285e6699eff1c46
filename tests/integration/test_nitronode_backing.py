"""The Nitronode never signs unbacked funds, and channel ids never collide: the real sandbox
(our ChannelHub on both chain backends, our Nitronode) driven by ``ChannelProviderV1`` and
its client, no mocks.

- a deposit (or a creation with one) counts only once the chain shows it, after the chain's
  ``confirmation_delay_secs``: until then the node refuses every next state with Nitronode
  v1.4.1's "home deposit is still ongoing"; time moves by mining, never by sleeping;
- a channel closed on chain gets no new state, and no node-signed receive state either;
  closed by a challenge (no finalize), the node advances the wallet past it with a
  challenge rescue crediting what the chain did not enforce, and a new channel opens on it;
- a creation for an id the chain or the node knows is refused ("cannot use same home channel
  id"), and the provider never picks such an id (open, close, open again works, also when
  another client took the next nonce);
- an empty reopen after a close is refused by the provider with what to do instead, before
  anything is signed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from channel_helpers import BACKENDS, fresh_wallet

from settlement_widgets import chain_clock
from settlement_widgets.channel import request_faucet_tokens
from settlement_widgets.channel.v1 import ChannelProviderV1
from settlement_widgets.channel.v1.chain.hub import ChannelHubClient, contract_definition
from settlement_widgets.channel.v1.client.store import V1Store
from settlement_widgets.channel.v1.core.calldata import contract_state_from_wire
from settlement_widgets.channel.v1.core.lifecycle import (
    apply_channel_creation,
    apply_transition,
    next_state,
)
from settlement_widgets.channel.v1.core.transitions import sig_validators_bitmap
from settlement_widgets.channel.v1.node import ConfirmedHubView, NitronodeNode
from settlement_widgets.channel.v1.node.chain_view import one_head_per_request
from settlement_widgets.errors import InvalidAmountError, InvalidStateError, RelayError
from settlement_widgets.networks import Network
from settlement_widgets.sandbox import LocalSandbox
from settlement_widgets.wallet import WalletClient

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

U = 10**6
DELAY = 60
ONGOING = "ongoing state transitions check failed: home deposit is still ongoing"


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=BACKENDS)
async def sb(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[LocalSandbox]:
    data = tmp_path_factory.mktemp("sandbox-v1-backing")
    async with LocalSandbox(
        chain=request.param, protocol="v1", v4=False, wallets=1, data_dir=data
    ) as sandbox:
        yield sandbox


@pytest_asyncio.fixture(loop_scope="module")
async def delayed(sb: LocalSandbox, tmp_path: Path) -> AsyncIterator[Network]:
    """A second Nitronode for the sandbox's hub (same node key, its own ledger) whose chain
    has ``confirmation_delay_secs`` = 60; the network profile pointed at it."""
    assert sb.nitronode is not None and sb.chain is not None and sb.hub is not None
    config = sb.nitronode.config
    config = replace(
        config,
        db_path=tmp_path / "delayed-node.sqlite",
        port=0,
        chains=tuple(replace(c, confirmation_delay_secs=DELAY) for c in config.chains),
    )
    view = ConfirmedHubView(ChannelHubClient(sb.chain.wallet(0), sb.hub.hub))
    async with NitronodeNode(config, chain_view=view) as node:
        yield replace(sb.network, node_url=node.url)


async def _provider(network: Network, wallet: WalletClient, store: Path | None = None) -> Any:
    # the provider would wait out the delay after each on-chain step (the default); these
    # tests move the clock themselves to show what the node does before and after it
    kw: dict[str, Any] = {"wait_for_confirmation": False}
    if store is not None:
        kw["store"] = V1Store(store, wallet=wallet.address)
    return await ChannelProviderV1(network, wallet, **kw).connect()


async def _latest(p: ChannelProviderV1, wallet: str | None = None) -> dict[str, Any] | None:
    return await p.client.get_latest_state(wallet or p.address, p.asset, False)


async def _request_creation(p: ChannelProviderV1, nonce: int, amount: str) -> dict[str, Any]:
    """A creation (deposit of ``amount``) with ``nonce`` on top of the node's latest state,
    user-signed and sent with ``request_creation``, whatever the client would think of it."""
    config = await p.client.get_config()
    bitmap = sig_validators_bitmap(config["supportedSigValidators"])
    definition = {"nonce": str(nonce), "challenge": 86400, "approvedSigValidators": bitmap}
    previous = await _latest(p)
    assert previous is not None
    state = next_state(previous)
    apply_channel_creation(state, definition, str(p.network.chain_id), p.token, p.node_address)
    apply_transition(state, {"type": 10, "amount": amount})
    state["user_sig"] = await p.client.sign_state(state)
    wire = {"nonce": str(nonce), "challenge": 86400, "approved_sig_validators": bitmap}
    return await p.client.channels_v1_request_creation(state, wire)


def _never_sent(p: ChannelProviderV1) -> None:
    async def crash(*args: Any, **kw: Any) -> Any:
        raise KeyboardInterrupt  # the process dies before the deposit transaction goes out

    p.hub.deposit_to_channel = crash  # type: ignore[method-assign]


async def test_a_deposit_counts_only_once_the_chain_confirms_it(
    sb: LocalSandbox, delayed: Network, tmp_path: Path
) -> None:
    assert sb.chain is not None
    alice, bob = await fresh_wallet(sb), await fresh_wallet(sb, tokens=0)
    pa = await _provider(delayed, alice, tmp_path / "alice.sqlite")
    pb = await _provider(delayed, bob, tmp_path / "bob.sqlite")
    try:
        channel = await pa.create_channel(pa.node_address, pa.asset, 2 * U)
        assert (await pa.hub.get_channel_data(channel.id)).status == "OPERATING"
        # createChannel is mined, but younger than the confirmation delay
        with pytest.raises(RelayError, match=ONGOING):
            await pa.transfer(channel.id, U, bob.address)
        assert (await _latest(pa))["version"] == "1"  # type: ignore[index]
        assert await pb.balances() == {}
        await sb.chain.time_travel(DELAY)
        await pa.transfer(channel.id, U, bob.address)
        assert await pb.balances() == {pb.asset: U}

        # a co-signed deposit whose transaction never reaches the chain
        _never_sent(pa)
        with pytest.raises(KeyboardInterrupt):
            await pa.deposit(2 * U, channel_id=channel.id)
        del pa.hub.deposit_to_channel
        assert (await _latest(pa))["transition"]["type"] == 10  # type: ignore[index]
        with pytest.raises(RelayError, match=ONGOING):
            await pa.transfer(channel.id, U + 1, bob.address)  # would spend the 2 deposited
        with pytest.raises(RelayError, match=ONGOING):
            await pa.withdraw(U, channel_id=channel.id)
        assert await pb.balances() == {pb.asset: U}  # nothing reached bob
        # the transaction lands: still not confirmed, until the chain is DELAY seconds older
        assert await pa.recover() == ["sent deposit for version 3"]
        assert (await pa.hub.get_channel_data(channel.id)).locked_funds == 3 * U
        with pytest.raises(RelayError, match=ONGOING):
            await pa.transfer(channel.id, U + 1, bob.address)
        await sb.chain.time_travel(DELAY)
        await pa.transfer(channel.id, U + 1, bob.address)
        assert await pb.balances() == {pb.asset: 2 * U + 1}
        assert await pa.balances() == {pa.asset: 2 * U - 1}
    finally:
        await pa.close()
        await pb.close()


async def test_by_default_an_on_chain_step_returns_once_the_node_counts_it(
    sb: LocalSandbox, delayed: Network, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The provider's default: ``create_channel`` (and every on-chain step) returns only
    when the chain is ``confirmation_delay_secs`` past its transaction, so the transfer
    right after it is taken, not refused as "still ongoing"."""
    assert sb.chain is not None
    lee, max_ = await fresh_wallet(sb), await fresh_wallet(sb, tokens=0)
    pl = await ChannelProviderV1(delayed, lee).connect()
    mined, polled = asyncio.Event(), asyncio.Event()
    real_create, real_chain_time = pl.hub.create_channel, chain_clock.chain_time

    async def observed_create(*args: Any, **kw: Any) -> Any:
        tx = await real_create(*args, **kw)
        mined.set()  # the transaction is mined; the node does not count it yet
        return tx

    async def observed_chain_time(w3: Any) -> int:
        now = await real_chain_time(w3)
        if mined.is_set():
            polled.set()  # the provider reads the chain's clock after its transaction
        return now

    pl.hub.create_channel = observed_create  # type: ignore[method-assign]
    monkeypatch.setattr(chain_clock, "chain_time", observed_chain_time)
    try:
        opening = asyncio.create_task(pl.create_channel(pl.node_address, pl.asset, 2 * U))
        watching = asyncio.create_task(polled.wait())
        done, _ = await asyncio.wait({opening, watching}, return_when=asyncio.FIRST_COMPLETED)
        assert opening not in done  # it polls the clock instead of returning
        await sb.chain.time_travel(DELAY)
        channel = await opening
        await pl.transfer(channel.id, U, max_.address)  # taken at once
        assert await pl.balances() == {pl.asset: U}
    finally:
        await pl.close()


async def test_without_a_delay_the_deposit_counts_as_soon_as_it_is_mined(
    sb: LocalSandbox,
) -> None:
    carol, dan = await fresh_wallet(sb), await fresh_wallet(sb, tokens=0)
    pc = await _provider(sb.network, carol)
    try:
        channel = await pc.create_channel(pc.node_address, pc.asset, U)
        _never_sent(pc)
        with pytest.raises(KeyboardInterrupt):
            await pc.deposit(2 * U, channel_id=channel.id)
        del pc.hub.deposit_to_channel
        with pytest.raises(RelayError, match=ONGOING):
            await pc.transfer(channel.id, 2 * U, dan.address)
        await pc.recover()  # mined: confirmed at once (confirmation_delay_secs 0)
        await pc.transfer(channel.id, 2 * U, dan.address)
        assert await pc.balances() == {pc.asset: U}
    finally:
        await pc.close()


async def test_a_channel_closed_on_chain_gets_no_state(
    sb: LocalSandbox, delayed: Network, tmp_path: Path
) -> None:
    assert sb.chain is not None
    erin, fay, gus = await fresh_wallet(sb), await fresh_wallet(sb), await fresh_wallet(sb)
    pe, pf = await _provider(sb.network, erin), await _provider(sb.network, fay)
    try:
        channel = await pe.create_channel(pe.node_address, pe.asset, 3 * U)
        await pf.create_channel(pf.node_address, pf.asset, 2 * U)
        await pe.transfer(channel.id, U, gus.address)
        # closed on chain without a finalize: a challenge whose period passed
        await pe.challenge(channel.id)
        # during the challenge fay sends erin 1: stored on the disputed channel, unsigned,
        # above the version the chain will close at
        await pf.transfer(None, U, erin.address)
        disputed = await _latest(pe)
        assert disputed is not None and disputed["transition"]["type"] == 31
        assert disputed.get("node_sig") is None
        await sb.chain.time_travel(channel.challenge_period + 1)
        await pe.close_channel(channel.id)
        assert (await pe.hub.get_channel_data(channel.id)).status == "CLOSED"
        # no finalize ended it: the node advances erin past it with a challenge rescue that
        # credits what the chain did not enforce (the 1 received during the challenge)
        latest = await _latest(pe)
        assert latest is not None and latest["transition"]["type"] == 201
        assert latest["transition"]["account_id"].lower() == channel.id.lower()
        assert latest["transition"]["amount"] == "1" and not latest.get("home_channel_id")
        assert (latest["epoch"], latest["version"]) == (str(int(disputed["epoch"]) + 1), "1")
        assert latest["home_ledger"]["user_balance"] == "1"
        assert latest.get("user_sig") is None and latest.get("node_sig") is None

        # no state on the closed channel: a transfer would have to open a new one, and
        # erin holds 1 off chain, not 2 (the SDK's packer refuses, as ours)
        with pytest.raises(InvalidStateError, match="cannot be packed"):
            await pe.client.transfer(gus.address, pe.asset, "2")
        assert (await _latest(pe)) == latest
        # funds sent to erin are held for her, off channel and not node-signed
        await pf.transfer(None, U, erin.address)
        received = await _latest(pe)
        assert received is not None and received["transition"]["type"] == 31
        assert received.get("node_sig") is None and not received.get("home_channel_id")

        # the channel's id again: refused by the node that knows it and by one that only
        # sees it on chain (the case: a creation nobody could put on chain). The
        # client would not even try (the node never saw a finalize), so build it by hand.
        with pytest.raises(RelayError, match="cannot use same home channel id"):
            await _request_creation(pe, channel.nonce, "2")
        fresh = await _provider(delayed, erin, tmp_path / "erin.sqlite")
        try:
            with pytest.raises(RelayError, match="cannot use same home channel id"):
                await fresh.client.open_home_channel(
                    sb.chain.chain_id, fresh.asset, "2", nonce=channel.nonce
                )
        finally:
            await fresh.close()

        # and erin is not stuck: a new channel opens on top of the rescue, carrying what
        # she received since, and closes cooperatively
        reopened = await pe.create_channel(pe.node_address, pe.asset, 2 * U)
        assert reopened.id != channel.id and reopened.amount == 4 * U
        assert (await pe.hub.get_channel_data(reopened.id)).locked_funds == 4 * U
        await pe.close_channel(reopened.id)
        assert (await pe.hub.get_channel_data(reopened.id)).status == "CLOSED"
    finally:
        await pe.close()
        await pf.close()


async def test_open_close_open_three_times_never_reuses_an_id(
    sb: LocalSandbox, tmp_path: Path
) -> None:
    hal, ida = await fresh_wallet(sb), await fresh_wallet(sb, tokens=0)
    ph = await _provider(sb.network, hal)
    start = await ph.hub.token_balance(sb.token, hal.address)
    try:
        ids = []
        for _ in range(3):
            channel = await ph.create_channel(ph.node_address, ph.asset, 2 * U)
            assert channel.status == "active" and channel.amount == 2 * U
            await ph.transfer(channel.id, U, ida.address)
            await ph.close_channel(channel.id)
            assert (await ph.hub.get_channel_data(channel.id)).status == "CLOSED"
            ids.append(channel.id)
        assert len(set(ids)) == 3
        assert [c.status for c in ph.channels()] == ["final"] * 3
        assert await ph.hub.token_balance(sb.token, hal.address) == start - 3 * U

        # a fresh store of the same wallet: it knows nothing of those ids, the chain does
        again = await _provider(sb.network, hal, tmp_path / "hal-again.sqlite")
        try:
            channel = await again.create_channel(again.node_address, again.asset, U)
            assert channel.id not in ids and channel.nonce == 4
            await again.transfer(channel.id, U, ida.address)
            await again.close_channel(channel.id)
        finally:
            await again.close()
    finally:
        await ph.close()


async def test_a_nonce_another_client_took_is_skipped(sb: LocalSandbox) -> None:
    """Another client of the same wallet created (and closed) a channel with the nonce after
    the provider's last one: the provider's next pick is taken on chain, so it goes past it."""
    assert sb.chain is not None
    jo = await fresh_wallet(sb)
    pj = await _provider(sb.network, jo)
    try:
        first = await pj.create_channel(pj.node_address, pj.asset, U)
        await pj.close_channel(first.id)
        taken = first.nonce + 2
        state = await pj.client.open_home_channel(sb.chain.chain_id, pj.asset, "1", nonce=taken)
        config = await pj.client.get_config()
        definition = contract_definition(
            user=jo.address,
            node=pj.node_address,
            asset=pj.asset,
            nonce=taken,
            approved_sig_validators=sig_validators_bitmap(config["supportedSigValidators"]),
        )
        decimals = pj.client.assets.cached_token_decimals
        await pj.hub.approve(sb.token, U)
        await pj.hub.create_channel(definition, contract_state_from_wire(state, decimals))
        finalize = await pj.client.close_home_channel(pj.asset)
        await pj.hub.close_channel(
            state["home_channel_id"], contract_state_from_wire(finalize, decimals)
        )
        assert (await pj.hub.get_channel_data(state["home_channel_id"])).status == "CLOSED"

        channel = await pj.create_channel(pj.node_address, pj.asset, 2 * U)
        assert channel.nonce == taken + 1 and channel.id != state["home_channel_id"]
        assert (await pj.hub.get_channel_data(channel.id)).status == "OPERATING"
        await pj.close_channel(channel.id)
    finally:
        await pj.close()


async def test_an_empty_reopen_after_a_close_says_what_to_do(sb: LocalSandbox) -> None:
    kay = await fresh_wallet(sb)
    pk = await _provider(sb.network, kay)
    try:
        empty = await pk.create_channel(pk.node_address, pk.asset, 0)
        await pk.close_channel(empty.id)
        before = await _latest(pk)
        with pytest.raises(InvalidAmountError, match="receive a transfer first"):
            await pk.create_channel(pk.node_address, pk.asset, 0)
        assert await _latest(pk) == before  # nothing signed, nothing sent
        assert len(pk.channels()) == 1
        # funds received off chain: now an empty open carries them
        await request_faucet_tokens(kay.address, sb.network)
        carried = await pk.create_channel(pk.node_address, pk.asset, 0)
        assert carried.amount == 10 * U and carried.id != empty.id
        await pk.close_channel(carried.id)
    finally:
        await pk.close()


async def test_within_one_request_the_view_reads_one_chain_head(sb: LocalSandbox) -> None:
    """The node's checks of one request agree on one chain head (and read it once): inside
    ``one_head_per_request`` a block mined meanwhile is not seen; the next request sees it."""
    assert sb.chain is not None and sb.hub is not None
    view = ConfirmedHubView(ChannelHubClient(sb.chain.wallet(0), sb.hub.hub))
    mia = await fresh_wallet(sb)
    pm = await _provider(sb.network, mia)
    try:
        channel = await pm.create_channel(pm.node_address, pm.asset, U)
        with one_head_per_request():
            before = await view.confirmed_channel(channel.id, 0)
            await pm.deposit(U, channel_id=channel.id)
            assert await view.confirmed_channel(channel.id, 0) == before
        after = await view.confirmed_channel(channel.id, 0)
        assert (before.user_allocation, after.user_allocation) == (U, 2 * U)
    finally:
        await pm.close()


async def test_the_chain_view_answers_each_block_once_and_never_from_a_replaced_one(
    sb: LocalSandbox,
) -> None:
    """The node's view caches a channel's record per block (a transfer asks about its
    channels several times; each read is an ``eth_call``): a new block is read afresh, and a
    chain reverted to a snapshot is never answered from the block it replaced, though the
    new block has the replaced one's number. Last in the module: it reverts the chain."""
    assert sb.chain is not None and sb.hub is not None
    view = ConfirmedHubView(ChannelHubClient(sb.chain.wallet(0), sb.hub.hub))
    reads: list[str] = []
    read = view._hub.contract.functions.getChannelData

    def counted(channel_id: str) -> Any:
        reads.append(channel_id)
        return read(channel_id)

    view._hub.contract.functions.getChannelData = counted  # type: ignore[method-assign]
    lea = await fresh_wallet(sb)
    pl = await _provider(sb.network, lea)
    try:
        channel = await pl.create_channel(pl.node_address, pl.asset, U)
        first = await view.confirmed_channel(channel.id, 0)
        assert first.operating and first.user_allocation == U
        assert await view.confirmed_channel(channel.id, 0) == first  # same block
        assert await view.channel_status(channel.id) == "open"
        assert len(reads) == 1
        snapshot = await sb.chain.snapshot()
        await pl.deposit(U, channel_id=channel.id)  # a new block: read afresh
        deposited = await view.confirmed_channel(channel.id, 0)
        assert deposited.user_allocation == 2 * U and len(reads) == 2
        w3 = sb.chain.wallet(0).w3
        deposit_head = int(await w3.eth.block_number)
        await sb.chain.revert(snapshot)
        assert await view.confirmed_channel(channel.id, 0) == first
        # other transactions reach the deposit's block number, with other hashes
        while int(await w3.eth.block_number) < deposit_head:
            await sb.chain.wallet(0).transact(to=lea.address, value=1)
        assert int(await w3.eth.block_number) == deposit_head
        assert await view.confirmed_channel(channel.id, 0) == first
    finally:
        await pl.close()
