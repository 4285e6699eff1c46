"""Deprecated path: this module moved to :mod:`settlement_widgets.v4.chain.base`.

Kept for one release so existing imports keep working; importing it warns.
"""

from __future__ import annotations

import warnings

from .chain.base import (
    Tx,
    V4ProviderBase,
    check_uint,
)

__all__ = [
    "Tx",
    "V4ProviderBase",
    "check_uint",
]

_NEW = "settlement_widgets.v4.chain.base"
warnings.warn(
    f"{__name__} moved to {_NEW}; this path will be removed in the next release",
    DeprecationWarning,
    stacklevel=2,
)
