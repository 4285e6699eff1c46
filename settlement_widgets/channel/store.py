"""``ChannelStore``: what a channel client must not lose, in SQLite (WAL, file mode 0600).

erc7824-nitrolite.md §5.3 lists it, and every item has a table here:

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
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from ..addresses import validate_address
from ..erc7824.types import Allocation, State, StateIntent
from ..erc7824.types import Channel as ChannelDefinition
from ..errors import ConfigurationError, InvalidStateError, StorageError
from ..keys import PrivateKey
from .lifecycle import ChannelRecord, Operation

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

#: columns of a channel's history rows, in order (ChannelProvider.history adds explorer_url)
HISTORY_COLUMNS: tuple[str, ...] = (
    "time",
    "event",
    "status",
    "version",
    "intent",
    "amount",
    "asset",
    "counterparty",
    "tx_hash",
    "detail",
)

SCHEMA_VERSION: Final = "2"
STATE_STATUSES: Final = ("signed", "submitted", "onchain", "superseded")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS channels (
    channel_id TEXT PRIMARY KEY, chain_id INTEGER NOT NULL, participants TEXT NOT NULL,
    adjudicator TEXT NOT NULL, challenge INTEGER NOT NULL, nonce TEXT NOT NULL,
    token TEXT NOT NULL, status TEXT NOT NULL, version TEXT NOT NULL, intent INTEGER NOT NULL,
    state_hash TEXT NOT NULL, amount TEXT NOT NULL, challenge_expiry INTEGER NOT NULL,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS states (
    channel_id TEXT NOT NULL, version TEXT NOT NULL, intent INTEGER NOT NULL,
    state TEXT NOT NULL, state_hash TEXT NOT NULL, server_signature TEXT,
    status TEXT NOT NULL, op_id INTEGER, tx_hash TEXT,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    PRIMARY KEY (channel_id, version, intent)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS txs (
    tx_hash TEXT PRIMARY KEY, channel_id TEXT, op_id INTEGER, step TEXT NOT NULL,
    status TEXT NOT NULL, block_number INTEGER, created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS txs_by_op ON txs (op_id, step);
CREATE TABLE IF NOT EXISTS session (
    wallet TEXT NOT NULL, application TEXT NOT NULL, session_key TEXT NOT NULL,
    secret TEXT NOT NULL, scope TEXT NOT NULL, allowances TEXT NOT NULL,
    expires_at INTEGER NOT NULL, jwt TEXT, created_at TEXT NOT NULL,
    PRIMARY KEY (wallet, application)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS transfers (
    id INTEGER PRIMARY KEY AUTOINCREMENT, channel_id TEXT, direction TEXT NOT NULL,
    from_account TEXT NOT NULL, to_account TEXT NOT NULL, asset TEXT NOT NULL,
    amount TEXT NOT NULL, status TEXT NOT NULL, request_id TEXT, relay_tx_id INTEGER,
    error TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS transfers_by_relay_id
    ON transfers (relay_tx_id) WHERE relay_tx_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS operations (
    id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, channel_id TEXT,
    steps TEXT NOT NULL, params TEXT NOT NULL, done TEXT NOT NULL, results TEXT NOT NULL,
    status TEXT NOT NULL, error TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS journal (
    id INTEGER PRIMARY KEY AUTOINCREMENT, op_id INTEGER NOT NULL, step TEXT NOT NULL,
    phase TEXT NOT NULL, data TEXT NOT NULL, at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS history (
    id INTEGER PRIMARY KEY AUTOINCREMENT, channel_id TEXT, event TEXT NOT NULL,
    status TEXT, version TEXT, intent TEXT, amount TEXT, asset TEXT, counterparty TEXT,
    tx_hash TEXT, detail TEXT, at TEXT NOT NULL, block_number INTEGER, log_index INTEGER);
CREATE INDEX IF NOT EXISTS history_by_channel ON history (channel_id, id);
"""

# a chain event is one history row, whichever of our receipt and the watcher saw it first
_HISTORY_EVENT_INDEX = """
CREATE UNIQUE INDEX IF NOT EXISTS history_by_event ON history (channel_id, tx_hash, log_index)
    WHERE log_index IS NOT NULL;
"""

