"""Routes as a pandas DataFrame: one row per route, best first, stable columns and dtypes.

Dtype choices (``ROUTE_COLUMNS`` is the contract, and a test holds us to it):

- Amounts in smallest units (``from_amount``, ``to_amount``, ``to_amount_min``) are
  ``object`` columns holding Python ``int``. They must be exact and uint256 amounts overflow
  ``int64``/``Int64`` (1e18-decimal tokens pass 2**63 at about 9.2 tokens).
- The same amounts in human units (``*_units``) and every USD value are ``float64``: for
  reading, sorting and plotting. They are rounded views; the exact values stay in the int
  columns and on the :class:`~settlement_widgets.aggregator.models.Route` objects
  (:class:`~decimal.Decimal`). Unknown USD values are NaN.
- Counts and chain ids are nullable ``Int64``; text is the ``string`` dtype.

``df.attrs`` says where the data came from: ``source`` is ``"recorded"`` or ``"live"``,
``recorded`` a bool, and ``note`` a sentence for recorded data. pandas is imported when the
function runs, so importing the aggregator stays light.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from .models import RECORDED_NOTE, Route
from .ranking import net_value, rank_routes

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ROUTE_COLUMNS", "routes_frame"]

#: Column -> dtype of :func:`routes_frame`, in order.
ROUTE_COLUMNS: dict[str, str] = {
    "rank": "Int64",
    "route_id": "string",
    "tools": "string",
    "steps": "Int64",
    "from_chain_id": "Int64",
    "to_chain_id": "Int64",
    "from_token": "string",
    "to_token": "string",
    "from_amount": "object",
    "from_amount_units": "float64",
    "to_amount": "object",
    "to_amount_units": "float64",
    "to_amount_min": "object",
    "to_amount_min_units": "float64",
    "from_amount_usd": "float64",
    "to_amount_usd": "float64",
    "fees_usd": "float64",
    "included_fees_usd": "float64",
    "gas_usd": "float64",
    "net_usd": "float64",
    "net_min_usd": "float64",
    "duration_s": "float64",
    "tags": "string",
}


def _f(value: Decimal | None) -> float:
    return math.nan if value is None else float(value)


def _row(route: Route) -> dict[str, Any]:
    value = net_value(route)
    return {
        "rank": route.rank,
        "route_id": route.id,
        "tools": " > ".join(route.tools),
        "steps": len(route.steps),
        "from_chain_id": route.from_chain_id,
        "to_chain_id": route.to_chain_id,
        "from_token": route.from_token.symbol,
        "to_token": route.to_token.symbol,
        "from_amount": route.from_amount,
        "from_amount_units": float(route.from_amount_units),
        "to_amount": route.to_amount,
        "to_amount_units": float(route.to_amount_units),
        "to_amount_min": route.to_amount_min,
        "to_amount_min_units": float(route.to_token.units(route.to_amount_min)),
        "from_amount_usd": _f(route.from_amount_usd),
        "to_amount_usd": _f(value.received_usd if value else route.to_amount_usd),
        "fees_usd": _f(value.fees_usd if value else None),
        "included_fees_usd": _f(value.included_fees_usd if value else None),
        "gas_usd": _f(value.gas_usd if value else route.gas_cost_usd),
        "net_usd": _f(value.net_usd if value else None),
        "net_min_usd": _f(value.net_min_usd if value else None),
        "duration_s": route.duration,
        "tags": ",".join(route.tags),
    }


def routes_frame(routes: Iterable[Route], *, recorded: bool | None = None) -> pd.DataFrame:
    """One row per route, ranked best first (see :mod:`.ranking` for the rule).

    ``recorded`` overrides the label; by default the frame is recorded when any route is.
    An empty input gives an empty frame with the same columns and dtypes.
    """
    import pandas as pd

    ranked = rank_routes(routes)
    rows = [_row(r) for r in ranked]
    data = {
        name: pd.Series([row[name] for row in rows], dtype=dtype)
        for name, dtype in ROUTE_COLUMNS.items()
    }
    frame = pd.DataFrame(data, columns=list(ROUTE_COLUMNS))
    is_recorded = any(r.recorded for r in ranked) if recorded is None else recorded
    frame.attrs["source"] = "recorded" if is_recorded else "live"
    frame.attrs["recorded"] = is_recorded
    if is_recorded:
        frame.attrs["note"] = RECORDED_NOTE
    return frame
