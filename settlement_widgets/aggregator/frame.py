"""Deprecated path: this module moved to :mod:`settlement_widgets.aggregator.core.frame`.

Kept for one release so existing imports keep working; importing it warns.
"""

from __future__ import annotations

import warnings

from .core.frame import (
    ROUTE_COLUMNS,
    ROUTE_TABLE_COLUMNS,
    routes_frame,
    routes_styler,
)

__all__ = [
    "ROUTE_COLUMNS",
    "ROUTE_TABLE_COLUMNS",
    "routes_frame",
    "routes_styler",
]

_NEW = "settlement_widgets.aggregator.core.frame"
warnings.warn(
    f"{__name__} moved to {_NEW}; this path will be removed in the next release",
    DeprecationWarning,
    stacklevel=2,
)
