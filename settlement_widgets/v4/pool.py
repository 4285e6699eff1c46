"""Deprecated path: this module moved to :mod:`settlement_widgets.v4.core.pool`.

Kept for one release so existing imports keep working; importing it warns.
"""

from __future__ import annotations

import warnings

from .core.pool import (
    DYNAMIC_FEE_FLAG,
    MAX_SQRT_PRICE,
    MIN_SQRT_PRICE,
    PoolKey,
    SwapParams,
    exact_input_swap,
)

__all__ = [
    "DYNAMIC_FEE_FLAG",
    "MAX_SQRT_PRICE",
    "MIN_SQRT_PRICE",
    "PoolKey",
    "SwapParams",
    "exact_input_swap",
]

_NEW = "settlement_widgets.v4.core.pool"
warnings.warn(
    f"{__name__} moved to {_NEW}; this path will be removed in the next release",
    DeprecationWarning,
    stacklevel=2,
)
