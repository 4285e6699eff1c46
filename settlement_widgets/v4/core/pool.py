"""v4 pool keys and swap parameters (pure).

A v4 pool is named by its key, not by an address: (currency0, currency1, fee, tickSpacing,
hooks) with the currencies sorted by address. An intent is settled by an *exact-input* swap
(``amountSpecified = -amountIn``; negative means exact input in v4) in the direction that
sells ``tokenIn``; the adapter refuses anything else, so :func:`exact_input_swap` builds the
only parameters it accepts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from eth_abi import encode
from eth_hash.auto import keccak

from ...addresses import validate_address
from ...errors import SettlementValueError
from .intents import Intent

__all__ = [
    "DYNAMIC_FEE_FLAG",
    "MAX_SQRT_PRICE",
    "MIN_SQRT_PRICE",
    "PoolKey",
    "SwapParams",
    "exact_input_swap",
]

#: v4-core TickMath bounds of sqrtPriceX96 (a price limit must lie strictly inside)
MIN_SQRT_PRICE: Final = 4295128739
MAX_SQRT_PRICE: Final = 1461446703485210103287273052203988822378723970342
DYNAMIC_FEE_FLAG: Final = 0x800000
_MAX_LP_FEE: Final = 1_000_000


@dataclass(frozen=True)
class PoolKey:
    """A v4 pool key; ``fee`` in hundredths of a bip (3000 = 0.3 %)."""

    currency0: str
    currency1: str
    fee: int
    tick_spacing: int
    hooks: str

    def __post_init__(self) -> None:
        c0 = validate_address(self.currency0, field="currency0")
        c1 = validate_address(self.currency1, field="currency1")
        if int(c0, 16) >= int(c1, 16):
            raise SettlementValueError(
                f"pool currencies must be sorted with currency0 < currency1 (got {c0}, {c1}): "
                "use PoolKey.for_tokens(...)"
            )
        object.__setattr__(self, "currency0", c0)
        object.__setattr__(self, "currency1", c1)
        object.__setattr__(self, "hooks", validate_address(self.hooks, field="hooks"))
        if (
            isinstance(self.fee, bool)
            or not isinstance(self.fee, int)
            or not (0 <= self.fee <= _MAX_LP_FEE or self.fee == DYNAMIC_FEE_FLAG)
        ):
            raise SettlementValueError(
                f"fee must be 0..1000000 hundredths of a bip (or the dynamic-fee flag), "
                f"got {self.fee!r}"
            )
        spacing = self.tick_spacing
        if isinstance(spacing, bool) or not isinstance(spacing, int) or not 1 <= spacing <= 32767:
            raise SettlementValueError(f"tickSpacing must be 1..32767, got {spacing!r}")

    @classmethod
    def for_tokens(
        cls, token_a: str, token_b: str, *, fee: int, tick_spacing: int, hooks: str
    ) -> PoolKey:
        """The key of the pool of two tokens, sorted the way v4 requires."""
        a = validate_address(token_a, field="token")
        b = validate_address(token_b, field="token")
        c0, c1 = (a, b) if int(a, 16) < int(b, 16) else (b, a)
        return cls(c0, c1, fee, tick_spacing, hooks)

    def as_abi(self) -> tuple[str, str, int, int, str]:
        return (self.currency0, self.currency1, self.fee, self.tick_spacing, self.hooks)

    @property
    def pool_id(self) -> str:
        """``PoolId``: keccak256 of the abi-encoded key."""
        data = encode(["address", "address", "uint24", "int24", "address"], list(self.as_abi()))
        return "0x" + keccak(data).hex()

    def to_json(self) -> dict[str, Any]:
        return {
            "currency0": self.currency0,
            "currency1": self.currency1,
            "fee": self.fee,
            "tickSpacing": self.tick_spacing,
            "hooks": self.hooks,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PoolKey:
        try:
            return cls(
                data["currency0"],
                data["currency1"],
                int(data["fee"]),
                int(data["tickSpacing"]),
                data["hooks"],
            )
        except (KeyError, TypeError) as exc:
            raise SettlementValueError(f"pool key is missing or has a bad field: {exc}") from None


@dataclass(frozen=True)
class SwapParams:
    """v4 ``SwapParams``: negative ``amount_specified`` means exact input."""

    zero_for_one: bool
    amount_specified: int
    sqrt_price_limit_x96: int

    def as_abi(self) -> tuple[bool, int, int]:
        return (self.zero_for_one, self.amount_specified, self.sqrt_price_limit_x96)


def exact_input_swap(intent: Intent, key: PoolKey) -> SwapParams:
    """The swap that settles ``intent`` in ``key``: sell exactly amountIn of tokenIn, with no
    price limit (the intent's minAmountOut and the policy bound the outcome instead)."""
    pair = {key.currency0, key.currency1}
    if pair != {intent.token_in, intent.token_out}:
        raise SettlementValueError(
            f"pool {key.currency0}/{key.currency1} does not trade the intent's tokens "
            f"{intent.token_in} -> {intent.token_out}"
        )
    zero_for_one = intent.token_in == key.currency0
    limit = MIN_SQRT_PRICE + 1 if zero_for_one else MAX_SQRT_PRICE - 1
    return SwapParams(zero_for_one, -intent.amount_in, limit)
