"""The channel client's pure core: records, reply checks, step plans and transitions.

Nothing here does I/O. The provider (:mod:`.provider`) is the effects runner: it asks this
module what to check and what to do next, does it against the relay, the chain and the store,
and feeds the outcome back. Keeping the decisions pure (as raiden does, style-anchors §2.1)
is what makes recovery possible: a restarted provider reloads an :class:`Operation` from the
store and :attr:`Operation.next_step` says where it stopped.

The lifecycle follows Nitrolite v0.5 (erc7824-nitrolite.md §5): a channel with the broker is
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
"""

from __future__ import annotations

import decimal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from ..addresses import validate_address
from ..erc7824.ids import channel_id as compute_channel_id
from ..erc7824.ids import state_hash as compute_state_hash
from ..erc7824.resize import decode_resize_data
from ..erc7824.signing import recover_state_signer
from ..erc7824.types import Channel as ChannelDefinition
from ..erc7824.types import State, StateIntent
from ..errors import (
    ChainUnavailableError,
    InvalidAmountError,
    InvalidSignatureError,
    InvalidStateError,
    RelayUnavailableError,
    SettlementError,
    SettlementTimeoutError,
    UnavailableError,
)

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
    "failure_status",
    "intent_name",
    "latest_signed",
    "new_record",
    "plan_close",
    "plan_create",
    "plan_resize",
    "plan_withdraw",
    "same_state",
    "two_party",
    "units",
]

# --- statuses ------------------------------------------------------------------------------

OPENING: Final = "opening"
"""INITIALIZE countersigned, ``Custody.create`` not confirmed yet."""
ACTIVE: Final = "active"
RESIZING: Final = "resizing"
"""A RESIZE is signed by the broker; until it is on chain the relay refuses other resizes."""
CLOSING: Final = "closing"
"""A FINALIZE is countersigned; ``Custody.close`` not confirmed yet."""
DISPUTE: Final = "dispute"
FINAL: Final = "final"
#: the spec's ``active`` / ``dispute`` / ``final`` plus the in-flight states between them
STATUSES: Final = (OPENING, ACTIVE, RESIZING, CLOSING, DISPUTE, FINAL)

_RELAY_STATUS: Final = {
    "open": ACTIVE,
    "resizing": RESIZING,
    "challenged": DISPUTE,
    "closed": FINAL,
}
_RANK: Final = {OPENING: 0, ACTIVE: 1, RESIZING: 1, CLOSING: 2, DISPUTE: 3, FINAL: 4}


def intent_name(intent: int | StateIntent) -> str:
    return StateIntent(intent).name


# --- amounts -------------------------------------------------------------------------------


def units(value: Any, field_name: str = "amount", *, allow_zero: bool = False) -> int:
    """An amount in integer smallest units, or :class:`InvalidAmountError` saying why not.

    Floats, decimals, strings and bools are refused: the Python API counts in integers
    (``1_500_000`` is 1.5 of a 6-decimal asset), so a value like ``1.5`` is a unit mistake.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float | decimal.Decimal | str):
            hint = (
                f"{value!r} is not an integer: amounts are integer smallest units "
                "(1_500_000 is 1.5 of a 6-decimal asset)"
            )
        else:
            hint = f"must be an integer number of smallest units, got {type(value).__name__}"
        raise InvalidAmountError(f"{field_name} {hint}")
    if value < 0:
        raise InvalidAmountError(f"{field_name} must not be negative, got {value}")
    if value == 0 and not allow_zero:
        raise InvalidAmountError(f"{field_name} must be positive, got 0")
    if value >= 2**255:
        raise InvalidAmountError(f"{field_name} {value} is too large")
    return value


# --- the channel record --------------------------------------------------------------------


@dataclass(frozen=True)
class ChannelRecord:
    """What the client knows about one channel; persisted in the store after every change.

    ``version``/``intent``/``state_hash``/``amount`` describe the latest state the custody
    accepted (``lastValidState``), or the countersigned INITIALIZE while ``opening``.
    """

    channel_id: str
    chain_id: int
    definition: ChannelDefinition
    token: str
    status: str
    version: int
    intent: StateIntent
    state_hash: str
    amount: int = 0
    challenge_expiry: int = 0

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise InvalidStateError(
                f"unknown channel status {self.status!r}: use one of {', '.join(STATUSES)}"
            )
        object.__setattr__(self, "channel_id", self.channel_id.lower())
        object.__setattr__(self, "intent", StateIntent(self.intent))

    @property
    def wallet(self) -> str:
        return self.definition.participants[0]

    @property
    def broker(self) -> str:
        return self.definition.participants[1]

    @property
    def is_open(self) -> bool:
        """The channel exists on chain and is not in dispute or closed."""
        return self.status in (ACTIVE, RESIZING, CLOSING)

    def with_state(self, state: State, *, status: str | None = None) -> ChannelRecord:
        return replace(
            self,
            version=state.version,
            intent=state.intent,
            state_hash=compute_state_hash(self.channel_id, state),
            amount=state.allocations[0].amount if state.allocations else 0,
            status=status or self.status,
        )


def new_record(
    channel_id: str, chain_id: int, definition: ChannelDefinition, initial: State
) -> ChannelRecord:
    """The record of a channel whose INITIALIZE state was just countersigned."""
    return ChannelRecord(
        channel_id=channel_id,
        chain_id=chain_id,
        definition=definition,
        token=initial.allocations[0].token,
        status=OPENING,
        version=initial.version,
        intent=initial.intent,
        state_hash=compute_state_hash(channel_id, initial),
        amount=initial.allocations[0].amount,
    )


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
    relay's ``cu`` may arrive before our own receipt is processed.
    """
    if record.status == FINAL and record.version == final.version and record.intent == final.intent:
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


