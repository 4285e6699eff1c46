"""LI.FI responses as frozen dataclasses: tokens, steps, routes, quotes, statuses, chains.

Field names follow LI.FI's documented schema (``lifinance/types``: ``Route``, ``LiFiStep``,
``Estimate``, ``FeeCost``, ``GasCost``, ``StatusResponse``). Amounts are exact ``int`` in
the token's smallest units (LI.FI sends them as decimal strings; ``int`` keeps uint256
values beyond 2**63 exact); USD values are :class:`~decimal.Decimal`. The decoded JSON is
kept in ``raw`` (excluded from equality) because ``POST /advanced/stepTransaction`` wants the
step object back exactly as LI.FI sent it. The values are built by the strict parsers of
:mod:`.parse`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from .valuation import NetValue, value_usd

__all__ = [
    "NATIVE_TOKEN_ADDRESSES",
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
]

#: Values of ``status`` in ``GET /status`` (LI.FI ``StatusMessage``).
STATUS_VALUES = frozenset({"NOT_FOUND", "INVALID", "PENDING", "DONE", "FAILED"})
#: Statuses after which polling stops.
TERMINAL_STATUSES = frozenset({"DONE", "FAILED"})

#: Native-coin placeholders LI.FI uses as token addresses (no ERC-20 approval needed).
NATIVE_TOKEN_ADDRESSES = frozenset(
    {"0x0000000000000000000000000000000000000000", "0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"}
)


@dataclass(frozen=True)
class Token:
    """A token as LI.FI describes it; ``price_usd`` is None when LI.FI has no price."""

    chain_id: int
    address: str
    symbol: str
    decimals: int
    name: str | None = None
    price_usd: Decimal | None = None
    coin_key: str | None = None

    @property
    def is_native(self) -> bool:
        """True for the chain's native coin (no ERC-20 approval needed)."""
        return self.address.lower() in NATIVE_TOKEN_ADDRESSES

    def units(self, amount: int) -> Decimal:
        """``amount`` (smallest units) in whole tokens, exactly: 99_870_000 USDC -> 99.87."""
        return Decimal(amount).scaleb(-self.decimals)


@dataclass(frozen=True)
class FeeCost:
    """A fee of one step. ``included`` fees are already deducted from ``toAmount``; the
    others are paid on top (typically in the native coin, as transaction value)."""

    name: str
    amount: int
    amount_usd: Decimal
    included: bool
    token: Token
    percentage: Decimal | None = None
    description: str | None = None


@dataclass(frozen=True)
class GasCost:
    """Gas of one step: ``type`` is SEND, APPROVE, FEE or SUM (a total of the others)."""

    type: str
    amount: int
    amount_usd: Decimal
    token: Token
    estimate: int | None = None
    limit: int | None = None
    price: int | None = None


@dataclass(frozen=True)
class Action:
    """What a step does: ``from_amount`` of ``from_token`` on one chain to ``to_token``."""

    from_chain_id: int
    to_chain_id: int
    from_token: Token
    to_token: Token
    from_amount: int
    from_address: str | None = None
    to_address: str | None = None
    slippage: float | None = None


@dataclass(frozen=True)
class Estimate:
    """LI.FI's estimate of a step: amounts, costs, approval spender and duration (s)."""

    from_amount: int
    to_amount: int
    to_amount_min: int
    approval_address: str
    execution_duration: float
    fee_costs: tuple[FeeCost, ...] = ()
    gas_costs: tuple[GasCost, ...] = ()
    from_amount_usd: Decimal | None = None
    to_amount_usd: Decimal | None = None
    tool: str | None = None


@dataclass(frozen=True)
class TransactionRequest:
    """The EVM transaction LI.FI prepared for a step; ``value``/``gas_limit`` are ints."""

    to: str
    data: str
    value: int = 0
    chain_id: int | None = None
    gas_limit: int | None = None
    gas_price: int | None = None
    from_address: str | None = None


@dataclass(frozen=True)
class Step:
    """One step of a route (a LI.FI ``LiFiStep``, or an included sub-step of one)."""

    id: str
    type: str
    tool: str
    action: Action
    estimate: Estimate
    tool_name: str | None = None
    included_steps: tuple[Step, ...] = ()
    transaction_request: TransactionRequest | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def tools(self) -> tuple[str, ...]:
        """The tools doing the work: the included steps' tools, else this step's tool."""
        return tuple(s.tool for s in self.included_steps) or (self.tool,)


