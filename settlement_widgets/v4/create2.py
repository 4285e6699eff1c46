"""Deprecated path: this module moved to :mod:`settlement_widgets.v4.core.create2`.

Kept for one release so existing imports keep working; importing it warns.
"""

from __future__ import annotations

import warnings

from .core.create2 import (
    CREATE2_DEPLOYER,
    SaltSearch,
    create2_address,
    mine_hook_salt,
)

__all__ = [
    "CREATE2_DEPLOYER",
    "SaltSearch",
    "create2_address",
    "mine_hook_salt",
]

_NEW = "settlement_widgets.v4.core.create2"
warnings.warn(
    f"{__name__} moved to {_NEW}; this path will be removed in the next release",
    DeprecationWarning,
    stacklevel=2,
)
