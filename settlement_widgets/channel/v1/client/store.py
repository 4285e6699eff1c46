"""``V1Store``: what a Nitrolite v1 client must not lose, in SQLite (WAL, ``synchronous=FULL``).

v1 has no login and no session secret: authority lives in signed states. So the store keeps

- ``states``: every state of our chain (one per asset, epoch and version) in its wire form,
  with our signature written *before* the state is sent to the node and the node's added
  when it answers. A state signed by both is what a challenge or a close needs on chain, so
  it is never lost: a restarted provider resubmits a state the node never acknowledged, or
  adopts the node's signature if it did;
- ``channels``: the home channel's definition (nonce, challenge, validators), asset, token,
  chain and on-chain status as last seen;
- ``txs``: transaction hashes, written as soon as the wallet returns them, ``pending`` until
  their receipt is in;
- ``transfers``: off-chain transfers, sent and received (the node's transaction id);
- ``app_sessions``: app sessions we take part in, with their latest version and allocations;
- ``meta``: the owner (wallet, chain id, chain instance, ChannelHub).

Every ``sqlite3`` error becomes :class:`~settlement_widgets.errors.StorageError` naming the
file. One connection per store, used from the provider's event loop.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ....addresses import validate_address
from ....errors import ConfigurationError, StorageError
from ...store_transactions import StoreTransactions

__all__ = ["SCHEMA_VERSION", "StoredTransfer", "V1Store"]

SCHEMA_VERSION: Final = "v1-1"

_TABLES: Final = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS states (
    asset TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    version INTEGER NOT NULL,
    state TEXT NOT NULL,
    user_sig TEXT,
    node_sig TEXT,
    updated_at REAL NOT NULL,
    PRIMARY KEY (asset, epoch, version)
);
CREATE TABLE IF NOT EXISTS channels (
    channel_id TEXT PRIMARY KEY,
    asset TEXT NOT NULL,
    definition TEXT NOT NULL,
    token TEXT NOT NULL,
    chain_id INTEGER NOT NULL,
    status TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS txs (
    hash TEXT PRIMARY KEY,
    channel_id TEXT,
    step TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS transfers (
    tx_id TEXT NOT NULL,
    direction TEXT NOT NULL,
    asset TEXT NOT NULL,
    amount TEXT NOT NULL,
    counterparty TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (tx_id, direction)
);
CREATE TABLE IF NOT EXISTS onchain (
    channel_id TEXT NOT NULL,
    step TEXT NOT NULL,
    asset TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    version INTEGER NOT NULL,
    status TEXT NOT NULL,
    tx_hash TEXT,
    created_at REAL NOT NULL,
    PRIMARY KEY (channel_id, step, epoch, version)
);
CREATE TABLE IF NOT EXISTS app_sessions (
    app_session_id TEXT PRIMARY KEY,
    definition TEXT NOT NULL,
    version INTEGER NOT NULL,
    status TEXT NOT NULL,
    allocations TEXT NOT NULL,
    session_data TEXT NOT NULL,
    updated_at REAL NOT NULL
);
"""


@dataclass(frozen=True)
class StoredTransfer:
    """One off-chain transfer as the store has it (``amount`` in display units, as signed;
    ``row`` its row number, the provider's transfer id)."""

    row: int
    tx_id: str
    direction: str
    asset: str
    amount: str
    counterparty: str
    created_at: float


