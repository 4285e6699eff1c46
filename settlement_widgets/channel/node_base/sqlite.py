"""The SQLite connection both versions' nodes keep their ledgers on: WAL, explicit transactions.

Autocommit mode (``isolation_level=None``): every transaction is an explicit
``BEGIN``/``COMMIT``, so the group committer decides what one COMMIT holds; WAL lets readers
run beside the writer; ``synchronous`` is the node's durability setting (``FULL``: every
COMMIT is fsynced).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

__all__ = ["connect"]


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
