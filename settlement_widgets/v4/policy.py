"""Deprecated path: this module moved to :mod:`settlement_widgets.v4.core.policy`.

Kept for one release so existing imports keep working; importing it warns.
"""

from __future__ import annotations

import warnings

from .core.policy import (
    BPS_DENOMINATOR,
    REASON_CODES,
    REASON_OK,
    REASON_POLICY_EXPIRED,
    REASON_POLICY_MISSING,
    REASON_SLIPPAGE_EXCEEDED,
    Policy,
    effective_min,
    evaluate_policy,
    explain_reason,
    reason_code,
    reason_name,
)

__all__ = [
    "BPS_DENOMINATOR",
    "REASON_CODES",
    "REASON_OK",
    "REASON_POLICY_EXPIRED",
    "REASON_POLICY_MISSING",
    "REASON_SLIPPAGE_EXCEEDED",
    "Policy",
    "effective_min",
    "evaluate_policy",
    "explain_reason",
    "reason_code",
    "reason_name",
]

_NEW = "settlement_widgets.v4.core.policy"
warnings.warn(
    f"{__name__} moved to {_NEW}; this path will be removed in the next release",
    DeprecationWarning,
    stacklevel=2,
)
