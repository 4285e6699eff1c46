"""Decimal amounts as Nitrolite v1 puts them on the wire and into hashes.

v1 carries amounts as **decimal strings in display units** (``"25.5"``), not token base
units, and those strings are hashed (transition hash, app-update hash). The TS SDK turns a
``Decimal`` into text with decimal.js ``toString`` (exponent form below 1e-7 and from 1e21,
trailing zeros trimmed), while the Go node never uses exponents. So this module offers both:

* :func:`sdk_decimal_string` – byte-exact decimal.js ``toString`` (what a TS-signed state hashed);
* :func:`plain_decimal_string` – plain notation, trailing zeros trimmed: equal to both
  implementations for every amount in [1e-7, 1e21), the safe choice for strings we emit.

Scaling between display amounts and integer token units follows the SDK's ``decimalToBigInt``:
an amount with more fractional digits than the token allows is an error, never rounded,
because silently rounding money is worse than refusing it.

Arithmetic is exact. Python's default decimal context keeps 28 significant digits and the
SDK's decimal.js is configured for 50, but a uint256 at 18 decimals has 78 digits and a
token may have up to 255 decimals, so any context-limited operation would silently round a
large balance and the state would pack and sign another number than the one shown.
:data:`EXACT_CONTEXT` has room for every representable amount and traps ``Inexact`` and
``Rounded``: an operation that would round raises instead. :func:`exact_add`,
:func:`exact_sub` and :func:`exact_neg` are the only arithmetic the v1 core does on amounts.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from decimal import (
    ROUND_HALF_UP,
    Context,
    Decimal,
    DivisionByZero,
    Inexact,
    InvalidOperation,
    Overflow,
    Rounded,
    Underflow,
)
from typing import Any, Final, TypeVar

from ....errors import InvalidAmountError

__all__ = [
    "EXACT_CONTEXT",
    "MAX_TOKEN_DECIMALS",
    "TO_EXP_NEG",
    "TO_EXP_POS",
    "VECTORS",
    "decimal_places",
    "exact_add",
    "exact_neg",
    "exact_sub",
    "from_units",
    "parse_decimal",
    "plain_decimal_string",
    "sdk_decimal_string",
    "to_units",
]

#: Exact arithmetic on amounts: 1,000 digits hold the sum of any two amounts that fit a
#: uint256 at up to 255 decimals (78 + 255 digits), and every flag that means "the result
#: is not the exact value" is a trap, so rounding raises ``decimal.Inexact``/``Rounded``
#: rather than changing a balance. (``ROUND_HALF_UP`` is decimal.js's mode, never used.)
EXACT_CONTEXT = Context(
    prec=1000,
    rounding=ROUND_HALF_UP,
    Emin=-999_999_999,
    Emax=999_999_999,
    traps=[InvalidOperation, DivisionByZero, Overflow, Underflow, Inexact, Rounded],
)

#: decimal.js ``toExpNeg`` / ``toExpPos`` defaults: ``toString`` switches to exponent
#: notation when the exponent is <= -7 or >= 21.
TO_EXP_NEG = -7
TO_EXP_POS = 21

#: Token decimals are a uint8 in the contracts' ledger encoding.
MAX_TOKEN_DECIMALS = 255

# Integer token units end up in uint256 ledger fields (78 decimal digits at most); refusing
# anything larger before building the integer also stops "1e999999999" from eating memory.
_MAX_UNIT_DIGITS = 78
_MAX_UINT256 = 2**256 - 1


_R = TypeVar("_R")
#: the argument types an amount function caches on: hashable, and for these functions equal
#: values give equal answers (``typed``: ``1`` and ``"1"`` are cached apart; a bool is
#: never an amount, so it goes uncached to the function, which refuses it)
_EXACT_TYPES: Final = (str, int, Decimal)


def _memoized(
    function: Callable[[Any], _R], *, types: tuple[type, ...] = _EXACT_TYPES
) -> Callable[[Any], _R]:
    """Cache a pure function of one amount: a state's few amounts are parsed, normalised and
    rendered dozens of times per transfer (packing, checks, the wire), the same texts each
    time. Other argument types (a float, a list) go uncached to the function, which refuses
    them with its own message; refusals are never cached."""
    cached = functools.lru_cache(maxsize=4096, typed=True)(function)

    @functools.wraps(function)
    def call(value: Any) -> _R:
        if type(value) in types:
            return cached(value)
        return function(value)

    return call


@functools.partial(_memoized, types=(str, int))  # a Decimal comes back as given: 1.0 stays 1.0
def parse_decimal(value: str | int | Decimal) -> Decimal:
    """Parse an amount the way ``new Decimal(value)`` would, but only finite numbers.

    Strings may use plain or exponent notation (``"1e2"``, ``"-0.5"``); the value is kept
    exactly (decimal.js does not round on construction either). NaN/Infinity, empty
    strings, surrounding whitespace, floats and bools are refused: an amount must be exact.
    """
    if isinstance(value, Decimal):
        result = value
    elif isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InvalidAmountError(
            f"amount must be a decimal string, int or Decimal, not {type(value).__name__}"
        )
    elif isinstance(value, int):
        result = Decimal(value)
    else:
        if value != value.strip() or not value or "_" in value:
            raise InvalidAmountError(f"invalid decimal amount {value!r}")
        try:
            result = Decimal(value)
        except InvalidOperation as exc:
            raise InvalidAmountError(f"invalid decimal amount {value!r}") from exc
    if not result.is_finite():
        raise InvalidAmountError(f"amount must be finite, got {value!r}")
    return result


def _exact(op: str, result: Decimal) -> Decimal:
    if not result.is_finite():  # cannot happen for finite operands; kept as a guard
        raise InvalidAmountError(f"amount {op} is not finite")
    return result


def exact_add(a: str | int | Decimal, b: str | int | Decimal) -> Decimal:
    """``a + b`` with no rounding (raises :class:`InvalidAmountError` if it would round)."""
    try:
        return _exact("sum", EXACT_CONTEXT.add(parse_decimal(a), parse_decimal(b)))
    except (Inexact, Rounded) as exc:  # only for operands far beyond any token's range
        raise InvalidAmountError(f"amount sum of {a} and {b} cannot be represented") from exc


def exact_sub(a: str | int | Decimal, b: str | int | Decimal) -> Decimal:
    """``a - b`` with no rounding (raises :class:`InvalidAmountError` if it would round)."""
    try:
        return _exact("difference", EXACT_CONTEXT.subtract(parse_decimal(a), parse_decimal(b)))
    except (Inexact, Rounded) as exc:  # only for operands far beyond any token's range
        raise InvalidAmountError(f"amount {a} minus {b} cannot be represented") from exc


def exact_neg(a: str | int | Decimal) -> Decimal:
    """``-a``, exactly (``copy_negate`` never consults a context)."""
    return parse_decimal(a).copy_negate()


@_memoized
def _normalized(value: Decimal) -> Decimal:
    """Strip trailing zeros exactly (no rounding), mapping every zero to ``0``."""
    if value.is_zero():
        return Decimal(0)
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)  # finite, checked by the callers
    trimmed = list(digits)
    exp = exponent
    while len(trimmed) > 1 and trimmed[-1] == 0:
        trimmed.pop()
        exp += 1
    return Decimal((sign, tuple(trimmed), exp))


@_memoized
def decimal_places(value: str | int | Decimal) -> int:
    """decimal.js ``decimalPlaces()``: fractional digits after trimming trailing zeros."""
    exponent = _normalized(parse_decimal(value)).as_tuple().exponent
    assert isinstance(exponent, int)
    return max(0, -exponent)


@_memoized
def sdk_decimal_string(value: str | int | Decimal) -> str:
    """decimal.js ``Decimal.prototype.toString`` with default settings, byte for byte.

    Needed to reproduce what the TS SDK put on the wire and hashed: ``"0.10"`` -> ``"0.1"``,
    ``"1e-8"`` stays ``"1e-8"``, ``"1e21"`` -> ``"1e+21"``, ``"-0"`` -> ``"0"``.
    """
    if type(value) is str:
        plain = _plain_sdk_string(value)
        if plain is not None:
            return plain
    elif (
        type(value) is Decimal and value.is_finite() and TO_EXP_NEG < value.adjusted() < TO_EXP_POS
    ):
        # a sum or difference of amounts: its exact plain text ("f" never rounds), trimmed
        plain = _plain_sdk_string(format(value, "f"))
        if plain is not None:
            return plain
    number = _normalized(parse_decimal(value))
    if number.is_zero():
        return "0"
    sign, digits, _ = number.as_tuple()
    text = "".join(str(d) for d in digits)
    exponent = number.adjusted()  # decimal.js `e`: the power of ten of the leading digit
    if exponent <= TO_EXP_NEG or exponent >= TO_EXP_POS:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        body = f"{mantissa}e{'+' if exponent >= 0 else '-'}{abs(exponent)}"
    else:
        body = _plain_digits(text, exponent)
    return ("-" if sign else "") + body


def _plain_sdk_string(text: str) -> str | None:
    """:func:`sdk_decimal_string` of a plain decimal text (ASCII digits, an optional sign
    and fraction) by trimming its zeros, or ``None`` for any other text and for a value
    decimal.js writes with an exponent (leading digit's power <= -7 or >= 21), which the
    ``Decimal`` route renders. Balances change with every transfer, so most texts are
    new to the cache, and the ``Decimal`` route cost several times this."""
    match = _PLAIN_AMOUNT.fullmatch(text)
    if match is None:
        return None
    sign, whole, fraction = match.groups()
    whole, fraction = whole.lstrip("0"), (fraction or "").rstrip("0")
    if whole:
        if len(whole) - 1 >= TO_EXP_POS:
            return None
        body = whole + "." + fraction if fraction else whole
    elif fraction:
        if -(len(fraction) - len(fraction.lstrip("0")) + 1) <= TO_EXP_NEG:
            return None
        body = "0." + fraction
    else:
        return "0"  # every zero, "-0" and "0.000" too
    return "-" + body if sign else body


@_memoized
def plain_decimal_string(value: str | int | Decimal) -> str:
    """Plain notation, trailing zeros trimmed, never an exponent (Go shopspring style).

    This is the string a Python client should emit: it equals the TS SDK's string for every
    amount in [1e-7, 1e21) and what the Go node produces for every amount.
    """
    number = _normalized(parse_decimal(value))
    if number.is_zero():
        return "0"
    sign, digits, _ = number.as_tuple()
    text = "".join(str(d) for d in digits)
    return ("-" if sign else "") + _plain_digits(text, number.adjusted())


def _plain_digits(digits: str, exponent: int) -> str:
    """Place the decimal point in ``digits`` whose leading digit has power ``exponent``."""
    if exponent < 0:
        return "0." + "0" * (-exponent - 1) + digits
    if exponent + 1 >= len(digits):
        return digits + "0" * (exponent + 1 - len(digits))
    return digits[: exponent + 1] + "." + digits[exponent + 1 :]


def _check_decimals(decimals: int) -> int:
    """Token decimals are a uint8; anything else is a programming error worth naming."""
    if isinstance(decimals, bool) or not isinstance(decimals, int):
        raise InvalidAmountError(f"decimals must be an int, not {type(decimals).__name__}")
    if not 0 <= decimals <= MAX_TOKEN_DECIMALS:
        raise InvalidAmountError(f"decimals must be in 0..{MAX_TOKEN_DECIMALS}, got {decimals}")
    return decimals


def to_units(amount: str | int | Decimal, decimals: int) -> int:
    """Display amount -> integer token units (``amount × 10^decimals``), SDK ``decimalToBigInt``.

    More fractional digits than ``decimals`` (after trimming trailing zeros) raise
    :class:`InvalidAmountError` with the SDK's exact message instead of rounding. Negative
    amounts are allowed (the SDK allows them; deltas can be negative).
    """
    decimals = _check_decimals(decimals)
    plain = _plain_units(amount, decimals)
    return plain if plain is not None else _exact_units(amount, decimals)


#: a plain decimal in ASCII digits (``Decimal`` also takes exponents and other scripts' digits)
_PLAIN_AMOUNT: Final = re.compile(r"(-?)([0-9]+)(?:\.([0-9]+))?")


def _plain_units(amount: object, decimals: int) -> int | None:
    """:func:`to_units` of a plain decimal string in integer arithmetic on its text, or
    ``None`` for anything else (other forms, too many places, too large), which
    :func:`_exact_units` then answers or refuses with the SDK's message. Every state packs
    four amounts that change with each transfer, so the ``Decimal`` route cost a fifth of
    packing a state."""
    if type(amount) is not str:
        return None
    match = _PLAIN_AMOUNT.fullmatch(amount)
    if match is None:
        return None
    sign, whole, fraction = match.groups()
    fraction = (fraction or "").rstrip("0")
    if len(fraction) > decimals or len(whole) + decimals > _MAX_UNIT_DIGITS:
        return None
    magnitude = int(whole + fraction.ljust(decimals, "0"))
    if magnitude > _MAX_UINT256:
        return None
    return -magnitude if sign and magnitude else magnitude


def _exact_units(amount: str | int | Decimal, decimals: int) -> int:
    number = _normalized(parse_decimal(amount))
    places = decimal_places(number)
    if places > decimals:
        raise InvalidAmountError(
            f"amount {sdk_decimal_string(number)} exceeds maximum decimal precision: "
            f"max {decimals} decimals allowed"
        )
    if number.is_zero():
        return 0
    too_large = InvalidAmountError(
        f"amount {sdk_decimal_string(number)} with {decimals} decimals does not fit in "
        "a uint256 token amount"
    )
    if number.adjusted() + decimals >= _MAX_UNIT_DIGITS:
        raise too_large
    sign, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)
    scale: int = 10 ** (exponent + decimals)  # >= 1: places <= decimals was checked above
    magnitude = int("".join(str(d) for d in digits)) * scale
    if magnitude > _MAX_UINT256:
        raise too_large
    return -magnitude if sign else magnitude


def from_units(units: int, decimals: int) -> Decimal:
    """Integer token units -> exact display amount (``units / 10^decimals``), no rounding."""
    decimals = _check_decimals(decimals)
    if isinstance(units, bool) or not isinstance(units, int):
        raise InvalidAmountError(f"units must be an int, not {type(units).__name__}")
    return Decimal(f"{units}E-{decimals}")


# --- published vectors -----------------------------------------------------------------


def _vector_decimal_scaling(inputs: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    """``decimal_scaling``: ``{amount, decimals}`` -> ``{units}`` or the SDK's ``{error}``."""
    try:
        units = to_units(inputs["amount"], inputs["decimals"])
    except InvalidAmountError as exc:
        return {"error": str(exc)}
    return {"units": str(units)}


def _vector_decimal_to_string(inputs: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    """``decimal_to_string``: ``{parsed_from}`` -> decimal.js ``toString`` and places."""
    value = parse_decimal(inputs["parsed_from"])
    return {"sdk_string": sdk_decimal_string(value), "decimal_places": decimal_places(value)}


#: Vector group name -> function computing a vector's ``outputs`` from its ``inputs``.
VECTORS: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]]] = {
    "decimal_scaling": _vector_decimal_scaling,
    "decimal_to_string": _vector_decimal_to_string,
}
