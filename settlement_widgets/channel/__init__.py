"""The ``channel`` method: an ERC-7824 / Nitrolite state channel, in two protocol versions.

A reader walks method -> version -> layer: ``v0_5/`` (Nitrolite v0.5, ClearNode) and ``v1/``
(Nitrolite v1, Nitronode), each with ``core/`` (pure rules), ``chain/`` (contract bindings),
``client/`` (provider, store, connection) and ``node/`` (our local server). Shared here:
``models`` (what providers return: Channel, Transfer, Tx, StepEvent), ``interface``
(:class:`ChannelClient`, what both providers offer), ``factory`` (the one place that picks a
provider for a network's protocol), ``frames`` and ``detect`` (which protocol a node speaks)
and ``faucet`` (request_faucet_tokens). Names are imported lazily.

The old module paths of this package (``channel.provider``, ``channel.custody``, ...) are
deprecated re-exports of their new places, kept for one release.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "ChannelConfig": "v0_5.client.config",
    "CustodyClient": "v0_5.chain.custody",
    "request_faucet_tokens": "faucet",
    "RelayClient": "v0_5.client.relay_client",
    "ChannelStore": "v0_5.client.store",
    "ChannelProvider": "v0_5.client.provider",
    "Channel": "v0_5.client.provider",
    "Transfer": "v0_5.client.provider",
    "Tx": "v0_5.client.provider",
    "ChannelClient": "interface",
    "channel_provider": "factory",
    "open_channel_provider": "factory",
    "StepEvent": "models",
    "WatcherStatus": "models",
}

__all__ = [
    "Channel",
    "ChannelClient",
    "ChannelConfig",
    "ChannelProvider",
    "ChannelStore",
    "CustodyClient",
    "RelayClient",
    "StepEvent",
    "Transfer",
    "Tx",
    "WatcherStatus",
    "channel_provider",
    "open_channel_provider",
    "request_faucet_tokens",
]


__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)


if TYPE_CHECKING:  # pragma: no cover
    from .factory import channel_provider, open_channel_provider
    from .faucet import request_faucet_tokens
    from .interface import ChannelClient
    from .models import StepEvent, WatcherStatus
    from .v0_5.chain.custody import CustodyClient
    from .v0_5.client.config import ChannelConfig
    from .v0_5.client.provider import Channel, ChannelProvider, Transfer, Tx
    from .v0_5.client.relay_client import RelayClient
    from .v0_5.client.store import ChannelStore
