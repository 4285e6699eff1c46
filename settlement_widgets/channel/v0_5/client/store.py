"""``ChannelStore``: what a channel client must not lose, in SQLite (WAL, file mode 0600).

Every item a v0.5 client needs to recover has a table here:

- ``channels``: the channel tuple, chain id, id, status and latest on-chain state summary;
- ``states``: every state we countersigned, with both signatures and a status
  (``signed`` = not submitted, ``submitted``, ``onchain``, ``superseded``). A RESIZE or
  FINALIZE the broker signed is written (with its ``server_signature``) *before* the
  transaction that submits it, so a killed process can still submit it;
- ``txs``: transaction hashes, written when the transaction is signed, before it is
  broadcast (``pending`` until its receipt is in);
- ``session``: the session key (its secret: hence mode 0600), expiry, allowances and JWT;
- ``transfers``: off-chain transfer history, each written ``pending`` before it is sent;
- ``operations`` + ``journal``: the write-ahead log. An operation is stored with its step
  plan before the first step; each step is journaled ``start`` before it runs and ``done``
  (or ``failed``/``interrupted``) after, in the same transaction as the data it produced;
- ``history``: the human-readable channel timeline behind ``provider.history()``;
- ``meta``: the owner (wallet, chain id, chain instance, custody) and the custody-event
  cursor. Local sandboxes all use chain id 31337, so a local store also names its chain
  instance (``Network.instance``) and refuses another chain's.

Every ``sqlite3`` error is raised as :class:`~settlement_widgets.errors.StorageError` naming
the file (the write it interrupted is rolled back).

Writes are synchronous (``synchronous=FULL``: a committed row survives a killed process and
a power cut) and small; one connection per store, used from the provider's event loop.

Where the code is: this module opens the file (creating and migrating the schema), owns the
connection, its transactions and the ``meta`` table, and composes :class:`ChannelStore` from
one mixin per group of tables:

- :mod:`.store_schema`: the ``CREATE TABLE`` statements, migrations, state JSON and the row
  types :class:`StoredState` and :class:`SessionRecord`;
- :mod:`.store_rows`: ``channels``, ``states``, ``txs`` and ``session``;
- :mod:`.store_ops`: ``operations`` and ``journal``;
- :mod:`.store_history`: ``transfers`` and ``history``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path
from typing import Any

from ....addresses import validate_address
from ....errors import ConfigurationError, InvalidStateError, StorageError
from ...store_path import default_store_path
from ...store_transactions import StoreTransactions
from .store_history import HistoryRows, TransferRows
from .store_ops import OperationRows
from .store_rows import ChannelRows, SessionRows, StateRows, TxRows
from .store_schema import (
    HISTORY_COLUMNS,
    HISTORY_EVENT_INDEX_SQL,
    MIGRATIONS,
    SCHEMA_VERSION,
    STATE_STATUSES,
    TABLES_SQL,
    SessionRecord,
    StoredState,
    state_from_json,
    state_to_json,
)

__all__ = [
    "HISTORY_COLUMNS",
    "SCHEMA_VERSION",
    "STATE_STATUSES",
    "ChannelStore",
    "SessionRecord",
    "StoredState",
    "default_store_path",
    "state_from_json",
    "state_to_json",
]


class ChannelStore(
    StoreTransactions,
    ChannelRows,
    StateRows,
    TxRows,
    SessionRows,
    TransferRows,
    OperationRows,
    HistoryRows,
):
    """The client's SQLite store. ``path`` defaults to :func:`default_store_path` of
    ``network`` and ``wallet`` (both then required).

    The file is created with mode 0600 (it holds the session key) and opened in WAL mode, so
    a second process (a crash-recovery run, a notebook reading history) can open it too.
    ``wallet``/``chain_id``/``custody``, when given, are checked against (or recorded as)
    the store's owner: one store serves one wallet on one custody.
    """

    def __init__(
        self,
        path: Path | str | None = None,
        *,
        network: str | None = None,
        wallet: str | None = None,
        chain_id: int | None = None,
        custody: str | None = None,
        chain_instance: str | None = None,
    ) -> None:
        if path is None:
            if network is None or wallet is None:
                raise ConfigurationError(
                    "ChannelStore needs a path, or a network name and a wallet address"
                )
            path = default_store_path(network, wallet, chain_instance)
        self.path = Path(path)
        self._depth = 0
        self._durable = True
        self._channel_cache = {}
        self._channel_cache_version = -1
        self._conn = self._open()
        self._claim("wallet", validate_address(wallet, field="wallet") if wallet else None)
        self._claim("chain_id", str(chain_id) if chain_id is not None else None)
        self._claim("chain_instance", chain_instance)
        self._claim("custody", validate_address(custody, field="custody") if custody else None)

    # --- connection ---------------------------------------------------------------------

    def open_transaction(self) -> sqlite3.Connection:
        """The connection of the transaction this store has open, for the row helpers that
        write inside it (``insert_transfer``, ``update_transfer``, ``insert_history``) without
        entering and leaving a nested :meth:`transaction` of their own (a
        :class:`~.write_group.WriteGroup` write runs inside the group's transaction)."""
        if not self._depth:
            raise InvalidStateError("no transaction is open on this store")
        return self._conn

    def _open(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            os.close(fd)
            os.chmod(self.path, 0o600)  # also when it existed with a wider mode
            conn = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.executescript(TABLES_SQL)
            for suffix in ("-wal", "-shm"):
                side = self.path.with_name(self.path.name + suffix)
                if side.exists():
                    os.chmod(side, 0o600)
            row = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if row is None:
                conn.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
            elif row[0] in MIGRATIONS:
                conn.execute("BEGIN IMMEDIATE")
                for statement in MIGRATIONS[row[0]]:
                    conn.execute(statement)
                conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (SCHEMA_VERSION,))
                conn.execute("COMMIT")
            elif row[0] != SCHEMA_VERSION:
                raise ConfigurationError(
                    f"the channel store {self.path} has schema {row[0]}, this version "
                    f"reads {SCHEMA_VERSION}: use a new store path"
                )
            conn.executescript(HISTORY_EVENT_INDEX_SQL)
        except (OSError, sqlite3.Error) as exc:
            raise ConfigurationError(
                f"cannot open the channel store at {self.path}: {exc}"
            ) from exc
        return conn

    def _claim(self, key: str, value: str | None) -> None:
        if value is None:
            return
        current = self.get_meta(key)
        if current is None:
            self.set_meta(key, value)
        elif current != value:
            raise ConfigurationError(
                f"the channel store {self.path} belongs to {key} {current}, not {value}: "
                "use another store path (one store per wallet, chain and custody; leave "
                "store_path unset and each chain gets its own file)"
            )

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._conn.close()

    def __enter__(self) -> ChannelStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ChannelStore(path={str(self.path)!r})"

    def _forget_cached(self) -> None:
        self._channel_cache.clear()

    def _storage_error(self, exc: sqlite3.Error, doing: str) -> StorageError:
        """A ``sqlite3`` error as a :class:`StorageError` that says what to do."""
        if isinstance(exc, sqlite3.IntegrityError):
            hint = (
                "the row contradicts one already stored (is this store shared with another "
                "chain or wallet? leave store_path unset so each chain gets its own file)"
            )
        elif isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            hint = "another process holds a write lock on it; close it and retry"
        elif isinstance(exc, sqlite3.ProgrammingError) and "thread" in str(exc):
            hint = (
                "a provider belongs to the event loop (and thread) it was created on: call it "
                "there (asyncio.run_coroutine_threadsafe from other threads)"
            )
        elif isinstance(exc, sqlite3.ProgrammingError) and "closed" in str(exc):
            hint = "the store was closed (the provider was closed): create a new provider"
        else:
            hint = "check the disk (space, permissions) and retry; nothing half-written remains"
        return StorageError(f"could not {doing} the channel store {self.path}: {exc}: {hint}")

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise self._storage_error(exc, "read") from exc

    def _data_version(self) -> int:
        try:
            return int(self._conn.execute("PRAGMA data_version").fetchone()[0])
        except sqlite3.Error as exc:
            raise self._storage_error(exc, "read") from exc

    # --- meta ---------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction() as c:
            c.execute(
                "INSERT INTO meta VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                (key, value),
            )

    # --- everything half-done (reads every part) ----------------------------------------

    def pending_work(self) -> dict[str, Any]:
        """Everything half-done: unfinished operations (with their next step), countersigned
        states not confirmed on chain, pending transactions and pending transfers."""
        return {
            "operations": [
                {
                    "id": op.id,
                    "kind": op.kind,
                    "channel_id": op.channel_id,
                    "status": op.status,
                    "next_step": op.next_step,
                    "error": op.error,
                }
                for op in self.unfinished_operations()
            ],
            "unsubmitted_states": [
                {
                    "channel_id": s.channel_id,
                    "intent": s.state.intent.name,
                    "version": s.state.version,
                    "status": s.status,
                    "has_server_signature": bool(s.server_signature),
                }
                for s in self.unsubmitted_states()
            ],
            "pending_txs": self.pending_txs(),
            "pending_transfers": self.transfers(status=("pending", "unknown")),
        }
