"""The relay's unified ledger: in memory for speed, in SQLite (WAL) for durability.

The whole state (balances, channels, session keys, user tags, the seen-request hashes of the
replay guard and the chain cursor) is loaded once at start and then changed in memory, in the
event loop's thread only. Every change also lands in a *pending batch* (upserts keyed by row,
so ten transfers from one account write its balance once). The group committer
(:mod:`.committer`) hands the batch to a writer thread that applies it in one SQLite
transaction; replies that depend on it are released only after that COMMIT.

Amounts are integers of smallest units in memory and decimal-integer TEXT in SQLite (uint256
does not fit SQLite's 64-bit INTEGER). Accounts are wallet addresses (EIP-55) and, for the
escrow of a channel, the channel id (as in the v0.5 ClearNode).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

from ...node_base.sqlite import check_schema_version, connect, open_ledger_file
from .clock import now_ms

__all__ = [
    "CHANNEL_STATUSES",
    "SCHEMA_VERSION",
    "TX_TYPES",
    "Batch",
    "ChannelRecord",
    "Ledger",
    "SessionKeyRecord",
    "TxRecord",
    "connect",
    "write_batch",
]

SCHEMA_VERSION: Final = "1"
#: ``tx_type`` values on the wire (SDK ``RPCTxType``)
TX_TYPES: Final = (
    "transfer",
    "deposit",
    "withdrawal",
    "app_deposit",
    "app_withdrawal",
    "escrow_lock",
    "escrow_unlock",
)
#: ``ChannelResponse.status`` values (SDK ``RPCChannelStatus``)
CHANNEL_STATUSES: Final = ("open", "closed", "resizing", "challenged")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS balances (
    account TEXT NOT NULL, asset TEXT NOT NULL, amount TEXT NOT NULL,
    PRIMARY KEY (account, asset)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS transactions (
    id INTEGER PRIMARY KEY, tx_type TEXT NOT NULL, from_account TEXT NOT NULL,
    to_account TEXT NOT NULL, asset TEXT NOT NULL, amount TEXT NOT NULL,
    created_at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS transactions_from ON transactions (from_account, id);
CREATE INDEX IF NOT EXISTS transactions_to ON transactions (to_account, id);
CREATE TABLE IF NOT EXISTS channels (
    channel_id TEXT PRIMARY KEY, chain_id INTEGER NOT NULL, token TEXT NOT NULL,
    wallet TEXT NOT NULL, participant TEXT NOT NULL, status TEXT NOT NULL, amount TEXT NOT NULL,
    adjudicator TEXT NOT NULL, challenge INTEGER NOT NULL, nonce TEXT NOT NULL,
    version INTEGER NOT NULL, state TEXT NOT NULL, created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS session_keys (
    session_key TEXT PRIMARY KEY, id INTEGER NOT NULL, wallet TEXT NOT NULL,
    application TEXT NOT NULL, scope TEXT NOT NULL, allowances TEXT NOT NULL,
    used TEXT NOT NULL, expires_at INTEGER NOT NULL, created_at INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS user_tags (wallet TEXT PRIMARY KEY, tag TEXT NOT NULL UNIQUE)
    WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS seen_requests (hash BLOB PRIMARY KEY, expires_at INTEGER NOT NULL)
    WITHOUT ROWID;
"""


