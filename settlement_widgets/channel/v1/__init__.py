"""The ``channel`` method on Nitrolite v1 (Nitronode).

Layers: ``core`` (the pure protocol: frames, ids, states, signatures), ``chain`` (the
``ChannelHub`` contract: :class:`ChannelHubClient`), ``client`` (what talks to a v1 node,
:class:`V1RpcClient`; what a client must not lose, :class:`V1Store`; the provider over all
three, :class:`ChannelProviderV1`) and ``node`` (our local Nitronode). Names are imported
lazily, so importing the pure core does not load web3.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "AppSession": "client.app_sessions",
    "ChannelHubClient": "chain.hub",
    "HubChainView": "chain.hub",
    "ChannelProviderV1": "client.provider",
    "V1RpcClient": "client.rpc_client",
    "V1Store": "client.store",
}

__all__ = [
    "AppSession",
    "ChannelHubClient",
    "ChannelProviderV1",
    "HubChainView",
    "V1RpcClient",
    "V1Store",
]

__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)

if TYPE_CHECKING:  # pragma: no cover
    from .chain.hub import ChannelHubClient, HubChainView
    from .client.app_sessions import AppSession
    from .client.provider import ChannelProviderV1
    from .client.rpc_client import V1RpcClient
    from .client.store import V1Store
