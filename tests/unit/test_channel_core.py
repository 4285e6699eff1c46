"""The channel client's pure core: amounts, step plans, operation progress, the checks run
on every broker-signed state before it is countersigned, and the status transitions."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from settlement_widgets.channel.v0_5.core import lifecycle as L
from settlement_widgets.channel.v0_5.core.ids import channel_id
from settlement_widgets.channel.v0_5.core.resize import resize_data
from settlement_widgets.channel.v0_5.core.signing import sign_state
from settlement_widgets.channel.v0_5.core.types import Allocation, Channel, State, StateIntent
from settlement_widgets.errors import (
    ChainUnavailableError,
    InvalidAmountError,
    InvalidSignatureError,
    InvalidStateError,
    RelayError,
    RelayUnavailableError,
    SettlementTimeoutError,
    TransactionFailedError,
)
from settlement_widgets.keys import PrivateKey
from settlement_widgets.networks import SEPOLIA

WALLET = PrivateKey("0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80")
BROKER = PrivateKey("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d")
FORGER = PrivateKey("0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a")
ADJUDICATOR = SEPOLIA.contracts.adjudicator
assert SEPOLIA.token is not None
TOKEN: str = SEPOLIA.token
OTHER = "0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238"
CHAIN = 11155111


def allocations(user: int = 0, broker: int = 0, dest: str | None = None) -> tuple[Allocation, ...]:
    return (
        Allocation(dest or WALLET.address, TOKEN, user),
        Allocation(BROKER.address, TOKEN, broker),
    )


def definition(**changes: Any) -> Channel:
    base = Channel((WALLET.address, BROKER.address), ADJUDICATOR, 3600, 1700000000000)
    return replace(base, **changes)


def create_reply(
    channel: Channel | None = None, state: State | None = None, key: PrivateKey = BROKER
) -> dict[str, Any]:
    channel = channel or definition()
    cid = channel_id(channel, CHAIN)
    state = state or State(StateIntent.INITIALIZE, 0, b"", allocations())
    return {
        "channel_id": cid,
        "channel": channel.to_rpc(),
        "state": state.to_rpc(),
        "server_signature": sign_state(cid, state, key),
    }


def check_create(reply: dict[str, Any]) -> L.StateReply:
    return L.check_create_reply(
        reply,
        wallet=WALLET.address,
        broker=BROKER.address,
        token=TOKEN,
        chain_id=CHAIN,
        adjudicator=ADJUDICATOR,
        min_challenge=3600,
    )


def record(version: int = 1, amount: int = 0, status: str = L.ACTIVE) -> L.ChannelRecord:
    channel = definition()
    cid = channel_id(channel, CHAIN)
    state = State(
        StateIntent.RESIZE if version else StateIntent.INITIALIZE,
        version,
        b"",
        allocations(amount),
    )
    base = L.new_record(cid, CHAIN, channel, state)
    return replace(base.with_state(state), status=status)


def state_reply(rec: L.ChannelRecord, state: State, key: PrivateKey = BROKER) -> dict[str, Any]:
    return {
        "channel_id": rec.channel_id,
        "state": state.to_rpc(),
        "server_signature": sign_state(rec.channel_id, state, key),
    }


# --- amounts ---------------------------------------------------------------------------------


def test_units_accepts_integers_only() -> None:
    assert L.units(1_500_000) == 1_500_000
    assert L.units(0, allow_zero=True) == 0
    for bad, words in [
        (1.5, "not an integer"),
        (Decimal("1"), "not an integer"),
        ("10", "not an integer"),
        (True, "smallest units"),
        (None, "smallest units"),
        (-1, "negative"),
        (0, "positive"),
        (2**256, "too large"),
    ]:
        with pytest.raises(InvalidAmountError, match=words):
            L.units(bad, "amount")


# --- plans and operations -------------------------------------------------------------------


def test_plans() -> None:
    # await_relay: create_channel returns once the relay has indexed the channel
    assert L.plan_create(0) == (
        ("rpc_create", "submit_create", "await_relay"),
        {"initial_amount": "0"},
    )
    steps, params = L.plan_create(5)
    assert steps == (
        "rpc_create",
        "submit_create",
        "await_relay",
        "approve",
        "deposit",
        "rpc_resize",
        "submit_resize",
        "await_relay",
    )
    assert (params["resize_amount"], params["allocate_amount"]) == ("5", "-5")
    assert L.plan_resize(-3) == (
        ("rpc_resize", "submit_resize", "await_relay"),
        {"amount": "3", "resize_amount": "-3", "allocate_amount": "3"},
    )
    with pytest.raises(InvalidAmountError):
        L.plan_resize(0)
    steps, params = L.plan_withdraw(4, through_channel=True)
    assert steps[-1] == "withdraw" and params["withdraw_amount"] == "4"
    assert L.plan_withdraw(None, through_channel=False) == (("withdraw",), {})
    steps, params = L.plan_close(settle_amount=7, withdraw=True, in_dispute=False)
    assert steps == (
        "rpc_resize",
        "submit_resize",
        "await_relay",
        "rpc_close",
        "submit_close",
        "await_relay",  # the relay has applied Closed before the withdrawal and the return
        "withdraw",
    )
    assert (params["resize_amount"], params["allocate_amount"]) == ("0", "7")
    assert L.plan_close(settle_amount=0, withdraw=False, in_dispute=False)[0] == (
        "rpc_close",
        "submit_close",
        "await_relay",
    )
    assert L.plan_close(settle_amount=9, withdraw=True, in_dispute=True)[0] == (
        "submit_close",
        "await_relay",
        "withdraw",
    )
    assert L.plan_challenge()[0] == ("challenge", "await_relay")
    assert L.plan_checkpoint()[0] == ("checkpoint", "await_relay")


def test_operation_progress_is_positional() -> None:
    steps, params = L.plan_create(5)
    op = L.Operation(1, "create", None, steps, params)
    seen = []
    while op.next_step is not None:
        seen.append(op.next_step)
        op = op.advance(op.next_step, {"channel_id": "0xabc"} if not seen[:-1] else {})
    assert tuple(seen) == steps  # await_relay ran twice
    assert op.status == "done" and op.finished and op.channel_id == "0xabc"
    with pytest.raises(InvalidStateError, match="expects step"):
        L.Operation(2, "close", "0x1", ("rpc_close", "submit_close")).advance("submit_close")
    with pytest.raises(InvalidStateError, match="not a prefix"):
        L.Operation(3, "close", "0x1", ("rpc_close", "submit_close"), done=("submit_close",))
    with pytest.raises(InvalidStateError, match="unknown step"):
        L.Operation(4, "close", "0x1", ("explode",))
    failed = L.Operation(5, "close", "0x1", ("rpc_close",)).fail("interrupted", "chain away")
    assert failed.resumable and failed.next_step == "rpc_close"
    assert failed.resume().status == "running" and failed.resume().error is None
    assert L.Operation(6, "close", "0x1", ("rpc_close",)).fail("failed", "no").next_step is None


def test_failure_status_separates_outages_from_refusals() -> None:
    for exc in (
        ChainUnavailableError("x"),
        RelayUnavailableError("x"),
        SettlementTimeoutError("x"),
        TimeoutError(),
        KeyboardInterrupt(),
    ):
        assert L.failure_status(exc) == "interrupted"
    for exc in (RelayError("no"), TransactionFailedError("reverted"), InvalidStateError("bad")):
        assert L.failure_status(exc) == "failed"


# --- checking the broker's states -----------------------------------------------------------


def test_a_valid_create_reply_passes() -> None:
    checked = check_create(create_reply())
    assert checked.definition == definition()
    assert checked.state.intent == StateIntent.INITIALIZE and checked.state.version == 0
    assert checked.channel_id == channel_id(definition(), CHAIN)


@pytest.mark.parametrize(
    ("reply", "error", "words"),
    [
        (
            lambda: {**create_reply(), "channel_id": "0x" + "11" * 32},
            InvalidStateError,
            "hashes to",
        ),
        (
            lambda: create_reply(definition(participants=(WALLET.address, FORGER.address))),
            InvalidStateError,
            "participants",
        ),
        (lambda: create_reply(definition(adjudicator=OTHER)), InvalidStateError, "adjudicator"),
        (lambda: create_reply(definition(challenge=60)), InvalidStateError, "challenge period"),
        (
            lambda: create_reply(state=State(StateIntent.INITIALIZE, 1, b"", allocations())),
            InvalidStateError,
            "expected INITIALIZE v0",
        ),
        (
            lambda: create_reply(state=State(StateIntent.RESIZE, 0, b"", allocations())),
            InvalidStateError,
            "expected INITIALIZE v0",
        ),
        (
            lambda: create_reply(state=State(StateIntent.INITIALIZE, 0, b"", allocations(5))),
            InvalidStateError,
            "zero allocations",
        ),
        (
            lambda: create_reply(
                state=State(
                    StateIntent.INITIALIZE,
                    0,
                    b"",
                    (Allocation(WALLET.address, OTHER, 0), Allocation(BROKER.address, OTHER, 0)),
                )
            ),
            InvalidStateError,
            "token",
        ),
        (lambda: create_reply(key=FORGER), InvalidSignatureError, "not by the broker"),
        (
            lambda: {k: v for k, v in create_reply().items() if k != "server_signature"},
            InvalidStateError,
            "lacks",
        ),
        (lambda: "nope", InvalidStateError, "not an object"),
    ],
)
def test_a_create_reply_that_breaks_a_rule_is_refused(reply: Any, error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        check_create(reply())


def test_resize_reply_checks() -> None:
    rec = record(version=1)
    good = State(StateIntent.RESIZE, 2, resize_data([5, -5]), allocations())

    def check(state: State, *, key: PrivateKey = BROKER, deltas: tuple[int, int] = (5, -5)) -> Any:
        return L.check_resize_reply(
            state_reply(rec, state, key),
            record=rec,
            resize_amount=deltas[0],
            allocate_amount=deltas[1],
            destination=WALLET.address,
        )

    assert check(good).state == good
    with pytest.raises(InvalidStateError, match="expected RESIZE v2"):
        check(replace(good, version=3))
    with pytest.raises(InvalidStateError, match="requested"):
        check(good, deltas=(6, -6))
    with pytest.raises(InvalidStateError, match="custody requires"):
        check(replace(good, allocations=allocations(1)))
    with pytest.raises(InvalidStateError, match="pays"):
        check(replace(good, allocations=allocations(dest=OTHER)))
    with pytest.raises(InvalidSignatureError):
        check(good, key=FORGER)
    allocate = State(StateIntent.RESIZE, 2, resize_data([0, 7]), allocations(7))
    assert check(allocate, deltas=(0, 7)).state == allocate


def test_close_reply_checks() -> None:
    rec = record(version=2, amount=7)
    good = State(StateIntent.FINALIZE, 3, b"", allocations(7))

    def check(state: State, key: PrivateKey = BROKER) -> Any:
        return L.check_close_reply(
            state_reply(rec, state, key), record=rec, destination=WALLET.address
        )

    assert check(good).state == good
    assert check(replace(good, allocations=allocations(3, 4))).state.allocations[1].amount == 4
    with pytest.raises(InvalidStateError, match="expected FINALIZE v3"):
        check(replace(good, intent=StateIntent.RESIZE))
    with pytest.raises(InvalidStateError, match="channel holds 7"):
        check(replace(good, allocations=allocations(9)))
    with pytest.raises(InvalidStateError, match="no data"):
        check(replace(good, data=b"\x01"))
    with pytest.raises(InvalidSignatureError):
        check(good, FORGER)
    with pytest.raises(InvalidStateError, match="answered for channel"):
        L.check_close_reply(
            {**state_reply(rec, good), "channel_id": "0x" + "22" * 32},
            record=rec,
            destination=WALLET.address,
        )


# --- transitions ----------------------------------------------------------------------------


def test_transitions_are_idempotent_and_never_rewind() -> None:
    opening = replace(record(version=0), status=L.OPENING)
    initial = State(StateIntent.INITIALIZE, 0, b"", allocations())
    active = L.apply_state(opening, initial)
    assert active is not None and active.status == L.ACTIVE
    assert L.apply_state(active, initial) is None  # reported twice: applied once
    resizing = replace(active, status=L.RESIZING)
    assert L.apply_state(resizing, initial) is None  # an old event never rewinds
    resize = State(StateIntent.RESIZE, 1, resize_data([5, -5]), allocations())
    resized = L.apply_state(resizing, resize)
    assert resized is not None and (resized.status, resized.version) == (L.ACTIVE, 1)

    disputed = L.apply_challenged(resized, resize, 1234)
    assert disputed is not None and (disputed.status, disputed.challenge_expiry) == (
        L.DISPUTE,
        1234,
    )
    assert L.apply_challenged(disputed, resize, 1234) is None
    assert L.apply_relay_status(disputed, "open") is None  # the relay never rewinds us
    assert L.apply_relay_status(resized, "resizing") is None
    relay_dispute = L.apply_relay_status(resized, "challenged")
    assert relay_dispute is not None and relay_dispute.status == L.DISPUTE
    final_state = State(StateIntent.FINALIZE, 2, b"", allocations())
    final = L.apply_closed(disputed, final_state)
    assert final is not None and (final.status, final.intent) == (L.FINAL, StateIntent.FINALIZE)
    assert L.apply_closed(final, final_state) is None
    relay_final = L.apply_relay_status(resized, "closed")  # the relay's cu came first
    assert relay_final is not None and relay_final.status == L.FINAL
    from_chain = L.apply_closed(relay_final, final_state)  # our receipt still lands
    assert from_chain is not None and from_chain.intent == StateIntent.FINALIZE
    # after a dispute the closing state is the challenged one: the relay's report leaves the
    # record at that very state, and the Closed event must still land (and end the dispute)
    relay_closed_dispute = L.apply_relay_status(disputed, "closed")
    assert relay_closed_dispute is not None and relay_closed_dispute.version == resize.version
    closed_dispute = L.apply_closed(relay_closed_dispute, resize)
    assert closed_dispute is not None and closed_dispute.challenge_expiry == 0
    assert L.apply_closed(closed_dispute, resize) is None
    assert L.apply_state(final, State(StateIntent.RESIZE, 9, b"", allocations())) is None
    assert L.apply_relay_status(final, "challenged") is None
    with pytest.raises(InvalidStateError, match="unknown channel status"):
        replace(final, status="open")


def test_helpers() -> None:
    finalize = State(StateIntent.FINALIZE, 3, b"", allocations(7, 2))
    assert L.credited_amount(finalize, WALLET.address) == 7
    assert L.credited_amount(finalize, OTHER) == 0
    signed = L.two_party(finalize, "0x" + "11" * 65, "0x" + "22" * 65)
    assert L.latest_signed([finalize, signed]) == signed
    assert L.same_state(
        signed, signed.with_sigs([s.upper().replace("0X", "0x") for s in signed.sigs])
    )
    assert not L.same_state(signed, finalize)
    assert L.intent_name(2) == "RESIZE"
