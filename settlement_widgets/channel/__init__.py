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
    "ChannelConfig": "config",
    "CustodyClient": "custody",
    "request_faucet_tokens": "faucet",
    "RelayClient": "relay_client",
    "ChannelStore": "store",
    "ChannelProvider": "provider",
    "Channel": "provider",
    "Transfer": "provider",
    "Tx": "provider",
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
    from .config import ChannelConfig
    from .custody import CustodyClient
    from .faucet import request_faucet_tokens
    from .models import StepEvent, WatcherStatus
    from .provider import Channel, ChannelProvider, Transfer, Tx
    from .relay_client import RelayClient
    from .store import ChannelStore
