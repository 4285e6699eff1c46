"""The dashboard's ``channel`` actions: faucet, Open channel, transfer, close.

The provider comes from the channel factory for the network's protocol, typed as the
:class:`~settlement_widgets.channel.interface.ChannelClient` both versions satisfy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..channel.v0_5.core.amounts import format_amount
from ..errors import InsufficientBalanceError
from ..networks import Network
from ..widgets import ChannelStatusPanel, SettlementSelector
from .view import LogLine, _short, counterparty

if TYPE_CHECKING:
    from ..channel.interface import ChannelClient
    from ..channel.models import Channel
    from ..networks import Network
    from ..signer import Signer
    from ..widgets import ChannelStatusPanel, SettlementSelector


__all__ = ["OPEN_DEPOSIT_TRANSFERS", "ChannelActions", "open_deposit"]

#: a channel the dashboard must fund opens with this many transfers' worth
OPEN_DEPOSIT_TRANSFERS = 10


def open_deposit(held: int, transfer_amount: int, symbol: str) -> int:
    """The deposit of a channel that cannot open empty: :data:`OPEN_DEPOSIT_TRANSFERS`
    transfers' worth, or all the wallet ``held`` when it holds less; a wallet without the
    token (``symbol``) is told what works instead."""
    if held <= 0:
        raise InsufficientBalanceError(
            f"the wallet holds no {symbol} to open a channel with, and an "
            "empty one cannot open after a close: ask the faucet first (its transfer opens "
            "an empty channel)"
        )
    return min(held, OPEN_DEPOSIT_TRANSFERS * transfer_amount)


class ChannelActions:
    """The channel method's buttons (a layer of :class:`~.widget.SettlementDashboard`)."""

    if TYPE_CHECKING:  # set and implemented by SettlementDashboard
        network: Network
        user: Signer
        selector: SettlementSelector

        def _add_log(self, line: LogLine) -> None: ...

        def _tx_line(self, text: str, tx_hash: str, url: str | None) -> LogLine: ...

        recipient: str | None
        transfer_amount: int
        panel: ChannelStatusPanel
        _channel: Channel | None
        _channel_provider: ChannelClient | None

        def _refresh_buttons(self) -> None: ...

    # --- channel ------------------------------------------------------------------------

    async def _channels(self) -> ChannelClient:
        if self._channel_provider is None:
            from ..channel.factory import channel_provider

            provider = channel_provider(self.network, self.user)
            await provider.connect()
            provider.on("channel_updated", self._on_channel)
            self._channel_provider = provider
            await self._adopt(provider)
            open_ = [c for c in provider.channels() if c.status != "final"]
            if open_:  # a channel left open by an earlier session of this wallet
                self._track(open_[-1])
        return self._channel_provider

    async def _adopt(self, provider: ChannelClient) -> bool:
        """Adopt the channels the node has open for this wallet but this store never saw (a
        lost store, the key used in another kernel), so Close can close them instead of
        Open being refused with nothing to close; whether there were any."""
        adopted = await provider.adopt_open_channels()
        for channel in adopted:
            self._add_log(
                LogLine(
                    "info",
                    f"channel {_short(channel.id)} was left open by an earlier session of "
                    "this wallet: adopted from the node; Close channel closes it",
                )
            )
            self._track(channel)
        return bool(adopted)

    def _on_channel(self, channel: Channel) -> None:
        if self._channel is not None and channel.id == self._channel.id:
            self._channel = channel
            self._refresh_buttons()

    def _track(self, channel: Channel) -> None:
        self._channel = channel
        if self.selector.selected == "channel" and self._channel_provider is not None:
            self.panel.bind(self._channel_provider, channel.id)
        self._refresh_buttons()

    async def _off_chain(self, provider: ChannelClient) -> str:
        units_ = (await provider.balances()).get(provider.asset, 0)
        return format_amount(units_, self.network.asset_decimals, provider.asset)

    async def faucet(self) -> None:
        """Ask the network's faucet for test tokens (an off-chain credit)."""
        from ..channel import request_faucet_tokens

        provider = await self._channels()
        answer = await request_faucet_tokens(self.user.address, self.network)
        self._add_log(
            LogLine(
                "ok",
                f"faucet: +{answer.get('amount')} {answer.get('asset')} off-chain; "
                f"balance {await self._off_chain(provider)}",
            )
        )

    async def open_channel(self) -> None:
        """Open a channel with the relay's broker (``Custody.create``; on Nitrolite v1 the
        node, ``ChannelHub.createChannel``), no deposit where the protocol allows it:
        transfers spend the off-chain balance (on v1, a faucet credit received before is
        carried into the new channel), and closing settles it into the wallet. On v1 after a
        closed channel with nothing received since, an empty channel cannot open (see
        ``ChannelProviderV1.can_open_empty``): the channel opens with a deposit from the
        wallet then (:func:`open_deposit`), so Open works after Close."""
        from ..channel.v1 import ChannelProviderV1

        provider = await self._channels()
        if await self._adopt(provider):  # opened elsewhere since: close that one first
            return
        broker = provider.broker_address
        assert broker is not None
        # v0.5 names the asset by its token; a v1 profile may leave the token to the node
        asset = self.network.token if self.network.token is not None else provider.asset
        amount = 0
        if isinstance(provider, ChannelProviderV1) and not await provider.can_open_empty():
            held = await provider.hub.token_balance(provider.token)
            amount = open_deposit(held, self.transfer_amount, self.network.asset_symbol)
        channel = await provider.create_channel(broker, asset, amount)
        self._track(channel)
        tx = channel.tx_hashes.get("create")
        who = counterparty(self.network.protocol)
        line = f"channel {_short(channel.id)} opened with {who} {_short(broker)}"
        if amount:
            line += f", {self._units_text(amount)} deposited from the wallet"
        line += ":"
        if tx is not None:
            self._add_log(self._tx_line(line, tx, self.network.explorer.tx_url(tx)))
        else:
            self._add_log(LogLine("ok", line))

    def _units_text(self, units_: int) -> str:
        return format_amount(units_, self.network.asset_decimals, self.network.asset_symbol)

    async def transfer(self) -> None:
        """Send ``transfer_amount`` to ``recipient`` off-chain: instant, no gas."""
        provider = await self._channels()
        channel = self._channel
        assert channel is not None
        to = self.recipient or provider.broker_address
        assert to is not None
        sent = await provider.transfer(channel.id, self.transfer_amount, to)
        amount = format_amount(sent.amount, self.network.asset_decimals, sent.asset)
        self._add_log(
            LogLine(
                "ok",
                f"transfer {sent.id}: {amount} to {_short(to)}, gas 0; "
                f"balance {await self._off_chain(provider)}",
            )
        )

    async def close_channel(self) -> None:
        """Close the channel on chain and withdraw what it paid out."""
        provider = await self._channels()
        channel = self._channel
        assert channel is not None
        tx = await provider.close_channel(channel.id)
        self._track(provider.get_channel(channel.id))
        self._add_log(
            self._tx_line(
                f"channel closed on chain ({tx.gas_used:,} gas):", tx.hash, tx.explorer_url
            )
        )
        if tx.withdrawal is not None:
            withdrawal = tx.withdrawal
            self._add_log(
                self._tx_line(
                    f"withdrawn to the wallet ({withdrawal.gas_used:,} gas):",
                    withdrawal.hash,
                    withdrawal.explorer_url,
                )
            )
