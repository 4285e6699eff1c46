"""Deprecated path: this module moved to :mod:`settlement_widgets.aggregator.core.valuation`.

Kept for one release so existing imports keep working; importing it warns.
"""

from __future__ import annotations

import warnings

from .core.valuation import (
    APPROVAL_GAS,
    NetValue,
    approval_cost,
    value_usd,
)

__all__ = [
    "APPROVAL_GAS",
    "NetValue",
    "approval_cost",
    "value_usd",
]

_NEW = "settlement_widgets.aggregator.core.valuation"
warnings.warn(
    f"{__name__} moved to {_NEW}; this path will be removed in the next release",
    DeprecationWarning,
    stacklevel=2,
)
