"""A local Nitrolite v1 node (Yellow's Nitronode protocol) for tests and the sandbox.

It serves the v1 wire (5-element frames) and the 20 RPC methods of the Nitrolite v1.4.1 node
over a SQLite ledger whose every change is committed before it is acknowledged. Start it in
process with :class:`NitronodeNode` or as a child process with :class:`NitronodeProcess` /
``python -m settlement_widgets.channel.v1.node``. On-chain facts come from an optional
:class:`ChainView`.
"""

from __future__ import annotations

from .backing import BackingGuard
from .chain_view import (
    CHANNEL_STATUSES,
    ChainChannel,
    ChainView,
    ChainViews,
    ConfirmedChainView,
    ConfirmedHubView,
)
from .config import NitronodeConfig, NodeAsset, NodeChain, NodeToken, parse_asset_spec
from .handlers import NitronodeService
from .ledger import NitronodeLedger
from .process import NitronodeProcess
from .server import MAX_FRAME_BYTES, NitronodeNode

__all__ = [
    "CHANNEL_STATUSES",
    "MAX_FRAME_BYTES",
    "BackingGuard",
    "ChainChannel",
    "ChainView",
    "ChainViews",
    "ConfirmedChainView",
    "ConfirmedHubView",
    "NitronodeConfig",
    "NitronodeLedger",
    "NitronodeNode",
    "NitronodeProcess",
    "NitronodeService",
    "NodeAsset",
    "NodeChain",
    "NodeToken",
    "parse_asset_spec",
]