# schema 1 -> 2: chain events in the history carry their (block, log index)
_MIGRATIONS: Final = {
    "1": (
        "ALTER TABLE history ADD COLUMN block_number INTEGER",
        "ALTER TABLE history ADD COLUMN log_index INTEGER",
    ),
}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def default_store_path(network_name: str, wallet: str, instance: str | None = None) -> Path:
    """``$SETTLEMENT_HOME/channel/<network>[-<chain instance>]-<wallet address>.sqlite``:
    one file per chain, so a new local sandbox (same chain id, new chain) starts empty."""
    from ..networks import settlement_home

    address = validate_address(wallet, field="wallet")
    if instance is not None and not instance.replace("-", "").isalnum():
        raise ConfigurationError(f"chain instance {instance!r} is not a plain identifier")
    middle = f"-{instance}" if instance else ""
    return settlement_home() / "channel" / f"{network_name}{middle}-{address}.sqlite"


# --- states as JSON ------------------------------------------------------------------------


def state_to_json(state: State) -> str:
    """A state with its signatures as compact JSON (amounts as decimal strings)."""
    return json.dumps(
        {
            "intent": int(state.intent),
            "version": str(state.version),
            "data": "0x" + state.data.hex(),
            "allocations": [a.to_rpc() for a in state.allocations],
            "sigs": list(state.sigs),
        },
        separators=(",", ":"),
    )


def state_from_json(text: str) -> State:
    data = json.loads(text)
    return State(
        StateIntent(int(data["intent"])),
        int(data["version"]),
        data["data"],
        tuple(Allocation.from_rpc(a) for a in data["allocations"]),
        tuple(data["sigs"]),
    )


@dataclass(frozen=True)
class StoredState:
    """One row of ``states``."""

    channel_id: str
    state: State
    state_hash: str
    status: str
    server_signature: str | None
    op_id: int | None
    tx_hash: str | None


@dataclass(frozen=True)
class SessionRecord:
    """A session key the wallet authorised, and the JWT the relay issued for it.

    ``repr`` never shows the secret.
    """

    wallet: str
    application: str
    key: PrivateKey = field(repr=False)
    scope: str
    allowances: tuple[tuple[str, str], ...]
    expires_at: int
    jwt: str | None = field(default=None, repr=False)

    @property
    def session_key(self) -> str:
        return self.key.address

    def is_valid(self, now: float | None = None, *, margin: float = 60.0) -> bool:
        """Not expired (with ``margin`` seconds to spare)."""
        return self.expires_at > (time.time() if now is None else now) + margin


