"""The v1 core's hand-laid encoders give the generic ABI encoder's bytes and errors.

State ids, transaction ids, transition hashes and integer words are written out word by
word on the transfer path (both the client and the node compute them for every state);
these properties hold each to :func:`abi_encode` over the same types, including the edges
(uint256 bounds, long and non-ASCII strings, lenient hex ids, out-of-range values).
"""

from __future__ import annotations

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
