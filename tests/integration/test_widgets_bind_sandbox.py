"""``ChannelStatusPanel.bind`` on a real provider: the panel follows a channel on the local
sandbox and turns DISPUTE (red) after a real on-chain challenge, then FINAL (blue) after the
close, with no render call from the test: the provider's events drive it."""

from __future__ import annotations

import pytest
from channel_helpers import U, fresh_wallet, provider, sandbox

from settlement_widgets.sandbox import LocalSandbox
from settlement_widgets.widgets import ChannelStatusPanel
from settlement_widgets.widgets.viewmodels import BLUE, GREEN, RED

pytestmark = pytest.mark.asyncio(loop_scope="module")
__all__ = ["sandbox"]


def status_row(panel: ChannelStatusPanel) -> tuple[str, str | None]:
    (row,) = [r for r in panel.view_model.rows if r.label == "Status"]
    return row.value, row.colour


async def test_bound_panel_turns_red_on_a_real_challenge(sandbox: LocalSandbox) -> None:
    wallet = await fresh_wallet(sandbox)
    async with provider(sandbox, wallet) as p:
        channel = await p.create_channel(sandbox.broker_address, sandbox.token, U)
        panel = ChannelStatusPanel(network=sandbox.network)
        binding = panel.bind(p, channel.id)
        assert status_row(panel) == ("ACTIVE", GREEN)  # shown from provider.get_channel
        assert panel.state_intent == "RESIZE" and panel.state_version == 1
        assert panel.challenge_period == 3600

        tx = await p.challenge(channel.id)
        assert status_row(panel) == ("DISPUTE", RED)
        assert "DISPUTE" in panel.html and RED in panel.html
        assert panel.state_hash == p.get_channel(channel.id).state_hash
        assert panel.errors.messages == ()  # no callback failed

        assert sandbox.chain is not None
        await sandbox.chain.time_travel(3601)
        close = await p.close_channel(channel.id)
        assert status_row(panel) == ("FINAL", BLUE)
        assert panel.settlement_tx == close.hash
        assert tx.hash != close.hash

        binding()  # unbound: the provider no longer calls the panel
        assert not binding.active
        assert all(not p._listeners.get(event) for event in ("channel_updated", "channel_closed"))