# --- checking what the relay answers -------------------------------------------------------


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
    """Check a ``create_channel`` answer before countersigning it (§5.2 step 1).

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


# --- operations: write-ahead plans ---------------------------------------------------------

#: every step the provider knows how to run (and to resume)
STEPS: Final = (
    "rpc_create",
    "submit_create",
    "approve",
    "deposit",
    "rpc_resize",
    "submit_resize",
    "await_relay",
    "rpc_close",
    "submit_close",
    "withdraw",
    "challenge",
    "checkpoint",
)
OPERATION_KINDS: Final = ("create", "resize", "withdraw", "close", "challenge", "checkpoint")
_RUNNING: Final = "running"
_INTERRUPTED: Final = "interrupted"
_FAILED: Final = "failed"
_DONE: Final = "done"


@dataclass(frozen=True)
class Operation:
    """One user operation as a fixed list of steps, persisted before each step runs.

    ``params`` are the inputs (JSON values), ``results`` what finished steps produced (tx
    hashes, versions, amounts). ``status``: ``running`` (a step may be half-done: resume it),
    ``interrupted`` (a service was unavailable: resumable), ``failed`` (refused or
    reverted: not retried automatically), ``done``.
    """

    id: int
    kind: str
    channel_id: str | None
    steps: tuple[str, ...]
    params: Mapping[str, Any] = field(default_factory=dict)
    done: tuple[str, ...] = ()
    results: Mapping[str, Any] = field(default_factory=dict)
    status: str = _RUNNING
    error: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in OPERATION_KINDS:
            raise InvalidStateError(f"unknown operation kind {self.kind!r}")
        unknown = [s for s in self.steps if s not in STEPS]
        if unknown:
            raise InvalidStateError(f"unknown step(s) {unknown}")
        if tuple(self.steps[: len(self.done)]) != tuple(self.done):
            raise InvalidStateError(
                f"operation {self.id}: done steps {list(self.done)} are not a prefix of the "
                f"plan {list(self.steps)}"
            )

    @property
    def next_step(self) -> str | None:
        """The step after the ``done`` prefix (None when the operation is complete).

        Progress is positional: a plan may run a step twice (``await_relay`` after the
        create and after the deposit).
        """
        if self.status in (_DONE, _FAILED) or len(self.done) >= len(self.steps):
            return None
        return self.steps[len(self.done)]

    @property
    def finished(self) -> bool:
        return self.status in (_DONE, _FAILED)

    @property
    def resumable(self) -> bool:
        return self.status in (_RUNNING, _INTERRUPTED)

    def advance(self, step: str, results: Mapping[str, Any] | None = None) -> Operation:
        """The operation with ``step`` done and its ``results`` merged."""
        if step != self.next_step:
            raise InvalidStateError(
                f"operation {self.id} ({self.kind}) expects step {self.next_step!r}, not {step!r}"
            )
        merged = {**self.results, **(results or {})}
        channel = self.channel_id or merged.get("channel_id")
        done = (*self.done, step)
        finished = len(done) == len(self.steps)
        return replace(
            self,
            channel_id=channel,
            done=done,
            results=merged,
            status=_DONE if finished else _RUNNING,
            error=None,
        )

    def fail(self, status: str, error: str) -> Operation:
        return replace(self, status=status, error=error)

    def resume(self) -> Operation:
        return replace(self, status=_RUNNING, error=None)


def failure_status(exc: BaseException) -> str:
    """``interrupted`` when retrying later can work (a service away, a timeout, a
    cancelled task), else ``failed`` (a refusal, a revert, a bad state)."""
    if isinstance(
        exc,
        UnavailableError
        | RelayUnavailableError
        | ChainUnavailableError
        | SettlementTimeoutError
        | TimeoutError
        | ConnectionError,
    ):
        return _INTERRUPTED
    if not isinstance(exc, Exception):  # CancelledError, KeyboardInterrupt, SystemExit
        return _INTERRUPTED
    return _FAILED


_DEPOSIT_STEPS: Final = ("approve", "deposit", "rpc_resize", "submit_resize", "await_relay")
_RESIZE_OUT_STEPS: Final = ("rpc_resize", "submit_resize", "await_relay")


def plan_create(initial_amount: int) -> tuple[tuple[str, ...], dict[str, Any]]:
    """Steps and params of ``create_channel``; a positive amount adds the deposit steps."""
    # await_relay: the call returns only once the relay has indexed the channel, so the
    # next operation (transfer, close) finds it there
    steps: tuple[str, ...] = ("rpc_create", "submit_create", "await_relay")
    params: dict[str, Any] = {"initial_amount": str(initial_amount)}
    if initial_amount:
        steps += _DEPOSIT_STEPS
        params.update(_resize_params(initial_amount))
    return steps, params


def _resize_params(amount: int) -> dict[str, Any]:
    # the v0.5 convention: resize_amount = -allocate_amount keeps the channel amount at 0
    return {
        "amount": str(abs(amount)),
        "resize_amount": str(amount),
        "allocate_amount": str(-amount),
    }


def plan_resize(amount: int) -> tuple[tuple[str, ...], dict[str, Any]]:
    """``+X`` moves X from the wallet into the off-chain balance; ``-X`` moves X of the
    off-chain balance to the wallet's custody ledger (see :func:`plan_withdraw`)."""
    if isinstance(amount, bool) or not isinstance(amount, int) or amount == 0:
        raise InvalidAmountError(f"resize amount must be a non-zero integer, got {amount!r}")
    steps = _DEPOSIT_STEPS if amount > 0 else _RESIZE_OUT_STEPS
    return steps, _resize_params(amount)


