"""The ``aggregator`` method: LI.FI quotes and routes, best-rate ranking, status tracking.

``AggregatorProvider`` is the entry point: the live LI.FI API by default, or any API in
LI.FI's schema at ``base_url`` (the local sandbox's route server; its ``source`` is then
``"local"``). The package ships no rates of its own. It is laid out by layer:

- :mod:`.core` (pure): :mod:`~.core.models` (strictly parsed frozen values),
  :mod:`~.core.params`, :mod:`~.core.ranking` (the documented best-rate rule, worst case
  first), :mod:`~.core.valuation` (the USD arithmetic behind it), :mod:`~.core.plan` (what to
  sign), :mod:`~.core.frame` (DataFrames) and :mod:`~.core.source` (local or live);
- :mod:`.client`: :mod:`~.client.lifi` (async httpx, retries, rate-limit headers, error
  mapping) and :mod:`~.client.provider` (:class:`AggregatorProvider`);
- :mod:`.node`: our LI.FI-schema route server, bridges and relayer, which the local sandbox
  starts (two chains, routes quoted from chain state and executed for real).

The names below load on first use, as the package root's do, so the pure core imports
without httpx, asyncio or pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

# name -> submodule that defines it (loaded on first use: httpx and pandas stay unloaded until then)
_EXPORTS: dict[str, str] = {
    "DEFAULT_BASE_URL": "client.lifi",
    "LifiClient": "client.lifi",
    "RateLimit": "client.lifi",
    "RetryEvent": "client.lifi",
    "RetryPolicy": "client.lifi",
    "AggregatorProvider": "client.provider",
    "DEFAULT_INTEGRATOR": "client.provider",
    "ROUTE_COLUMNS": "core.frame",
    "ROUTE_TABLE_COLUMNS": "core.frame",
    "routes_frame": "core.frame",
    "routes_styler": "core.frame",
    "Action": "core.models",
    "Chain": "core.models",
    "Estimate": "core.models",
    "FeeCost": "core.models",
    "GasCost": "core.models",
    "Quote": "core.models",
    "Route": "core.models",
    "Status": "core.models",
    "Step": "core.models",
    "Token": "core.models",
    "TransactionInfo": "core.models",
    "TransactionRequest": "core.models",
    "TransferRequest": "core.params",
    "ExecutionPlan": "core.plan",
    "PlannedTransaction": "core.plan",
    "NetValue": "core.ranking",
    "net_value": "core.ranking",
    "rank_routes": "core.ranking",
    "DataSource": "core.source",
    "data_source": "core.source",
    "APPROVAL_GAS": "core.valuation",
}

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


__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)


if TYPE_CHECKING:  # pragma: no cover
    from .client.lifi import DEFAULT_BASE_URL, LifiClient, RateLimit, RetryEvent, RetryPolicy
    from .client.provider import DEFAULT_INTEGRATOR, AggregatorProvider
    from .core.frame import ROUTE_COLUMNS, ROUTE_TABLE_COLUMNS, routes_frame, routes_styler
    from .core.models import (
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
    from .core.params import TransferRequest
    from .core.plan import ExecutionPlan, PlannedTransaction
    from .core.ranking import NetValue, net_value, rank_routes
    from .core.source import DataSource, data_source
    from .core.valuation import APPROVAL_GAS
