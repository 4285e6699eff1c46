"""Deprecated path: this module moved to :mod:`settlement_widgets.aggregator.core.models`
(the values) and :mod:`settlement_widgets.aggregator.core.parse` (the parsers).

Kept for one release so existing imports keep working; importing it warns.
"""

from __future__ import annotations

import warnings

from .core.models import (
    STATUS_VALUES,
    TERMINAL_STATUSES,
    Action,
    Chain,
    Estimate,
    FeeCost,
    GasCost,
    Quote,
    Route,
    Status,
    Step,
    Token,
    TransactionInfo,
    TransactionRequest,
)
from .core.parse import (
    parse_chains,
    parse_quote,
    parse_routes,
    parse_status,
    parse_step,
    parse_tokens,
)

__all__ = [
    "STATUS_VALUES",
    "TERMINAL_STATUSES",
    "Action",
    "Chain",
    "Estimate",
    "FeeCost",
    "GasCost",
    "Quote",
    "Route",
    "Status",
    "Step",
    "Token",
    "TransactionInfo",
    "TransactionRequest",
    "parse_chains",
    "parse_quote",
    "parse_routes",
    "parse_status",
    "parse_step",
    "parse_tokens",
]

_NEW = "settlement_widgets.aggregator.core.models"
warnings.warn(
    f"{__name__} moved to {_NEW}; this path will be removed in the next release",
    DeprecationWarning,
    stacklevel=2,
)
