"""Deprecated path: this module moved to :mod:`settlement_widgets.aggregator.core.ranking`.

Kept for one release so existing imports keep working; importing it warns.
"""

from __future__ import annotations

import warnings

from .core.ranking import (
    NetValue,
    best,
    net_value,
    rank_routes,
)

__all__ = [
    "NetValue",
    "best",
    "net_value",
    "rank_routes",
]

_NEW = "settlement_widgets.aggregator.core.ranking"
warnings.warn(
    f"{__name__} moved to {_NEW}; this path will be removed in the next release",
    DeprecationWarning,
    stacklevel=2,
)
