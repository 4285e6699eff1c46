"""What the channel provider returns: :class:`Channel`, :class:`Transfer`, :class:`Tx`, and
the :class:`StepEvent` it emits while an operation runs. Plain frozen values, no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .v0_5.chain.custody_events import Closed, CustodyEvent

__all__ = ["Channel", "StepEvent", "Transfer", "Tx", "WatcherStatus"]


@dataclass(frozen=True)
class Channel:
    """A channel as the provider knows it (what ``ChannelStatusPanel`` shows).

    ``status`` is ``"active"``, ``"dispute"`` or ``"final"`` (the JACK dashboard's values), or
    one of the in-flight ``"opening"``, ``"resizing"``, ``"closing"``. ``version``/``intent``/
    ``state_hash`` describe the latest state the custody accepted. ``tx_hashes`` maps a step
    (``create``, ``deposit``, ``resize``, ``close``, ``withdraw``, ``challenge``...) to its
    latest transaction. ``amount`` is what the channel itself holds (participant 0's
    allocation); in v0.5 funds live in the relay's unified balance (:meth:`balances`).
    """

    id: str
    status: str
    version: int
    intent: str
    state_hash: str
    adjudicator: str
    challenge_period: int
    nonce: int
    tx_hashes: dict[str, str]
    participants: tuple[str, str]
    token: str
    amount: int
    chain_id: int
    asset: str | None = None
    challenge_expiry: int | None = None
    proofs_count: int = 0
    created_at: str | None = None
    updated_at: str | None = None

    @property
    def settlement_tx(self) -> str | None:
        """The closing transaction, once there is one."""
        return self.tx_hashes.get("close")


@dataclass(frozen=True)
class Transfer:
    """An off-chain transfer through the relay's ledger: instant, no gas."""

    id: int
    channel_id: str | None
    amount: int
    asset: str
    sender: str
    recipient: str
    created_at: str
    direction: str = "out"
    gas_fee: int = 0


@dataclass(frozen=True)
class Tx:
    """A mined transaction of the channel lifecycle.

    ``explorer_url`` is ``<explorerBase>/tx/<hash>``; ``events`` the decoded custody events;
    ``receipt`` the node's receipt; ``withdrawal`` the follow-up ``Custody.withdraw`` of a
    ``close_channel`` (None when nothing was withdrawn).
    """

    hash: str
    explorer_url: str | None
    step: str
    channel_id: str | None
    block_number: int
    gas_used: int
    status: int
    events: tuple[CustodyEvent, ...] = ()
    receipt: Mapping[str, Any] = field(default_factory=dict, repr=False)
    withdrawal: Tx | None = None

    def event(self, name: str) -> CustodyEvent | None:
        return next((e for e in self.events if e.name == name), None)

    @property
    def closed(self) -> Closed | None:
        """The decoded ``Closed`` event (its ``final_state``), for a closing transaction."""
        event = self.event("Closed")
        return event if isinstance(event, Closed) else None


@dataclass(frozen=True)
class StepEvent:
    """Emitted as ``step`` before (``phase="start"``) and after (``"done"``, ``"failed"``,
    ``"interrupted"``) each step of an operation."""

    op_id: int
    kind: str
    channel_id: str | None
    step: str
    phase: str
    error: str | None = None


@dataclass(frozen=True)
class WatcherStatus:
    """Emitted as ``watcher`` when the provider's chain watcher fails (``ok=False``: the
    error, how many polls in a row failed, when it retries) and when it works again
    (``ok=True``). A dead watcher would miss a counterparty's challenge, so it is never
    silent: it also logs at WARNING, and a bound ``ChannelStatusPanel`` shows it."""

    ok: bool
    error: str | None = None
    failures: int = 0
    retry_in: float | None = None
