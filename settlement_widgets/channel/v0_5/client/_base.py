"""``_ProviderBase``: what each part of :class:`~.provider.ChannelProvider` may rely on.

``ChannelProvider`` (:mod:`.provider`) is composed of mixins, one module per concern:
:mod:`.connection` (relay and chain connection, login, close), :mod:`.notifications` (the
relay's pushed updates, balances), :mod:`.transfers` (off-chain transfers, both ways),
:mod:`.chain_events` (custody events and the watcher), :mod:`.transactions` (sending and
following transactions, proofs), :mod:`.operations` (the write-ahead runner), :mod:`.steps`
(one method per operation step) and :mod:`.reading` (channels and their history).

Every mixin derives from :class:`_ProviderBase`, which declares for mypy the attributes
``ChannelProvider.__init__`` sets and the methods one mixin calls on another (the
implementation's module is named above each group). The declarations exist only for the
type checker: at run time the class is empty, so nothing here can shadow an implementation.
The helpers more than one mixin uses live here too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from ....errors import InvalidStateError, SettlementValueError
from ..core.ids import as_channel_id_bytes

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Iterable, Mapping
    from typing import Self

    from ....networks import Explorer
    from ....proofs import ProofWriter
    from ....signer import Signer
    from ...models import Channel
    from ..chain.custody import CustodyClient, CustodyTx
    from ..chain.custody_events import CustodyEvent
    from ..core import lifecycle as L
    from ..core.types import State
    from .config import ChannelConfig
    from .relay_client import RelayClient
    from .store import ChannelStore
    from .write_group import WriteGroup

__all__ = ["_ProviderBase"]


@dataclass(frozen=True)
class _Asset:
    """The channel asset as the relay describes it."""

    symbol: str
    token: str
    decimals: int


@dataclass
class _StepResult:
    """What a step produced: results to merge, store writes to apply atomically with the
    step's completion, and (event, payload) pairs to emit after the commit."""

    results: dict[str, Any] = field(default_factory=dict)
    write: Callable[[], list[tuple[str, Any]]] | None = None
    proof: tuple[str, CustodyTx] | None = None


#: the provider's one logger (its records keep the name they had before the provider was split)
_log = logging.getLogger("settlement_widgets.channel.v0_5.client.provider")

#: store step name -> the name ``Channel.tx_hashes`` and the proof log use
_TX_NAMES: Final = {
    "submit_create": "create",
    "approve": "approve",
    "deposit": "deposit",
    "submit_resize": "resize",
    "submit_close": "close",
    "withdraw": "withdraw",
    "challenge": "challenge",
    "checkpoint": "checkpoint",
}


def _channel_key(channel_id: Any) -> str:
    """A channel id as lowercase 0x-hex (a malformed id is bad input)."""
    if not isinstance(channel_id, str | bytes):
        raise SettlementValueError(
            f"channel_id must be 0x followed by 64 hex digits, got {type(channel_id).__name__}"
        )
    try:
        return "0x" + as_channel_id_bytes(channel_id).hex()
    except InvalidStateError as exc:
        raise SettlementValueError(str(exc)) from None


