"""The chain watcher: custody events into the ledger, exactly once across restarts.

It polls every custody event that changes what the relay records about a channel
(:data:`WATCHED_EVENTS`: ``Created``, ``Challenged``, ``Checkpointed``, ``Resized``, ``Closed``)
through the :class:`~settlement_widgets.channel.v0_5.chain.custody.CustodyClient` (``eth_getLogs``)
and
applies the ClearNode's effects (:meth:`~.service.RelayService.on_created` and friends). The
others are left out on purpose (:data:`UNWATCHED_EVENTS`): ``Joined``/``Opened`` only move a
channel the broker co-signed from INITIAL to ACTIVE, which the relay already records as ``open``
at ``Created``, and ``Deposited``/``Withdrawn`` touch custody accounts, not channels.

The cursor, the ``(block, log index)`` of the last applied event and the last block scanned,
is stored in the same commit batch as the effects, so a node killed mid-way either applied an
event and moved the cursor past it, or did neither.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, TypeAlias

from ....errors import SettlementError
from ...node_base.committer import GroupCommitter
from ..chain.custody_events import Challenged, Checkpointed, Closed, Created, CustodyEvent, Resized
from .ledger import Ledger
from .service import Note, RelayService

if TYPE_CHECKING:
    from ..chain.custody import CustodyClient

#: queues notifications to go out once a commit batch is durable (``RelayNode.add_notes``)
AddNotes: TypeAlias = Callable[[int, list[Note]], None]

__all__ = ["UNWATCHED_EVENTS", "WATCHED_EVENTS", "AddNotes", "ChainWatcher"]

_log = logging.getLogger(__name__)
#: the custody events the relay applies (one ``on_*`` effect each)
WATCHED_EVENTS: Final = ("Created", "Challenged", "Checkpointed", "Resized", "Closed")
#: the custody events that change nothing the relay records (see the module docstring); with
#: :data:`WATCHED_EVENTS` they cover every event the custody emits
UNWATCHED_EVENTS: Final = ("Joined", "Opened", "Deposited", "Withdrawn")
_MAX_RANGE = 5_000


class ChainWatcher:
    """Polls one custody contract for the node (``start()`` runs it in the background).

    It is handed the node's parts rather than the node itself, so it depends on what it uses
    (the ledger holding the cursor, the committer making each batch durable, the service
    applying the effects, ``add_notes`` queueing the notifications) and the server module
    can import it without the watcher importing the server back.
    """

    def __init__(
        self,
        custody: CustodyClient,
        chain_id: int,
        *,
        ledger: Ledger,
        committer: GroupCommitter,
        service: RelayService,
        add_notes: AddNotes,
        poll_interval: float,
        start_block: int = 0,
    ) -> None:
        self._custody = custody
        self._chain_id = chain_id
        self._ledger = ledger
        self._committer = committer
        self._service = service
        self._add_notes = add_notes
        self._poll_interval = poll_interval
        self._start_block = start_block
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self.applied = 0

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    async def _run(self) -> None:
        interval = self._poll_interval
        while True:
            try:
                await self.poll()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the chain may be briefly away: keep polling
                _log.warning("custody poll failed: %s", exc)
            await asyncio.sleep(interval)

    def _cursor(self) -> tuple[int, int]:
        text = self._ledger.meta.get("chain_cursor")
        if not text:
            return (-1, -1)
        block, index = text.split(":")
        return int(block), int(index)

    async def poll(self) -> int:
        """Apply every new event up to the latest block; returns how many were applied."""
        async with self._lock:
            ledger, committer = self._ledger, self._committer
            latest = int(await self._custody.wallet.w3.eth.block_number)
            scanned = int(ledger.meta.get("chain_scanned", str(self._start_block - 1)))
            applied = 0
            while scanned < latest:
                upper = min(latest, scanned + _MAX_RANGE)
                events = await self._custody.get_events(scanned + 1, upper, names=WATCHED_EVENTS)
                # from here to kick() nothing awaits: the effects and the cursor are one batch
                cursor = self._cursor()
                notes: list[Note] = []
                for event in events:
                    if event.cursor <= cursor:
                        continue
                    notes += self._apply(event)
                    cursor = event.cursor
                    ledger.set_meta("chain_cursor", f"{cursor[0]}:{cursor[1]}")
                    applied += 1
                ledger.set_meta("chain_scanned", str(upper))
                scanned = upper
                seq = committer.kick()
                self._add_notes(seq, notes)
                await committer.wait(seq)
            self.applied += applied
            return applied

    def _apply(self, event: CustodyEvent) -> list[Note]:
        service = self._service
        try:
            if isinstance(event, Created):
                return service.on_created(
                    event.channel_id.lower(),
                    event.wallet,
                    event.channel,
                    event.initial,
                    self._chain_id,
                )
            if isinstance(event, Resized):
                return service.on_resized(event.channel_id.lower(), event.delta_allocations)
            if isinstance(event, Closed):
                return service.on_closed(event.channel_id.lower(), event.final_state)
            if isinstance(event, Challenged):
                return service.on_challenged(event.channel_id.lower(), event.state)
            if isinstance(event, Checkpointed):
                return service.on_checkpointed(event.channel_id.lower(), event.state)
        except SettlementError as exc:  # a malformed event must not stop the node
            _log.warning("ignoring custody event %s at %s: %s", event.name, event.cursor, exc)
        return []
