"""Our ClearNode v0.5 wire-compatible relay node (the local sandbox's ``node_url``).

``RelayNode(RelayConfig(...))`` serves the v0.5 ClearNode's WebSocket RPC on
loopback over a SQLite (WAL) ledger with group commit; with a custody client it also follows
the chain. ``python -m settlement_widgets.channel.v0_5.node`` runs one on its own.

Names are imported lazily. Modules: ``deploy`` (the custody contracts' deployment),
``config`` (what it serves), ``ledger`` (state + SQLite; the group commit is
:mod:`..node_base.committer`'s), ``wire`` (frames), ``jwt``, ``clock`` (Unix ms), ``service``
(the protocol rules: dispatch, composed from ``base`` (shared helpers), ``auth`` (login,
session keys), ``transfers``, ``channels`` (channel RPCs) and ``chain_events`` (custody
event effects)), ``server`` (the WebSocket node), ``watcher`` (polls custody events),
``process`` (the relay in a child process).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...._lazy import lazy_exports

# names resolve on first use: the sandbox imports this package's ``deploy`` without
# loading the node itself
_EXPORTS: dict[str, str] = {
    "AssetConfig": "config",
    "NetworkConfig": "config",
    "RelayConfig": "config",
    "ChannelRecord": "ledger",
    "Ledger": "ledger",
    "SessionKeyRecord": "ledger",
    "TxRecord": "ledger",
    "RelayNode": "server",
    "RelayService": "service",
}

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

__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)

if TYPE_CHECKING:  # pragma: no cover
    from .config import AssetConfig, NetworkConfig, RelayConfig
    from .ledger import ChannelRecord, Ledger, SessionKeyRecord, TxRecord
    from .server import RelayNode
    from .service import RelayService
