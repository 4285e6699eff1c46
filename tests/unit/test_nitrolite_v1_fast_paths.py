"""The v1 core's hand-laid encoders give the generic ABI encoder's bytes and errors.

State ids, transaction ids, transition hashes and integer words are written out word by
word on the transfer path (both the client and the node compute them for every state);
these properties hold each to :func:`abi_encode` over the same types, including the edges
(uint256 bounds, long and non-ASCII strings, lenient hex ids, out-of-range values).
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from settlement_widgets._keccak import keccak256
from settlement_widgets.addresses import validate_address
from settlement_widgets.channel.v1.core.abi import _bounds, abi_encode, int_word
from settlement_widgets.channel.v1.core.ids import state_id, transaction_id
from settlement_widgets.channel.v1.core.transitions import (
    TransitionType,
    encode_transition,
    lenient_bytes32,
)
from settlement_widgets.errors import InvalidStateError, SettlementValueError

UINT256_MAX = 2**256 - 1
addresses = st.binary(min_size=20, max_size=20).map(lambda b: "0x" + b.hex())
texts = st.text(max_size=80) | st.sampled_from(["", "a" * 32, "b" * 33, "é" * 31, "YUSD"])
uints = st.integers(min_value=0, max_value=UINT256_MAX) | st.sampled_from([0, UINT256_MAX])
ids32 = st.binary(min_size=32, max_size=32).map(lambda b: "0x" + b.hex())


@given(wallet=addresses, asset=texts, epoch=uints, version=uints, as_text=st.booleans())
def test_state_id_equals_the_generic_encoding(
    wallet: str, asset: str, epoch: int, version: int, as_text: bool
) -> None:
    expected = keccak256(
        abi_encode(
            ["address", "string", "uint256", "uint256"],
            [validate_address(wallet), asset, epoch, version],
        )
    )
    args = (str(epoch), str(version)) if as_text else (epoch, version)
    assert state_id(wallet, asset, *args) == "0x" + expected.hex()


@pytest.mark.parametrize("bad", [-1, 2**256, "1.5", "-1", True, None])
def test_state_id_refuses_what_does_not_fit(bad: object) -> None:
    with pytest.raises(InvalidStateError):
        state_id("0x" + "11" * 20, "YUSD", 0, bad)  # type: ignore[arg-type]


@given(account=texts, state=ids32)
def test_transaction_id_equals_the_generic_encoding(account: str, state: str) -> None:
    expected = keccak256(abi_encode(["string", "bytes32"], [account, bytes.fromhex(state[2:])]))
    assert transaction_id(account, state) == "0x" + expected.hex()
    assert transaction_id(account, bytes.fromhex(state[2:])) == "0x" + expected.hex()


@pytest.mark.parametrize("bad", ["0x12", "0x" + "zz" * 32, b"\x00" * 31, 5])
def test_transaction_id_refuses_a_bad_state_id(bad: object) -> None:
    with pytest.raises(InvalidStateError):
        transaction_id("0x" + "11" * 20, bad)  # type: ignore[arg-type]


lenient = st.text(alphabet="0123456789abcdefABCDEFxg", max_size=70) | ids32 | st.none()


@given(
    kind=st.sampled_from(list(TransitionType)),
    tx=lenient,
    account=lenient,
    amount=texts | st.sampled_from(["0", "1e-8", "1" * 80, "-0.5"]),
)
def test_encode_transition_equals_the_generic_encoding(
    kind: TransitionType, tx: str | None, account: str | None, amount: str
) -> None:
    try:
        expected = abi_encode(
            ["(uint8,bytes32,bytes32,string)"],
            [(int(kind), lenient_bytes32(tx, "tx_id"), lenient_bytes32(account), amount)],
        )
    except InvalidStateError as exc:
        with pytest.raises(InvalidStateError, match=str(exc)[:20]):
            encode_transition(int(kind), tx, account, amount)
        return
    assert encode_transition(int(kind), tx, account, amount) == expected


@pytest.mark.parametrize(
    ("kind", "amount"), [(7, "1"), (True, "1"), (30, 1), (30, None), ("30", "1")]
)
def test_encode_transition_refuses_what_it_refused(kind: object, amount: object) -> None:
    with pytest.raises(InvalidStateError):
        encode_transition(kind, "0x01", "0x02", amount)  # type: ignore[arg-type]


def _reference_word(value: int, signed: bool, bits: int) -> bytes:
    """``int_word`` as it was before its bounds were precomputed."""
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise SettlementValueError("does not fit")
    return (value % 2**256).to_bytes(32, "big")


widths = st.sampled_from([8, 64, 128, 255, 256, 7, 300])


@given(
    value=st.integers(min_value=-(2**257), max_value=2**257)
    | st.sampled_from([0, -1, 2**255, -(2**255), 2**255 - 1, UINT256_MAX, 2**256]),
    signed=st.booleans(),
    bits=widths,
)
def test_int_word_equals_the_reference(value: int, signed: bool, bits: int) -> None:
    try:
        expected = _reference_word(value, signed, bits)
    except SettlementValueError:
        with pytest.raises(SettlementValueError, match="does not fit"):
            int_word(value, signed, bits)
        return
    assert int_word(value, signed, bits) == expected
    low, high = _bounds(signed, bits)
    assert low <= value <= high


@pytest.mark.parametrize("bad", [True, False, 1.0, "1", None])
def test_int_word_refuses_non_integers(bad: object) -> None:
    with pytest.raises(SettlementValueError, match="does not fit"):
        int_word(bad, False, 256)  # type: ignore[arg-type]


def test_int_word_takes_int_subclasses() -> None:
    assert int_word(TransitionType.FINALIZE, False, 8) == (200).to_bytes(32, "big")


def _walked(value: object) -> str:
    """``encode_json`` by the general walk alone (the reference for the C-encoder route)."""
    from settlement_widgets.channel.v1.core.wire import _encode_value

    out: list[str] = []
    _encode_value(value, None, out)
    return "".join(out)


json_keys = st.sampled_from(["epoch", "version", "nonce", "blockchain_id", "amount", "é", ""])
json_leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.text(max_size=12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.decimals(allow_nan=False, allow_infinity=False, places=3)
    | st.sampled_from([TransitionType.FINALIZE, '\u2028\x00"\\', 2**64])
)
json_trees = st.recursive(
    json_leaves,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(json_keys | st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(value=json_trees)
def test_encode_json_equals_the_walk(value: object) -> None:
    from settlement_widgets.channel.v1.core.wire import encode_json

    assert encode_json(value) == _walked(value)


@pytest.mark.parametrize(
    "value",
    [
        {1: "a"},  # a non-string key is refused by the walk, not coerced
        {"a": {2: 3}},
        {"a": [object()]},
        {"a": float("inf")},
    ],
)
def test_encode_json_refuses_what_the_walk_refuses(value: object) -> None:
    from settlement_widgets.channel.v1.core.wire import encode_json
    from settlement_widgets.errors import InvalidFrameError

    with pytest.raises(InvalidFrameError):
        encode_json(value)


def _sdk_string_by_decimal(text: str) -> str:
    """``sdk_decimal_string`` through ``Decimal`` alone (the reference for plain texts)."""
    from decimal import Decimal

    from settlement_widgets.channel.v1.core.decimals import sdk_decimal_string

    return sdk_decimal_string(Decimal(text))  # a Decimal never takes the text route


digit_runs = st.text(alphabet="0123456789", min_size=1, max_size=90) | st.sampled_from(
    ["0", "000", "1" + "0" * 20, "1" + "0" * 21, "9" * 21, "9" * 22, "12345678901234567890123"]
)
fractions = (
    st.none()
    | st.text(alphabet="0123456789", min_size=1, max_size=90)
    | st.sampled_from(["000001", "0000001", "0000009", "00000001", "5000", "0" * 30])
)


@given(sign=st.booleans(), whole=digit_runs, fraction=fractions)
def test_plain_texts_render_as_the_decimal_route(
    sign: bool, whole: str, fraction: str | None
) -> None:
    from settlement_widgets.channel.v1.core.decimals import _plain_sdk_string, sdk_decimal_string

    text = ("-" if sign else "") + whole + ("." + fraction if fraction is not None else "")
    expected = _sdk_string_by_decimal(text)
    fast = _plain_sdk_string(text)
    assert fast is None or fast == expected
    assert sdk_decimal_string(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10.50", "10.5"),
        ("-0", "0"),
        ("0.000", "0"),
        ("0.000001", "0.000001"),
        ("0.0000001", "1e-7"),
        ("1" + "0" * 21, "1e+21"),
        ("1" + "0" * 20, "1" + "0" * 20),
        ("007.0700", "7.07"),
        ("1" * 40 + "." + "2" * 40, "1." + "1" * 39 + "2" * 40 + "e+39"),
        ("-0.00000012", "-1.2e-7"),
    ],
)
def test_sdk_strings_of_plain_texts(text: str, expected: str) -> None:
    from settlement_widgets.channel.v1.core.decimals import sdk_decimal_string

    assert _sdk_string_by_decimal(text) == expected
    assert sdk_decimal_string(text) == expected


@pytest.mark.parametrize("bad", [" 1", "1 ", "", "1_0", "abc", "NaN", "Infinity", "1..2"])
def test_sdk_string_refuses_what_it_refused(bad: str) -> None:
    from settlement_widgets.channel.v1.core.decimals import sdk_decimal_string
    from settlement_widgets.errors import InvalidAmountError

    with pytest.raises(InvalidAmountError):
        sdk_decimal_string(bad)


def test_validate_address_answers_the_same_the_second_time() -> None:
    from settlement_widgets import addresses
    from settlement_widgets.errors import InvalidAddressError

    zero = "0x" + "00" * 20
    lower = "0x" + "ab" * 20
    good = validate_address(lower)
    assert good != lower and good.lower() == lower
    wrong = "0x" + good[2:].swapcase()  # mixed case, wrong checksum: never accepted
    for _ in range(2):
        assert validate_address(lower) == good
        assert validate_address(good) == good
        with pytest.raises(InvalidAddressError, match="wrong EIP-55 checksum"):
            validate_address(wrong)
        assert validate_address(zero) == zero
        with pytest.raises(InvalidAddressError, match="recipient must not be the zero address"):
            validate_address(zero, field="recipient", allow_zero=False)
    assert len(addresses._VALID) <= addresses._VALID_MAX


def _sdk_string_by_digits(value: object) -> str:
    """decimal.js ``toString`` from the normalised digits alone (the general route)."""
    from decimal import Decimal

    from settlement_widgets.channel.v1.core.decimals import (
        TO_EXP_NEG,
        TO_EXP_POS,
        _normalized,
        _plain_digits,
    )

    assert isinstance(value, Decimal)
    number = _normalized(value)
    if number.is_zero():
        return "0"
    sign, digits, _ = number.as_tuple()
    text = "".join(str(d) for d in digits)
    exponent = number.adjusted()
    if exponent <= TO_EXP_NEG or exponent >= TO_EXP_POS:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        body = f"{mantissa}e{'+' if exponent >= 0 else '-'}{abs(exponent)}"
    else:
        body = _plain_digits(text, exponent)
    return ("-" if sign else "") + body


@given(
    value=st.decimals(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["0E-5", "-0", "1E+20", "1E+21", "1E-6", "1E-7", "-1.50E-6", "9" * 60]).map(
        Decimal
    )
)
def test_decimal_values_render_as_the_digit_route(value: object) -> None:
    from settlement_widgets.channel.v1.core.decimals import sdk_decimal_string

    assert sdk_decimal_string(value) == _sdk_string_by_digits(value)
