"""Bad input and unavailable services give the channel provider's clear errors, and change
nothing: no operation is started, no state signed, no balance moved; what an outage cuts
short stays visible as pending work (test_channel_recovery.py finishes it).
"""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

import pytest
import pytest_asyncio
from channel_helpers import ASSET, U, config_for, dead_port, fresh_wallet, provider, sandbox

from settlement_widgets.channel import ChannelProvider, request_faucet_tokens
from settlement_widgets.errors import (
    ChainUnavailableError,
    ChannelNotFoundError,
    ChannelStateError,
    InsufficientBalanceError,
    InvalidAddressError,
    InvalidAmountError,
    RelayProtocolError,
    RelayUnavailableError,
    SettlementValueError,
    UnknownOptionError,
)
from settlement_widgets.sandbox import LocalSandbox
from settlement_widgets.wallet import WalletClient

pytestmark = pytest.mark.asyncio(loop_scope="module")
__all__ = ["sandbox"]

NO_WORK = {"operations": [], "unsubmitted_states": [], "pending_txs": [], "pending_transfers": []}


class Alice:
    """A wallet with an active channel and 10 faucet + 4 deposited units off-chain."""

    def __init__(self, p: ChannelProvider, channel_id: str, bob: str, wallet: WalletClient):
        self.p = p
        self.channel_id = channel_id
        self.bob = bob
        self.wallet = wallet

    async def snapshot(self) -> tuple[Any, ...]:
        """Everything an error must leave unchanged."""
        store = self.p.store
        return (
            await self.p.balances(),
            [(op.id, op.status) for op in store.operations()],
            [(s.channel_id, s.state.version, s.status) for s in store.states(self.channel_id)],
            store.transfers(status="done"),
            self.p.get_channel(self.channel_id),
        )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def alice(sandbox: LocalSandbox) -> AsyncIterator[Alice]:
    wallet = await fresh_wallet(sandbox, tokens=20 * U)
    bob = await fresh_wallet(sandbox, tokens=0)
    async with provider(sandbox, wallet) as p:
        await request_faucet_tokens(wallet.address, sandbox.network)
        channel = await p.create_channel(sandbox.broker_address, sandbox.token, 4 * U)
        assert await p.balances() == {ASSET: 14 * U}
        yield Alice(p, channel.id, bob.address, wallet)


async def test_wrong_counterparty_or_asset_is_refused_before_anything_is_sent(
    sandbox: LocalSandbox,
) -> None:
    wallet = await fresh_wallet(sandbox)
    async with provider(sandbox, wallet) as p:
        stranger = (await fresh_wallet(sandbox, tokens=0)).address
        with pytest.raises(InvalidAddressError, match="not the relay's broker"):
            await p.create_channel(stranger, sandbox.token, U)
        with pytest.raises(InvalidAddressError, match="not the channel asset"):
            await p.create_channel(sandbox.broker_address, stranger, U)
        with pytest.raises(InvalidAddressError, match="counterparty"):
            await p.create_channel("0x1234", sandbox.token, U)
        bad_checksum = sandbox.broker_address[:2] + sandbox.broker_address[2:].swapcase()
        if bad_checksum[2:] not in (bad_checksum[2:].lower(), bad_checksum[2:].upper()):
            with pytest.raises(InvalidAddressError, match="checksum"):
                await p.create_channel(bad_checksum, sandbox.token, U)
        for amount in (-1, 0.5, "1", True, Decimal(1)):
            with pytest.raises(InvalidAmountError, match="initial_amount"):
                await p.create_channel(sandbox.broker_address, sandbox.token, amount)  # type: ignore[arg-type]
        # amounts in token units with the symbol, never raw smallest units (issue 34)
        with pytest.raises(
            InsufficientBalanceError,
            match=r"^initial_amount 101 ytest\.usd exceeds the wallet's \d+(\.\d+)? ytest\.usd",
        ):
            await p.create_channel(sandbox.broker_address, sandbox.token, 101 * U)
        assert p.channels() == []
        assert p.pending_work() == NO_WORK
        assert p.store.operations() == []
        relay = p.relay
        assert relay is not None
        assert await relay.get_channels(participant=wallet.address) == []


