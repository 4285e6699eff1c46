"""The ``aggregator`` method: LI.FI quotes and routes, best-rate ranking, status tracking.

``AggregatorProvider`` is the entry point (``AggregatorProvider.recorded()`` for offline
notebooks, clearly labelled). Underneath: :mod:`.client` (async httpx, retries, error
mapping), :mod:`.models` (strictly parsed frozen values), :mod:`.ranking` (the documented
best-rate rule), :mod:`.frame` (DataFrames), :mod:`.plan` (what to sign), :mod:`.replay`
(the recorded responses) and :mod:`.testserver` (a loopback LI.FI for tests).
"""

from __future__ import annotations

from .client import DEFAULT_BASE_URL, LifiClient, RetryEvent, RetryPolicy
from .frame import ROUTE_COLUMNS, ROUTE_TABLE_COLUMNS, routes_frame, routes_styler
from .models import (
    RECORDED_NOTE,
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
from .params import TransferRequest
from .plan import ExecutionPlan, PlannedTransaction
from .provider import DEFAULT_INTEGRATOR, AggregatorProvider
from .ranking import NetValue, net_value, rank_routes

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_INTEGRATOR",
    "RECORDED_NOTE",
    "ROUTE_COLUMNS",
    "ROUTE_TABLE_COLUMNS",
    "Action",
    "AggregatorProvider",
    "Chain",
    "Estimate",
    "ExecutionPlan",
    "FeeCost",
    "GasCost",
    "LifiClient",
    "NetValue",
    "PlannedTransaction",
    "Quote",
    "RetryEvent",
    "RetryPolicy",
    "Route",
    "Status",
    "Step",
    "Token",
    "TransactionInfo",
    "TransactionRequest",
    "TransferRequest",
    "net_value",
    "rank_routes",
    "routes_frame",
    "routes_styler",
]
