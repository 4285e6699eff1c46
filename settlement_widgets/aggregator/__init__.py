"""The ``aggregator`` method: LI.FI quotes and routes, best-rate ranking, status tracking.

``AggregatorProvider`` is the entry point: the live LI.FI API by default, or any API in
LI.FI's schema at ``base_url`` (the local sandbox's route server; its ``source`` is then
``"local"``). The package ships no rates of its own. Underneath: :mod:`.client` (async
httpx, retries, rate-limit headers, error mapping), :mod:`.models` (strictly parsed frozen
values), :mod:`.ranking` (the documented best-rate rule, worst case first), :mod:`.valuation`
(the USD arithmetic behind it), :mod:`.frame` (DataFrames), :mod:`.plan` (what to sign) and
:mod:`.source` (local or live).
"""

from __future__ import annotations

from .client import DEFAULT_BASE_URL, LifiClient, RateLimit, RetryEvent, RetryPolicy
from .frame import ROUTE_COLUMNS, ROUTE_TABLE_COLUMNS, routes_frame, routes_styler
from .models import (
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
from .source import DataSource, data_source
from .valuation import APPROVAL_GAS

__all__ = [
    "APPROVAL_GAS",
    "DEFAULT_BASE_URL",
    "DEFAULT_INTEGRATOR",
    "ROUTE_COLUMNS",
    "ROUTE_TABLE_COLUMNS",
    "Action",
    "AggregatorProvider",
    "Chain",
    "DataSource",
    "Estimate",
    "ExecutionPlan",
    "FeeCost",
    "GasCost",
    "LifiClient",
    "NetValue",
    "PlannedTransaction",
    "Quote",
    "RateLimit",
    "RetryEvent",
    "RetryPolicy",
    "Route",
    "Status",
    "Step",
    "Token",
    "TransactionInfo",
    "TransactionRequest",
    "TransferRequest",
    "data_source",
    "net_value",
    "rank_routes",
    "routes_frame",
    "routes_styler",
]
