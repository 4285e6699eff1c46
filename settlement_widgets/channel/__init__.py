"""The ``channel`` method: an ERC-7824 (Nitrolite v0.5) state channel.

Modules: ``config`` (ChannelConfig), ``custody`` (async client of the custody contract),
``relay_client`` (WebSocket RPC client of a ClearNode-compatible relay), ``store`` (SQLite:
signed states, pending transactions, session keys), ``provider`` (ChannelProvider, the whole
lifecycle) and ``faucet`` (request_faucet_tokens). Names are imported lazily.
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
    "StepEvent": "models",
    "WatcherStatus": "models",
}

__all__ = [
    "Channel",
    "ChannelConfig",
    "ChannelProvider",
    "ChannelStore",
    "CustodyClient",
    "RelayClient",
    "StepEvent",
    "Transfer",
    "Tx",
    "WatcherStatus",
    "request_faucet_tokens",
]


__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)


if TYPE_CHECKING:  # pragma: no cover
    from .faucet import request_faucet_tokens
    from .models import StepEvent, WatcherStatus
    from .v0_5.chain.custody import CustodyClient
    from .v0_5.client.config import ChannelConfig
    from .v0_5.client.provider import Channel, ChannelProvider, Transfer, Tx
    from .v0_5.client.relay_client import RelayClient
    from .v0_5.client.store import ChannelStore