class _ProviderBase:
    """The attributes and cross-mixin methods of :class:`~.provider.ChannelProvider`, declared
    for the type checker (see the module docstring); set and implemented elsewhere."""

    # set by ChannelProvider.__init__
    config: ChannelConfig
    wallet: Signer
    custody: CustodyClient
    _own_store: bool
    _store: ChannelStore
    #: the transfer-history writes of one loop turn share a COMMIT (see :mod:`.write_group`)
    _writes: WriteGroup
    #: transfers between their checks and their return (1: sequential use)
    _transfers_in_flight: int
    _relay: RelayClient | None
    _allowance: int | None
    _watch_interval: float | None
    _auto_recover: bool
    _explorer: Explorer | None
    _asset: _Asset | None
    _decimals: dict[str, int]
    _ready: bool
    _ready_lock: asyncio.Lock | None
    _recovering: bool
    _recovered_once: bool
    _chain_checked: bool
    _closed: bool
    _listeners: dict[str, list[Callable[..., Any]]]
    _channel_locks: dict[str, asyncio.Lock]
    _relay_channels: dict[str, dict[str, Any]]
    _relay_changed: asyncio.Event | None
    _balances: dict[str, int] | None
    _watcher: asyncio.Task[None] | None
    _sync_lock: asyncio.Lock | None
    _tasks: set[asyncio.Task[Any]]
    _proof_queue: list[tuple[str, str, dict[str, Any]]]
    _proof_writer: asyncio.Task[None] | None
    #: the proof log's connection, kept open across bursts (closed by ``close()``)
    _proof_log: ProofWriter
    _unsubscribe: list[Callable[[], None]]

    if TYPE_CHECKING:
        # provider.py
        @property
        def asset(self) -> str: ...
        def _amount(self, units: int) -> str: ...
        async def balances(self) -> dict[str, int]: ...
        def _emit(self, event: str, payload: Any) -> None: ...
        def _emit_all(self, emits: Iterable[tuple[str, Any]]) -> None: ...

        # connection.py
        async def connect(self) -> Self: ...
        def _require_asset(self) -> _Asset: ...
        def _require_relay(self) -> RelayClient: ...
        async def _ensure_chain(self) -> None: ...
        async def _chain(self, awaitable: Any) -> Any: ...

        # notifications.py
        def _on_notification(self, frame: Any) -> None: ...
        def _parse_amount(self, text: str, asset: str) -> int: ...
        async def _wait_relay(
            self, channel_id: str, predicate: Callable[[Mapping[str, Any]], bool], what: str
        ) -> Mapping[str, Any]: ...

        # transfers.py
        def _on_relay_tx(self, tx: Mapping[str, Any]) -> None: ...

        # chain_events.py
        def _channel_emits(
            self, record: L.ChannelRecord, before: L.ChannelRecord | None
        ) -> list[tuple[str, Any]]: ...
        def _apply_chain_event(self, event: CustodyEvent) -> list[tuple[str, Any]]: ...
        def _start_watcher(self) -> None: ...

        # transactions.py
        def _explorer_url(self, tx_hash: str) -> str | None: ...
        async def _receipt(self, tx_hash: str) -> Any: ...
        async def _send_tx(
            self, op: L.Operation, step: str, call: Any, channel_id: str | None
        ) -> CustodyTx: ...
        async def _settled(
            self, tx_hash: str, receipt: Any, channel_id: str | None
        ) -> CustodyTx: ...
        async def _tx_of_event(self, channel_id: str, name: str) -> CustodyTx: ...
        def _proof_later(self, step: str, type_: str, *, data: Mapping[str, Any]) -> None: ...
        async def flush_proofs(self) -> None: ...
        def _proof(
            self,
            step: str,
            type_: str,
            *,
            tx_hash: str | None = None,
            data: Mapping[str, Any] | None = None,
        ) -> None: ...

        # operations.py
        def _record(self, channel_id: str) -> L.ChannelRecord: ...
        @staticmethod
        def _op_channel(op: L.Operation) -> str: ...
        def _receipt_write(
            self, tx: CustodyTx, step: str, extra: Callable[[], None] | None = None
        ) -> _StepResult: ...
        async def _countersign(self, channel_id: str, checked: Any) -> State: ...
        def _put_signed(
            self, channel_id: str, signed: State, server_signature: str, op: L.Operation
        ) -> None: ...
        def _history_write(
            self, channel_id: str | None, event: str, amount: int, tx: CustodyTx, log_name: str
        ) -> Callable[[], list[tuple[str, Any]]]: ...
        async def _recover(self, *, raise_errors: bool) -> list[L.Operation]: ...

        # steps.py (run by operations.py's _drive)
        async def _step_rpc_create(self, op: L.Operation) -> _StepResult: ...
        async def _step_submit_create(self, op: L.Operation) -> _StepResult: ...
        async def _step_await_relay(self, op: L.Operation) -> _StepResult: ...
        async def _step_approve(self, op: L.Operation) -> _StepResult: ...
        async def _step_deposit(self, op: L.Operation) -> _StepResult: ...
        async def _step_rpc_resize(self, op: L.Operation) -> _StepResult: ...
        async def _step_submit_resize(self, op: L.Operation) -> _StepResult: ...
        async def _step_rpc_close(self, op: L.Operation) -> _StepResult: ...
        async def _step_submit_close(self, op: L.Operation) -> _StepResult: ...
        async def _step_withdraw(self, op: L.Operation) -> _StepResult: ...
        async def _step_challenge(self, op: L.Operation) -> _StepResult: ...
        async def _step_checkpoint(self, op: L.Operation) -> _StepResult: ...

        # reading.py
        def _public(self, record: L.ChannelRecord) -> Channel: ...
