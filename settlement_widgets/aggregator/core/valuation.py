"""What a route or quote is worth in USD to the user: received, minus fees paid on top, minus
gas (the ERC-20 approval included), in the worst case and at the headline amount.

This is rules 1-5 of the ranking rule written out in :mod:`.ranking` (which adds the order,
rules 6-7). It lives in its own module, below :mod:`.models`, because both sides need it:
``Route.net_usd`` / ``Route.net_min_usd`` in the models and the ordering in the ranking.
Keeping it here makes the imports one-way (``ranking -> models -> valuation``).

It only reads attributes, described by the small protocols below, so it does not import the
model classes; :class:`~.models.Route` and :class:`~.models.Quote` pass their parts in.
All arithmetic is :class:`~decimal.Decimal`, without rounding.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Protocol

__all__ = ["APPROVAL_GAS", "NetValue", "approval_cost", "value_usd"]

_ZERO = Decimal(0)

#: Gas units assumed for one ERC-20 ``approve`` LI.FI's estimate leaves out. LI.FI's
#: ``gasCosts`` price the step's own transaction only, but an ERC-20 source needs an
#: approval first (see :mod:`.plan`), and on a cheap route it is a visible share of the cost.
#: An approval from a zero allowance costs the 21,000 base, calldata and one fresh storage
#: slot: about 46,000 gas for common tokens (USDC, USDT, DAI; more for some proxies).
#: It is an estimate, priced at the step's own gas price; see :func:`approval_cost`.
APPROVAL_GAS = 46_000


class _FeeCost(Protocol):
    @property
    def included(self) -> bool: ...

    @property
    def amount_usd(self) -> Decimal: ...


class _GasToken(Protocol):
    @property
    def decimals(self) -> int: ...

    @property
    def price_usd(self) -> Decimal | None: ...


class _GasCost(Protocol):
    @property
    def type(self) -> str: ...

    @property
    def amount_usd(self) -> Decimal: ...

    @property
    def price(self) -> int | None: ...

    @property
    def token(self) -> _GasToken: ...


class _Estimate(Protocol):
    @property
    def fee_costs(self) -> Sequence[_FeeCost]: ...

    @property
    def gas_costs(self) -> Sequence[_GasCost]: ...

    @property
    def approval_address(self) -> str | None: ...


class _SourceToken(Protocol):
    @property
    def is_native(self) -> bool: ...


class _Action(Protocol):
    @property
    def from_token(self) -> _SourceToken: ...


class _Step(Protocol):
    @property
    def action(self) -> _Action: ...

    @property
    def estimate(self) -> _Estimate: ...


class _Token(Protocol):
    @property
    def price_usd(self) -> Decimal | None: ...

    def units(self, amount: int) -> Decimal: ...


@dataclass(frozen=True)
class NetValue:
    """The USD breakdown behind a route's rank (rules in :mod:`.ranking`).

    ``gas_usd`` is all the gas, approvals included; ``approval_gas_usd`` is the part of it
    spent on ERC-20 approvals. ``approval_gas_known`` is False when an approval is needed
    but its cost could not be priced (no gas price or gas-token price in the step's
    ``gasCosts``): it then counts as 0, which flatters the route, and :attr:`note` says so.
    """

    received_usd: Decimal
    received_min_usd: Decimal
    fees_usd: Decimal
    included_fees_usd: Decimal
    gas_usd: Decimal
    approval_gas_usd: Decimal = _ZERO
    approval_gas_known: bool = True

    @property
    def net_usd(self) -> Decimal:
        """The headline: ``toAmount`` valued, minus fees on top and gas."""
        return self.received_usd - self.fees_usd - self.gas_usd

    @property
    def net_min_usd(self) -> Decimal:
        """The worst case inside the slippage bound: ``toAmountMin`` valued, minus fees on
        top and gas. The ranking's primary key."""
        return self.received_min_usd - self.fees_usd - self.gas_usd

    @property
    def note(self) -> str | None:
        """What the numbers leave out, or None when nothing."""
        if self.approval_gas_known:
            return None
        return (
            "the ERC-20 approval's gas could not be priced (no gas price or gas-token price "
            "in LI.FI's gasCosts) and is counted as $0"
        )


def _gas_of(costs: Sequence[_GasCost]) -> Decimal:
    """A step's gas in USD as LI.FI priced it; a ``SUM`` entry totals the others, so it wins."""
    sums = [g.amount_usd for g in costs if g.type == "SUM"]
    return sum(sums if sums else (g.amount_usd for g in costs), _ZERO)


def approval_cost(step: _Step) -> tuple[Decimal, Decimal, bool]:
    """``(approval USD, the part LI.FI's gas misses, priced?)`` for one step.

    No approval is needed for a native-coin source or a step without ``approvalAddress``.
    When LI.FI lists an ``APPROVE`` gas cost it priced the approval itself: that amount is
    reported and nothing is added. Otherwise :data:`APPROVAL_GAS` is priced with the gas
    price and gas-token ``priceUSD`` of the first ``gasCosts`` entry that has both (the
    step's own transaction runs on the same chain); with none, the cost is unknown (0).
    """
    estimate = step.estimate
    if step.action.from_token.is_native or not estimate.approval_address:
        return _ZERO, _ZERO, True
    listed = [g.amount_usd for g in estimate.gas_costs if g.type == "APPROVE"]
    if listed:
        return sum(listed, _ZERO), _ZERO, True
    for gas in estimate.gas_costs:
        if gas.price is not None and gas.token.price_usd is not None:
            native = Decimal(APPROVAL_GAS * gas.price).scaleb(-gas.token.decimals)
            cost = native * gas.token.price_usd
            return cost, cost, True
    return _ZERO, _ZERO, False


def _costs(steps: Iterable[_Step]) -> tuple[Decimal, Decimal, Decimal, Decimal, Decimal, bool]:
    """Over the top-level steps: ``(fees paid on top, fees already in toAmount, LI.FI's gas,
    approvals, approval gas LI.FI missed, every approval priced?)``."""
    fees = included = gas = approvals = added = _ZERO
    known = True
    for step in steps:
        for fee in step.estimate.fee_costs:
            if fee.included:
                included += fee.amount_usd
            else:
                fees += fee.amount_usd
        gas += _gas_of(step.estimate.gas_costs)
        approval, missed, priced = approval_cost(step)
        approvals += approval
        added += missed
        known = known and priced
    return fees, included, gas, approvals, added, known


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
    none); when None, the steps' ``gasCosts`` are summed instead. ``toAmountMin`` is valued
    at the route's own rate (``toAmountUSD / toAmount``) when LI.FI sent ``toAmountUSD``,
    else at ``toToken.priceUSD``, like ``toAmount``.
    """
    if to_amount_usd is not None:
        received = to_amount_usd
        received_min = to_amount_usd * to_amount_min / to_amount if to_amount else _ZERO
    elif to_token.price_usd is not None:
        received = to_token.units(to_amount) * to_token.price_usd
        received_min = to_token.units(to_amount_min) * to_token.price_usd
    else:
        return None
    fees, included, gas, approvals, added, known = _costs(steps)
    if gas_cost_usd is not None:
        gas = gas_cost_usd
    return NetValue(
        received_usd=received,
        received_min_usd=received_min,
        fees_usd=fees,
        included_fees_usd=included,
        gas_usd=gas + added,
        approval_gas_usd=approvals,
        approval_gas_known=known,
    )
