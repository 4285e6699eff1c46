"""The channel store's history: off-chain ``transfers`` and the channel timeline (``history``).

- ``transfers``: each off-chain transfer is written ``pending`` before it is sent, then
  ``done``/``failed`` (or ``unknown`` when the answer was lost). Its truth is the relay's
  ledger, so these writes are not fsynced (``durable=False``).
- ``history``: the human-readable rows behind ``ChannelProvider.history()``; a chain event
  is written once, keyed by its transaction hash and log index, whichever of our receipt
  and the custody watcher reports it first.

Both are mixins of :class:`~settlement_widgets.channel.v0_5.client.store.ChannelStore` (see
:mod:`.store_rows` for :class:`~.store_rows.StoreAccess`, what they build on).
"""

from __future__ import annotations

from typing import Any

from .store_rows import StoreAccess
from .store_schema import HISTORY_COLUMNS, utc_timestamp

__all__ = ["HistoryRows", "TransferRows"]


class TransferRows(StoreAccess):
    """``transfers``: off-chain transfer history."""

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
        with self.transaction(durable=False) as c:
            return self.insert_transfer(
                c,
                channel_id=channel_id,
                direction=direction,
                from_account=from_account,
                to_account=to_account,
                asset=asset,
                amount=amount,
                status=status,
                request_id=request_id,
                relay_tx_id=relay_tx_id,
            )

    @staticmethod
    def insert_transfer(
        c: Any,
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
        """:meth:`add_transfer` on ``c`` inside a transaction the caller holds (a
        :class:`~.write_group.WriteGroup` write): no nested transaction to enter and leave."""
        now = utc_timestamp()
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
            self.update_transfer(c, row_id, status=status, relay_tx_id=relay_tx_id, error=error)

    @staticmethod
    def update_transfer(
        c: Any,
        row_id: int,
        *,
        status: str,
        relay_tx_id: int | None = None,
        error: str | None = None,
    ) -> None:
        """:meth:`finish_transfer` on ``c`` inside a transaction the caller holds."""
        c.execute(
            "UPDATE transfers SET status = ?, relay_tx_id = COALESCE(?, relay_tx_id), "
            "error = ?, updated_at = ? WHERE id = ?",
            (status, relay_tx_id, error, utc_timestamp(), row_id),
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


class HistoryRows(StoreAccess):
    """``history``: the channel timeline (columns :data:`~.store_schema.HISTORY_COLUMNS`)."""

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
        with self.transaction() as c:
            return self.insert_history(
                c,
                channel_id,
                event,
                status=status,
                version=version,
                intent=intent,
                amount=amount,
                asset=asset,
                counterparty=counterparty,
                tx_hash=tx_hash,
                detail=detail,
                cursor=cursor,
            )

    @staticmethod
    def insert_history(
        c: Any,
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
        """:meth:`add_history` on ``c`` inside a transaction the caller holds."""
        block, log_index = cursor if cursor is not None else (None, None)
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
                utc_timestamp(),
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
