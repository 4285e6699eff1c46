"""The write transactions both channel clients' stores use, v0.5's and v1's.

Why one module: both stores keep one SQLite connection (WAL) per file and need the same
rules: a nested ``transaction()`` joins the outer one, a failed write is rolled back and
raised as the store's :class:`~settlement_widgets.errors.StorageError`, and each write says
whether its commit is fsynced (``durable``), which decides what survives a power cut.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator

from ..errors import StorageError

__all__ = ["StoreTransactions"]


class StoreTransactions:
    """Mixin: :meth:`transaction` over ``self._conn`` (opened ``synchronous=FULL``).

    The store supplies ``_storage_error`` (how a ``sqlite3`` error reads for its file) and
    may override ``_forget_cached`` (read caches to drop when a write fails).
    """

    _conn: sqlite3.Connection
    #: nesting depth of the open transaction (0: none)
    _depth: int = 0
    #: whether the connection's ``synchronous`` is FULL (True) or NORMAL
    _durable: bool = True

    def _storage_error(self, exc: sqlite3.Error, doing: str) -> StorageError:
        raise NotImplementedError

    def _forget_cached(self) -> None:
        """Drop what the store caches from its rows (a failed write may have changed them)."""

    @contextlib.contextmanager
    def transaction(self, *, durable: bool = True) -> Iterator[sqlite3.Connection]:
        """One atomic write (nested uses join the outer transaction).

        ``durable=True`` (the default) fsyncs the commit (``synchronous=FULL``): it survives
        a power cut. ``durable=False`` (``NORMAL``) survives a killed process, not a power
        cut, until the next durable commit, whose fsync of the write-ahead log covers it
        too: for rows another party can give back (the node's or the relay's ledger).
        """
        if self._depth:
            self._depth += 1
            try:
                yield self._conn
            finally:
                self._depth -= 1
            return
        if durable != self._durable:
            self._conn.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
            self._durable = durable
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise self._storage_error(exc, "start a write") from exc
        self._depth = 1
        try:
            yield self._conn
        except BaseException as exc:
            self._depth = 0
            self._forget_cached()
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise self._storage_error(exc, "write") from exc
            raise
        self._depth = 0
        try:
            self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self._forget_cached()
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")
            raise self._storage_error(exc, "commit") from exc