class ChannelStore:
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
        self._conn = self._open()
        self._claim("wallet", validate_address(wallet, field="wallet") if wallet else None)
        self._claim("chain_id", str(chain_id) if chain_id is not None else None)
        self._claim("chain_instance", chain_instance)
        self._claim("custody", validate_address(custody, field="custody") if custody else None)

    # --- connection ---------------------------------------------------------------------

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
            conn.executescript(_SCHEMA)
            for suffix in ("-wal", "-shm"):
                side = self.path.with_name(self.path.name + suffix)
                if side.exists():
                    os.chmod(side, 0o600)
            row = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if row is None:
                conn.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
            elif row[0] in _MIGRATIONS:
                conn.execute("BEGIN IMMEDIATE")
                for statement in _MIGRATIONS[row[0]]:
                    conn.execute(statement)
                conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (SCHEMA_VERSION,))
                conn.execute("COMMIT")
            elif row[0] != SCHEMA_VERSION:
                raise ConfigurationError(
                    f"the channel store {self.path} has schema {row[0]}, this version "
                    f"reads {SCHEMA_VERSION}: use a new store path"
                )
            conn.executescript(_HISTORY_EVENT_INDEX)
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

    @contextlib.contextmanager
    def transaction(self, *, durable: bool = True) -> Iterator[sqlite3.Connection]:
        """One atomic write (nested uses join the outer transaction).

        ``durable=True`` (the default) fsyncs the commit (``synchronous=FULL``): it survives
        a power cut. ``durable=False`` (``NORMAL``) survives a killed process but not a
        power cut; it is used for transfer history only, whose truth is the relay's ledger
        (an fsync costs milliseconds, which would dominate an off-chain transfer).
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
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise self._storage_error(exc, "write") from exc
            raise
        self._depth = 0
        try:
            self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")
            raise self._storage_error(exc, "commit") from exc

    def _storage_error(self, exc: sqlite3.Error, doing: str) -> StorageError:
        """A ``sqlite3`` error as a :class:`StorageError` that says what to do."""
        if isinstance(exc, sqlite3.IntegrityError):
            hint = (
                "the row contradicts one already stored (is this store shared with another "
                "chain or wallet? leave store_path unset so each chain gets its own file)"
            )
        elif isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            hint = "another process holds a write lock on it; close it and retry"
        else:
            hint = "check the disk (space, permissions) and retry; nothing half-written remains"
        return StorageError(f"could not {doing} the channel store {self.path}: {exc}: {hint}")

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._conn.execute(sql, params).fetchall()
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

    # --- channels -----------------------------------------------------------------------

    def put_channel(self, record: ChannelRecord) -> None:
        now = _now()
        d = record.definition
        with self.transaction() as c:
            c.execute(
                "INSERT INTO channels VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
                "ON CONFLICT(channel_id) DO UPDATE SET status=excluded.status, "
                "version=excluded.version, intent=excluded.intent, "
                "state_hash=excluded.state_hash, amount=excluded.amount, "
                "challenge_expiry=excluded.challenge_expiry, updated_at=excluded.updated_at",
                (
                    record.channel_id,
                    record.chain_id,
                    json.dumps(list(d.participants)),
                    d.adjudicator,
                    d.challenge,
                    str(d.nonce),
                    record.token,
                    record.status,
                    str(record.version),
                    int(record.intent),
                    record.state_hash,
                    str(record.amount),
                    record.challenge_expiry,
                    now,
                    now,
                ),
            )

    _CHANNEL_COLUMNS = (
        "channel_id, chain_id, participants, adjudicator, challenge, nonce, token, status, "
        "version, intent, state_hash, amount, challenge_expiry, created_at, updated_at"
    )

    @staticmethod
    def _record(row: tuple[Any, ...]) -> ChannelRecord:
        definition = ChannelDefinition(
            tuple(json.loads(row[2])),  # type: ignore[arg-type]
            row[3],
            int(row[4]),
            int(row[5]),
        )
        return ChannelRecord(
            channel_id=row[0],
            chain_id=int(row[1]),
            definition=definition,
            token=row[6],
            status=row[7],
            version=int(row[8]),
            intent=StateIntent(int(row[9])),
            state_hash=row[10],
            amount=int(row[11]),
            challenge_expiry=int(row[12]),
        )

    def get_channel(self, channel_id: str) -> ChannelRecord | None:
        rows = self._query(
            f"SELECT {self._CHANNEL_COLUMNS} FROM channels WHERE channel_id = ?",
            (channel_id.lower(),),
        )
        return self._record(rows[0]) if rows else None

    def channel_times(self, channel_id: str) -> tuple[str, str] | None:
        rows = self._query(
            "SELECT created_at, updated_at FROM channels WHERE channel_id = ?",
            (channel_id.lower(),),
        )
        return (rows[0][0], rows[0][1]) if rows else None

    def list_channels(self) -> list[ChannelRecord]:
        rows = self._query(f"SELECT {self._CHANNEL_COLUMNS} FROM channels ORDER BY created_at")
        return [self._record(r) for r in rows]

    # --- states -------------------------------------------------------------------------

    def put_state(
        self,
        channel_id: str,
        state: State,
        state_hash: str,
        *,
        status: str,
        server_signature: str | None = None,
        op_id: int | None = None,
        tx_hash: str | None = None,
    ) -> None:
        """Insert or update one state (keyed by channel, version and intent)."""
        if status not in STATE_STATUSES:
            raise InvalidStateError(f"unknown state status {status!r}")
        now = _now()
        with self.transaction() as c:
            c.execute(
                "INSERT INTO states VALUES (?,?,?,?,?,?,?,?,?,?,?) "
                "ON CONFLICT(channel_id, version, intent) DO UPDATE SET state=excluded.state, "
                "status=excluded.status, server_signature=COALESCE(excluded.server_signature, "
                "server_signature), op_id=COALESCE(excluded.op_id, op_id), "
                "tx_hash=COALESCE(excluded.tx_hash, tx_hash), updated_at=excluded.updated_at",
                (
                    channel_id.lower(),
                    str(state.version),
                    int(state.intent),
                    state_to_json(state),
                    state_hash,
                    server_signature,
                    status,
                    op_id,
                    tx_hash,
                    now,
                    now,
                ),
            )

    def set_state_status(
        self,
        channel_id: str,
        version: int,
        intent: StateIntent,
        status: str,
        *,
        tx_hash: str | None = None,
    ) -> None:
        if status not in STATE_STATUSES:
            raise InvalidStateError(f"unknown state status {status!r}")
        with self.transaction() as c:
            c.execute(
                "UPDATE states SET status = ?, tx_hash = COALESCE(?, tx_hash), updated_at = ? "
                "WHERE channel_id = ? AND version = ? AND intent = ?",
                (status, tx_hash, _now(), channel_id.lower(), str(version), int(intent)),
            )

    def states(self, channel_id: str) -> list[StoredState]:
        """Every stored state of a channel, oldest version first."""
        rows = self._query(
            "SELECT channel_id, state, state_hash, status, server_signature, op_id, tx_hash "
            "FROM states WHERE channel_id = ?",
            (channel_id.lower(),),
        )
        out = [StoredState(r[0], state_from_json(r[1]), r[2], r[3], r[4], r[5], r[6]) for r in rows]
        return sorted(out, key=lambda s: (s.state.version, int(s.state.intent)))

    def find_state(self, channel_id: str, version: int, intent: StateIntent) -> StoredState | None:
        for stored in self.states(channel_id):
            if stored.state.version == version and stored.state.intent == intent:
                return stored
        return None

    def latest_onchain_state(self, channel_id: str) -> State | None:
        """The newest fully signed state the custody accepted: what ``challenge`` needs."""
        onchain = [
            s.state
            for s in self.states(channel_id)
            if s.status == "onchain" and len(s.state.sigs) == 2
        ]
        return onchain[-1] if onchain else None

    def unsubmitted_states(self) -> list[StoredState]:
        """Countersigned states whose transaction is not confirmed (``signed``/``submitted``)."""
        rows = self._query(
            "SELECT channel_id, state, state_hash, status, server_signature, op_id, tx_hash "
            "FROM states WHERE status IN ('signed', 'submitted')"
        )
        return [
            StoredState(r[0], state_from_json(r[1]), r[2], r[3], r[4], r[5], r[6]) for r in rows
        ]

    # --- transactions -------------------------------------------------------------------

    def add_tx(
        self, tx_hash: str, *, step: str, channel_id: str | None = None, op_id: int | None = None
    ) -> None:
        """Record a transaction as ``pending`` (call it before broadcasting)."""
        now = _now()
        with self.transaction() as c:
            c.execute(
                "INSERT INTO txs VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(tx_hash) DO NOTHING",
                (
                    tx_hash.lower(),
                    channel_id.lower() if channel_id else None,
                    op_id,
                    step,
                    "pending",
                    None,
                    now,
                    now,
                ),
            )

    def set_tx_status(self, tx_hash: str, status: str, block_number: int | None = None) -> None:
        """``confirmed``, ``reverted`` or ``dropped`` (never broadcast)."""
        with self.transaction() as c:
            c.execute(
                "UPDATE txs SET status = ?, block_number = COALESCE(?, block_number), "
                "updated_at = ? WHERE tx_hash = ?",
                (status, block_number, _now(), tx_hash.lower()),
            )

    def tx_for(self, op_id: int, step: str) -> tuple[str, str] | None:
        """``(hash, status)`` of the latest transaction of an operation's step."""
        rows = self._query(
            "SELECT tx_hash, status FROM txs WHERE op_id = ? AND step = ? "
            "ORDER BY created_at DESC, rowid DESC LIMIT 1",
            (op_id, step),
        )
        return (rows[0][0], rows[0][1]) if rows else None

    def pending_txs(self) -> list[dict[str, Any]]:
        rows = self._query(
            "SELECT tx_hash, channel_id, op_id, step, created_at FROM txs WHERE status='pending'"
        )
        keys = ("tx_hash", "channel_id", "op_id", "step", "created_at")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    def tx_hashes(self, channel_id: str) -> dict[str, str]:
        """Confirmed transaction hashes of a channel by step name (latest per step)."""
        rows = self._query(
            "SELECT step, tx_hash FROM txs WHERE channel_id = ? AND status = 'confirmed' "
            "ORDER BY created_at, rowid",
            (channel_id.lower(),),
        )
        return dict(rows)

    # --- session ------------------------------------------------------------------------

    def save_session(self, session: SessionRecord) -> None:
        with self.transaction() as c:
            c.execute(
                "INSERT INTO session VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(wallet, application) "
                "DO UPDATE SET session_key=excluded.session_key, secret=excluded.secret, "
                "scope=excluded.scope, allowances=excluded.allowances, "
                "expires_at=excluded.expires_at, jwt=excluded.jwt, created_at=excluded.created_at",
                (
                    session.wallet,
                    session.application,
                    session.session_key,
                    session.key.secret_hex(),
                    session.scope,
                    json.dumps([list(a) for a in session.allowances]),
                    session.expires_at,
                    session.jwt,
                    _now(),
                ),
            )

    def load_session(self, wallet: str, application: str) -> SessionRecord | None:
        rows = self._query(
            "SELECT secret, scope, allowances, expires_at, jwt FROM session "
            "WHERE wallet = ? AND application = ?",
            (validate_address(wallet, field="wallet"), application),
        )
        if not rows:
            return None
        secret, scope, allowances, expires_at, jwt = rows[0]
        return SessionRecord(
            wallet=validate_address(wallet, field="wallet"),
            application=application,
            key=PrivateKey(secret),
            scope=scope,
            allowances=tuple((str(a), str(b)) for a, b in json.loads(allowances)),
            expires_at=int(expires_at),
            jwt=jwt,
        )

    def save_jwt(self, wallet: str, application: str, jwt: str | None) -> None:
        with self.transaction() as c:
            c.execute(
                "UPDATE session SET jwt = ? WHERE wallet = ? AND application = ?",
                (jwt, validate_address(wallet, field="wallet"), application),
            )

    # --- transfers ----------------------------------------------------------------------

    def add_transfer(
        self,
        *,
        channel_id: str | None,
        direction: str,
        from_account: str,
        to_account: str,
        asset: str,
        amount: int,
        status: str = "pending",
        request_id: int | None = None,
        relay_tx_id: int | None = None,
    ) -> int | None:
        """Record a transfer; returns its row id (None when ``relay_tx_id`` is known already)."""
        now = _now()
        with self.transaction(durable=False) as c:
            cur = c.execute(
                "INSERT INTO transfers (channel_id, direction, from_account, to_account, asset, "
                "amount, status, request_id, relay_tx_id, error, created_at, updated_at) "
                "VALUES (?,?,?,?,?,?,?,?,?,NULL,?,?) ON CONFLICT DO NOTHING",
                (
                    channel_id.lower() if channel_id else None,
                    direction,
                    from_account,
                    to_account,
                    asset,
                    str(amount),
                    status,
                    str(request_id) if request_id is not None else None,
                    relay_tx_id,
                    now,
                    now,
                ),
            )
            return cur.lastrowid if cur.rowcount else None

    def finish_transfer(
        self, row_id: int, *, status: str, relay_tx_id: int | None = None, error: str | None = None
    ) -> None:
        with self.transaction(durable=False) as c:
            c.execute(
                "UPDATE transfers SET status = ?, relay_tx_id = COALESCE(?, relay_tx_id), "
                "error = ?, updated_at = ? WHERE id = ?",
                (status, relay_tx_id, error, _now(), row_id),
            )

    def has_relay_transfer(self, relay_tx_id: int) -> bool:
        return bool(self._query("SELECT 1 FROM transfers WHERE relay_tx_id = ?", (relay_tx_id,)))

    def transfers(
        self, channel_id: str | None = None, *, status: str | tuple[str, ...] | None = None
    ) -> list[dict[str, Any]]:
        """Transfer history (oldest first), optionally of one channel and status(es):
        ``pending`` (written, not answered yet), ``unknown`` (sent, the answer lost),
        ``done``, ``failed``."""
        sql = (
            "SELECT id, channel_id, direction, from_account, to_account, asset, amount, status, "
            "request_id, relay_tx_id, error, created_at FROM transfers"
        )
        where: list[str] = []
        params: list[Any] = []
        if channel_id is not None:
            where.append("channel_id = ?")
            params.append(channel_id.lower())
        if status is not None:
            wanted = (status,) if isinstance(status, str) else tuple(status)
            where.append(f"status IN ({','.join('?' * len(wanted))})")
            params.extend(wanted)
        if where:
            sql += " WHERE " + " AND ".join(where)
        rows = self._query(sql + " ORDER BY id", tuple(params))
        keys = (
            "id",
            "channel_id",
            "direction",
            "from_account",
            "to_account",
            "asset",
            "amount",
            "status",
            "request_id",
            "relay_tx_id",
            "error",
            "created_at",
        )
        out = [dict(zip(keys, r, strict=True)) for r in rows]
        for row in out:
            row["amount"] = int(row["amount"])
        return out

    # --- operations and the journal -----------------------------------------------------

    def begin_operation(
        self,
        kind: str,
        channel_id: str | None,
        steps: tuple[str, ...],
        params: Mapping[str, Any],
    ) -> Operation:
        """Store a new operation (its whole plan) before its first step runs."""
        now = _now()
        probe = Operation(0, kind, channel_id, steps, dict(params))  # validates kind and steps
        with self.transaction() as c:
            cur = c.execute(
                "INSERT INTO operations (kind, channel_id, steps, params, done, results, status, "
                "error, created_at, updated_at) VALUES (?,?,?,?,?,?,?,NULL,?,?)",
                (
                    kind,
                    channel_id.lower() if channel_id else None,
                    json.dumps(list(steps)),
                    json.dumps(dict(params)),
                    "[]",
                    "{}",
                    probe.status,
                    now,
                    now,
                ),
            )
            op_id = int(cur.lastrowid or 0)
            c.execute(
                "INSERT INTO journal (op_id, step, phase, data, at) VALUES (?,?,?,?,?)",
                (op_id, "-", "planned", json.dumps({"steps": list(steps)}), now),
            )
        return Operation(op_id, kind, channel_id.lower() if channel_id else None, steps, params)

    def save_operation(self, op: Operation) -> None:
        with self.transaction() as c:
            c.execute(
                "UPDATE operations SET channel_id = ?, done = ?, results = ?, status = ?, "
                "error = ?, updated_at = ? WHERE id = ?",
                (
                    op.channel_id,
                    json.dumps(list(op.done)),
                    json.dumps(dict(op.results)),
                    op.status,
                    op.error,
                    _now(),
                    op.id,
                ),
            )

    def journal(
        self, op_id: int, step: str, phase: str, data: Mapping[str, Any] | None = None
    ) -> None:
        with self.transaction() as c:
            c.execute(
                "INSERT INTO journal (op_id, step, phase, data, at) VALUES (?,?,?,?,?)",
                (op_id, step, phase, json.dumps(dict(data or {})), _now()),
            )

    def journal_entries(self, op_id: int | None = None) -> list[dict[str, Any]]:
        sql = "SELECT id, op_id, step, phase, data, at FROM journal"
        rows = (
            self._query(sql + " WHERE op_id = ? ORDER BY id", (op_id,))
            if op_id is not None
            else self._query(sql + " ORDER BY id")
        )
        return [
            {
                "id": r[0],
                "op_id": r[1],
                "step": r[2],
                "phase": r[3],
                "data": json.loads(r[4]),
                "at": r[5],
            }
            for r in rows
        ]

    _OP_COLUMNS = "id, kind, channel_id, steps, params, done, results, status, error"

    @staticmethod
    def _operation(row: tuple[Any, ...]) -> Operation:
        return Operation(
            id=int(row[0]),
            kind=row[1],
            channel_id=row[2],
            steps=tuple(json.loads(row[3])),
            params=json.loads(row[4]),
            done=tuple(json.loads(row[5])),
            results=json.loads(row[6]),
            status=row[7],
            error=row[8],
        )

    def operation(self, op_id: int) -> Operation | None:
        rows = self._query(f"SELECT {self._OP_COLUMNS} FROM operations WHERE id = ?", (op_id,))
        return self._operation(rows[0]) if rows else None

    def operations(self, channel_id: str | None = None) -> list[Operation]:
        if channel_id is None:
            rows = self._query(f"SELECT {self._OP_COLUMNS} FROM operations ORDER BY id")
        else:
            rows = self._query(
                f"SELECT {self._OP_COLUMNS} FROM operations WHERE channel_id = ? ORDER BY id",
                (channel_id.lower(),),
            )
        return [self._operation(r) for r in rows]

    def unfinished_operations(self) -> list[Operation]:
        """Operations a restarted provider must resume (``running`` or ``interrupted``)."""
        rows = self._query(
            f"SELECT {self._OP_COLUMNS} FROM operations "
            "WHERE status IN ('running', 'interrupted') ORDER BY id"
        )
        return [self._operation(r) for r in rows]

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

    # --- history ------------------------------------------------------------------------

    def add_history(
        self,
        channel_id: str | None,
        event: str,
        *,
        status: str | None = None,
        version: int | None = None,
        intent: str | None = None,
        amount: int | None = None,
        asset: str | None = None,
        counterparty: str | None = None,
        tx_hash: str | None = None,
        detail: str | None = None,
        cursor: tuple[int, int] | None = None,
    ) -> bool:
        """Append a row; ``cursor`` = ``(block, log index)`` of the chain event it reports.
        A chain event is written once (keyed by tx hash and log index): returns False when
        that event has a row already."""
        block, log_index = cursor if cursor is not None else (None, None)
        with self.transaction() as c:
            cur = c.execute(
                "INSERT INTO history (channel_id, event, status, version, intent, amount, asset, "
                "counterparty, tx_hash, detail, at, block_number, log_index) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
                (
                    channel_id.lower() if channel_id else None,
                    event,
                    status,
                    None if version is None else str(version),
                    intent,
                    None if amount is None else str(amount),
                    asset,
                    counterparty,
                    tx_hash,
                    detail,
                    _now(),
                    block,
                    log_index,
                ),
            )
            return bool(cur.rowcount)

    def has_event(self, channel_id: str, tx_hash: str, log_index: int) -> bool:
        """Whether the chain event ``(tx_hash, log_index)`` has a history row already."""
        return bool(
            self._query(
                "SELECT 1 FROM history WHERE channel_id = ? AND tx_hash = ? AND log_index = ?",
                (channel_id.lower(), tx_hash, log_index),
            )
        )

    def history(self, channel_id: str) -> list[dict[str, Any]]:
        """The channel's rows in the order they were written, except that chain events are
        in chain order (block, log index) among themselves: the watcher may learn of an
        event after a later one arrived with our own receipt."""
        rows = self._query(
            "SELECT at, event, status, version, intent, amount, asset, counterparty, tx_hash, "
            "detail, block_number, log_index FROM history WHERE channel_id = ? ORDER BY id",
            (channel_id.lower(),),
        )
        keys = HISTORY_COLUMNS
        slots = [i for i, r in enumerate(rows) if r[-1] is not None]
        in_chain_order = sorted((rows[i] for i in slots), key=lambda r: (r[-2], r[-1]))
        ordered = list(rows)
        for slot, moved in zip(slots, in_chain_order, strict=True):
            ordered[slot] = moved
        out: list[dict[str, Any]] = [dict(zip(keys, r[:-2], strict=True)) for r in ordered]
        for row in out:
            for key in ("version", "amount"):
                if row[key] is not None:
                    row[key] = int(row[key])
        return out
