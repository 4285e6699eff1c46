"""The proof log: every real step a provider performed, served by ``/api/settlement/proofs``.

The original dashboard advertised ``/api/settlement/proofs/{yellow,v4}`` and never served them
(``hashpass-tech/jack``); its proofs were static JSON written by demo scripts. Here the
providers append one record per step as it happens, and the endpoint reads them back.

Contract for providers
----------------------
Call :func:`record_proof` (or :func:`record_proofs` for a burst) right after a step has
really happened (never before, never for a
step that failed):

* on-chain steps (``Custody.create``/``resize``/``close``/``withdraw``, a v4 settlement) once
  the receipt is in, with ``type="on-chain"``, the ``tx_hash`` and
  ``explorer_url=network.explorer.tx_url(tx_hash)``;
* off-chain steps (relay auth, an off-chain transfer) with ``type="off-chain"``;
* reads that prove something (an owner check, a policy check) with ``type="read-only"``.

``step`` is a short stable name (``"create_channel"``, ``"transfer"``, ``"close_channel"``,
``"withdraw"``, ``"settle_intent"``...), ``data`` a small JSON object of what a reader needs
(channel id, amounts as decimal strings, intent id). Never put secrets (keys, JWTs, session
keys' private halves) in ``data``: the endpoint serves it to anyone holding the server token.
Recording is best-effort bookkeeping after the fact: a provider may log and ignore a
:class:`~settlement_widgets.errors.SettlementError` from here rather than fail a settlement
that already happened.

Storage: SQLite at ``$SETTLEMENT_HOME/proofs.sqlite`` (or ``path``), WAL mode so the Jupyter
server can read while a kernel writes; one short-lived connection per call.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, get_args

from .errors import (
    ConfigurationError,
    SettlementError,
    SettlementValueError,
    UnknownOptionError,
)
from .links import is_link_target
from .methods import validate_method

__all__ = [
    "PROOF_TYPES",
    "ProofType",
    "ProofWriter",
    "default_proofs_path",
    "list_proofs",
    "record_proof",
    "record_proofs",
]

ProofType = Literal["on-chain", "off-chain", "read-only"]
PROOF_TYPES: tuple[ProofType, ...] = get_args(ProofType)

_TX_HASH = re.compile(r"^0x[0-9a-fA-F]{64}$")
_MAX_STEP = 100
_MAX_DATA_BYTES = 16 * 1024

_SCHEMA = """
CREATE TABLE IF NOT EXISTS proofs (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    method       TEXT NOT NULL,
    network      TEXT NOT NULL,
    chain_id     INTEGER NOT NULL,
    step         TEXT NOT NULL,
    type         TEXT NOT NULL,
    tx_hash      TEXT,
    explorer_url TEXT,
    data         TEXT NOT NULL,
    timestamp    TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS proofs_by_method ON proofs (method, network, chain_id, id);
"""


def default_proofs_path() -> Path:
    """``$SETTLEMENT_HOME/proofs.sqlite`` (resolved at call time, so tests can move it)."""
    from .networks import settlement_home

    return settlement_home() / "proofs.sqlite"


def _connect(path: Path | str | None, *, check_same_thread: bool = True) -> sqlite3.Connection:
    target = Path(path) if path is not None else default_proofs_path()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(target, timeout=10.0, check_same_thread=check_same_thread)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(_SCHEMA)
    except (OSError, sqlite3.Error) as exc:
        raise ConfigurationError(f"cannot open the proof log at {target}: {exc}") from exc
    return conn


def _network_name(network: Any) -> str:
    name = getattr(network, "name", network)
    if not isinstance(name, str) or not name:
        raise SettlementValueError(f"network must be a network name, got {network!r}")
    return name


def _timestamp(value: datetime | str | None) -> str:
    if value is None:
        value = datetime.now(UTC)
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise SettlementValueError(
                f"timestamp must be ISO 8601 (e.g. 2026-02-08T17:23:00Z), got {value!r}"
            ) from None
    if not isinstance(value, datetime):
        raise SettlementValueError(f"timestamp must be a datetime or ISO string, got {value!r}")
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _entry(
    step: str,
    type_: str,
    tx_hash: str | None,
    explorer_url: str | None,
    data: Mapping[str, Any],
    timestamp: str,
) -> dict[str, Any]:
    entry: dict[str, Any] = {"step": step, "type": type_}
    if tx_hash is not None:
        entry["txHash"] = tx_hash
    if explorer_url is not None:
        entry["explorerUrl"] = explorer_url
    entry["data"] = dict(data)
    entry["timestamp"] = timestamp
    return entry


def record_proof(
    method: str,
    network: Any,
    chain_id: int,
    step: str,
    type: str,
    tx_hash: str | None = None,
    explorer_url: str | None = None,
    data: Mapping[str, Any] | None = None,
    timestamp: datetime | str | None = None,
    *,
    path: Path | str | None = None,
) -> dict[str, Any]:
    """Append one proof record and return it as the endpoint will serve it.

    ``method`` is a settlement method id; ``network`` a network name (or a ``Network``);
    ``type`` one of ``on-chain``, ``off-chain``, ``read-only``; ``tx_hash`` a 32-byte hex
    hash (required for ``on-chain``); ``explorer_url`` an http(s) link to that transaction;
    ``data`` a JSON object (at most 16 KiB encoded); ``timestamp`` defaults to now (UTC).
    Invalid input raises a :class:`~settlement_widgets.errors.SettlementValueError` and
    writes nothing.
    """
    row, entry = _proof_row(
        method, network, chain_id, step, type, tx_hash, explorer_url, data, timestamp
    )
    _insert(path, [row])
    return entry


def record_proofs(
    method: str,
    network: Any,
    chain_id: int,
    proofs: Sequence[tuple[str, str, Mapping[str, Any]]],
    *,
    path: Path | str | None = None,
) -> list[dict[str, Any] | SettlementError]:
    """Append several off-chain proofs (``(step, type, data)`` each, stamped now) in one
    transaction: one connection and one COMMIT for a burst of transfers instead of one per
    transfer (each of those opened the file, fsynced and checkpointed it on close). Returns,
    per proof, the record as served or the error that kept that one out; the valid ones
    are written together."""
    results, rows = _proof_rows(method, network, chain_id, proofs)
    if rows:
        _insert(path, rows)
    return results


def _proof_rows(
    method: str,
    network: Any,
    chain_id: int,
    proofs: Sequence[tuple[str, str, Mapping[str, Any]]],
) -> tuple[list[dict[str, Any] | SettlementError], list[tuple[Any, ...]]]:
    """Per proof its record or its error, and the rows of the valid ones."""
    results: list[dict[str, Any] | SettlementError] = []
    rows: list[tuple[Any, ...]] = []
    for step, type_, data in proofs:
        try:
            row, entry = _proof_row(method, network, chain_id, step, type_, None, None, data, None)
        except SettlementError as exc:
            results.append(exc)
            continue
        rows.append(row)
        results.append(entry)
    return results, rows


def _proof_row(
    method: str,
    network: Any,
    chain_id: int,
    step: str,
    type: str,
    tx_hash: str | None,
    explorer_url: str | None,
    data: Mapping[str, Any] | None,
    timestamp: datetime | str | None,
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The checked row of one proof and the record the endpoint will serve for it."""
    method = validate_method(method)
    name = _network_name(network)
    if isinstance(chain_id, bool) or not isinstance(chain_id, int) or chain_id <= 0:
        raise SettlementValueError(f"chain_id must be a positive integer, got {chain_id!r}")
    _check_step(step, type)
    if tx_hash is not None and (not isinstance(tx_hash, str) or not _TX_HASH.match(tx_hash)):
        raise SettlementValueError(f"tx_hash must be 0x followed by 64 hex digits, got {tx_hash!r}")
    if type == "on-chain" and tx_hash is None:
        raise SettlementValueError("an on-chain proof needs the tx_hash of its transaction")
    if explorer_url is not None and not is_link_target(explorer_url):
        raise SettlementValueError(
            "explorer_url must be an http(s) URL or a path on the Jupyter server, "
            f"got {explorer_url!r}"
        )
    encoded = _encode_data(data)
    stamp = _timestamp(timestamp)
    tx = tx_hash.lower() if tx_hash is not None else None
    row = (method, name, chain_id, step, type, tx, explorer_url, encoded, stamp)
    return row, _entry(step, type, tx, explorer_url, json.loads(encoded), stamp)


_INSERT = (
    "INSERT INTO proofs (method, network, chain_id, step, type, tx_hash, "
    "explorer_url, data, timestamp) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _check_step(step: Any, type: Any) -> None:
    if not isinstance(step, str) or not step.strip() or len(step) > _MAX_STEP:
        raise SettlementValueError(
            f"step must be a non-empty name of at most {_MAX_STEP} characters, got {step!r}"
        )
    if type not in PROOF_TYPES:
        raise UnknownOptionError(
            f"unknown proof type {type!r}; valid types: {', '.join(PROOF_TYPES)}"
        )


def _encode_data(data: Any) -> str:
    """The stored text of a proof's ``data`` (checked: an object, JSON, under the limit)."""
    payload = {} if data is None else data
    if not isinstance(payload, Mapping):
        raise SettlementValueError(f"data must be a JSON object, got {payload.__class__.__name__}")
    try:
        encoded = json.dumps(dict(payload), sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise SettlementValueError(f"data must be JSON-serialisable: {exc}") from None
    if len(encoded) > _MAX_DATA_BYTES:
        raise SettlementValueError(
            f"data is {len(encoded)} bytes encoded; keep proof data under {_MAX_DATA_BYTES} bytes"
        )
    return encoded


def _proof_data(step: Any, type: Any, data: Any) -> str:
    """:func:`_proof_row`'s checks of a proof without a transaction, and its data's text."""
    _check_step(step, type)
    if type == "on-chain":
        raise SettlementValueError("an on-chain proof needs the tx_hash of its transaction")
    return _encode_data(data)


def _insert(path: Path | str | None, rows: list[tuple[Any, ...]]) -> None:
    conn = _connect(path)
    try:
        with conn:
            conn.executemany(_INSERT, rows)
    except sqlite3.Error as exc:
        raise ConfigurationError(f"cannot write to the proof log: {exc}") from exc
    finally:
        conn.close()


class ProofWriter:
    """:func:`record_proofs` over one connection kept open, for a writer that appends
    bursts all the time (a channel provider's transfers).

    Each :func:`record_proofs` call opens the file, sets WAL, runs the schema, commits and
    closes; closing the last connection checkpoints the WAL into the database and deletes
    it, two more fsyncs. For a provider writing a burst every 50 ms that was ~2 ms of CPU
    per burst (60-100 µs per transfer). Here only the COMMIT (fsynced, as before) remains;
    SQLite's automatic checkpoint and :meth:`close` fold the WAL back. Readers (the
    endpoint) are unaffected: WAL lets them read while the connection is open.

    The path is resolved at each call as :func:`record_proofs` does (``SETTLEMENT_HOME`` may
    move, e.g. in tests): a different path closes the old connection and opens the new one.
    Calls must not overlap (one writer at a time); any thread may make them.
    """

    def __init__(self, path: Path | str | None = None) -> None:
        self._path = Path(path) if path is not None else None
        self._conn: sqlite3.Connection | None = None
        self._open_path: Path | None = None

    def _connection(self) -> sqlite3.Connection:
        target = self._path if self._path is not None else default_proofs_path()
        if self._conn is not None and self._open_path == target:
            return self._conn
        self.close()
        # handed from one worker thread to the next (never two at once): unchecked
        conn = _connect(target, check_same_thread=False)
        self._conn, self._open_path = conn, target
        return conn

    def record_proofs(
        self,
        method: str,
        network: Any,
        chain_id: int,
        proofs: Sequence[tuple[str, str, Mapping[str, Any]]],
    ) -> list[SettlementError | None]:
        """As :func:`record_proofs` (the same checks, the same rows), on the kept connection;
        per proof the error that kept it out, or ``None`` once written.

        What is the same for the whole burst (method, network, chain, the timestamp: one
        call is one instant) is checked and made once, and no record is built to return:
        per proof only its own checks and its JSON remain, a few µs instead of ~30."""
        rows: list[tuple[Any, ...]] = []
        results: list[SettlementError | None] = []
        head: tuple[Any, ...] | None = None
        for step, type_, data in proofs:
            try:
                if head is None:
                    row, _ = _proof_row(
                        method, network, chain_id, step, type_, None, None, data, None
                    )
                    head = row[:3]
                    stamp = row[8]
                else:
                    row = (*head, step, type_, None, None, _proof_data(step, type_, data), stamp)
            except SettlementError as exc:
                results.append(exc)
                continue
            rows.append(row)
            results.append(None)
        if rows:
            conn = self._connection()
            try:
                with conn:
                    conn.executemany(_INSERT, rows)
            except sqlite3.Error as exc:
                self.close()  # the next call starts on a fresh connection
                raise ConfigurationError(f"cannot write to the proof log: {exc}") from exc
        return results

    def close(self) -> None:
        """Close the connection (the WAL is checkpointed); a later call reopens it."""
        conn, self._conn, self._open_path = self._conn, None, None
        if conn is not None:
            try:
                conn.close()
            except sqlite3.Error:  # pragma: no cover - closing a broken file is best effort
                pass


def list_proofs(method: str, network: Any, *, path: Path | str | None = None) -> dict[str, Any]:
    """The proofs of ``method`` on ``network``, oldest first, as the endpoint serves them.

    ``network`` is a :class:`~settlement_widgets.networks.Network` (records are filtered by
    its name and chain id, which is reported even when there are none) or a name (filtered by
    name; ``chainId`` is the chain of the latest record, or null).
    """
    method = validate_method(method)
    name = _network_name(network)
    chain_id: int | None = getattr(network, "chain_id", None)
    query = (
        "SELECT chain_id, step, type, tx_hash, explorer_url, data, timestamp FROM proofs "
        "WHERE method = ? AND network = ?"
    )
    params: list[Any] = [method, name]
    if chain_id is not None:
        query += " AND chain_id = ?"
        params.append(chain_id)
    query += " ORDER BY id"
    conn = _connect(path)
    try:
        rows = conn.execute(query, params).fetchall()
    except sqlite3.Error as exc:
        raise ConfigurationError(f"cannot read the proof log: {exc}") from exc
    finally:
        conn.close()
    if chain_id is None and rows:
        chain_id = int(rows[-1][0])
    return {
        "method": method,
        "network": name,
        "chainId": chain_id,
        "proofs": [
            _entry(step, type_, tx, url, json.loads(data), stamp)
            for _cid, step, type_, tx, url, data, stamp in rows
        ],
    }
