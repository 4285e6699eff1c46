"""A node's read-only view of a ``ChannelHub``: channel status and the backed user balance."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ....errors import InvalidStateError
from .hub_types import HubChannelStatus

if TYPE_CHECKING:
    from .hub import ChannelHubClient

__all__ = ["HubChainView"]

#: the hub's ChannelStatus as the node's wire ``channel.status``: a channel migrating in
#: operates here (the real hub treats it as home), one migrated out has left this chain
_WIRE_STATUS: Final = {
    HubChannelStatus.VOID: "void",
    HubChannelStatus.OPERATING: "open",
    HubChannelStatus.DISPUTED: "challenged",
    HubChannelStatus.CLOSED: "closed",
    HubChannelStatus.MIGRATING_IN: "open",
    HubChannelStatus.MIGRATED_OUT: "closed",
}


class HubChainView:
    """What a node reads from a ``ChannelHub`` (the sandbox node's ``ChainView``): a
    channel's status and the user allocation its last on-chain state backs. Reads only."""

    def __init__(self, hub: ChannelHubClient) -> None:
        self._hub = hub

    async def channel_status(self, channel_id: str) -> str:
        data = await self._hub.get_channel_data(channel_id)
        try:
            return _WIRE_STATUS[HubChannelStatus(data.status_code)]
        except ValueError:
            raise InvalidStateError(
                f"channel {channel_id} has hub status {data.status_code}, which this client "
                "does not know"
            ) from None

    async def enforced_user_balance(self, channel_id: str) -> int:
        data = await self._hub.get_channel_data(channel_id)
        if data.status_code == HubChannelStatus.VOID:
            return 0
        return int(data.last_state["homeLedger"]["userAllocation"])
