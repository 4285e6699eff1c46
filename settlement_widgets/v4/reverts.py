"""Deprecated path: this module moved to :mod:`settlement_widgets.v4.chain.reverts`.

Kept for one release so existing imports keep working; importing it warns.
"""

from __future__ import annotations

import warnings

from .chain.reverts import (
    LIBRARY_ERRORS,
    REVERT_HINTS,
    explain_revert,
)

__all__ = [
    "LIBRARY_ERRORS",
    "REVERT_HINTS",
    "explain_revert",
]

_NEW = "settlement_widgets.v4.chain.reverts"
warnings.warn(
    f"{__name__} moved to {_NEW}; this path will be removed in the next release",
    DeprecationWarning,
    stacklevel=2,
)
