"""Deprecated path: this module moved to :mod:`settlement_widgets.v4.chain.events`.

Kept for one release so existing imports keep working; importing it warns.
"""

from __future__ import annotations

import warnings

from .chain.events import (
    DecodedEvent,
    decode_logs,
    event_table,
)

__all__ = [
    "DecodedEvent",
    "decode_logs",
    "event_table",
]

_NEW = "settlement_widgets.v4.chain.events"
warnings.warn(
    f"{__name__} moved to {_NEW}; this path will be removed in the next release",
    DeprecationWarning,
    stacklevel=2,
)
