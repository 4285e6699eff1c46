"""The frozen protocol types: validation and the RPC/ABI conversions."""

from __future__ import annotations

import pytest
from erc7824_strategies import ADJUDICATOR, TOKEN, channels, states
from hypothesis import given, settings

from settlement_widgets.channel.v0_5.core import (
    Allocation,
    Channel,
    ChannelStatus,
    State,
    StateIntent,
)
from settlement_widgets.errors import (
    InvalidAddressError,
    InvalidAmountError,
    InvalidStateError,
    SettlementValueError,
)

A = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
B = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"


@settings(max_examples=80, deadline=None)
@given(state=states())
def test_state_round_trips(state: State) -> None:
    assert State.from_rpc(state.to_rpc()) == state
    assert State.from_abi(state.to_abi()) == state
    signed = state.with_sigs(["0x" + "11" * 65, bytes(65)])
    assert State.from_abi(signed.to_abi()) == signed
    assert signed.unsigned() == state


@settings(max_examples=50, deadline=None)
@given(channel=channels())
def test_channel_round_trips(channel: Channel) -> None:
    assert Channel.from_rpc(channel.to_rpc()) == channel
    assert Channel.from_abi(channel.to_abi()) == channel


def test_rpc_shapes() -> None:
    state = State(StateIntent.RESIZE, 3, "0x01", (Allocation(A, TOKEN, 10**30),))
    assert state.to_rpc() == {
        "intent": 2,
        "version": 3,
        "state_data": "0x01",
        "allocations": [{"destination": A, "token": TOKEN, "amount": str(10**30)}],
    }
    assert ChannelStatus.FINAL == 4 and StateIntent.FINALIZE == 3


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda: Channel((A,), ADJUDICATOR, 1, 1), InvalidStateError, "exactly 2"),
        (lambda: Channel((A, A), ADJUDICATOR, 1, 1), InvalidStateError, "distinct"),
        (lambda: Channel((A, "0x" + "0" * 40), ADJUDICATOR, 1, 1), InvalidAddressError, "zero"),
        (lambda: Channel((A, B), ADJUDICATOR, 2**64, 1), InvalidAmountError, "uint64"),
        (lambda: Channel((A, B), ADJUDICATOR, 1, -1), InvalidAmountError, "uint64"),
        (lambda: Allocation(A, TOKEN, -1), InvalidAmountError, "uint256"),
        (lambda: Allocation(A, TOKEN, 1.0), InvalidAmountError, "non-negative integer"),
        (
            lambda: Allocation(A.upper().replace("0X", "0x")[:-1] + "g", TOKEN, 1),
            InvalidAddressError,
            "hex",
        ),
        (lambda: State(9, 0, b"", ()), InvalidStateError, "unknown state intent"),
        (lambda: State(0, 0, "zz", ()), InvalidStateError, "0x-prefixed"),
        (lambda: State(0, 0, b"", ((A, TOKEN, 1),)), InvalidStateError, "Allocation values"),
        (lambda: State(0, 0, b"", (), (5,)), InvalidStateError, r"sigs\[0\]"),
        (lambda: State(0, 0, b"", (), ("0xqq",)), InvalidStateError, "not valid hex"),
        (lambda: State.from_rpc({"intent": 1}), InvalidStateError, "missing"),
        (
            lambda: State.from_rpc({"intent": "x", "version": 0, "allocations": []}),
            InvalidStateError,
            "invalid",
        ),
        (lambda: Channel.from_rpc({"participants": [A, B]}), InvalidStateError, "missing"),
    ],
)
def test_invalid_values_raise_clear_errors(
    build: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        build()  # type: ignore[operator]
    assert issubclass(error, SettlementValueError)