class _Valued:
    """The USD figures of a route or quote, read from its :meth:`net_value`."""

    def net_value(self) -> NetValue | None:  # pragma: no cover - each value defines it
        raise NotImplementedError

    @property
    def net_usd(self) -> Decimal | None:
        """Headline: ``toAmount`` net of fees paid on top and gas, in USD (None if
        unpriceable)."""
        value = self.net_value()
        return None if value is None else value.net_usd

    @property
    def net_min_usd(self) -> Decimal | None:
        """Worst case: ``toAmountMin`` net of fees paid on top and gas, in USD (None if
        unpriceable). Routes are ranked on it."""
        value = self.net_value()
        return None if value is None else value.net_min_usd

    @property
    def approval_gas_usd(self) -> Decimal | None:
        """The ERC-20 approvals' share of the gas, in USD (None if unpriceable)."""
        value = self.net_value()
        return None if value is None else value.approval_gas_usd


@dataclass(frozen=True)
class Route(_Valued):
    """A route from ``POST /advanced/routes``: one or more steps from one token to another.

    ``rank`` is set by :func:`~settlement_widgets.aggregator.core.ranking.rank_routes` (1 = best);
    ``net_min_usd`` (worst case) is the ranking value and ``net_usd`` the headline (see that
    module for the exact rule).
    """

    id: str
    from_chain_id: int
    to_chain_id: int
    from_token: Token
    to_token: Token
    from_amount: int
    to_amount: int
    to_amount_min: int
    steps: tuple[Step, ...]
    from_amount_usd: Decimal | None = None
    to_amount_usd: Decimal | None = None
    gas_cost_usd: Decimal | None = None
    tags: tuple[str, ...] = ()
    from_address: str | None = None
    to_address: str | None = None
    rank: int | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def tools(self) -> tuple[str, ...]:
        return tuple(t for s in self.steps for t in s.tools)

    @property
    def duration(self) -> float:
        """Estimated seconds: the sum of the steps' ``executionDuration``."""
        return sum(s.estimate.execution_duration for s in self.steps)

    @property
    def to_amount_units(self) -> Decimal:
        return self.to_token.units(self.to_amount)

    @property
    def from_amount_units(self) -> Decimal:
        return self.from_token.units(self.from_amount)

    def net_value(self) -> NetValue | None:
        """The USD breakdown the ranking orders by (None if unpriceable)."""
        return value_usd(
            self.steps,
            to_token=self.to_token,
            to_amount=self.to_amount,
            to_amount_min=self.to_amount_min,
            to_amount_usd=self.to_amount_usd,
            gas_cost_usd=self.gas_cost_usd,
        )


@dataclass(frozen=True)
class Quote(_Valued):
    """``GET /quote``: the single best step LI.FI found, with its transaction request."""

    step: Step

    @property
    def id(self) -> str:
        return self.step.id

    @property
    def tool(self) -> str:
        return self.step.tool

    @property
    def action(self) -> Action:
        return self.step.action

    @property
    def estimate(self) -> Estimate:
        return self.step.estimate

    @property
    def to_amount(self) -> int:
        return self.step.estimate.to_amount

    @property
    def to_amount_min(self) -> int:
        return self.step.estimate.to_amount_min

    @property
    def transaction_request(self) -> TransactionRequest | None:
        return self.step.transaction_request

    @property
    def duration(self) -> float:
        return self.step.estimate.execution_duration

    def net_value(self) -> NetValue | None:
        """The USD breakdown of the quote's single step; a quote has no aggregate
        ``gasCostUSD``, so its step's gas costs are summed."""
        estimate = self.step.estimate
        return value_usd(
            (self.step,),
            to_token=self.step.action.to_token,
            to_amount=estimate.to_amount,
            to_amount_min=estimate.to_amount_min,
            to_amount_usd=estimate.to_amount_usd,
            gas_cost_usd=None,
        )


@dataclass(frozen=True)
class TransactionInfo:
    """The ``sending``/``receiving`` side of a transfer in ``GET /status``."""

    chain_id: int
    tx_hash: str | None = None
    tx_link: str | None = None
    amount: int | None = None
    token: Token | None = None
    amount_usd: Decimal | None = None


@dataclass(frozen=True)
class Status:
    """``GET /status``: where a transfer is. ``status`` is one of :data:`STATUS_VALUES`."""

    status: str
    substatus: str | None = None
    substatus_message: str | None = None
    tool: str | None = None
    sending: TransactionInfo | None = None
    receiving: TransactionInfo | None = None
    transaction_id: str | None = None
    explorer_link: str | None = None

    @property
    def is_final(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def done(self) -> bool:
        return self.status == "DONE"

    @property
    def failed(self) -> bool:
        return self.status == "FAILED"


@dataclass(frozen=True)
class Chain:
    """One chain of ``GET /chains``."""

    id: int
    key: str
    name: str
    chain_type: str | None = None
    coin: str | None = None
    mainnet: bool | None = None
    native_token: Token | None = None
