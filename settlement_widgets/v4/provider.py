"""Deprecated path: this module moved to :mod:`settlement_widgets.v4.client.provider`.

Kept for one release so existing imports keep working; importing it warns.
"""

from __future__ import annotations

import warnings

from .client.provider import (
    DETERMINISTIC_PROXY_RUNTIME,
    OwnerKind,
    Tx,
    V4Inspection,
    V4Provider,
    classify_owner_code,
)

__all__ = [
    "DETERMINISTIC_PROXY_RUNTIME",
    "OwnerKind",
    "Tx",
    "V4Inspection",
    "V4Provider",
    "classify_owner_code",
]

_NEW = "settlement_widgets.v4.client.provider"
warnings.warn(
    f"{__name__} moved to {_NEW}; this path will be removed in the next release",
    DeprecationWarning,
    stacklevel=2,
)
