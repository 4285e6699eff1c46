"""Group commit for the client's store: the writes of one event-loop turn, one transaction.

A transfer writes its ``pending`` row before the request leaves and its ``done`` row (and the
history line) before :meth:`~.provider.ChannelProvider.transfer` returns. Each is a SQLite
COMMIT, and with 64 transfers in flight the COMMITs, not the signatures, were most of the
client's time. :class:`WriteGroup` gives every write a future and runs them all when the
loop has handled everything that was ready: the writes queued by every transfer that ran in
that turn share one transaction. A caller still resumes only after *its* write committed,
so what was durable before a request left or a transfer returned is unchanged; only the
number of COMMITs drops (to one per turn; sequentially, one per write as before).

A write that fails does not fail the others: after a failed group each write is retried in
a transaction of its own and gets its own result or exception.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

__all__ = ["WriteGroup"]

T = TypeVar("T")


class _Transactional(Protocol):
    def transaction(self, *, durable: bool = True) -> Any: ...


class WriteGroup:
    """Runs queued store writes at the end of the current loop turn, in one transaction.

    ``durable=False`` (the transfer history: the relay's ledger is its truth) commits with
    ``synchronous=NORMAL``: it survives a killed process, not a power cut, exactly as the
    single writes it replaces.
    """

    def __init__(self, store: _Transactional, *, durable: bool = False) -> None:
        self._store = store
        self._durable = durable
        self._queued: list[tuple[Callable[[], Any], asyncio.Future[Any]]] = []
        self._scheduled = False
        #: transactions committed and writes run (for tests and the benchmark)
        self.commits = 0
        self.writes = 0

    def write(self, op: Callable[[], T], *, alone: bool = False) -> asyncio.Future[T]:
        """Queue ``op`` (a function doing store writes); the future of its return value,
        set once the transaction it ran in has committed.

        ``alone=True`` says the caller knows nothing else will join (one transfer in flight):
        with nothing queued the write runs now and the future is already done, which saves
        the sequential caller a turn of the loop.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        if alone and not self._queued:
            self._run_one_by_one([(op, future)])
            return future
        self._queued.append((op, future))
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._run)
        return future

    def _run(self) -> None:
        self._scheduled = False
        queued, self._queued = self._queued, []
        if not queued:
            return
        try:
            with self._store.transaction(durable=self._durable):
                results = [op() for op, _ in queued]
        except Exception:
            self._run_one_by_one(queued)
            return
        self.commits += 1
        self.writes += len(queued)
        for (_, future), result in zip(queued, results, strict=True):
            if not future.done():
                future.set_result(result)

    def _run_one_by_one(self, queued: list[tuple[Callable[[], Any], asyncio.Future[Any]]]) -> None:
        for op, future in queued:
            try:
                with self._store.transaction(durable=self._durable):
                    result = op()
            except Exception as exc:
                if not future.done():
                    future.set_exception(exc)
                continue
            self.commits += 1
            self.writes += 1
            if not future.done():
                future.set_result(result)
