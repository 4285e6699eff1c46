"""Deprecated path: this module moved to :mod:`settlement_widgets.aggregator.node.deploy`.

Kept for one release so existing imports keep working; importing it warns.
"""

from __future__ import annotations

import warnings

from ...aggregator.node.deploy import (
    BRIDGES,
    SECOND_CHAIN_ID,
    WETH_PRICE_USDC,
    BridgeSpec,
    ChainDeployment,
    CrossChainDeployment,
    chain_key,
    chain_name,
    deploy_crosschain,
)

__all__ = [
    "BRIDGES",
    "SECOND_CHAIN_ID",
    "WETH_PRICE_USDC",
    "BridgeSpec",
    "ChainDeployment",
    "CrossChainDeployment",
    "chain_key",
    "chain_name",
    "deploy_crosschain",
]

_NEW = "settlement_widgets.aggregator.node.deploy"
warnings.warn(
    f"{__name__} moved to {_NEW}; this path will be removed in the next release",
    DeprecationWarning,
    stacklevel=2,
)
