"""Group commit: nothing the ledger changed is acknowledged before its COMMIT.

Shared by both versions' nodes (the v0.5 relay and the v1 Nitronode). The event loop applies
requests to the node's in-memory ledger (a :class:`BatchSource`) and calls
:meth:`GroupCommitter.kick`, which returns the sequence number of the batch that will make
those changes durable. Frames that depend on them are parked with :meth:`after` until that
batch has committed; then they are released in sequence order, so a connection sees its
replies in the order it sent the requests, and notifications after the replies they follow.

Two ways to run the COMMIT, for either durability:

- ``threaded=False`` (the relay's default): the batch is written in the loop itself the next
  time it is idle, i.e. after every request already received has been handled. While the
  COMMIT (and, under ``synchronous=FULL``, its fsync) blocks the loop, what arrives waits in
  the socket and is read as one burst afterwards: it becomes the next batch, so there is
  still one fsync per batch, not per transfer, and no thread hand-off at all. On this
  machine (fsync ~0.1 ms) that was faster sequentially and pipelined than the thread.
- ``threaded=True`` (``RelayConfig.commit_thread``): a writer thread owns the connection.
  While it commits batch ``n`` (an fsync, which releases the GIL), the loop keeps verifying
  signatures and everything that arrives lands in batch ``n + 1``. Each batch costs a queue
  hand-off and a wake-up of the loop; worth it when an fsync takes milliseconds.

A failed COMMIT is fatal (fail-stop): nothing after it is released, and :attr:`failure`
(and ``on_failure``) tell the node to stop.

WAL checkpoints run in a background thread (:class:`_Checkpointer`), not inside a COMMIT:
SQLite's automatic checkpoint copies the WAL into the database and fsyncs it in whichever
COMMIT crosses 1000 pages, which stalled one acknowledgement in ~70 for 10+ ms on this disk.
The writer keeps a far larger automatic threshold only as a backstop.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import sqlite3
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from ...errors import UnavailableError
from .sqlite import connect

__all__ = ["BatchSource", "GroupCommitter"]


class BatchSource(Protocol):
    """What the committer needs of a ledger: where it lives and its pending rows.

    The v0.5 relay's :class:`~..v0_5.node.ledger.Ledger` and the v1 Nitronode's ledger fit, so the
    group-commit discipline (no reply before its COMMIT) is written once. A batch needs a
    ``seq`` and a ``txs`` list (counted for :attr:`GroupCommitter.largest_batch`).
    """

    @property
    def path(self) -> Path: ...

    @property
    def synchronous(self) -> str: ...

    @property
    def dirty(self) -> bool: ...

    def take_batch(self) -> Any: ...


_log = logging.getLogger(__name__)
_STOP: Any = object()
#: the writer checkpoints by itself only if the background thread falls this far behind
_BACKSTOP_PAGES = 20_000


def _writer_connection(ledger: BatchSource) -> Any:
    conn = connect(ledger.path, synchronous=ledger.synchronous)
    conn.execute(f"PRAGMA wal_autocheckpoint={_BACKSTOP_PAGES}")
    return conn


class _Checkpointer:
    """PASSIVE WAL checkpoints on its own connection and thread, a few times a second while
    commits happen. A passive checkpoint never blocks the writer (SQLite lets a writer append
    while frames are copied), and the fsync it does releases the GIL."""

    INTERVAL = 0.2

    def __init__(self, ledger: BatchSource) -> None:
        self._ledger = ledger
        self._wake = threading.Event()
        self._stop = False
        self.pending = False
        self.checkpoints = 0
        #: set after every checkpoint (tests wait on it)
        self.checkpointed = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"relay-checkpoint-{ledger.path.name}", daemon=True
        )
        self._thread.start()

    def _run(self) -> None:
        conn = connect(self._ledger.path, synchronous=self._ledger.synchronous)
        try:
            while not self._stop:
                self._wake.wait(self.INTERVAL)
                self._wake.clear()
                if self.pending and not self._stop:
                    self.pending = False
                    try:
                        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                        self.checkpoints += 1
                        self.checkpointed.set()
                    except Exception as exc:  # a busy or failed checkpoint is retried later
                        _log.debug("background WAL checkpoint failed: %s", exc)
                        self.pending = True
        finally:
            conn.close()

    def poke(self) -> None:
        """Checkpoint now rather than at the next interval."""
        self.pending = True
        self._wake.set()

    def stop(self) -> None:
        self._stop = True
        self._wake.set()
        self._thread.join(10)


class GroupCommitter:
    """Hands ledger batches to a writer thread and releases callbacks after their COMMIT."""

    def __init__(
        self,
        ledger: BatchSource,
        *,
        threaded: bool = True,
        write: Callable[[sqlite3.Connection, Any], None],
    ) -> None:
        self._ledger = ledger
        self._threaded = threaded
        #: applies one batch in one transaction (each version's ledger has its ``write_batch``)
        self._write = write
        self._conn: Any = None
        self._scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        #: last batch handed to the writer / last batch committed
        self._submitted = 0
        self._committed = 0
        self._inflight = False
        #: (seq, callback, args) waiting for their batch, in sequence order
        self._parked: deque[tuple[int, Callable[..., Any], tuple[Any, ...]]] = deque()
        self.failure: BaseException | None = None
        self.on_failure: Callable[[BaseException], None] | None = None
        #: called with the seq after every callback of a committed batch was released
        self.on_released: Callable[[int], None] | None = None
        self.batches = 0
        self.largest_batch = 0
        self._checkpointer: _Checkpointer | None = None
        #: inline mode only: seconds to hold the next COMMIT for more changes to join it (0:
        #: commit now); asked again when the hold ends. ``None`` (the default): never hold.
        #: A node sets it to group a pipelining client's states into one fsync
        #: (:class:`~..v1.node.server.NitronodeNode`); :meth:`flush` never waits for it.
        self.hold: Callable[[], float] | None = None
        self._held: asyncio.TimerHandle | None = None
        self._urgent = False

    @property
    def checkpointer(self) -> _Checkpointer | None:
        """The background WAL checkpointer (``None`` before :meth:`start`)."""
        return self._checkpointer

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._checkpointer = _Checkpointer(self._ledger)
        if not self._threaded:
            self._conn = _writer_connection(self._ledger)
            return
        self._thread = threading.Thread(
            target=self._writer, name=f"relay-writer-{self._ledger.path.name}", daemon=True
        )
        self._thread.start()

    async def aclose(self) -> None:
        """Commit what is pending, then stop the writer and checkpoint threads."""
        try:
            await self._close_writer()
        finally:
            if self._checkpointer is not None:
                checkpointer, self._checkpointer = self._checkpointer, None
                await asyncio.to_thread(checkpointer.stop)

    async def _close_writer(self) -> None:
        if self._conn is not None:
            if self.failure is None:
                await self.flush()  # cuts a hold short
            if self._held is not None:  # after a failure: nothing will commit any more
                self._held.cancel()
                self._held = None
            self._conn.close()
            self._conn = None
            return
        if self._thread is None:
            return
        if self.failure is None:
            await self.flush()
        self._inbox.put(_STOP)
        await asyncio.to_thread(self._thread.join, 10)
        self._thread = None

    # --- the loop side ------------------------------------------------------------------------

    @property
    def committed(self) -> int:
        return self._committed

    def kick(self) -> int:
        """Start committing what the ledger changed; the seq that makes it durable.

        With nothing changed it is the last submitted batch: a reply to a read still waits
        for writes it may have observed.
        """
        if self.failure is not None:
            raise UnavailableError(f"the relay ledger cannot commit: {self.failure}")
        if not self._ledger.dirty:
            return self._submitted
        if not self._threaded:
            # commit when the loop is next idle: everything handled until then joins the batch
            if not self._scheduled:
                self._scheduled = True
                assert self._loop is not None
                self._loop.call_soon(self._commit_inline)
            return self._submitted + 1
        if self._inflight:
            return self._submitted + 1
        self._submit()
        return self._submitted

    def after(self, seq: int, callback: Callable[..., Any], *args: Any) -> None:
        """Call ``callback(*args)`` once batch ``seq`` has committed (now if it has)."""
        if seq <= self._committed and not self._parked:
            callback(*args)
        else:
            self._parked.append((seq, callback, args))

    async def wait(self, seq: int) -> None:
        """Return once batch ``seq`` has committed (raise if the ledger failed)."""
        if self.failure is not None:
            raise UnavailableError(f"the relay ledger cannot commit: {self.failure}")
        if seq <= self._committed and not self._parked:
            return
        assert self._loop is not None
        future: asyncio.Future[None] = self._loop.create_future()
        self.after(seq, _resolve, future)
        await future

    async def flush(self) -> None:
        """Commit everything changed so far (now: a :attr:`hold` is cut short)."""
        seq = self.kick()
        if self._scheduled:
            self._urgent = True
            if self._held is not None:  # the loop is waiting out a hold: commit next turn
                self._held.cancel()
                self._held = None
                assert self._loop is not None
                self._loop.call_soon(self._commit_inline)
        await self.wait(seq)

    def _commit_inline(self) -> None:
        self._held = None
        if self.hold is not None and not self._urgent and self.failure is None:
            wait = self.hold()
            if wait > 0:  # still scheduled: kick() adds to this batch meanwhile
                assert self._loop is not None
                self._held = self._loop.call_later(wait, self._commit_inline)
                return
        self._urgent = False
        self._scheduled = False
        batch = self._ledger.take_batch()
        if batch is None or self.failure is not None:
            return
        self._submitted = batch.seq
        self.batches += 1
        self.largest_batch = max(self.largest_batch, len(batch.txs))
        error: BaseException | None = None
        try:
            self._write(self._conn, batch)
        except Exception as exc:  # fail-stop, reported below
            error = exc
        if self._checkpointer is not None:
            self._checkpointer.pending = True
        self._committed_cb(batch.seq, error)

    def _submit(self) -> None:
        batch = self._ledger.take_batch()
        if batch is None:  # pragma: no cover - guarded by the callers
            return
        self._submitted = batch.seq
        self._inflight = True
        self.batches += 1
        self.largest_batch = max(self.largest_batch, len(batch.txs))
        self._inbox.put(batch)

    def _committed_cb(self, seq: int, error: BaseException | None) -> None:
        self._inflight = False
        if error is not None:
            self.failure = error
            _log.error("relay ledger COMMIT failed; the node stops acknowledging: %s", error)
            while self._parked:
                _, callback, args = self._parked.popleft()
                if callback is _resolve:
                    _reject(args[0], UnavailableError(f"ledger commit failed: {error}"))
            if self.on_failure is not None:
                self.on_failure(error)
            return
        self._committed = seq
        # start the next batch first: the writer works while we release this one
        if self._threaded and self._ledger.dirty:
            self._submit()
        parked = self._parked
        while parked and parked[0][0] <= seq:
            _, callback, args = parked.popleft()
            try:
                callback(*args)
            except Exception:  # pragma: no cover - a callback bug must not stop the node
                _log.exception("relay delivery callback failed")
        if self.on_released is not None:
            self.on_released(seq)

    # --- the writer thread --------------------------------------------------------------------

    def _writer(self) -> None:
        conn = _writer_connection(self._ledger)
        loop = self._loop
        assert loop is not None
        try:
            while True:
                item = self._inbox.get()
                if item is _STOP:
                    return
                batch = item
                error: BaseException | None = None
                try:
                    self._write(conn, batch)
                except BaseException as exc:  # reported to the loop: fail-stop
                    error = exc
                checkpointer = self._checkpointer
                if checkpointer is not None:
                    checkpointer.pending = True
                try:
                    loop.call_soon_threadsafe(self._committed_cb, batch.seq, error)
                except RuntimeError:  # the loop is closed: nobody is waiting any more
                    return
                if error is not None:
                    return
        finally:
            conn.close()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _reject(future: asyncio.Future[None], error: BaseException) -> None:
    # a waiter cancelled while its batch committed has a done future: setting it would raise
    # InvalidStateError, stop the drain and leave every waiter behind it (and on_failure)
    # unreached, so the node would keep its server open and its waiters would hang
    if not future.done():
        future.set_exception(error)
