"""Deprecated path: this module moved to :mod:`settlement_widgets.aggregator.core.source`.

Kept for one release so existing imports keep working; importing it warns.
"""

from __future__ import annotations

import warnings

from .core.source import (
    DataSource,
    data_source,
    is_loopback_host,
)

__all__ = [
    "DataSource",
    "data_source",
    "is_loopback_host",
]

_NEW = "settlement_widgets.aggregator.core.source"
warnings.warn(
    f"{__name__} moved to {_NEW}; this path will be removed in the next release",
    DeprecationWarning,
    stacklevel=2,
)
