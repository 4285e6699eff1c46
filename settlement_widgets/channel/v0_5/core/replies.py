"""Checking what the relay answers before we countersign it.

The broker proposes every state of a channel (``create_channel``, ``resize_channel``,
``close_channel``); a client that countersigns blindly can be made to sign away its funds. So
each answer is checked here against what was asked and what the channel is: the ids, the
participants, the intent and version, the allocations and the broker's signature. A checked
answer is a :class:`StateReply`; anything else raises
:class:`~settlement_widgets.errors.InvalidStateError` or
:class:`~settlement_widgets.errors.InvalidSignatureError`, saying what is wrong.

Pure (no I/O); re-exported by :mod:`.lifecycle`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ....addresses import validate_address
from ....errors import InvalidSignatureError, InvalidStateError, SettlementError
from .ids import channel_id as compute_channel_id
from .records import ChannelRecord
from .resize import decode_resize_data
from .signing import recover_state_signer
from .types import Channel as ChannelDefinition
from .types import State, StateIntent

__all__ = [
    "StateReply",
    "check_close_reply",
    "check_create_reply",
    "check_resize_reply",
]


@dataclass(frozen=True)
class StateReply:
    """A state the broker signed, checked: ours to countersign."""

    channel_id: str
    state: State
    server_signature: str
    definition: ChannelDefinition | None = None


def _result(result: Any, method: str) -> Mapping[str, Any]:
    if not isinstance(result, Mapping):
        raise InvalidStateError(f"{method} answered {result!r}, not an object")
    return result


def _state(result: Mapping[str, Any], method: str) -> tuple[str, State, str]:
    try:
        cid = str(result["channel_id"]).lower()
        state = State.from_rpc(result["state"])
        signature = result["server_signature"]
    except KeyError as exc:
        raise InvalidStateError(f"{method} answer lacks {exc}") from None
    if not isinstance(signature, str):
        raise InvalidStateError(f"{method} server_signature must be 0x-hex")
    return cid, state, signature


def _check_broker_signature(cid: str, state: State, signature: str, broker: str) -> None:
    try:
        signer = recover_state_signer(cid, state, signature, "raw")
    except SettlementError as exc:
        raise InvalidSignatureError(f"the broker's state signature is malformed: {exc}") from None
    if signer != broker:
        raise InvalidSignatureError(
            f"the state is signed by {signer}, not by the broker {broker}: refusing to sign it"
        )


def _check_allocations(
    state: State, *, wallet: str, broker: str, token: str, destination: str | None = None
) -> None:
    allocs = state.allocations
    if len(allocs) != 2:
        raise InvalidStateError(f"a state has exactly 2 allocations, got {len(allocs)}")
    if allocs[0].destination != (destination or wallet):
        raise InvalidStateError(
            f"allocation 0 pays {allocs[0].destination}, expected {destination or wallet}"
        )
    if allocs[1].destination != broker:
        raise InvalidStateError(f"allocation 1 pays {allocs[1].destination}, not the broker")
    for i, alloc in enumerate(allocs):
        if alloc.token != token:
            raise InvalidStateError(f"allocation {i} is in token {alloc.token}, not {token}")


def check_create_reply(
    result: Any,
    *,
    wallet: str,
    broker: str,
    token: str,
    chain_id: int,
    adjudicator: str,
    min_challenge: int,
) -> StateReply:
    """Check a ``create_channel`` answer before countersigning it (the v0.5 SDK's first step).

    The channel id must be the one computed from the returned channel and ``chain_id``;
    participants are ``[wallet, broker]``; the adjudicator is the configured one; the
    challenge period is at least ``min_challenge``; the state is INITIALIZE version 0 with
    zero allocations in ``token``; ``server_signature`` is the broker's.
    """
    data = _result(result, "create_channel")
    cid, state, signature = _state(data, "create_channel")
    try:
        definition = ChannelDefinition.from_rpc(data["channel"])
    except KeyError:
        raise InvalidStateError("create_channel answer lacks the channel") from None
    expected_id = compute_channel_id(definition, chain_id)
    if expected_id.lower() != cid:
        raise InvalidStateError(
            f"create_channel returned channel id {cid}, but the channel hashes to {expected_id}"
        )
    if definition.participants != (wallet, broker):
        raise InvalidStateError(
            f"the channel's participants are {list(definition.participants)}, expected "
            f"[{wallet}, {broker}] (the wallet, then the broker)"
        )
    if definition.adjudicator != validate_address(adjudicator, field="adjudicator"):
        raise InvalidStateError(
            f"the channel uses adjudicator {definition.adjudicator}, not {adjudicator}"
        )
    if definition.challenge < min_challenge:
        raise InvalidStateError(
            f"the channel's challenge period is {definition.challenge} s, below {min_challenge} s"
        )
    if state.intent != StateIntent.INITIALIZE or state.version != 0:
        raise InvalidStateError(
            f"the initial state is {state.intent.name} v{state.version}, expected INITIALIZE v0"
        )
    _check_allocations(state, wallet=wallet, broker=broker, token=token)
    if any(a.amount for a in state.allocations):
        raise InvalidStateError("a v0.5 channel opens with zero allocations")
    _check_broker_signature(cid, state, signature, broker)
    return StateReply(cid, state, signature, definition)


def check_resize_reply(
    result: Any,
    *,
    record: ChannelRecord,
    resize_amount: int,
    allocate_amount: int,
    destination: str,
) -> StateReply:
    """Check a ``resize_channel`` answer: RESIZE, version + 1, data ``[resize, allocate]``
    as requested, allocations summing to what the custody will check, broker-signed."""
    cid, state, signature = _state(_result(result, "resize_channel"), "resize_channel")
    if cid != record.channel_id:
        raise InvalidStateError(f"resize_channel answered for channel {cid}")
    if state.intent != StateIntent.RESIZE or state.version != record.version + 1:
        raise InvalidStateError(
            f"resize_channel returned {state.intent.name} v{state.version}, expected "
            f"RESIZE v{record.version + 1}"
        )
    deltas = decode_resize_data(state.data)
    if deltas != (resize_amount, allocate_amount):
        raise InvalidStateError(
            f"resize_channel returned deltas {list(deltas)}, requested "
            f"[{resize_amount}, {allocate_amount}]"
        )
    _check_allocations(
        state,
        wallet=record.wallet,
        broker=record.broker,
        token=record.token,
        destination=destination,
    )
    expected = record.amount + resize_amount + allocate_amount
    if sum(a.amount for a in state.allocations) != expected:
        raise InvalidStateError(
            f"the RESIZE allocations sum to {sum(a.amount for a in state.allocations)}, "
            f"the custody requires {expected}"
        )
    _check_broker_signature(cid, state, signature, record.broker)
    return StateReply(cid, state, signature)


def check_close_reply(result: Any, *, record: ChannelRecord, destination: str) -> StateReply:
    """Check a ``close_channel`` answer: FINALIZE, version + 1, empty data, the channel's
    amount split between ``destination`` and the broker, broker-signed."""
    cid, state, signature = _state(_result(result, "close_channel"), "close_channel")
    if cid != record.channel_id:
        raise InvalidStateError(f"close_channel answered for channel {cid}")
    if state.intent != StateIntent.FINALIZE or state.version != record.version + 1:
        raise InvalidStateError(
            f"close_channel returned {state.intent.name} v{state.version}, expected "
            f"FINALIZE v{record.version + 1}"
        )
    if state.data:
        raise InvalidStateError("a FINALIZE state carries no data")
    _check_allocations(
        state,
        wallet=record.wallet,
        broker=record.broker,
        token=record.token,
        destination=destination,
    )
    total = sum(a.amount for a in state.allocations)
    if total != record.amount:
        raise InvalidStateError(
            f"the FINALIZE allocations sum to {total}, but the channel holds {record.amount}"
        )
    _check_broker_signature(cid, state, signature, record.broker)
    return StateReply(cid, state, signature)
