"""What a route or quote is worth in USD to the user: received, minus fees paid on top, minus gas.

This is rules 1-4 of the ranking rule written out in :mod:`.ranking` (which adds the order,
rules 5-6). It lives in its own module, below :mod:`.models`, because both sides need it:
``Route.net_usd`` / ``Quote.net_usd`` in the models and the ordering in the ranking. Keeping
it here makes the imports one-way (``ranking -> models -> valuation``) instead of a circle.

It only reads attributes, described by the small protocols below, so it does not import the
model classes; :class:`~.models.Route` and :class:`~.models.Quote` pass their parts in.
All arithmetic is :class:`~decimal.Decimal`, without rounding.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Protocol

__all__ = ["NetValue", "value_usd"]

_ZERO = Decimal(0)


class _FeeCost(Protocol):
    @property
    def included(self) -> bool: ...

    @property
    def amount_usd(self) -> Decimal: ...


class _GasCost(Protocol):
    @property
    def type(self) -> str: ...

    @property
    def amount_usd(self) -> Decimal: ...


class _Estimate(Protocol):
    @property
    def fee_costs(self) -> Sequence[_FeeCost]: ...

    @property
    def gas_costs(self) -> Sequence[_GasCost]: ...


class _Step(Protocol):
    @property
    def estimate(self) -> _Estimate: ...


class _Token(Protocol):
    @property
    def price_usd(self) -> Decimal | None: ...

    def units(self, amount: int) -> Decimal: ...


@dataclass(frozen=True)
class NetValue:
    """The USD breakdown behind a route's rank (rules in :mod:`.ranking`)."""

    received_usd: Decimal
    received_min_usd: Decimal
    fees_usd: Decimal
    included_fees_usd: Decimal
    gas_usd: Decimal

    @property
    def net_usd(self) -> Decimal:
        return self.received_usd - self.fees_usd - self.gas_usd

    @property
    def net_min_usd(self) -> Decimal:
        return self.received_min_usd - self.fees_usd - self.gas_usd


def _gas_of(costs: Sequence[_GasCost]) -> Decimal:
    """A step's gas in USD; a ``SUM`` entry already totals the others, so it wins."""
    sums = [g.amount_usd for g in costs if g.type == "SUM"]
    return sum(sums if sums else (g.amount_usd for g in costs), _ZERO)


def _costs(steps: Iterable[_Step]) -> tuple[Decimal, Decimal, Decimal]:
    """``(fees paid on top, fees already in toAmount, gas)`` over the top-level steps."""
    fees = included = gas = _ZERO
    for step in steps:
        for fee in step.estimate.fee_costs:
            if fee.included:
                included += fee.amount_usd
            else:
                fees += fee.amount_usd
        gas += _gas_of(step.estimate.gas_costs)
    return fees, included, gas


def value_usd(
    steps: Iterable[_Step],
    *,
    to_token: _Token,
    to_amount: int,
    to_amount_min: int,
    to_amount_usd: Decimal | None,
    gas_cost_usd: Decimal | None,
) -> NetValue | None:
    """The USD breakdown of what ``steps`` deliver, or None when it cannot be priced in USD.

    ``gas_cost_usd`` is a route's aggregate ``gasCostUSD`` (None for a quote, which has
    none); when None, the steps' ``gasCosts`` are summed instead.
    """
    received = to_amount_usd
    if received is None:
        if to_token.price_usd is None:
            return None
        received = to_token.units(to_amount) * to_token.price_usd
    fees, included, gas = _costs(steps)
    if gas_cost_usd is not None:
        gas = gas_cost_usd
    received_min = received * to_amount_min / to_amount if to_amount else _ZERO
    return NetValue(
        received_usd=received,
        received_min_usd=received_min,
        fees_usd=fees,
        included_fees_usd=included,
        gas_usd=gas,
    )
