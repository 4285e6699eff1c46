"""The channel client's pure core: records, reply checks, step plans and transitions.

Nothing here does I/O. The provider (:mod:`.provider`) is the effects runner: it asks this
module what to check and what to do next, does it against the relay, the chain and the store,
and feeds the outcome back. Keeping the decisions pure (as raiden does)
is what makes recovery possible: a restarted provider reloads an :class:`Operation` from the
store and :attr:`Operation.next_step` says where it stopped.

The lifecycle follows Nitrolite v0.5 (as its SDK and ClearNode run it): a channel with the broker is
a bridge between the custody contract and the relay's unified ledger.

- ``create``: ``create_channel`` RPC -> countersign INITIALIZE -> ``Custody.create``; with an
  initial amount, the deposit steps below follow.
- deposit (``resize`` by ``+X``): ``approve`` -> ``Custody.deposit`` -> ``resize_channel``
  ``{resize_amount:+X, allocate_amount:-X}`` -> ``Custody.resize`` -> the relay credits X.
- withdraw (``resize`` by ``-X``): ``resize_channel {resize_amount:-X, allocate_amount:+X}``
  -> ``Custody.resize`` (X reaches the wallet's custody ledger) -> ``Custody.withdraw``.
- ``close``: optionally move the off-chain balance into the channel (``allocate_amount``),
  then ``close_channel`` RPC -> countersign FINALIZE -> ``Custody.close`` -> ``withdraw``.
- disputes: ``Custody.challenge`` with the latest fully signed state; ``Custody.close`` once
  the challenge period is over.

The core is four modules; this one holds the transitions (``apply_*``: what a chain event or
the relay's report does to a record) and small helpers on signed states, and re-exports the
other three, so ``from . import lifecycle as L`` reaches all of it:

- :mod:`.records`: the statuses, :class:`ChannelRecord`, :func:`new_record`, :func:`units`;
- :mod:`.replies`: checking what the relay answers (:func:`check_create_reply`,
  :func:`check_resize_reply`, :func:`check_close_reply`, :class:`StateReply`);
- :mod:`.plans`: :class:`Operation`, :data:`STEPS`, the ``plan_*`` functions,
  :func:`failure_status`, :func:`relay_reflects`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from .plans import (
    OPERATION_KINDS,
    STEPS,
    Operation,
    describe_relay_wait,
    failure_status,
    plan_challenge,
    plan_checkpoint,
    plan_close,
    plan_create,
    plan_resize,
    plan_withdraw,
    relay_reflects,
)
from .records import (
    ACTIVE,
    CLOSING,
    DISPUTE,
    FINAL,
    OPENING,
    RESIZING,
    STATUSES,
    ChannelRecord,
    intent_name,
    new_record,
    units,
)
from .replies import StateReply, check_close_reply, check_create_reply, check_resize_reply
from .types import State

__all__ = [
    "ACTIVE",
    "CLOSING",
    "DISPUTE",
    "FINAL",
    "OPENING",
    "OPERATION_KINDS",
    "RESIZING",
    "STATUSES",
    "STEPS",
    "ChannelRecord",
    "Operation",
    "StateReply",
    "allocation_amounts",
    "apply_challenged",
    "apply_closed",
    "apply_relay_status",
    "apply_state",
    "check_close_reply",
    "check_create_reply",
    "check_resize_reply",
    "credited_amount",
    "describe_relay_wait",
    "failure_status",
    "intent_name",
    "latest_signed",
    "new_record",
    "plan_challenge",
    "plan_checkpoint",
    "plan_close",
    "plan_create",
    "plan_resize",
    "plan_withdraw",
    "relay_reflects",
    "same_state",
    "two_party",
    "units",
]

#: the relay's channel statuses (``get_channels``, ``cu``) as ours
_RELAY_STATUS: Final = {
    "open": ACTIVE,
    "resizing": RESIZING,
    "challenged": DISPUTE,
    "closed": FINAL,
}
#: how far along a status is: a transition from the relay never moves a record backwards
_RANK: Final = {OPENING: 0, ACTIVE: 1, RESIZING: 1, CLOSING: 2, DISPUTE: 3, FINAL: 4}


# --- transitions ---------------------------------------------------------------------------


def apply_state(
    record: ChannelRecord, state: State, *, status: str = ACTIVE
) -> ChannelRecord | None:
    """The record once ``state`` (INITIALIZE, RESIZE, checkpointed OPERATE) is on chain;
    None when the record already reflects it (events are applied idempotently: our own
    receipt and the custody watcher both report each event).

    Only a newer version moves the record, except the INITIALIZE of a channel still
    ``opening``; an older event never rewinds a ``resizing``/``closing`` record.
    """
    if record.status == FINAL or state.version < record.version:
        return None
    if state.version == record.version and record.status != OPENING:
        return None
    return replace(record.with_state(state, status=status), challenge_expiry=0)


def apply_challenged(record: ChannelRecord, state: State, expiration: int) -> ChannelRecord | None:
    """The record after a ``Challenged`` event (None if already known)."""
    if record.status == FINAL or (
        record.status == DISPUTE and record.challenge_expiry == expiration
    ):
        return None
    return replace(record.with_state(state, status=DISPUTE), challenge_expiry=expiration)


def apply_closed(record: ChannelRecord, final: State) -> ChannelRecord | None:
    """The record after a ``Closed`` event (None if it already shows that final state).

    A record the relay already reported ``final`` still takes the event's state: the
    relay's ``cu`` may arrive before our own receipt is processed. After a dispute the
    final state is the challenged one, so only the challenge expiry the relay's report left
    behind tells that record from the closed one: the event must still change it, or the
    channel would never be shown with its closing transaction.
    """
    if (
        record.status == FINAL
        and record.version == final.version
        and record.intent == final.intent
        and not record.challenge_expiry
    ):
        return None
    return replace(record.with_state(final, status=FINAL), challenge_expiry=0)


def apply_relay_status(record: ChannelRecord, relay_status: str) -> ChannelRecord | None:
    """Follow the relay's ``cu`` only forwards into ``dispute`` or ``final``.

    The relay reports what it saw on chain; our own receipts and the custody watcher are
    the primary source, so a relay ``open``/``resizing`` never rewinds a newer local status.
    """
    status = _RELAY_STATUS.get(relay_status)
    if status not in (DISPUTE, FINAL) or _RANK[status] <= _RANK[record.status]:
        return None
    return replace(record, status=status)


# --- signed states -------------------------------------------------------------------------


def credited_amount(state: State, wallet: str) -> int:
    """What a closing state pays ``wallet``'s custody ledger."""
    return sum(a.amount for a in state.allocations if a.destination == wallet)


def latest_signed(states: Sequence[State]) -> State | None:
    """The newest state carrying both signatures."""
    signed = [s for s in states if len(s.sigs) == 2]
    return max(signed, key=lambda s: s.version) if signed else None


def two_party(state: State, user_signature: str, server_signature: str) -> State:
    """``state`` with ``sigs = [user, server]`` (participant order)."""
    return state.with_sigs([user_signature, server_signature])


def allocation_amounts(state: State) -> tuple[int, ...]:
    return tuple(a.amount for a in state.allocations)


def same_state(a: State, b: State) -> bool:
    """Byte-identical, signatures included (what ``Custody.challenge`` compares)."""
    return (
        a.intent == b.intent
        and a.version == b.version
        and a.data == b.data
        and a.allocations == b.allocations
        and tuple(s.lower() for s in a.sigs) == tuple(s.lower() for s in b.sigs)
    )
