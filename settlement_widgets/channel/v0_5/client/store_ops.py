"""The channel store's write-ahead log: the ``operations`` and ``journal`` tables.

An operation (:class:`~.plans.Operation`) is stored with its whole step plan before the first
step runs; each step is journaled ``start`` before it runs and ``done`` (or ``failed`` /
``interrupted``) after, in the same transaction as the data it produced. A restarted
provider reads :meth:`OperationRows.unfinished_operations` to resume.

:class:`OperationRows` is a mixin of
:class:`~settlement_widgets.channel.v0_5.client.store.ChannelStore`
(see :mod:`.store_rows` for :class:`~.store_rows.StoreAccess`, what it builds on).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..core.plans import Operation
from .store_rows import StoreAccess
from .store_schema import utc_timestamp

__all__ = ["OperationRows"]


class OperationRows(StoreAccess):
    """``operations`` (one row per user operation, its plan and progress) and ``journal``
    (one row per step phase)."""

    def begin_operation(
        self,
        kind: str,
        channel_id: str | None,
        steps: tuple[str, ...],
        params: Mapping[str, Any],
    ) -> Operation:
        """Store a new operation (its whole plan) before its first step runs."""
        now = utc_timestamp()
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
                    utc_timestamp(),
                    op.id,
                ),
            )

    def journal(
        self, op_id: int, step: str, phase: str, data: Mapping[str, Any] | None = None
    ) -> None:
        with self.transaction() as c:
            c.execute(
                "INSERT INTO journal (op_id, step, phase, data, at) VALUES (?,?,?,?,?)",
                (op_id, step, phase, json.dumps(dict(data or {})), utc_timestamp()),
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
