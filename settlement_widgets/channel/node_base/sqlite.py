"""The SQLite connection both versions' nodes keep their ledgers on: WAL, explicit transactions.

:func:`open_ledger_file` creates a ledger file (mode 0600: it may hold a generated sandbox
key), applies its schema and loads it; :func:`check_schema_version` refuses a file another
schema wrote. Autocommit mode (``isolation_level=None``): every transaction is an explicit
``BEGIN``/``COMMIT``, so the group committer decides what one COMMIT holds; WAL lets readers
run beside the writer; ``synchronous`` is the node's durability setting (``FULL``: every
COMMIT is fsynced).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path

from ...errors import ConfigurationError

__all__ = ["check_schema_version", "connect", "open_ledger_file"]


def connect(path: Path, *, synchronous: str = "FULL", readonly: bool = False) -> sqlite3.Connection:
    """A connection in WAL mode (autocommit: transactions are explicit ``BEGIN``/``COMMIT``)."""
    if readonly:
        conn = sqlite3.connect(
            f"file:{path}?mode=ro", uri=True, isolation_level=None, check_same_thread=False
        )
    else:
        conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    conn.execute("PRAGMA busy_timeout=5000")
    conn.row_factory = sqlite3.Row
    return conn


def open_ledger_file(
    path: Path, *, schema: str, synchronous: str, load: Callable[[sqlite3.Connection], None]
) -> None:
    """Create ``path`` if needed (0600), run ``schema`` (idempotent DDL) and ``load`` it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = not path.exists()
    conn = connect(path, synchronous=synchronous)
    if fresh:
        os.chmod(path, 0o600)
    try:
        conn.executescript(schema)
        load(conn)
    finally:
        conn.close()


def check_schema_version(
    meta: Mapping[str, str], expected: str, *, database: str, set_version: Callable[[str], None]
) -> None:
    """Record ``expected`` in a new ledger's ``meta``; refuse one written by another schema
    (``database`` names it in the error) with :class:`ConfigurationError`."""
    found = meta.get("schema_version")
    if found is None:
        set_version(expected)
    elif found != expected:
        raise ConfigurationError(
            f"{database} has schema version {found}, this node writes {expected}: "
            "start with a new database file"
        )