def _compact_json(value: Any) -> str:
    """Compact JSON text: orjson, or the stdlib for what orjson refuses (lone surrogates a
    client smuggled in through ``\\ud800`` escapes); both read back the same."""
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        return json.dumps(value, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class TxRecord:
    """One ledger transaction (``TransactionResponse`` without the user tags)."""

    id: int
    tx_type: str
    from_account: str
    to_account: str
    asset: str
    amount: int
    created_at: int  # Unix ms

    def row(self) -> tuple[Any, ...]:
        return (
            self.id,
            self.tx_type,
            self.from_account,
            self.to_account,
            self.asset,
            str(self.amount),
            self.created_at,
        )


@dataclass(slots=True)
class ChannelRecord:
    """A channel the node indexed from a ``Created`` event, with its latest known state."""

    channel_id: str
    chain_id: int
    token: str
    wallet: str
    participant: str
    status: str
    amount: int
    adjudicator: str
    challenge: int
    nonce: int
    version: int
    intent: int
    state_data: str
    allocations: list[tuple[str, str, int]]
    created_at: int
    updated_at: int

    def row(self) -> tuple[Any, ...]:
        state = json.dumps(
            {
                "intent": self.intent,
                "data": self.state_data,
                "allocations": [[d, t, str(a)] for d, t, a in self.allocations],
            },
            separators=(",", ":"),
        )
        return (
            self.channel_id,
            self.chain_id,
            self.token,
            self.wallet,
            self.participant,
            self.status,
            str(self.amount),
            self.adjudicator,
            self.challenge,
            str(self.nonce),
            self.version,
            state,
            self.created_at,
            self.updated_at,
        )

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> ChannelRecord:
        state = json.loads(row["state"])
        return cls(
            channel_id=row["channel_id"],
            chain_id=int(row["chain_id"]),
            token=row["token"],
            wallet=row["wallet"],
            participant=row["participant"],
            status=row["status"],
            amount=int(row["amount"]),
            adjudicator=row["adjudicator"],
            challenge=int(row["challenge"]),
            nonce=int(row["nonce"]),
            version=int(row["version"]),
            intent=int(state["intent"]),
            state_data=state["data"],
            allocations=[(d, t, int(a)) for d, t, a in state["allocations"]],
            created_at=int(row["created_at"]),
            updated_at=int(row["updated_at"]),
        )

    @property
    def is_closed(self) -> bool:
        return self.status == "closed"


@dataclass(slots=True)
class SessionKeyRecord:
    """A registered session key: who it signs for, what it may spend, until when."""

    id: int
    session_key: str
    wallet: str
    application: str
    scope: str
    #: ``(asset, human decimal amount)`` exactly as the ``auth_request`` gave them
    allowances: list[tuple[str, str]]
    #: smallest units spent so far, per asset
    used: dict[str, int]
    expires_at: int  # Unix seconds
    created_at: int  # Unix ms

    def row(self) -> tuple[Any, ...]:
        # written on every transfer a session key signs: orjson (compact, same text as
        # ``json.dumps(separators=(",", ":"))``) instead of the stdlib encoder, ~10x cheaper
        return (
            self.session_key,
            self.id,
            self.wallet,
            self.application,
            self.scope,
            _compact_json([list(a) for a in self.allowances]),
            _compact_json({k: str(v) for k, v in self.used.items()}),
            self.expires_at,
            self.created_at,
        )

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> SessionKeyRecord:
        return cls(
            id=int(row["id"]),
            session_key=row["session_key"],
            wallet=row["wallet"],
            application=row["application"],
            scope=row["scope"],
            allowances=[(a, b) for a, b in json.loads(row["allowances"])],
            used={k: int(v) for k, v in json.loads(row["used"]).items()},
            expires_at=int(row["expires_at"]),
            created_at=int(row["created_at"]),
        )

    def is_active(self, now_s: float) -> bool:
        return self.expires_at > now_s


@dataclass
class Batch:
    """The rows one COMMIT writes (snapshots: the loop thread keeps mutating the originals)."""

    seq: int = 0
    balances: dict[tuple[str, str], int] = field(default_factory=dict)
    txs: list[TxRecord] = field(default_factory=list)
    channels: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    #: rows to write (``None``: delete); the loop side parks the record itself and
    #: :meth:`Ledger.take_batch` turns it into its row once per batch
    session_keys: dict[str, tuple[Any, ...] | SessionKeyRecord | None] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    seen: list[tuple[bytes, int]] = field(default_factory=list)
    meta: dict[str, str] = field(default_factory=dict)
    prune_seen_before: int | None = None

    def __bool__(self) -> bool:
        return bool(
            self.balances
            or self.txs
            or self.channels
            or self.session_keys
            or self.tags
            or self.seen
            or self.meta
            or self.prune_seen_before is not None
        )


def write_batch(conn: sqlite3.Connection, batch: Batch) -> None:
    """Apply ``batch`` in one transaction (runs in the writer thread)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        if batch.balances:
            conn.executemany(
                "INSERT INTO balances (account, asset, amount) VALUES (?, ?, ?) "
                "ON CONFLICT (account, asset) DO UPDATE SET amount = excluded.amount",
                [(a, s, str(v)) for (a, s), v in batch.balances.items()],
            )
        if batch.txs:
            conn.executemany(
                "INSERT INTO transactions (id, tx_type, from_account, to_account, asset, amount, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [tx.row() for tx in batch.txs],
            )
        if batch.channels:
            conn.executemany(
                "INSERT OR REPLACE INTO channels (channel_id, chain_id, token, wallet, participant,"
                " status, amount, adjudicator, challenge, nonce, version, state, created_at,"
                " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                list(batch.channels.values()),
            )
        if batch.session_keys:
            deleted = [(k,) for k, row in batch.session_keys.items() if row is None]
            rows = [
                row.row() if isinstance(row, SessionKeyRecord) else row
                for row in batch.session_keys.values()
                if row is not None
            ]
            if deleted:
                conn.executemany("DELETE FROM session_keys WHERE session_key = ?", deleted)
            if rows:
                conn.executemany(
                    "INSERT OR REPLACE INTO session_keys (session_key, id, wallet, application,"
                    " scope, allowances, used, expires_at, created_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
        if batch.tags:
            conn.executemany(
                "INSERT OR REPLACE INTO user_tags (wallet, tag) VALUES (?, ?)",
                list(batch.tags.items()),
            )
        if batch.seen:
            conn.executemany(
                "INSERT OR REPLACE INTO seen_requests (hash, expires_at) VALUES (?, ?)", batch.seen
            )
        if batch.prune_seen_before is not None:
            conn.execute(
                "DELETE FROM seen_requests WHERE expires_at < ?", (batch.prune_seen_before,)
            )
        if batch.meta:
            conn.executemany(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", list(batch.meta.items())
            )
        conn.execute("COMMIT")
    except BaseException:
        # SQLite may have rolled the transaction back itself (SQLITE_FULL, SQLITE_IOERR, ...):
        # a ROLLBACK then fails with "no transaction is active" and that error, not the disk's,
        # would be what the node reports. Roll back only what is still open, raise the cause.
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise


class Ledger:
    """The node's whole state in memory, plus the batch of rows not yet handed to SQLite.

    Only the event loop's thread calls the mutating methods; :meth:`take_batch` hands the
    accumulated rows to the committer.
    """

    def __init__(self, path: Path | str, *, synchronous: str = "FULL") -> None:
        self.path = Path(path)
        self.synchronous = synchronous
        open_ledger_file(self.path, schema=_SCHEMA, synchronous=synchronous, load=self._load)
        check_schema_version(
            self.meta,
            SCHEMA_VERSION,
            database=f"the relay database {self.path}",
            set_version=lambda v: self.set_meta("schema_version", v),
        )
        self._seq = 0

    # --- loading ----------------------------------------------------------------------------

    def _load(self, conn: sqlite3.Connection) -> None:
        self.meta: dict[str, str] = {
            row["key"]: row["value"] for row in conn.execute("SELECT key, value FROM meta")
        }
        self.balances: dict[tuple[str, str], int] = {
            (row["account"], row["asset"]): int(row["amount"])
            for row in conn.execute("SELECT account, asset, amount FROM balances")
        }
        self.account_assets: dict[str, set[str]] = {}
        for account, asset in self.balances:
            self.account_assets.setdefault(account, set()).add(asset)
        self.channels: dict[str, ChannelRecord] = {}
        self.wallet_channels: dict[str, list[str]] = {}
        for row in conn.execute("SELECT * FROM channels ORDER BY created_at, channel_id"):
            record = ChannelRecord.from_row(row)
            self.channels[record.channel_id] = record
            self.wallet_channels.setdefault(record.wallet, []).append(record.channel_id)
        self.session_keys: dict[str, SessionKeyRecord] = {}
        self.app_keys: dict[tuple[str, str], str] = {}
        for row in conn.execute("SELECT * FROM session_keys"):
            key = SessionKeyRecord.from_row(row)
            self.session_keys[key.session_key] = key
            self.app_keys[(key.wallet, key.application)] = key.session_key
        self.tags: dict[str, str] = {
            row["wallet"]: row["tag"] for row in conn.execute("SELECT wallet, tag FROM user_tags")
        }
        self.tag_wallets: dict[str, str] = {tag: wallet for wallet, tag in self.tags.items()}
        now = now_ms()
        self.seen: dict[bytes, int] = {
            bytes(row["hash"]): int(row["expires_at"])
            for row in conn.execute(
                "SELECT hash, expires_at FROM seen_requests WHERE expires_at >= ?", (now,)
            )
        }
        row = conn.execute("SELECT COALESCE(MAX(id), 0) AS top FROM transactions").fetchone()
        self.next_tx_id = int(row["top"]) + 1
        row = conn.execute("SELECT COALESCE(MAX(id), 0) AS top FROM session_keys").fetchone()
        self.next_key_id = int(row["top"]) + 1
        self._batch = Batch()
        self._last_prune = now

    # --- batches ------------------------------------------------------------------------------

    @property
    def dirty(self) -> bool:
        return bool(self._batch)

    def take_batch(self) -> Batch | None:
        """The rows changed since the last call (``None`` when nothing changed)."""
        if not self._batch:
            return None
        now = now_ms()
        if now - self._last_prune > 10_000:
            self._prune_seen(now)
        self._seq += 1
        batch, self._batch = self._batch, Batch()
        batch.seq = self._seq
        keys = batch.session_keys
        for name, value in keys.items():  # a key's row once per batch, not per transfer
            if isinstance(value, SessionKeyRecord):
                keys[name] = value.row()
        return batch

    def _prune_seen(self, now: int) -> None:
        self._last_prune = now
        expired = [h for h, exp in self.seen.items() if exp < now]
        for h in expired:
            del self.seen[h]
        self._batch.prune_seen_before = now

    # --- meta ---------------------------------------------------------------------------------

    def set_meta(self, key: str, value: str) -> None:
        self.meta[key] = value
        self._batch.meta[key] = value

    def next_counter(self, name: str, start: int) -> int:
        """A persistent counter (deterministic nonces and challenges)."""
        value = int(self.meta.get(name, str(start)))
        self.set_meta(name, str(value + 1))
        return value

    # --- balances and transactions ------------------------------------------------------------

    def balance(self, account: str, asset: str) -> int:
        return self.balances.get((account, asset), 0)

    def balances_of(self, account: str) -> list[tuple[str, int]]:
        return [
            (asset, self.balances.get((account, asset), 0))
            for asset in sorted(self.account_assets.get(account, ()))
        ]

    def add(self, account: str, asset: str, delta: int) -> int:
        """Credit (``delta > 0``) or debit an account; returns the new balance."""
        key = (account, asset)
        value = self.balances.get(key, 0) + delta
        self.balances[key] = value
        self._batch.balances[key] = value
        assets = self.account_assets.get(account)
        if assets is None:
            self.account_assets[account] = {asset}
        elif asset not in assets:
            assets.add(asset)
        return value

    def record_tx(
        self, tx_type: str, from_account: str, to_account: str, asset: str, amount: int
    ) -> TxRecord:
        tx = TxRecord(self.next_tx_id, tx_type, from_account, to_account, asset, amount, now_ms())
        self.next_tx_id += 1
        self._batch.txs.append(tx)
        return tx

    def transfer(self, from_account: str, to_account: str, asset: str, amount: int) -> TxRecord:
        """Move ``amount`` between two accounts and record a ``transfer`` (no checks here)."""
        self.add(from_account, asset, -amount)
        self.add(to_account, asset, amount)
        return self.record_tx("transfer", from_account, to_account, asset, amount)

    # --- channels -----------------------------------------------------------------------------

    def put_channel(self, record: ChannelRecord) -> None:
        """Insert or update a channel (``record`` is snapshotted into the batch now)."""
        if record.channel_id not in self.channels:
            self.wallet_channels.setdefault(record.wallet, []).append(record.channel_id)
        self.channels[record.channel_id] = record
        self._batch.channels[record.channel_id] = record.row()

    def channels_of(self, wallet: str) -> list[ChannelRecord]:
        return [self.channels[c] for c in self.wallet_channels.get(wallet, ())]

    # --- session keys and tags ----------------------------------------------------------------

    def put_session_key(self, key: SessionKeyRecord) -> None:
        old = self.app_keys.get((key.wallet, key.application))
        if old is not None and old != key.session_key:
            self.delete_session_key(old)
        self.session_keys[key.session_key] = key
        self.app_keys[(key.wallet, key.application)] = key.session_key
        self._batch.session_keys[key.session_key] = key

    def touch_session_key(self, key: SessionKeyRecord) -> None:
        """Persist a changed ``used`` map (the row is taken when the batch is)."""
        self._batch.session_keys[key.session_key] = key

    def delete_session_key(self, session_key: str) -> None:
        key = self.session_keys.pop(session_key, None)
        if key is None:
            return
        if self.app_keys.get((key.wallet, key.application)) == session_key:
            del self.app_keys[(key.wallet, key.application)]
        self._batch.session_keys[session_key] = None

    def new_key_id(self) -> int:
        value = self.next_key_id
        self.next_key_id += 1
        return value

    def put_tag(self, wallet: str, tag: str) -> None:
        self.tags[wallet] = tag
        self.tag_wallets[tag] = wallet
        self._batch.tags[wallet] = tag

    # --- replay guard -------------------------------------------------------------------------

    def is_seen(self, digest: bytes, now_ms: int) -> bool:
        expires = self.seen.get(digest)
        return expires is not None and expires >= now_ms

    def mark_seen(self, digest: bytes, expires_ms: int) -> None:
        self.seen[digest] = expires_ms
        self._batch.seen.append((digest, expires_ms))

    # --- reads straight from SQLite (committed rows only) -----------------------------------

    def query_transactions(
        self,
        conn: sqlite3.Connection,
        *,
        account: str | None,
        asset: str | None,
        tx_type: str | None,
        offset: int,
        limit: int,
        descending: bool,
    ) -> list[TxRecord]:
        where: list[str] = []
        args: list[Any] = []
        if account is not None:
            where.append("(from_account = ? OR to_account = ?)")
            args += [account, account]
        if asset is not None:
            where.append("asset = ?")
            args.append(asset)
        if tx_type is not None:
            where.append("tx_type = ?")
            args.append(tx_type)
        sql = "SELECT * FROM transactions"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += f" ORDER BY id {'DESC' if descending else 'ASC'} LIMIT ? OFFSET ?"
        args += [limit, offset]
        return [
            TxRecord(
                int(r["id"]),
                r["tx_type"],
                r["from_account"],
                r["to_account"],
                r["asset"],
                int(r["amount"]),
                int(r["created_at"]),
            )
            for r in conn.execute(sql, args)
        ]
