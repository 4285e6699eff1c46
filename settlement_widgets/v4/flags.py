"""Deprecated path: this module moved to :mod:`settlement_widgets.v4.core.flags`.

Kept for one release so existing imports keep working; importing it warns.
"""

from __future__ import annotations

import warnings

from .core.flags import (
    ALL_HOOK_MASK,
    BEFORE_SWAP_FLAG,
    HOOK_FLAGS,
    flags_of,
    has_exact_flags,
    hook_permissions,
)

__all__ = [
    "ALL_HOOK_MASK",
    "BEFORE_SWAP_FLAG",
    "HOOK_FLAGS",
    "flags_of",
    "has_exact_flags",
    "hook_permissions",
]

_NEW = "settlement_widgets.v4.core.flags"
warnings.warn(
    f"{__name__} moved to {_NEW}; this path will be removed in the next release",
    DeprecationWarning,
    stacklevel=2,
)
