"""Custody events applied to the store, and the watcher that polls for them
(``_ChainEventsMixin`` of :class:`~.provider.ChannelProvider`).

A custody event (``Created``, ``Resized``, ``Checkpointed``, ``Challenged``, ``Closed``)
changes a stored channel once, whoever sees it first: the receipt of our own transaction or
the background watcher (:meth:`sync` every ``watch_interval`` seconds), which is how a
counterparty's challenge or close is noticed. The block cursor is kept in the store.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from ....errors import SettlementError
from ...models import WatcherStatus
from ..chain.custody_events import Challenged, Checkpointed, Closed, Created, CustodyEvent, Resized
from ..core import lifecycle as L
from ..core.ids import state_hash as compute_state_hash
from ..core.resize import decode_resize_data
from ..core.types import State, StateIntent
from ._base import _log, _ProviderBase

__all__ = ["_ChainEventsMixin"]

_EVENT_STEPS: Final = {
    "Created": "submit_create",
    "Resized": "submit_resize",
    "Challenged": "challenge",
    "Checkpointed": "checkpoint",
    "Closed": "submit_close",
}
_WATCHED: Final = tuple(_EVENT_STEPS)
#: the longest pause between two custody polls after failures (seconds)
_WATCH_BACKOFF_MAX: Final = 30.0


class _ChainEventsMixin(_ProviderBase):
    """Custody events -> stored channel records and emitted events; the custody watcher."""

    def _channel_emits(
        self, record: L.ChannelRecord, before: L.ChannelRecord | None
    ) -> list[tuple[str, Any]]:
        channel = self._public(record)
        emits: list[tuple[str, Any]] = []
        if (before is None or before.status == L.OPENING) and record.status != L.OPENING:
            emits.append(("channel_created", channel))
        if record.status == L.DISPUTE and (before is None or before.status != L.DISPUTE):
            emits.append(("channel_challenged", channel))
        if record.status == L.FINAL and (before is None or before.status != L.FINAL):
            emits.append(("channel_closed", channel))
        emits.append(("channel_updated", channel))
        return emits

    def _apply_chain_event(self, event: CustodyEvent) -> list[tuple[str, Any]]:
        """Apply one custody event to the store (idempotent); what to emit after commit."""
        cid = getattr(event, "channel_id", None)
        if not isinstance(cid, str):
            return []
        cid = cid.lower()
        step = _EVENT_STEPS.get(event.name)
        if step is None:
            return []  # Joined, Opened, Deposited...: no change of the channel's state
        record = self._store.get_channel(cid)
        if record is None or self._store.has_event(cid, event.tx_hash, event.log_index):
            return []  # not ours, or applied already (our receipt and the watcher both see it)
        self._store.add_tx(event.tx_hash, step=step, channel_id=cid)
        self._store.set_tx_status(event.tx_hash, "confirmed", event.block_number)
        updated: L.ChannelRecord | None = None
        settled: State | None = None  # the state this event puts on chain
        label = event.name
        if isinstance(event, Created):
            updated, settled = L.apply_state(record, event.initial), event.initial
        elif isinstance(event, Resized):
            label = f"Resized {list(event.delta_allocations)}"
            pending = self._resize_of(cid, record, event.delta_allocations)
            if pending is not None:
                updated, settled = L.apply_state(record, pending), pending
        elif isinstance(event, Checkpointed):
            updated, settled = L.apply_state(record, event.state), event.state
        elif isinstance(event, Challenged):
            updated = L.apply_challenged(record, event.state, event.expiration)
        elif isinstance(event, Closed):
            updated, settled = L.apply_closed(record, event.final_state), event.final_state
        if updated is None:
            updated = record  # the record shows it already: the row still belongs in history
        if settled is not None:
            self._mark_onchain(cid, settled, event.tx_hash)
        self._store.put_channel(updated)
        self._store.add_history(
            cid,
            label,
            status=updated.status,
            version=updated.version,
            intent=updated.intent.name,
            amount=updated.amount,
            tx_hash=event.tx_hash,
            cursor=event.cursor,
        )
        if updated is record:
            return []
        return self._channel_emits(updated, record)

    def _resize_of(
        self, cid: str, record: L.ChannelRecord, deltas: tuple[int, ...]
    ) -> State | None:
        """The countersigned RESIZE a ``Resized(deltas)`` event put on chain: the oldest one
        newer than ``record`` whose data carries exactly those deltas (a version guess alone
        would pair an old event seen late with the next pending RESIZE)."""
        for stored in self._store.states(cid):
            state = stored.state
            if state.intent != StateIntent.RESIZE or state.version <= record.version:
                continue
            try:
                if decode_resize_data(state.data) == tuple(deltas):
                    return state
            except SettlementError:
                continue
        return None

    def _mark_onchain(self, cid: str, state: State, tx_hash: str) -> None:
        for stored in self._store.states(cid):
            if stored.status == "onchain" and stored.state.version < state.version:
                self._store.set_state_status(
                    cid, stored.state.version, stored.state.intent, "superseded"
                )
        h = compute_state_hash(cid, state)
        existing = self._store.find_state(cid, state.version, state.intent)
        if existing is None:
            self._store.put_state(cid, state, h, status="onchain", tx_hash=tx_hash)
        else:
            self._store.set_state_status(
                cid, state.version, state.intent, "onchain", tx_hash=tx_hash
            )

    def _start_watcher(self) -> None:
        if self._watch_interval is None or self._watcher is not None:
            return
        self._watcher = asyncio.get_running_loop().create_task(self._watch())

    async def _watch(self) -> None:
        """Poll :meth:`sync` every ``watch_interval`` s. A failure is logged at WARNING and
        emitted as ``watcher`` (a missed challenge costs funds, so it must be seen), then
        retried with exponential backoff up to ``_WATCH_BACKOFF_MAX``; the first success
        after failures emits ``watcher`` with ``ok=True``."""
        assert self._watch_interval is not None
        failures = 0
        while True:
            delay = self._watch_interval
            try:
                await self.sync()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                failures += 1
                delay = min(self._watch_interval * 2**failures, _WATCH_BACKOFF_MAX)
                message = f"{type(exc).__name__}: {exc}"
                _log.warning(
                    "custody watcher failed (%d in a row), retrying in %.1f s: %s",
                    failures,
                    delay,
                    message,
                )
                self._emit("watcher", WatcherStatus(False, message, failures, delay))
            else:
                if failures:
                    _log.warning("custody watcher works again after %d failures", failures)
                    self._emit("watcher", WatcherStatus(True))
                failures = 0
            await asyncio.sleep(delay)

    async def sync(self) -> int:
        """Read new custody events of our channels now; returns how many changed a channel.

        The background watcher calls this every ``watch_interval`` seconds; the cursor (last
        block read) is kept in the store.
        """
        if self._sync_lock is None:
            self._sync_lock = asyncio.Lock()
        async with self._sync_lock:
            latest = int(await self._chain(self.wallet.w3.eth.block_number))
            stored = self._store.get_meta("event_block")
            if stored is None:
                self._store.set_meta("event_block", str(latest))
                return 0
            start = int(stored) + 1
            watched = {r.channel_id for r in self._store.list_channels() if r.status != L.FINAL}
            changed = 0
            while start <= latest:
                end = min(latest, start + 4999)
                if watched:
                    events = await self._chain(self.custody.get_events(start, end, names=_WATCHED))
                    for event in events:
                        if getattr(event, "channel_id", "").lower() not in watched:
                            continue
                        with self._store.transaction():
                            emits = self._apply_chain_event(event)
                        if emits:
                            changed += 1
                            self._emit_all(emits)
                self._store.set_meta("event_block", str(end))
                start = end + 1
            return changed
