"""The ``channel`` method on Nitrolite v1 (Nitronode): client, ChannelHub and provider.

The pure protocol (frames, ids, states, signatures) lives in
:mod:`settlement_widgets.nitrolite_v1`; this package holds what talks to a v1 node
(:class:`V1RpcClient`), to a ``ChannelHub`` contract (:class:`ChannelHubClient`), what a
client must not lose (:class:`V1Store`) and the provider over all three
(:class:`ChannelProviderV1`).
"""

from .app_sessions import AppSession
from .hub import ChannelHubClient, HubChainView
from .provider import ChannelProviderV1
from .rpc_client import V1RpcClient
from .store import V1Store

__all__ = [
    "AppSession",
    "ChannelHubClient",
    "ChannelProviderV1",
    "HubChainView",
    "V1RpcClient",
    "V1Store",
]
