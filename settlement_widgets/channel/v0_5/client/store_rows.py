"""The channel store's on-chain side and session: the ``channels``, ``states``, ``txs`` and
``session`` tables.

Each table is one mixin class of :class:`~settlement_widgets.channel.v0_5.client.store.ChannelStore`
(which users instantiate; these classes are never used alone). :class:`StoreAccess` is what
every mixin needs from the store: one atomic write (``transaction``) and a read
(``_query``), both implemented by ``ChannelStore`` over its single SQLite connection. The
other tables live in :mod:`.store_ops` (operations and their journal) and
:mod:`.store_history` (transfers and the channel timeline).
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from ....addresses import validate_address
from ....errors import InvalidStateError
from ....keys import PrivateKey
from ..core.records import ChannelRecord
from ..core.types import Channel as ChannelDefinition
from ..core.types import State, StateIntent
from .store_schema import (
    STATE_STATUSES,
    SessionRecord,
    StoredState,
    state_from_json,
    state_to_json,
    utc_timestamp,
)

__all__ = ["ChannelRows", "SessionRows", "StateRows", "StoreAccess", "TxRows"]


class StoreAccess:
    """What a table mixin uses of the store; :class:`~.store.ChannelStore` implements it."""

    path: Path
    #: channel records read since the database last changed under us (see ``get_channel``)
    _channel_cache: dict[str, ChannelRecord]
    _channel_cache_version: int
    _depth: int

    def _data_version(self) -> int:
        """SQLite's ``PRAGMA data_version``: it changes when another connection commits."""
        raise NotImplementedError

    def transaction(self, *, durable: bool = True) -> AbstractContextManager[sqlite3.Connection]:
        """One atomic write (see ``ChannelStore.transaction``)."""
        raise NotImplementedError

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """The rows ``sql`` selects (see ``ChannelStore._query``)."""
        raise NotImplementedError


class ChannelRows(StoreAccess):
    """``channels``: one :class:`~.records.ChannelRecord` per channel, updated in place."""

    def put_channel(self, record: ChannelRecord) -> None:
        now = utc_timestamp()
        d = record.definition
        self._channel_cache.pop(record.channel_id, None)
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
        """The stored record of ``channel_id`` (``None`` if unknown).

        Every transfer reads its channel's record, and rebuilding one from its row costs
        ~45 µs, so committed records are cached (they are frozen). The cache is dropped when
        another connection committed to the file (``PRAGMA data_version``, a crash-recovery
        run or a second provider on the same store), an entry when this store writes that
        channel, and nothing is cached from inside an open transaction (it may roll back).
        """
        key = channel_id.lower()
        version = self._data_version()
        if version != self._channel_cache_version:
            self._channel_cache.clear()
            self._channel_cache_version = version
        cached = self._channel_cache.get(key)
        if cached is not None:
            return cached
        rows = self._query(
            f"SELECT {self._CHANNEL_COLUMNS} FROM channels WHERE channel_id = ?", (key,)
        )
        if not rows:
            return None
        record = self._record(rows[0])
        if not self._depth:
            self._channel_cache[key] = record
        return record

    def channel_times(self, channel_id: str) -> tuple[str, str] | None:
        rows = self._query(
            "SELECT created_at, updated_at FROM channels WHERE channel_id = ?",
            (channel_id.lower(),),
        )
        return (rows[0][0], rows[0][1]) if rows else None

    def list_channels(self) -> list[ChannelRecord]:
        rows = self._query(f"SELECT {self._CHANNEL_COLUMNS} FROM channels ORDER BY created_at")
        return [self._record(r) for r in rows]


class StateRows(StoreAccess):
    """``states``: every state we countersigned, with both signatures and a status."""

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
        now = utc_timestamp()
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
                (
                    status,
                    tx_hash,
                    utc_timestamp(),
                    channel_id.lower(),
                    str(version),
                    int(intent),
                ),
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


class TxRows(StoreAccess):
    """``txs``: transaction hashes, written when signed, before they are broadcast."""

    def add_tx(
        self, tx_hash: str, *, step: str, channel_id: str | None = None, op_id: int | None = None
    ) -> None:
        """Record a transaction as ``pending`` (call it before broadcasting)."""
        now = utc_timestamp()
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
                (status, block_number, utc_timestamp(), tx_hash.lower()),
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


class SessionRows(StoreAccess):
    """``session``: the session key (its secret), expiry, allowances and JWT per wallet and
    application."""

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
                    utc_timestamp(),
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
