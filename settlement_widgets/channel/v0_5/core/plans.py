"""Operations as write-ahead step plans, and when the relay has caught up with them.

A user operation (create, resize, withdraw, close, challenge, checkpoint) is a fixed list of
steps from :data:`STEPS`, chosen up front by a ``plan_*`` function and stored as an
:class:`Operation` before its first step runs. The provider runs the steps and stores the
operation after each; a restarted provider reloads it and :attr:`Operation.next_step` says
where it stopped. :func:`failure_status` decides whether a failed step can be resumed
(``interrupted``) or not (``failed``). :func:`relay_reflects` is what the ``await_relay``
step waits for.

Pure (no I/O); re-exported by :mod:`.lifecycle`. (The provider's step *runners* are in
:mod:`.operations` and :mod:`.steps`; this module only decides.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

from ....errors import (
    ChainUnavailableError,
    InvalidAmountError,
    InvalidStateError,
    RelayUnavailableError,
    SettlementTimeoutError,
    UnavailableError,
)
from .records import DISPUTE, FINAL, ChannelRecord

__all__ = [
    "OPERATION_KINDS",
    "STEPS",
    "Operation",
    "describe_relay_wait",
    "failure_status",
    "plan_challenge",
    "plan_checkpoint",
    "plan_close",
    "plan_create",
    "plan_resize",
    "plan_withdraw",
    "relay_reflects",
]


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
