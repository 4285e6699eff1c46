"""Deprecated path: this module moved to :mod:`settlement_widgets.aggregator.node.relayer`.

Kept for one release so existing imports keep working; importing it warns.
"""

from __future__ import annotations

import warnings

from ...aggregator.node.relayer import (
    BridgeRelayer,
    PendingTransfer,
    transfer_started_topic,
)

__all__ = [
    "BridgeRelayer",
    "PendingTransfer",
    "transfer_started_topic",
]

_NEW = "settlement_widgets.aggregator.node.relayer"
warnings.warn(
    f"{__name__} moved to {_NEW}; this path will be removed in the next release",
    DeprecationWarning,
    stacklevel=2,
)
