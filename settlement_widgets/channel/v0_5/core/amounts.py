"""Exact conversions between integer smallest units and the wire's decimal strings.

Our API counts in integer smallest units (``1_500_000`` with 6 decimals); the relay's
``transfer`` allocations, allowances and ledger balances are human decimal strings (``"1.5"``)
(ClearNode v0.5 RPC). Floats never take part: ``0.1 + 0.2`` is not an amount.
"""

from __future__ import annotations

import re
from decimal import Decimal

from ....errors import InvalidAmountError

__all__ = [
    "DECIMAL_AMOUNT",
    "format_amount",
    "is_decimal_amount",
    "parse_decimal_amount",
    "to_decimal_string",
]

DECIMAL_AMOUNT = re.compile(r"^(?P<whole>[0-9]+)(?:\.(?P<frac>[0-9]+))?$")
"""A non-negative decimal in plain notation: ``"10"``, ``"1.5"``, ``"0.000001"``."""

_MAX_DECIMALS = 77  # 10**77 < 2**256 < 10**78


def _decimals(decimals: int) -> int:
    if (
        isinstance(decimals, bool)
        or not isinstance(decimals, int)
        or not 0 <= decimals <= _MAX_DECIMALS
    ):
        raise InvalidAmountError(
            f"decimals must be an integer from 0 to {_MAX_DECIMALS}, got {decimals!r}"
        )
    return decimals


def to_decimal_string(units: int, decimals: int, *, signed: bool = False) -> str:
    """``1_500_000, 6 -> "1.5"``; ``100_000_000, 6 -> "100"``; no trailing zeros, no exponent."""
    _decimals(decimals)
    if isinstance(units, bool) or not isinstance(units, int):
        raise InvalidAmountError(
            f"amount must be an integer number of smallest units, got {units!r}"
        )
    if units < 0:
        if not signed:
            raise InvalidAmountError(f"amount must not be negative, got {units}")
        return "-" + to_decimal_string(-units, decimals)
    whole, frac = divmod(units, 10**decimals)
    if not frac:
        return str(whole)
    return f"{whole}.{frac:0{decimals}d}".rstrip("0")


def format_amount(units: int, decimals: int, symbol: str) -> str:
    """An amount as a person reads it, in token units with its symbol: ``10_000_000, 6,
    "ytest.usd" -> "10 ytest.usd"``; exact at any size (``10**24`` units with 6 decimals is
    ``"1000000000000000000 ytest.usd"``, never ``1e+18``). Every message and label that shows
    an amount to a person uses this, so none prints raw smallest units."""
    return f"{to_decimal_string(units, decimals, signed=True)} {symbol}"


def is_decimal_amount(text: object) -> bool:
    """True for a plain non-negative decimal string (no sign, exponent or spaces)."""
    return isinstance(text, str) and DECIMAL_AMOUNT.match(text) is not None


def parse_decimal_amount(text: str | Decimal, decimals: int) -> int:
    """``"1.5", 6 -> 1_500_000``: a wire decimal string to exact integer smallest units.

    Rejects negatives, floats, exponent notation, signs, spaces and more significant
    decimals than the asset has (trailing zeros beyond them are exact and accepted).
    Ints are refused: in this API an int already *is* smallest units.
    """
    _decimals(decimals)
    if isinstance(text, Decimal):
        if not text.is_finite():
            raise InvalidAmountError(f"amount {text} is not a finite number")
        if text.is_signed() and text != 0:
            raise InvalidAmountError(f"amount must not be negative, got {text}")
        # copy_abs, not abs(): abs() rounds to the current context (28 digits by default),
        # which silently changed any Decimal amount with more significant digits
        text = format(text.copy_abs(), "f")
    elif isinstance(text, float):
        raise InvalidAmountError(
            f"amount {text!r} is a float, which is not exact: pass a decimal string such as "
            "'1.5' (or integer smallest units where the API takes them)"
        )
    elif isinstance(text, int):  # bool included
        raise InvalidAmountError(
            f"amount {text!r} is an int: ints are smallest units already; "
            "parse_decimal_amount takes the wire's decimal string such as '1.5'"
        )
    elif not isinstance(text, str):
        raise InvalidAmountError(f"amount must be a decimal string, got {type(text).__name__}")
    match = DECIMAL_AMOUNT.match(text)
    if match is None:
        if text.strip().startswith("-"):
            raise InvalidAmountError(f"amount must not be negative, got {text!r}")
        if "e" in text.lower():
            raise InvalidAmountError(
                f"amount {text!r} uses exponent notation: write it out, e.g. '1000000'"
            )
        raise InvalidAmountError(
            f"amount {text!r} is not a plain decimal number such as '10' or '1.5'"
        )
    whole = match.group("whole")
    frac = match.group("frac") or ""
    significant = frac.rstrip("0")
    if len(significant) > decimals:
        raise InvalidAmountError(
            f"amount {text!r} has {len(significant)} decimal places; this asset has {decimals}"
        )
    return int(whole) * 10**decimals + (int(significant.ljust(decimals, "0")) if decimals else 0)
