"""Deprecated path: this module moved to :mod:`settlement_widgets.v4.client.settlement`.

Kept for one release so existing imports keep working; importing it warns.
"""

from __future__ import annotations

import warnings

from .client.settlement import (
    SettlementMixin,
)

__all__ = [
    "SettlementMixin",
]

_NEW = "settlement_widgets.v4.client.settlement"
warnings.warn(
    f"{__name__} moved to {_NEW}; this path will be removed in the next release",
    DeprecationWarning,
    stacklevel=2,
)
