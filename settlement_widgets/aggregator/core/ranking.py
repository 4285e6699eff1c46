"""Best-rate discovery: rank routes by what the user keeps in the worst case, not by the
headline ``toAmount``.

The original dashboard picked the route with the highest ``toAmount``. That ignores three
things: ``toAmount`` is an estimate, and only ``toAmountMin`` is guaranteed (a route with a
wider slippage bound may deliver less than a route with a lower headline); fees that are not
taken out of ``toAmount`` but paid on top (a bridge's messaging fee in the native coin, for
instance); and gas, including the ERC-20 approval LI.FI's estimate leaves out. A route can
show the highest ``toAmount`` and still leave the user poorer. This module values every
route in USD at its worst case and ranks on that value.

The rule, exactly (all arithmetic in :class:`~decimal.Decimal`, no rounding):

1. **received_usd** (headline) = the route's ``toAmountUSD``. If LI.FI sent none,
   ``toAmount`` in whole tokens (``toAmount / 10**toToken.decimals``) times
   ``toToken.priceUSD``. **received_min_usd** (worst case) = ``toAmountMin`` valued the same
   way: at the route's own rate (``toAmountUSD * toAmountMin / toAmount``) when LI.FI sent
   ``toAmountUSD``, else times ``toToken.priceUSD``. With neither the route has no USD value
   (see 7).
2. **fees_usd** = the sum of ``amountUSD`` of every fee cost with ``included: false`` in
   ``steps[*].estimate.feeCosts``. Fees with ``included: true`` are already deducted from
   ``toAmount`` and are not subtracted again (they are reported as ``included_fees_usd``).
   Only top-level steps count: a step's estimate already aggregates its ``includedSteps``.
3. LI.FI's gas = the route's ``gasCostUSD`` (LI.FI's aggregate). If absent, the sum of
   ``amountUSD`` of ``steps[*].estimate.gasCosts``; when a step lists a ``SUM`` entry, only
   its ``SUM`` entries are counted (a ``SUM`` already totals the others).
4. **approval_gas_usd**: a step whose source token is not the native coin and whose
   estimate has an ``approvalAddress`` needs an ERC-20 approval first. If its ``gasCosts``
   list an ``APPROVE`` entry, LI.FI priced it and it is already in 3. Otherwise
   :data:`~.valuation.APPROVAL_GAS` (46,000 gas) is priced at the gas price (``price``, wei)
   and gas-token ``priceUSD`` of the step's first ``gasCosts`` entry that has both, and
   added. With no such entry the approval's cost is unknown: it counts as 0 and the
   :class:`NetValue` says so (``approval_gas_known`` is False, ``note`` explains).
   **gas_usd** = 3 + the approvals added in 4.
5. **net_min_usd** (worst case) = received_min_usd - fees_usd - gas_usd.
   **net_usd** (headline) = received_usd - fees_usd - gas_usd.
6. Order: net_min_usd descending; ties (exactly equal Decimals) by estimated duration
   ascending (sum of ``steps[*].estimate.executionDuration``); then net_usd descending;
   then the route id, so the order is total and reproducible.
7. Routes without a USD value come after every valued route, ordered by ``toAmountMin``
   descending (one request has one ``toToken``, so token amounts compare), then duration,
   then ``toAmount`` descending, then the route id.

A :class:`~settlement_widgets.aggregator.core.models.Quote` is valued the same way (a quote is a
single step; it has no ``gasCostUSD``, so rule 3's fallback applies).

Rules 1-5 are computed in :mod:`.valuation` (the models need them for ``net_usd`` and
``net_min_usd`` too); this module adds the order. Imports run one way:
ranking -> models -> valuation.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from .models import Quote, Route
from .valuation import NetValue

__all__ = ["NetValue", "best", "net_value", "rank_routes"]


def net_value(item: Route | Quote) -> NetValue | None:
    """The USD breakdown of a route or quote, or None when it cannot be priced in USD."""
    return item.net_value()


def _key(route: Route) -> tuple[object, ...]:
    value = net_value(route)
    if value is None:
        return (1, -route.to_amount_min, route.duration, -route.to_amount, route.id)
    return (0, -value.net_min_usd, route.duration, -value.net_usd, route.id)


def rank_routes(routes: Iterable[Route]) -> list[Route]:
    """The routes best first, each a copy with ``rank`` set (1 = best). Pure."""
    ordered = sorted(routes, key=_key)
    return [replace(r, rank=i) for i, r in enumerate(ordered, start=1)]


def best(routes: Iterable[Route]) -> Route | None:
    """The best route by :func:`rank_routes`, or None for no routes."""
    ranked = rank_routes(routes)
    return ranked[0] if ranked else None
