"""Deprecated path: this module moved to :mod:`settlement_widgets.aggregator.node`.

Kept for one release so existing imports keep working; importing it warns.
"""

from __future__ import annotations

import warnings

from ...aggregator.node import (
    BRIDGES,
    GAS_LIMITS,
    GAS_UNITS,
    SECOND_CHAIN_ID,
    BridgeRelayer,
    BridgeSpec,
    ChainDeployment,
    CrossChainDeployment,
    LifiError,
    PendingTransfer,
    RouteServer,
)

__all__ = [
    "BRIDGES",
    "GAS_LIMITS",
    "GAS_UNITS",
    "SECOND_CHAIN_ID",
    "BridgeRelayer",
    "BridgeSpec",
    "ChainDeployment",
    "CrossChainDeployment",
    "LifiError",
    "PendingTransfer",
    "RouteServer",
]

_NEW = "settlement_widgets.aggregator.node"
warnings.warn(
    f"{__name__} moved to {_NEW}; this path will be removed in the next release",
    DeprecationWarning,
    stacklevel=2,
)
