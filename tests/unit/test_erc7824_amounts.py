"""Exact amounts (units <-> wire decimal strings) and RESIZE data."""

from __future__ import annotations

from decimal import Decimal, localcontext

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from settlement_widgets.channel.v0_5.core import (
    decode_resize_data,
    is_decimal_amount,
    parse_decimal_amount,
    resize_data,
    to_decimal_string,
)
from settlement_widgets.errors import InvalidAmountError, InvalidStateError


@pytest.mark.parametrize(
    ("units", "decimals", "text"),
    [
        (0, 6, "0"),
        (1, 6, "0.000001"),
        (1_500_000, 6, "1.5"),
        (100_000_000, 6, "100"),
        (123_456_789, 6, "123.456789"),
        (10, 0, "10"),
        (10**18, 18, "1"),
        (
            2**256 - 1,
            18,
            "115792089237316195423570985008687907853269984665640564039457.584007913129639935",
        ),
    ],
)
def test_known_conversions(units: int, decimals: int, text: str) -> None:
    assert to_decimal_string(units, decimals) == text
    assert parse_decimal_amount(text, decimals) == units


@settings(max_examples=300, deadline=None)
@given(units=st.integers(min_value=0, max_value=2**256), decimals=st.integers(0, 30))
def test_round_trip_is_exact(units: int, decimals: int) -> None:
    text = to_decimal_string(units, decimals)
    assert is_decimal_amount(text)
    assert "e" not in text.lower() and not text.endswith(".")
    assert parse_decimal_amount(text, decimals) == units
    with localcontext() as ctx:
        ctx.prec = 200  # the default 28 digits would round big amounts
        assert Decimal(text).scaleb(decimals) == units


def test_trailing_zeros_beyond_the_decimals_are_exact() -> None:
    assert parse_decimal_amount("1.5000000000", 6) == 1_500_000
    assert parse_decimal_amount("10.0", 0) == 10
    assert parse_decimal_amount(Decimal("1.50"), 6) == 1_500_000
    assert parse_decimal_amount(Decimal("0"), 2) == 0


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("1.0000001", "7 decimal places; this asset has 6"),
        ("0.1", "1 decimal places; this asset has 0"),
        ("-1", "must not be negative"),
        ("-0.5", "must not be negative"),
        (Decimal("-1"), "must not be negative"),
        (1.5, "is a float"),
        (0.1, "is a float"),
        (15, "is an int"),
        (True, "is an int"),
        ("1e6", "exponent notation"),
        ("1E-3", "exponent notation"),
        (Decimal("NaN"), "not a finite number"),
        (Decimal("Infinity"), "not a finite number"),
        ("", "not a plain decimal"),
        (" 1", "not a plain decimal"),
        ("1.", "not a plain decimal"),
        (".5", "not a plain decimal"),
        ("+1", "not a plain decimal"),
        ("1,5", "not a plain decimal"),
        ("١", "not a plain decimal"),  # a non-ASCII digit
        (None, "must be a decimal string"),
    ],
)
def test_parse_rejects_with_clear_errors(value: object, message: str) -> None:
    with pytest.raises(InvalidAmountError, match=message):
        parse_decimal_amount(value, 6 if "has 0" not in message else 0)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("units", "decimals", "message"),
    [
        (-1, 6, "must not be negative"),
        (1.5, 6, "integer number of smallest units"),
        (True, 6, "integer number of smallest units"),
        ("10", 6, "integer number of smallest units"),
        (1, -1, "decimals must be"),
        (1, 78, "decimals must be"),
    ],
)
def test_to_decimal_string_rejects(units: object, decimals: object, message: str) -> None:
    with pytest.raises(InvalidAmountError, match=message):
        to_decimal_string(units, decimals)  # type: ignore[arg-type]


def test_signed_decimal_strings() -> None:
    assert to_decimal_string(-1_500_000, 6, signed=True) == "-1.5"


@settings(max_examples=100, deadline=None)
@given(
    a=st.integers(min_value=-(2**255), max_value=2**255 - 1),
    b=st.integers(min_value=-(2**255), max_value=2**255 - 1),
)
def test_resize_data_round_trip(a: int, b: int) -> None:
    data = resize_data([a, b])
    assert decode_resize_data(data) == (a, b)
    assert decode_resize_data("0x" + data.hex()) == (a, b)


def test_resize_data_accepts_wire_strings_and_rejects_bad_input() -> None:
    assert resize_data(["5000000", "-5000000"]) == resize_data([5_000_000, -5_000_000])
    with pytest.raises(InvalidStateError, match="exactly 2 deltas"):
        resize_data([1, 2, 3])
    with pytest.raises(InvalidStateError, match="must be an integer"):
        resize_data([1.5, 0])  # type: ignore[list-item]
    with pytest.raises(InvalidStateError, match="must be an integer"):
        resize_data(["1.5", "0"])
    with pytest.raises(InvalidStateError, match="not an int256"):
        resize_data([2**255, 0])
    with pytest.raises(InvalidStateError, match="exactly 2 deltas"):
        decode_resize_data(b"\x00" * 31 + b"\x20" + b"\x00" * 32)  # an empty int256[]
    with pytest.raises(InvalidStateError, match="0x-prefixed hex"):
        decode_resize_data("deadbeef")


def test_a_decimal_with_more_than_28_digits_is_parsed_exactly() -> None:
    """``abs()`` of a Decimal rounds to the context's 28 digits; the parser must not."""
    amount = Decimal("1234567890123456789012345678901.5")  # 32 significant digits
    assert parse_decimal_amount(amount, 1) == 12345678901234567890123456789015
    assert parse_decimal_amount(Decimal("-0"), 18) == 0


@settings(max_examples=300, deadline=None)
@given(units=st.integers(min_value=0, max_value=2**256 - 1), decimals=st.integers(0, 18))
def test_uint256_round_trips_through_text_and_decimal_exactly(units: int, decimals: int) -> None:
    text = to_decimal_string(units, decimals)
    assert parse_decimal_amount(text, decimals) == units
    assert parse_decimal_amount(Decimal(text), decimals) == units
    assert to_decimal_string(parse_decimal_amount(Decimal(text), decimals), decimals) == text
