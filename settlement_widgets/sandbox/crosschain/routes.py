"""Deprecated path: this module moved to :mod:`settlement_widgets.aggregator.node.routes`.

Kept for one release so existing imports keep working; importing it warns.
"""

from __future__ import annotations

import warnings

from ...aggregator.node.routes import (
    DEFAULT_SLIPPAGE,
    GAS_LIMITS,
    GAS_UNITS,
    LifiError,
    RouteServer,
)

__all__ = [
    "DEFAULT_SLIPPAGE",
    "GAS_LIMITS",
    "GAS_UNITS",
    "LifiError",
    "RouteServer",
]

_NEW = "settlement_widgets.aggregator.node.routes"
warnings.warn(
    f"{__name__} moved to {_NEW}; this path will be removed in the next release",
    DeprecationWarning,
    stacklevel=2,
)
