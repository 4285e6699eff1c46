"""The Nitronode's ledger: every state, channel, transaction, app session and session-key
registration, in memory for reads and in SQLite (WAL, ``synchronous=FULL`` by default) for
durability.

The v1 node's truth is a chain of signed states per (wallet, asset) (Nitrolite v1.4.1 ``StateV1``);
balances are read off the latest state, never kept apart from it, so there is nothing to
reconcile after a crash. Each object is stored as its wire JSON (the exact dict the node
replies with) in a row keyed by what the node looks it up by. Mutations happen on the event
loop's thread only and also land in a pending :class:`Batch`; the relay's
:class:`~settlement_widgets.channel.node_base.committer.GroupCommitter` writes a batch in one
transaction, and replies wait for that COMMIT. A restarted node reloads everything in
:meth:`NitronodeLedger._load`.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

from ...node_base.sqlite import check_schema_version, open_ledger_file
from ..core.transitions import TransitionType

__all__ = ["SCHEMA_VERSION", "Batch", "NitronodeLedger", "wallet_key", "write_batch"]

SCHEMA_VERSION: Final = "nitronode-1"
_HOME_DEPOSIT: Final = int(TransitionType.HOME_DEPOSIT)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS states (
    wallet TEXT NOT NULL, asset TEXT NOT NULL, epoch INTEGER NOT NULL, version INTEGER NOT NULL,
    body TEXT NOT NULL, PRIMARY KEY (wallet, asset, epoch, version)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS channels (channel_id TEXT PRIMARY KEY, body TEXT NOT NULL)
    WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS transactions (seq INTEGER PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS app_sessions (app_session_id TEXT PRIMARY KEY, body TEXT NOT NULL)
    WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS escrows (escrow_id TEXT PRIMARY KEY, body TEXT NOT NULL)
    WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS key_states (
    kind TEXT NOT NULL, user TEXT NOT NULL, session_key TEXT NOT NULL, version INTEGER NOT NULL,
    body TEXT NOT NULL, PRIMARY KEY (kind, user, session_key, version)) WITHOUT ROWID;
"""

#: table -> its columns; the last one is the JSON body (``value`` for meta)
_COLUMNS: Final[dict[str, tuple[str, ...]]] = {
    "meta": ("key", "value"),
    "states": ("wallet", "asset", "epoch", "version", "body"),
    "channels": ("channel_id", "body"),
    "transactions": ("seq", "body"),
    "app_sessions": ("app_session_id", "body"),
    "key_states": ("kind", "user", "session_key", "version", "body"),
    "escrows": ("escrow_id", "body"),
}


def wallet_key(address: str) -> str:
    """Wallets are compared case-insensitively (the TS advancer does; hex is case-free)."""
    return address.lower()


def _is_home_deposit(state: Mapping[str, Any]) -> bool:
    return int(state["transition"]["type"]) == _HOME_DEPOSIT


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _dumps_built(value: Any) -> str:
    """:func:`_dumps` for the objects the node builds on every state (states, their
    transactions, channels): strings, small ints and bools only, never a float, so orjson
    writes the same JSON value (read back by ``json.loads``) at a fraction of the cost,
    three times per transfer. What orjson refuses (an int beyond 64 bits, a key that is not
    a string) goes the general way."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return _dumps(value)


@dataclass
class Batch:
    """The rows one COMMIT writes: ``rows[table][key] = row`` (upserts, last one wins)."""

    seq: int = 0
    rows: dict[str, dict[tuple[Any, ...], tuple[Any, ...]]] = field(default_factory=dict)
    #: every row of the batch, for the committer's batch-size statistics
    txs: list[tuple[Any, ...]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.txs)


def write_batch(conn: sqlite3.Connection, batch: Batch) -> None:
    """Apply ``batch`` in one transaction (called by the group committer)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for table, rows in batch.rows.items():
            columns = _COLUMNS[table]
            marks = ", ".join("?" * len(columns))
            conn.executemany(
                f"INSERT OR REPLACE INTO {table} ({', '.join(columns)}) VALUES ({marks})",
                list(rows.values()),
            )
        conn.execute("COMMIT")
    except BaseException:
        # as in the relay: SQLite may already have rolled back; keep the disk's error
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise


