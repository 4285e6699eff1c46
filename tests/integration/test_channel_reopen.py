"""Reopening after a close, and channels a store does not know, on both channel protocols.

- Providers: open → close → open → transfer → close, three times, on Nitrolite v0.5 (the relay
  and the Custody) and v1 (the Nitronode and the ChannelHub); every close is checked on chain.
- A channel left open by another process (a lost store, a kernel restarted with the same
  key): a fresh provider over an empty store adopts it from the node and closes it, and then
  opens a new one; on both protocols.
- The dashboard on v1: Open → Close → Open works (after a close an empty v1 channel cannot
  open, so the dashboard opens it with a deposit), and the v0.5 dashboard offers Close for a
  channel its store never saw.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from settlement_widgets.channel import ChannelConfig, ChannelProvider, ChannelStore
from settlement_widgets.channel.interface import ChannelClient
from settlement_widgets.channel.v0_5.core.types import ChannelStatus
from settlement_widgets.channel.v1 import ChannelProviderV1, V1Store
from settlement_widgets.dashboard import SettlementDashboard
from settlement_widgets.errors import ChannelStateError
from settlement_widgets.sandbox import LocalSandbox
from settlement_widgets.wallet import WalletClient

pytestmark = pytest.mark.asyncio(loop_scope="module")
U = 10**6
ROUNDS = 3


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=["v0.5", "v1"])
async def sandbox(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[LocalSandbox]:
    async with LocalSandbox(
        protocol=request.param, v4=False, wallets=4, data_dir=tmp_path_factory.mktemp("sb")
    ) as sb:
        yield sb


def _provider(sb: LocalSandbox, wallet: WalletClient, store: Path | None = None) -> ChannelClient:
    if sb.protocol == "v1":
        v1_store = None if store is None else V1Store(store, wallet=wallet.address)
        return ChannelProviderV1(sb.network, wallet, store=v1_store)
    config = ChannelConfig.from_network(sb.network)
    v05_store = None if store is None else ChannelStore(store)
    return ChannelProvider(config, wallet, store=v05_store)


async def _closed_on_chain(sb: LocalSandbox, provider: ChannelClient, channel_id: str) -> bool:
    if isinstance(provider, ChannelProviderV1):
        return (await provider.hub.get_channel_data(channel_id)).status == "CLOSED"
    assert isinstance(provider, ChannelProvider)
    return await provider.custody.channel_status(channel_id) == ChannelStatus.VOID


async def _open(provider: ChannelClient, amount: int) -> str:
    await provider.connect()
    other = provider.broker_address
    assert other is not None
    asset = provider.token if isinstance(provider, ChannelProviderV1) else provider.config.token
    channel = await provider.create_channel(other, asset, amount)
    assert channel.status == "active", channel
    return channel.id


async def test_open_close_open_transfer_close_three_times(sandbox: LocalSandbox) -> None:
    user, recipient = sandbox.wallets[0], sandbox.wallets[1]
    provider = _provider(sandbox, user)
    await provider.connect()
    seen: set[str] = set()
    try:
        for round_ in range(ROUNDS):
            first = await _open(provider, 3 * U)
            await provider.close_channel(first)
            assert await _closed_on_chain(sandbox, provider, first), round_
            second = await _open(provider, 3 * U)
            assert second != first
            sent = await provider.transfer(second, U, recipient.address)
            assert sent.amount == U
            await provider.close_channel(second)
            assert await _closed_on_chain(sandbox, provider, second), round_
            assert provider.get_channel(second).status == "final"
            seen |= {first, second}
        assert len(seen) == 2 * ROUNDS, "every open made a new channel"
    finally:
        await provider.close()


async def test_a_channel_left_open_elsewhere_is_adopted_and_closed(
    sandbox: LocalSandbox, tmp_path: Path
) -> None:
    user = sandbox.wallets[2]
    first = _provider(sandbox, user, tmp_path / "first.sqlite")
    left = await _open(first, 2 * U)
    await first.close()  # its kernel is gone, its store with it

    fresh = _provider(sandbox, user, tmp_path / "fresh.sqlite")
    try:
        await fresh.connect()
        assert not [c for c in fresh.channels() if c.status != "final"]
        # the node refuses a second open channel, naming the way out ...
        with pytest.raises(ChannelStateError, match=r"close it first.*adopt_open_channels"):
            await _open(fresh, 0 if sandbox.protocol == "v0.5" else U)
        adopted = await fresh.adopt_open_channels()  # ... and the way out it names works
        assert [c.id for c in adopted] == [left]
        assert fresh.get_channel(left).status == "active"
        assert await fresh.adopt_open_channels() == []  # once
        await fresh.close_channel(left)
        assert await _closed_on_chain(sandbox, fresh, left)
        again = await _open(fresh, 2 * U)
        await fresh.close_channel(again)
        assert await _closed_on_chain(sandbox, fresh, again)
    finally:
        await fresh.close()


async def _click(board: SettlementDashboard, action: str) -> None:
    before = len(board.activity)
    board.buttons[action].click()  # type: ignore[index]
    await board.wait_idle(timeout=120)
    new = board.activity[before:]
    assert new and all(line.level in ("ok", "info") for line in new), new


async def test_the_dashboard_reopens_and_adopts(sandbox: LocalSandbox, tmp_path: Path) -> None:
    assert sandbox.chain is not None
    user = sandbox.wallets[3]
    # a channel this wallet opened elsewhere and never closed
    elsewhere = _provider(sandbox, user, tmp_path / "elsewhere.sqlite")
    left = await _open(elsewhere, 2 * U)
    await elsewhere.close()

    board = SettlementDashboard(
        sandbox.network,
        user,
        operator=sandbox.chain.wallet(0),
        recipient=sandbox.wallets[0].address,
    )
    try:
        await board._channels()  # what the first channel click does first
        assert board.channel is not None and board.channel.id == left
        assert "adopted from the node" in board.activity[-1].text
        assert not board.buttons["close_channel"].disabled
        assert board.buttons["open_channel"].disabled
        await _click(board, "close_channel")
        assert board.channel.status == "final"
        for _ in range(2):  # open → (transfer) → close, twice: the second open follows a close
            await _click(board, "open_channel")
            opened = board.channel
            assert opened is not None and opened.status == "active"
            if sandbox.protocol == "v1":
                assert "deposited from the wallet" in board.activity[-1].text
            await _click(board, "close_channel")
            assert board.channel.status == "final"
            assert not board.buttons["open_channel"].disabled
        assert board.errors.messages == ()
    finally:
        await board.aclose()
