"""What the channel client knows about one channel: its status and :class:`ChannelRecord`.

The leaf of the pure core (no I/O, no imports from the rest of the channel package): the
channel statuses, the record the store persists after every change, and :func:`units`, the
check every amount passes. :mod:`.lifecycle` moves records between statuses;
:mod:`.replies` and :mod:`.plans` read them. All of it is re-exported by :mod:`.lifecycle`,
which is how the provider imports it (``from . import lifecycle as L``).
"""

from __future__ import annotations

import decimal
from dataclasses import dataclass, replace
from typing import Any, Final

from ....errors import InvalidAmountError, InvalidStateError
from .ids import state_hash as compute_state_hash
from .types import Channel as ChannelDefinition
from .types import State, StateIntent

__all__ = [
    "ACTIVE",
    "CLOSING",
    "DISPUTE",
    "FINAL",
    "OPENING",
    "RESIZING",
    "STATUSES",
    "ChannelRecord",
    "intent_name",
    "new_record",
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
#: the JACK dashboard's ``active`` / ``dispute`` / ``final`` plus the in-flight states between them
STATUSES: Final = (OPENING, ACTIVE, RESIZING, CLOSING, DISPUTE, FINAL)


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
