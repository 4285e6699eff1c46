"""The chain watcher: custody events into the ledger, exactly once across restarts.

It polls ``Created``, ``Resized``, ``Closed`` and ``Challenged`` through the
:class:`~settlement_widgets.channel.custody.CustodyClient` (``eth_getLogs``) and applies the
ClearNode's effects (:meth:`~.service.RelayService.on_created` and friends). The cursor, the
``(block, log index)`` of the last applied event and the last block scanned, is stored in the
same commit batch as the effects, so a node killed mid-way either applied an event and moved
the cursor past it, or did neither.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from ...channel.custody_events import Challenged, Closed, Created, CustodyEvent, Resized
from ...errors import SettlementError
from .service import Note

if TYPE_CHECKING:
    from ...channel.custody import CustodyClient
    from .server import RelayNode

__all__ = ["WATCHED_EVENTS", "ChainWatcher"]

_log = logging.getLogger(__name__)
WATCHED_EVENTS = ("Created", "Resized", "Closed", "Challenged")
_MAX_RANGE = 5_000


class ChainWatcher:
    """Polls one custody contract for the node (``start()`` runs it in the background)."""

    def __init__(self, node: RelayNode, custody: CustodyClient, chain_id: int) -> None:
        self._node = node
        self._custody = custody
        self._chain_id = chain_id
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
        interval = self._node.config.poll_interval
        while True:
            try:
                await self.poll()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the chain may be briefly away: keep polling
                _log.warning("custody poll failed: %s", exc)
            await asyncio.sleep(interval)

    def _cursor(self) -> tuple[int, int]:
        ledger = self._node.ledger
        assert ledger is not None
        text = ledger.meta.get("chain_cursor")
        if not text:
            return (-1, -1)
        block, index = text.split(":")
        return int(block), int(index)

    async def poll(self) -> int:
        """Apply every new event up to the latest block; returns how many were applied."""
        async with self._lock:
            node = self._node
            ledger, committer = node.ledger, node.committer
            assert ledger is not None and committer is not None
            latest = int(await self._custody.wallet.w3.eth.block_number)
            scanned = int(ledger.meta.get("chain_scanned", str(node.config.start_block - 1)))
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
                node.add_notes(seq, notes)
                await committer.wait(seq)
            self.applied += applied
            return applied

    def _apply(self, event: CustodyEvent) -> list[Note]:
        service = self._node.service
        assert service is not None
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
                return service.on_challenged(event.channel_id.lower())
        except SettlementError as exc:  # a malformed event must not stop the node
            _log.warning("ignoring custody event %s at %s: %s", event.name, event.cursor, exc)
        return []