class V1Store(StoreTransactions):
    """The v1 client's SQLite store at ``path`` (created with mode 0600)."""

    def __init__(
        self,
        path: Path | str,
        *,
        wallet: str | None = None,
        chain_id: int | None = None,
        channel_hub: str | None = None,
        chain_instance: str | None = None,
    ) -> None:
        self.path = Path(path)
        self._conn = self._open()
        #: :meth:`channels` as last read, valid while ``PRAGMA data_version`` (which moves when
        #: another connection commits) is ``_channels_version`` and no write of ours touched
        #: the table (each such write drops it): a transfer reads the channels to find the
        #: open one, and they change only when a channel is opened, moved or closed
        self._channels_cache: list[dict[str, Any]] | None = None
        self._channels_version = -1
        #: ``asset -> (data_version, key, row)``: the newest ``states`` row of the asset as
        #: :meth:`latest_state` last read it (``key`` its ``(epoch, version)``, ``row`` its
        #: ``(state, user_sig, node_sig)`` columns), kept up to date by :meth:`put_state`
        #: (which knows the row it wrote and what the upsert made of it) and dropped by
        #: any other write to the table, a rollback, or another connection's commit
        self._latest: dict[str, tuple[int, tuple[int, int], tuple[Any, ...]]] = {}
        self._claim("wallet", validate_address(wallet, field="wallet") if wallet else None)
        self._claim("chain_id", str(chain_id) if chain_id is not None else None)
        self._claim("chain_instance", chain_instance)
        self._claim(
            "channel_hub",
            validate_address(channel_hub, field="channel_hub") if channel_hub else None,
        )

    def _open(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
            conn = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.executescript(_TABLES)
            row = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if row is None:
                conn.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
            elif row[0] != SCHEMA_VERSION:
                raise ConfigurationError(
                    f"the v1 channel store {self.path} has schema {row[0]}, this version "
                    f"reads {SCHEMA_VERSION}: use a new store path"
                )
        except (OSError, sqlite3.Error) as exc:
            raise ConfigurationError(
                f"cannot open the v1 channel store at {self.path}: {exc}"
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
                f"the v1 channel store {self.path} belongs to {key} {current}, not {value}: "
                "use another store path (one store per wallet, chain and ChannelHub)"
            )

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._conn.close()

    def __repr__(self) -> str:
        return f"V1Store(path={str(self.path)!r})"

    def _storage_error(self, exc: sqlite3.Error, doing: str) -> StorageError:
        return StorageError(f"the v1 channel store {self.path} could not {doing}: {exc}")

    def _forget_cached(self) -> None:
        self._channels_cache = None
        self._latest.clear()

    def _data_version(self) -> int:
        """SQLite's ``PRAGMA data_version``: it changes when another connection commits."""
        return int(self._read("PRAGMA data_version")[0][0])

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        try:
            return list(self._conn.execute(sql, args).fetchall())
        except sqlite3.Error as exc:
            raise self._storage_error(exc, "read") from exc

    # --- meta ---------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        rows = self._read("SELECT value FROM meta WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # --- states -------------------------------------------------------------------------

    def put_state(self, state: Mapping[str, Any]) -> None:
        """Write ``state`` (wire form, with whatever signatures it has). A signature the
        store already has for this version is kept when ``state`` lacks it."""
        asset, epoch, version = state["asset"], int(state["epoch"]), int(state["version"])
        body = {k: v for k, v in state.items() if k not in ("user_sig", "node_sig")}
        text = json.dumps(body, sort_keys=True)
        user_sig, node_sig = state.get("user_sig") or None, state.get("node_sig") or None
        latest = self._latest.pop(asset, None)  # back below once the row is written
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO states VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (asset, epoch, version) DO UPDATE SET state = excluded.state, "
                "user_sig = COALESCE(excluded.user_sig, user_sig), "
                "node_sig = COALESCE(excluded.node_sig, node_sig), "
                "updated_at = excluded.updated_at",
                (
                    asset,
                    epoch,
                    version,
                    text,
                    user_sig,
                    node_sig,
                    time.time(),
                ),
            )
            if latest is not None:
                version_seen, key, row = latest
                if (epoch, version) == key:  # the upsert: new body, signatures coalesced
                    row = (text, user_sig or row[1], node_sig or row[2])
                elif (epoch, version) > key:  # a new newest row, as written
                    row = (text, user_sig, node_sig)
                self._latest[asset] = (version_seen, max(key, (epoch, version)), row)

    def forget_refused(self, state: Mapping[str, Any]) -> None:
        """Drop ``state`` (and the ``opening`` channel it would have created) when the node
        answered it with a refusal: written before it was sent, as every signed state is,
        it will never be co-signed, and left behind it would be resubmitted on every
        recovery and count as an open channel. A state the node co-signed is kept, and so
        is another state of the same version (another signature): with states pipelined, a
        refused one's version may already hold its replacement, built on the node's latest
        and written ahead before the refusal reached its caller."""
        asset, epoch, version = state["asset"], int(state["epoch"]), int(state["version"])
        signature = state.get("user_sig") or None
        self._latest.pop(asset, None)
        self._channels_cache = None  # dropped before the write: a failed one may half-apply
        with self.transaction() as conn:
            conn.execute(
                "DELETE FROM states WHERE asset = ? AND epoch = ? AND version = ? "
                "AND node_sig IS NULL AND (? IS NULL OR user_sig IS NULL OR user_sig = ?)",
                (asset, epoch, version, signature, signature),
            )
            channel_id = str(state.get("home_channel_id") or "").lower()
            if channel_id:
                conn.execute(
                    "DELETE FROM channels WHERE channel_id = ? AND status = 'opening'",
                    (channel_id,),
                )

    def _state(self, row: tuple[Any, ...]) -> dict[str, Any]:
        state: dict[str, Any] = json.loads(row[0])
        if row[1]:
            state["user_sig"] = row[1]
        if row[2]:
            state["node_sig"] = row[2]
        return state

    def latest_state(self, asset: str, *, signed: bool = False) -> dict[str, Any] | None:
        """Our latest state of ``asset`` (``signed``: the latest one both sides signed)."""
        if signed:
            rows = self._read(
                "SELECT state, user_sig, node_sig FROM states WHERE asset = ? AND user_sig "
                "IS NOT NULL AND node_sig IS NOT NULL ORDER BY epoch DESC, version DESC LIMIT 1",
                (asset,),
            )
            return self._state(rows[0]) if rows else None
        version = self._data_version()
        cached = self._latest.get(asset)
        if cached is None or cached[0] != version:
            rows = self._read(
                "SELECT state, user_sig, node_sig, epoch, version FROM states WHERE asset = ? "
                "ORDER BY epoch DESC, version DESC LIMIT 1",
                (asset,),
            )
            if not rows:
                self._latest.pop(asset, None)
                return None
            cached = (version, (int(rows[0][3]), int(rows[0][4])), rows[0][:3])
            self._latest[asset] = cached
        return self._state(cached[2])

    def states(self, asset: str) -> list[dict[str, Any]]:
        rows = self._read(
            "SELECT state, user_sig, node_sig FROM states WHERE asset = ? ORDER BY epoch, version",
            (asset,),
        )
        return [self._state(r) for r in rows]

    # --- channels -----------------------------------------------------------------------

    def put_channel(
        self,
        channel_id: str,
        *,
        asset: str,
        definition: Mapping[str, Any],
        token: str,
        chain_id: int,
        status: str,
    ) -> None:
        now = time.time()
        self._channels_cache = None  # dropped before the write: a failed one may half-apply
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO channels VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (channel_id) DO UPDATE SET status = excluded.status, "
                "updated_at = excluded.updated_at",
                (
                    channel_id.lower(),
                    asset,
                    json.dumps(dict(definition), sort_keys=True),
                    token,
                    chain_id,
                    status,
                    now,
                    now,
                ),
            )

    def move_channel(self, channel_id: str, *, chain_id: int, token: str) -> None:
        """The channel's home is now ``chain_id`` (its ``token`` there): a migration."""
        self._channels_cache = None  # dropped before the write: a failed one may half-apply
        with self.transaction() as conn:
            conn.execute(
                "UPDATE channels SET chain_id = ?, token = ?, updated_at = ? WHERE channel_id = ?",
                (chain_id, token, time.time(), channel_id.lower()),
            )

    def set_channel_status(self, channel_id: str, status: str) -> None:
        self._channels_cache = None  # dropped before the write: a failed one may half-apply
        with self.transaction() as conn:
            conn.execute(
                "UPDATE channels SET status = ?, updated_at = ? WHERE channel_id = ?",
                (status, time.time(), channel_id.lower()),
            )

    def channel(self, channel_id: str) -> dict[str, Any] | None:
        rows = self._read(
            "SELECT channel_id, asset, definition, token, chain_id, status, created_at, "
            "updated_at FROM channels WHERE channel_id = ?",
            (channel_id.lower(),),
        )
        return self._channel(rows[0]) if rows else None

    def channels(self) -> list[dict[str, Any]]:
        """Every channel, oldest first (fresh copies: callers may change them)."""
        version = self._data_version()
        cached = self._channels_cache
        if cached is None or version != self._channels_version:
            rows = self._read(
                "SELECT channel_id, asset, definition, token, chain_id, status, created_at, "
                "updated_at FROM channels ORDER BY created_at"
            )
            cached = [self._channel(r) for r in rows]
            self._channels_cache, self._channels_version = cached, version
        return [{**c, "definition": dict(c["definition"])} for c in cached]

    @staticmethod
    def _channel(row: tuple[Any, ...]) -> dict[str, Any]:
        return {
            "channel_id": row[0],
            "asset": row[1],
            "definition": json.loads(row[2]),
            "token": row[3],
            "chain_id": int(row[4]),
            "status": row[5],
            "created_at": float(row[6]),
            "updated_at": float(row[7]),
        }

    # --- transactions -------------------------------------------------------------------

    def put_tx(self, tx_hash: str, *, step: str, channel_id: str | None, status: str) -> None:
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO txs VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (hash) DO UPDATE SET status = excluded.status",
                (tx_hash, channel_id.lower() if channel_id else None, step, status, time.time()),
            )

    def txs(
        self, channel_id: str | None = None, *, status: str | None = None
    ) -> list[dict[str, Any]]:
        sql = "SELECT hash, channel_id, step, status, created_at FROM txs WHERE 1=1"
        args: list[Any] = []
        if channel_id is not None:
            sql += " AND channel_id = ?"
            args.append(channel_id.lower())
        if status is not None:
            sql += " AND status = ?"
            args.append(status)
        rows = self._read(sql + " ORDER BY created_at, rowid", tuple(args))
        return [
            {"hash": r[0], "channel_id": r[1], "step": r[2], "status": r[3], "created_at": r[4]}
            for r in rows
        ]

    # --- on-chain steps ------------------------------------------------------------------

    def put_onchain(
        self,
        channel_id: str,
        step: str,
        state: Mapping[str, Any],
        *,
        status: str = "pending",
        tx_hash: str | None = None,
    ) -> None:
        """The on-chain step a co-signed ``state`` needs (``create``, ``deposit``,
        ``withdraw``, ``close``, ``challenge``, ``checkpoint``): written ``pending`` before it
        is sent, ``done`` with its hash once mined. A restarted provider sends what is
        pending (unless the chain shows it done)."""
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO onchain VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (channel_id, step, epoch, version) DO UPDATE SET "
                "status = excluded.status, tx_hash = COALESCE(excluded.tx_hash, tx_hash)",
                (
                    channel_id.lower(),
                    step,
                    state["asset"],
                    int(state["epoch"]),
                    int(state["version"]),
                    status,
                    tx_hash,
                    time.time(),
                ),
            )

    def onchain(self, *, status: str | None = None) -> list[dict[str, Any]]:
        sql = (
            "SELECT channel_id, step, asset, epoch, version, status, tx_hash FROM onchain"
            + (" WHERE status = ?" if status else "")
            + " ORDER BY created_at, rowid"
        )
        rows = self._read(sql, (status,) if status else ())
        keys = ("channel_id", "step", "asset", "epoch", "version", "status", "tx_hash")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    def state_at(self, asset: str, epoch: int, version: int) -> dict[str, Any] | None:
        rows = self._read(
            "SELECT state, user_sig, node_sig FROM states WHERE asset = ? AND epoch = ? "
            "AND version = ?",
            (asset, epoch, version),
        )
        return self._state(rows[0]) if rows else None

    # --- transfers ----------------------------------------------------------------------

    def put_transfer(
        self, tx_id: str, *, direction: str, asset: str, amount: str, counterparty: str
    ) -> StoredTransfer | None:
        """Record a transfer once: the new row, or None if it was there already (the node's
        transaction id and the direction are the key, so a received transfer seen twice is
        one row)."""
        created_at = time.time()
        with self.transaction() as conn:
            cursor = conn.execute(
                "INSERT OR IGNORE INTO transfers VALUES (?, ?, ?, ?, ?, ?)",
                (tx_id, direction, asset, amount, counterparty, created_at),
            )
            if cursor.rowcount != 1 or cursor.lastrowid is None:
                return None
            return StoredTransfer(
                cursor.lastrowid, tx_id, direction, asset, amount, counterparty, created_at
            )

    _TRANSFER_COLUMNS: Final = "rowid, tx_id, direction, asset, amount, counterparty, created_at"

    def transfers(self, asset: str | None = None) -> list[StoredTransfer]:
        sql = f"SELECT {self._TRANSFER_COLUMNS} FROM transfers"
        args: tuple[Any, ...] = ()
        if asset is not None:
            sql += " WHERE asset = ?"
            args = (asset,)
        rows = self._read(sql + " ORDER BY rowid", args)
        return [StoredTransfer(*r) for r in rows]

    def transfer(self, tx_id: str, direction: str) -> StoredTransfer | None:
        rows = self._read(
            f"SELECT {self._TRANSFER_COLUMNS} FROM transfers WHERE tx_id = ? AND direction = ?",
            (tx_id, direction),
        )
        return StoredTransfer(*rows[0]) if rows else None

    # --- app sessions -------------------------------------------------------------------

    def put_app_session(
        self,
        app_session_id: str,
        *,
        definition: Mapping[str, Any],
        version: int,
        status: str,
        allocations: list[Mapping[str, Any]],
        session_data: str,
    ) -> None:
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO app_sessions VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (app_session_id) DO UPDATE SET version = excluded.version, "
                "status = excluded.status, allocations = excluded.allocations, "
                "session_data = excluded.session_data, updated_at = excluded.updated_at",
                (
                    app_session_id.lower(),
                    json.dumps(dict(definition), sort_keys=True),
                    version,
                    status,
                    json.dumps([dict(a) for a in allocations]),
                    session_data,
                    time.time(),
                ),
            )

    def app_session(self, app_session_id: str) -> dict[str, Any] | None:
        rows = self._read(
            "SELECT app_session_id, definition, version, status, allocations, session_data "
            "FROM app_sessions WHERE app_session_id = ?",
            (app_session_id.lower(),),
        )
        if not rows:
            return None
        r = rows[0]
        return {
            "app_session_id": r[0],
            "definition": json.loads(r[1]),
            "version": int(r[2]),
            "status": r[3],
            "allocations": json.loads(r[4]),
            "session_data": r[5],
        }
