"""Deprecated path: this module moved to :mod:`settlement_widgets.aggregator.core.plan`.

Kept for one release so existing imports keep working; importing it warns.
"""

from __future__ import annotations

import warnings

from .core.plan import (
    ALLOWANCE_SELECTOR,
    APPROVE_SELECTOR,
    ExecutionPlan,
    PlannedTransaction,
    allowance_calldata,
    approve_calldata,
    plan_step,
)

__all__ = [
    "ALLOWANCE_SELECTOR",
    "APPROVE_SELECTOR",
    "ExecutionPlan",
    "PlannedTransaction",
    "allowance_calldata",
    "approve_calldata",
    "plan_step",
]

_NEW = "settlement_widgets.aggregator.core.plan"
warnings.warn(
    f"{__name__} moved to {_NEW}; this path will be removed in the next release",
    DeprecationWarning,
    stacklevel=2,
)