def plan_withdraw(
    amount: int | None, *, through_channel: bool
) -> tuple[tuple[str, ...], dict[str, Any]]:
    """Withdraw from the custody ledger; ``through_channel`` first moves ``amount`` of the
    off-chain balance there (a resize by ``-amount``)."""
    if through_channel:
        if amount is None:
            raise InvalidAmountError("withdrawing through a channel needs an amount")
        steps, params = plan_resize(-amount)
        return (*steps, "withdraw"), {**params, "withdraw_amount": str(amount)}
    params = {} if amount is None else {"withdraw_amount": str(amount)}
    return ("withdraw",), params


def plan_close(
    *, settle_amount: int, withdraw: bool, in_dispute: bool
) -> tuple[tuple[str, ...], dict[str, Any]]:
    """Steps of ``close_channel``.

    Cooperative: move ``settle_amount`` of the off-chain balance into the channel (the
    broker funds it: ``allocate_amount``), so the FINALIZE pays it out; then close. After an
    expired challenge the relay co-signs nothing: ``Custody.close`` takes any state and the
    funds follow the challenged one.
    """
    params: dict[str, Any] = {"withdraw": withdraw, "settle_amount": str(settle_amount)}
    steps: tuple[str, ...]
    # await_relay after the close: the relay has applied the Closed event (its ledger paid
    # the channel out) before close_channel returns, so balances() is already final
    if in_dispute:
        steps = ("submit_close", "await_relay")
    else:
        steps = ("rpc_close", "submit_close", "await_relay")
        if settle_amount:
            steps = ("rpc_resize", "submit_resize", "await_relay", *steps)
            params.update({"resize_amount": "0", "allocate_amount": str(settle_amount)})
    if withdraw:
        steps += ("withdraw",)
    return steps, params


def plan_challenge() -> tuple[tuple[str, ...], dict[str, Any]]:
    """Steps of ``challenge``: the transaction, then the relay's view of the dispute."""
    return ("challenge", "await_relay"), {}


def plan_checkpoint() -> tuple[tuple[str, ...], dict[str, Any]]:
    """Steps of ``checkpoint``: the transaction, then the relay's view of the new version."""
    return ("checkpoint", "await_relay"), {}


#: the relay's channel status that reflects each of our statuses once the chain has it
_RELAY_REFLECTS: Final = {FINAL: "closed", DISPUTE: "challenged"}


def relay_reflects(record: ChannelRecord, info: Mapping[str, Any]) -> bool:
    """Whether the relay's channel ``info`` (a ``get_channels``/``cu`` entry) shows what
    ``record`` shows: closed when final, challenged in dispute, else open at the record's
    version or newer. An operation that changed the chain waits for this before it returns,
    so the caller's next step (a transfer, ``balances()``) sees the relay's updated ledger.
    """
    status = info.get("status")
    wanted = _RELAY_REFLECTS.get(record.status)
    if wanted is not None:
        return status == wanted
    try:
        version = int(info.get("version", -1))
    except (TypeError, ValueError):
        return False
    return status == "open" and version >= record.version


def describe_relay_wait(record: ChannelRecord) -> str:
    """What :func:`relay_reflects` waits for, in words (for a timeout's message)."""
    wanted = _RELAY_REFLECTS.get(record.status)
    if wanted is not None:
        return f"reported channel {record.channel_id} {wanted}"
    return f"reported channel {record.channel_id} open at version {record.version}"


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