async def test_unknown_channel_ids(alice: Alice) -> None:
    p = alice.p
    unknown = "0x" + secrets.token_hex(32)
    before = await alice.snapshot()
    with pytest.raises(ChannelNotFoundError, match="unknown channel"):
        await p.transfer(unknown, 1, alice.bob)
    with pytest.raises(ChannelNotFoundError, match="unknown channel"):
        await p.close_channel(unknown)
    with pytest.raises(ChannelNotFoundError):
        await p.challenge(unknown)
    with pytest.raises(ChannelNotFoundError):
        await p.resize(unknown, U)
    with pytest.raises(ChannelNotFoundError):
        p.get_channel(unknown)
    with pytest.raises(ChannelNotFoundError):
        p.history(unknown)
    with pytest.raises(SettlementValueError, match="64 hex digits"):
        await p.transfer("0xabc", 1, alice.bob)
    with pytest.raises(SettlementValueError, match="64 hex digits"):
        p.get_channel(12)  # type: ignore[arg-type]
    assert await alice.snapshot() == before


async def test_amounts_above_the_balance(alice: Alice, sandbox: LocalSandbox) -> None:
    p = alice.p
    before = await alice.snapshot()
    with pytest.raises(InsufficientBalanceError) as exceeded:
        await p.transfer(alice.channel_id, 14 * U + 1, alice.bob)
    # in token units with the symbol, exactly (issue 34: not "balance of 14000000 units")
    assert str(exceeded.value) == (
        "amount 14.000001 ytest.usd exceeds the off-chain balance of 14 ytest.usd: nothing was sent"
    )
    with pytest.raises(
        InsufficientBalanceError,
        match=r"off-chain balance is 14 ytest\.usd; 14\.000001 ytest\.usd cannot be moved",
    ):
        await p.resize(alice.channel_id, -(14 * U + 1))
    with pytest.raises(InsufficientBalanceError, match="wallet holds"):
        await p.resize(alice.channel_id, 17 * U)
    with pytest.raises(InsufficientBalanceError, match=r"custody holds 0 ytest\.usd"):
        await p.withdraw()
    with pytest.raises(InsufficientBalanceError, match="off-chain balance"):
        await p.withdraw(15 * U, channel_id=alice.channel_id)
    assert await alice.snapshot() == before
    # the relay is the judge when our cached balance is stale: still a clear error
    p._balances = {ASSET: 10**12}
    with pytest.raises(InsufficientBalanceError, match="insufficient funds"):
        await p.transfer(alice.channel_id, 14 * U + 1, alice.bob)
    (failed,) = p.store.transfers(status="failed")
    assert failed["amount"] == 14 * U + 1 and "insufficient funds" in failed["error"]
    assert (await alice.snapshot())[0] == before[0]


@pytest.mark.parametrize(
    "amount", [-1, 0, 1.5, "1", True, Decimal("1"), None], ids=lambda a: repr(a)
)
async def test_negative_zero_and_non_integer_amounts(alice: Alice, amount: Any) -> None:
    before = await alice.snapshot()
    with pytest.raises(InvalidAmountError, match="amount"):
        await alice.p.transfer(alice.channel_id, amount, alice.bob)
    if amount != -1:  # a negative resize is a withdrawal, not an error
        with pytest.raises(InvalidAmountError, match="amount"):
            await alice.p.resize(alice.channel_id, amount)
    with pytest.raises(InvalidAmountError, match="amount"):
        await alice.p.withdraw(amount, channel_id=alice.channel_id)
    assert await alice.snapshot() == before


@pytest.mark.parametrize(
    ("recipient", "match"),
    [
        ("0x1234", "recipient"),
        ("not an address", "recipient"),
        (None, "recipient"),
        ("0x" + "00" * 20, "zero address"),
    ],
)
async def test_invalid_recipients(alice: Alice, recipient: Any, match: str) -> None:
    before = await alice.snapshot()
    with pytest.raises(InvalidAddressError, match=match):
        await alice.p.transfer(alice.channel_id, 1, recipient)
    assert await alice.snapshot() == before


