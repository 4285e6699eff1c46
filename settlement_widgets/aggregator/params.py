"""Deprecated path: this module moved to :mod:`settlement_widgets.aggregator.core.params`.

Kept for one release so existing imports keep working; importing it warns.
"""

from __future__ import annotations

import warnings

from .core.params import (
    CHAIN_IDS,
    KNOWN_TOKENS,
    ORDERS,
    TransferRequest,
    resolve_chain,
    resolve_token,
)

__all__ = [
    "CHAIN_IDS",
    "KNOWN_TOKENS",
    "ORDERS",
    "TransferRequest",
    "resolve_chain",
    "resolve_token",
]

_NEW = "settlement_widgets.aggregator.core.params"
warnings.warn(
    f"{__name__} moved to {_NEW}; this path will be removed in the next release",
    DeprecationWarning,
    stacklevel=2,
)
