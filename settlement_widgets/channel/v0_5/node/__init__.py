"""Our ClearNode v0.5 wire-compatible relay node (the local sandbox's ``node_url``).

``RelayNode(RelayConfig(...))`` serves the WebSocket RPC of erc7824-nitrolite.md §3 on
loopback over a SQLite (WAL) ledger with group commit; with a custody client it also follows
the chain. ``python -m settlement_widgets.channel.v0_5.node`` runs one on its own.

Modules: ``config`` (what it serves), ``ledger`` (state + SQLite), ``committer`` (group
commit), ``wire`` (frames), ``jwt``, ``clock`` (Unix ms), ``service`` (the protocol rules:
dispatch, composed from ``base`` (shared helpers), ``auth`` (login, session keys),
``transfers``, ``channels`` (channel RPCs) and ``chain_events`` (custody event effects)),
``server`` (the WebSocket node), ``watcher`` (polls custody events).
"""

from __future__ import annotations

from .config import AssetConfig, NetworkConfig, RelayConfig
from .ledger import ChannelRecord, Ledger, SessionKeyRecord, TxRecord
from .server import RelayNode
from .service import RelayService

__all__ = [
    "AssetConfig",
    "ChannelRecord",
    "Ledger",
    "NetworkConfig",
    "RelayConfig",
    "RelayNode",
    "RelayService",
    "SessionKeyRecord",
    "TxRecord",
]