async def test_self_transfer_unknown_event_and_nothing_to_checkpoint(alice: Alice) -> None:
    before = await alice.snapshot()
    with pytest.raises(SettlementValueError, match="yourself"):
        await alice.p.transfer(alice.channel_id, 1, alice.wallet.address)
    with pytest.raises(UnknownOptionError, match="did you mean 'transfer'"):
        alice.p.on("transfers", print)
    with pytest.raises(ChannelStateError, match="never co-signs OPERATE"):
        await alice.p.checkpoint(alice.channel_id)
    assert await alice.snapshot() == before


async def test_relay_down(sandbox: LocalSandbox) -> None:
    wallet = await fresh_wallet(sandbox)
    config = config_for(sandbox, node_url=f"ws://127.0.0.1:{dead_port()}/ws")
    p = ChannelProvider(config, wallet)  # no I/O until the first operation
    try:
        with pytest.raises(RelayUnavailableError, match="cannot reach the relay"):
            await p.create_channel(sandbox.broker_address, sandbox.token, U)
        with pytest.raises(RelayUnavailableError):
            await p.balances()
        assert p.pending_work() == NO_WORK and p.channels() == []
    finally:
        await p.close()


@contextlib.asynccontextmanager
async def speaking(answer: str | bytes) -> AsyncIterator[str]:
    """A loopback WebSocket server that answers every message with ``answer``."""
    from websockets.asyncio.server import ServerConnection, serve

    async def handler(ws: ServerConnection) -> None:
        async for _message in ws:
            await ws.send(answer)

    async with serve(handler, "127.0.0.1", 0, compression=None) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        yield f"ws://127.0.0.1:{port}/ws"


# what a Nitrolite v1 node (Nitronode v1.4.1) answers a v0.5 frame
V1_REPLY = json.dumps([4, 0, "", {"error": "invalid message format"}, 1767225600000])


@pytest.mark.parametrize(
    "answer,found,named",
    [
        (V1_REPLY, "nitrolite-v1", "a Nitrolite v1 (Nitronode) error response frame"),
        ("<html><body>502 Bad Gateway</body></html>", "text", "text that is not JSON"),
        (json.dumps({"jsonrpc": "2.0", "id": 1, "result": None}), "json", "JSON of another"),
        (b"\xff\x00\x13", "binary", "a binary frame of 3 bytes"),
    ],
    ids=["nitrolite-v1", "html", "json-rpc", "binary"],
)
async def test_a_relay_of_another_protocol_is_named_at_once(
    sandbox: LocalSandbox, answer: str | bytes, found: str, named: str
) -> None:
    """The channel provider pointed at a server that does not speak v0.5 fails on the first
    operation, at once and without retrying, naming what it found; nothing is signed or kept."""
    wallet = await fresh_wallet(sandbox)
    async with speaking(answer) as url:
        p = ChannelProvider(config_for(sandbox, node_url=url), wallet)
        try:
            with pytest.raises(RelayProtocolError, match=r"does not speak Nitrolite v0\.5") as err:
                await p.create_channel(sandbox.broker_address, sandbox.token, U)
            assert err.value.found == found
            assert named in str(err.value)
            if found == "nitrolite-v1":
                assert "invalid message format" in str(err.value)
                assert "Nitrolite v1" in str(err.value) and "v0.5 ClearNode" in str(err.value)
            assert p.pending_work() == NO_WORK and p.channels() == []
        finally:
            await p.close()


async def test_chain_down_before_anything_is_signed(sandbox: LocalSandbox) -> None:
    wallet = await fresh_wallet(sandbox)
    offline = WalletClient(wallet.key, rpc_url=f"http://127.0.0.1:{dead_port()}")
    try:
        async with provider(sandbox, offline, watch_interval=None) as p:
            with pytest.raises(ChainUnavailableError, match="cannot reach the chain"):
                await p.create_channel(sandbox.broker_address, sandbox.token, U)
            assert p.pending_work() == NO_WORK and p.channels() == []
            relay = p.relay
            assert relay is not None
            assert await relay.get_channels(participant=wallet.address) == []
    finally:
        await offline.w3.provider.disconnect()  # type: ignore[attr-defined]