class NitronodeLedger:
    """The node's whole state in memory plus the rows not yet committed.

    Only the event loop's thread mutates it; :meth:`take_batch` hands the pending rows to the
    committer. States are kept per ``(wallet_key, asset)`` in (epoch, version) order.
    """

    def __init__(self, path: Path | str, *, synchronous: str = "FULL") -> None:
        self.path = Path(path)
        self.synchronous = synchronous
        open_ledger_file(self.path, schema=_SCHEMA, synchronous=synchronous, load=self._load)
        check_schema_version(
            self.meta,
            SCHEMA_VERSION,
            database=f"the Nitronode database {self.path}",
            set_version=lambda v: self.set_meta("schema_version", v),
        )

    def _load(self, conn: sqlite3.Connection) -> None:
        self.meta: dict[str, str] = {
            row["key"]: row["value"] for row in conn.execute("SELECT key, value FROM meta")
        }
        self.states: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for row in conn.execute(
            "SELECT wallet, asset, body FROM states ORDER BY wallet, asset, epoch, version"
        ):
            self.states.setdefault((row["wallet"], row["asset"]), []).append(
                json.loads(row["body"])
            )
        self._deposits: dict[tuple[str, str], list[dict[str, Any]]] = {
            key: [s for s in chain if _is_home_deposit(s)] for key, chain in self.states.items()
        }
        self.channels: dict[str, dict[str, Any]] = {}
        self.home_channels: dict[tuple[str, str], list[str]] = {}
        rows = [json.loads(r["body"]) for r in conn.execute("SELECT body FROM channels")]
        for channel in sorted(rows, key=lambda c: (c["created_at_ms"], c["channel_id"])):
            self._index_channel(channel)
        self.transactions: list[dict[str, Any]] = [
            json.loads(r["body"])
            for r in conn.execute("SELECT body FROM transactions ORDER BY seq")
        ]
        self.app_sessions: dict[str, dict[str, Any]] = {
            r["app_session_id"]: json.loads(r["body"])
            for r in conn.execute("SELECT app_session_id, body FROM app_sessions")
        }
        self.key_states: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        for row in conn.execute(
            "SELECT kind, user, session_key, body FROM key_states "
            "ORDER BY kind, user, session_key, version"
        ):
            key = (row["kind"], row["user"], row["session_key"])
            self.key_states.setdefault(key, []).append(json.loads(row["body"]))
        self.escrows: dict[str, dict[str, Any]] = {
            r["escrow_id"]: json.loads(r["body"])
            for r in conn.execute("SELECT escrow_id, body FROM escrows")
        }
        self._batch = Batch()
        self._seq = 0

    # --- batches ------------------------------------------------------------------------------

    @property
    def dirty(self) -> bool:
        return bool(self._batch)

    def take_batch(self) -> Batch | None:
        """The rows changed since the last call (``None`` when nothing changed)."""
        if not self._batch:
            return None
        self._seq += 1
        batch, self._batch = self._batch, Batch()
        batch.seq = self._seq
        return batch

    def _put(self, table: str, key: tuple[Any, ...], row: tuple[Any, ...]) -> None:
        self._batch.rows.setdefault(table, {})[key] = row
        self._batch.txs.append(key)

    # --- meta ---------------------------------------------------------------------------------

    def set_meta(self, key: str, value: str) -> None:
        self.meta[key] = value
        self._put("meta", (key,), (key, value))

    # --- states -------------------------------------------------------------------------------

    def state_chain(self, wallet: str, asset: str) -> list[dict[str, Any]]:
        """Every stored state of (wallet, asset), oldest first (do not mutate)."""
        return self.states.get((wallet_key(wallet), asset), [])

    def deposit_chain(self, wallet: str, asset: str) -> list[dict[str, Any]]:
        """The home-deposit states of (wallet, asset), oldest first (do not mutate): the
        backing rule sums the recent ones on every spend, and scanning the whole state chain
        for them made each transfer cost more than the one before."""
        return self._deposits.get((wallet_key(wallet), asset), [])

    def latest_state(
        self, wallet: str, asset: str, *, only_signed: bool = False
    ) -> dict[str, Any] | None:
        """The newest state; with ``only_signed`` the newest one both parties signed."""
        for state in reversed(self.state_chain(wallet, asset)):
            if not only_signed or (state.get("user_sig") and state.get("node_sig")):
                return state
        return None

    def put_state(self, state: dict[str, Any]) -> None:
        """Store (or replace) a state at its (epoch, version)."""
        wallet, asset = wallet_key(state["user_wallet"]), state["asset"]
        epoch, version = int(state["epoch"]), int(state["version"])
        chain = self.states.setdefault((wallet, asset), [])
        deposits = self._deposits.setdefault((wallet, asset), [])
        last = (int(chain[-1]["epoch"]), int(chain[-1]["version"])) if chain else None
        if last is None or (epoch, version) > last:
            chain.append(state)  # the usual case: the next state of the chain
            if _is_home_deposit(state):
                deposits.append(state)
        elif (epoch, version) == last:
            if deposits and deposits[-1] is chain[-1]:
                deposits.pop()
            chain[-1] = state  # the same state, now with another signature
            if _is_home_deposit(state):
                deposits.append(state)
        else:
            chain[:] = [
                s for s in chain if (int(s["epoch"]), int(s["version"])) != (epoch, version)
            ]
            chain.append(state)
            chain.sort(key=lambda s: (int(s["epoch"]), int(s["version"])))
            deposits[:] = [s for s in chain if _is_home_deposit(s)]
        self._put(
            "states",
            (wallet, asset, epoch, version),
            (wallet, asset, epoch, version, _dumps_built(state)),
        )

    def assets_of(self, wallet: str) -> list[str]:
        """The assets ``wallet`` has a state chain in, in symbol order."""
        key = wallet_key(wallet)
        return sorted(asset for (w, asset) in self.states if w == key)

    # --- channels -----------------------------------------------------------------------------

    def _index_channel(self, channel: dict[str, Any]) -> None:
        channel_id = channel["channel_id"]
        if channel_id not in self.channels:
            owner = (wallet_key(channel["user_wallet"]), channel["asset"])
            self.home_channels.setdefault(owner, []).append(channel_id)
        self.channels[channel_id] = channel

    def put_channel(self, channel: dict[str, Any]) -> None:
        self._index_channel(channel)
        self._put(
            "channels", (channel["channel_id"],), (channel["channel_id"], _dumps_built(channel))
        )

    def channels_of(self, wallet: str, asset: str | None = None) -> list[dict[str, Any]]:
        """``wallet``'s home channels (all assets unless ``asset``), oldest first."""
        key = wallet_key(wallet)
        out = [
            self.channels[cid]
            for (w, a), ids in self.home_channels.items()
            if w == key and (asset is None or a == asset)
            for cid in ids
        ]
        return sorted(out, key=lambda c: (c["created_at_ms"], c["channel_id"]))

    # --- transactions -------------------------------------------------------------------------

    def add_transaction(self, tx: dict[str, Any]) -> None:
        self.transactions.append(tx)
        seq = len(self.transactions)
        self._put("transactions", (seq,), (seq, _dumps_built(tx)))

    # --- app sessions -------------------------------------------------------------------------

    def put_app_session(self, session: dict[str, Any]) -> None:
        self.app_sessions[session["app_session_id"]] = session
        self._put(
            "app_sessions",
            (session["app_session_id"],),
            (session["app_session_id"], _dumps(session)),
        )

    # --- cross-chain escrows ------------------------------------------------------------------

    def put_escrow(self, escrow: dict[str, Any]) -> None:
        """Store (or replace) an escrow operation's record (:mod:`.escrows`)."""
        self.escrows[escrow["escrow_id"]] = escrow
        self._put("escrows", (escrow["escrow_id"],), (escrow["escrow_id"], _dumps(escrow)))

    # --- session keys -------------------------------------------------------------------------

    def key_state_history(self, kind: str, user: str, session_key: str) -> list[dict[str, Any]]:
        return self.key_states.get((kind, wallet_key(user), wallet_key(session_key)), [])

    def put_key_state(self, kind: str, state: dict[str, Any]) -> None:
        """Store a ``channel`` or ``app`` session-key registration (its versions are kept)."""
        user, key = wallet_key(state["user_address"]), wallet_key(state["session_key"])
        version = int(state["version"])
        history = self.key_states.setdefault((kind, user, key), [])
        history.append(state)
        self._put(
            "key_states", (kind, user, key, version), (kind, user, key, version, _dumps(state))
        )

    def latest_key_states(self, kind: str, user: str) -> list[dict[str, Any]]:
        """The newest registration of every session key ``user`` registered (``kind``)."""
        wanted = wallet_key(user)
        return [
            history[-1]
            for (k, u, _), history in sorted(self.key_states.items())
            if k == kind and u == wanted and history
        ]
