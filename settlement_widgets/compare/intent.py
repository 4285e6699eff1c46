"""The comparison intent: what a researcher wants done, independent of how it is settled.

``Intent("100", counterparty=bob, payments=20)`` reads "pay 100 USDC to ``bob`` in 20
instalments, from the source chain to the destination chain". It names no method: every
method that can serve it is run with it (:func:`~settlement_widgets.compare.compare_methods`),
so the numbers that come back answer the same question. The v4 method has its own, signed
``Intent`` (an EIP-712 swap order); this one is exported at the top level as
``ComparisonIntent`` so the two never shadow each other.

Validation happens here, before anything is sent: a float amount (``0.1`` is not 0.1), a
non-positive one, a payment count below one or a malformed counterparty raise errors of the
package's tree, naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from typing import Any

from ..addresses import validate_address
from ..errors import InvalidAmountError, SettlementValueError

__all__ = ["ComparisonIntent", "Intent"]

#: the most instalments one comparison runs (each is settled for real on two methods)
MAX_PAYMENTS = 1000


def _amount(value: object) -> Decimal:
    if isinstance(value, bool | float):
        raise InvalidAmountError(
            f"amount must be a decimal string, a Decimal or an int, got {value!r} "
            "(a float cannot hold most decimal amounts exactly: write '0.1', not 0.1)"
        )
    if isinstance(value, int | Decimal):
        amount = Decimal(value)
    elif isinstance(value, str):
        try:
            amount = Decimal(value.strip())
        except InvalidOperation:
            raise InvalidAmountError(f"amount must be a decimal number, got {value!r}") from None
    else:
        raise InvalidAmountError(
            f"amount must be a decimal string, a Decimal or an int, got {type(value).__name__}"
        )
    if not amount.is_finite() or amount <= 0:
        raise InvalidAmountError(f"amount must be a positive decimal, got {value!r}")
    return amount


def _chain(value: object, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise SettlementValueError(f"{name} must be a positive chain id (int), got {value!r}")
    return value


@dataclass(frozen=True)
class Intent:
    """Pay ``amount`` of ``asset`` to ``counterparty`` in ``payments`` equal instalments.

    ``source_chain``/``destination_chain`` default (``None``) to the network's first and
    second chain, resolved by :func:`~settlement_widgets.compare.compare_methods`;
    ``counterparty`` defaults to a second wallet of the sandbox. ``max_slippage_bps`` is the
    payer's tolerance (the v4 intent's minimum output, the aggregator's slippage): a choice
    of the payer, stated beside the results, not a measured figure.
    """

    amount: Decimal | str | int
    asset: str = "USDC"
    source_chain: int | None = None
    destination_chain: int | None = None
    payments: int = 1
    counterparty: str | None = None
    max_slippage_bps: int = 300

    def __post_init__(self) -> None:
        object.__setattr__(self, "amount", _amount(self.amount))
        if not isinstance(self.asset, str) or not self.asset.strip():
            raise SettlementValueError(f"asset must be a non-empty symbol, got {self.asset!r}")
        object.__setattr__(self, "asset", self.asset.strip())
        _chain(self.source_chain, "source_chain")
        _chain(self.destination_chain, "destination_chain")
        payments = self.payments
        if isinstance(payments, bool) or not isinstance(payments, int):
            raise SettlementValueError(f"payments must be an int >= 1, got {payments!r}")
        if not 1 <= payments <= MAX_PAYMENTS:
            raise SettlementValueError(f"payments must be 1..{MAX_PAYMENTS}, got {payments}")
        if self.counterparty is not None:
            object.__setattr__(
                self,
                "counterparty",
                validate_address(self.counterparty, field="counterparty", allow_zero=False),
            )
        bps = self.max_slippage_bps
        if isinstance(bps, bool) or not isinstance(bps, int) or not 0 <= bps < 10_000:
            raise SettlementValueError(f"max_slippage_bps must be an int 0..9999, got {bps!r}")

    @property
    def decimal_amount(self) -> Decimal:
        """``amount`` as the Decimal it was normalised to."""
        assert isinstance(self.amount, Decimal)
        return self.amount

    def base_units(self, decimals: int) -> int:
        """The amount in an asset's smallest units; an amount finer than the asset's
        ``decimals`` raises :class:`InvalidAmountError` rather than being rounded."""
        scaled = self.decimal_amount.scaleb(decimals)
        if scaled != scaled.to_integral_value():
            raise InvalidAmountError(
                f"amount {self.decimal_amount} has more decimals than the asset's {decimals}"
            )
        return int(scaled)

    def instalments(self, decimals: int) -> tuple[int, ...]:
        """The ``payments`` instalments in smallest units: equal, the last one carrying the
        remainder of the division, so they always sum to :meth:`base_units`."""
        total = self.base_units(decimals)
        each = total // self.payments
        if each == 0:
            raise InvalidAmountError(
                f"{self.decimal_amount} {self.asset} cannot be split into {self.payments} "
                f"payments of at least one unit (10^-{decimals})"
            )
        return (each,) * (self.payments - 1) + (total - each * (self.payments - 1),)

    def resolved(self, source_chain: int, destination_chain: int, counterparty: str) -> Intent:
        """This intent with its defaults filled in (what a comparison records)."""
        return replace(
            self,
            source_chain=self.source_chain or source_chain,
            destination_chain=self.destination_chain or destination_chain,
            counterparty=self.counterparty or counterparty,
        )

    def to_json(self) -> dict[str, Any]:
        """The ``intent`` object of the comparison JSON (``docs/api/compare.md``)."""
        return {
            "amount": str(self.decimal_amount),
            "asset": self.asset,
            "sourceChain": self.source_chain,
            "destinationChain": self.destination_chain,
            "payments": self.payments,
            "counterparty": self.counterparty,
            "maxSlippageBps": self.max_slippage_bps,
        }


#: the name of :class:`Intent` at the package's top level (v4 has an ``Intent`` of its own)
ComparisonIntent = Intent
