"""Deprecated path: this module moved to :mod:`settlement_widgets.aggregator.client.provider`.

Kept for one release so existing imports keep working; importing it warns.
"""

from __future__ import annotations

import warnings

from .client.provider import (
    DEFAULT_INTEGRATOR,
    AggregatorProvider,
    ProgressCallback,
)

__all__ = [
    "DEFAULT_INTEGRATOR",
    "AggregatorProvider",
    "ProgressCallback",
]

_NEW = "settlement_widgets.aggregator.client.provider"
warnings.warn(
    f"{__name__} moved to {_NEW}; this path will be removed in the next release",
    DeprecationWarning,
    stacklevel=2,
)
