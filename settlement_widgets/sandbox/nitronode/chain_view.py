"""What the node knows of the chain: a small read-only view the operator plugs in.

The local node does not watch the ChannelHub itself; it asks a :class:`ChainView` when a
rule depends on the chain (nitrolite-v1.md §4): ``finalize`` needs the channel open on
chain, ``get_home_channel`` / ``get_channels`` report the on-chain status, and
``user.v1.get_balances`` reports as ``enforced`` what the last on-chain state backs. The
real view wraps the ChannelHub client (``get_channel_data``); tests run without one, and
then the node assumes every co-signed on-chain operation was carried out (see
:class:`~.handlers.NitronodeService`).
"""

from __future__ import annotations

from typing import Final, Protocol, runtime_checkable

__all__ = ["CHANNEL_STATUSES", "ChainView"]

#: ``channel_status`` results, as the wire's ``channel.status`` (SDK ``ChannelStatus``)
CHANNEL_STATUSES: Final = ("void", "open", "challenged", "closed")


@runtime_checkable
class ChainView(Protocol):
    """Read-only on-chain facts about home channels, by channel id (``0x`` + 64 hex)."""

    async def channel_status(self, channel_id: str) -> str:
        """``"void"`` (unknown on chain), ``"open"``, ``"challenged"`` or ``"closed"``."""
        ...

    async def enforced_user_balance(self, channel_id: str) -> int:
        """The user's allocation in the channel's last on-chain state, in token units
        (0 for a channel that is not on chain)."""
        ...
