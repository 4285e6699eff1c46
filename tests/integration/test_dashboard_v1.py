"""``SettlementDashboard`` on a Nitrolite v1 sandbox: the same buttons, clicked the way a
browser clicks them, drive ``ChannelProviderV1`` (faucet by a v1 transfer, a home channel
opened on the ChannelHub with the faucet's credit in it, off-chain transfers, close). Every
claim is checked against the node (the recipient's provider), the hub and the wallet."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from settlement_widgets.channel.v1 import ChannelProviderV1
from settlement_widgets.dashboard import SettlementDashboard
from settlement_widgets.sandbox import LocalSandbox

pytestmark = pytest.mark.asyncio(loop_scope="module")
U = 10**6


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sandbox(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LocalSandbox]:
    async with LocalSandbox(
        protocol="v1", v4=False, wallets=4, data_dir=tmp_path_factory.mktemp("sandbox")
    ) as sb:
        yield sb


async def _click(board: SettlementDashboard, action: str) -> None:
    before = len(board.activity)
    board.buttons[action].click()  # type: ignore[index]
    assert board.busy, "a click schedules the action and returns at once"
    await board.wait_idle(timeout=60)
    new = board.activity[before:]
    assert new and all(line.level == "ok" for line in new), new


async def test_channel_actions_on_v1(sandbox: LocalSandbox) -> None:
    assert sandbox.chain is not None
    user = sandbox.wallets[0]
    board = SettlementDashboard(
        sandbox.network,
        user,
        operator=sandbox.chain.wallet(0),
        recipient=sandbox.wallets[3].address,
    )
    recipient = ChannelProviderV1(sandbox.network, sandbox.wallets[3])
    try:
        hub = (await recipient.connect()).hub
        wallet_before = await hub.token_balance(sandbox.token, user.address)
        await _click(board, "faucet")
        assert "faucet: +10 ytest.usd off-chain; balance 10 ytest.usd" in board.activity[-1].text
        await _click(board, "faucet")
        await _click(board, "open_channel")
        channel = board.channel
        assert channel is not None and channel.status == "active" and channel.amount == 20 * U
        assert board.panel.channel_id == channel.id and board.panel.channel_status == "active"
        assert board.activity[-1].href == sandbox.network.explorer.tx_url(
            channel.tx_hashes["create"]
        )
        assert (await hub.get_channel_data(channel.id)).status == "OPERATING"

        await _click(board, "transfer")
        await _click(board, "transfer")
        assert await recipient.balances() == {"ytest.usd": 2 * U}
        assert "gas 0; balance 18 ytest.usd" in board.activity[-1].text

        await _click(board, "close_channel")
        closed = board.channel
        assert closed is not None and closed.status == "final"
        assert board.panel.channel_status == "final"
        assert (await hub.get_channel_data(closed.id)).status == "CLOSED"
        # the faucet's 20, less the 2 sent, reached the wallet on chain
        assert await hub.token_balance(sandbox.token, user.address) == wallet_before + 18 * U
        assert not board.buttons["open_channel"].disabled and board.buttons["transfer"].disabled
        assert board.errors.messages == ()
    finally:
        await recipient.close()
        await board.aclose()
