"""The one place that picks a channel provider for a network's protocol.

A :class:`~settlement_widgets.networks.Network` says which Nitrolite version its node speaks
(``network.protocol``: :data:`~settlement_widgets.networks.PROTOCOL_V05` or
:data:`~settlement_widgets.networks.PROTOCOL_V1`); :func:`channel_provider` builds the
matching provider, :func:`open_channel_provider` also asks the node first and connects.
Everything that opens a channel provider without caring about the version (the dashboard,
:mod:`settlement_widgets.providers`, notebooks) comes here and gets a
:class:`~.interface.ChannelClient`; nothing else branches on the protocol to build one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ..errors import RelayProtocolError
from ..networks import PROTOCOL_V05, PROTOCOL_V1
from .detect import detect_node_protocol
from .interface import ChannelClient

if TYPE_CHECKING:
    from ..networks import Network
    from ..signer import Signer
    from .v0_5.client.config import ChannelConfig

__all__ = ["channel_provider", "channel_provider_for_config", "open_channel_provider"]

_PROFILES: Final = {
    PROTOCOL_V05: "a v0.5 profile (SETTLEMENT_NETWORK=sepolia, LocalSandbox())",
    PROTOCOL_V1: "a v1 profile (SETTLEMENT_NETWORK=sepolia-v1, LocalSandbox(protocol='v1'))",
}


def channel_provider(network: Network, wallet: Signer) -> ChannelClient:
    """The channel provider for ``network``'s protocol, not yet connected:
    :class:`~.v1.client.provider.ChannelProviderV1` on Nitrolite v1,
    :class:`~.v0_5.client.provider.ChannelProvider` (with
    :meth:`ChannelConfig.from_network <.v0_5.client.config.ChannelConfig.from_network>`) on
    v0.5."""
    if network.protocol == PROTOCOL_V1:
        from .v1.client.provider import ChannelProviderV1

        v1: ChannelClient = ChannelProviderV1(network, wallet)
        return v1
    from .v0_5.client.config import ChannelConfig

    return channel_provider_for_config(ChannelConfig.from_network(network), wallet)


def channel_provider_for_config(config: ChannelConfig, wallet: Signer) -> ChannelClient:
    """The provider for an explicit :class:`~.v0_5.client.config.ChannelConfig` (a v0.5
    configuration: custody, adjudicator, relay; what ``init_channel_provider`` takes)."""
    from .v0_5.client.provider import ChannelProvider

    v05: ChannelClient = ChannelProvider(config, wallet)
    return v05


async def open_channel_provider(
    network: Network, wallet: Signer, *, probe: bool = True
) -> ChannelClient:
    """The connected channel provider for ``network`` (see :func:`channel_provider`).

    With ``probe`` (the default) the node is asked first
    (:func:`~.detect.detect_node_protocol`); a node that speaks the other protocol, or
    neither, is a :class:`RelayProtocolError` that names what it speaks and which profile
    fits it, instead of a handshake that times out.
    """
    if probe:
        seen = await detect_node_protocol(network.node_url)
        if seen.kind != network.protocol:
            fits = _PROFILES.get(seen.kind)
            advice = (
                f"use {fits}, or point this profile at a {network.protocol} node"
                if fits
                else "check the node URL (SETTLEMENT_RELAY_URL or the network profile)"
            )
            raise RelayProtocolError(
                f"the network profile {network.name!r} says {network.protocol}, but the node "
                f"at {network.node_url} answered with {seen.found}: {seen.sample!r}; {advice}",
                found=seen.kind,
            )
    return await channel_provider(network, wallet).connect()
