"""Reading :class:`~.provider.ChannelProvider`'s channels (``_ReadingMixin``).

:meth:`channels`, :meth:`get_channel` and :meth:`history` (a DataFrame) read the store only
(no I/O); :meth:`_public` turns a stored record into the public :class:`Channel`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...models import Channel
from ..core import lifecycle as L
from ._base import _TX_NAMES, _channel_key, _ProviderBase
from .store import HISTORY_COLUMNS

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["_ReadingMixin"]


class _ReadingMixin(_ProviderBase):
    """The store's channels as :class:`Channel` values, and their history."""

    def _public(self, record: L.ChannelRecord) -> Channel:
        times = self._store.channel_times(record.channel_id) or (None, None)
        states = self._store.states(record.channel_id)
        return Channel(
            id=record.channel_id,
            status=record.status,
            version=record.version,
            intent=record.intent.name,
            state_hash=record.state_hash,
            adjudicator=record.definition.adjudicator,
            challenge_period=record.definition.challenge,
            nonce=record.definition.nonce,
            tx_hashes={
                _TX_NAMES.get(step, step): tx
                for step, tx in self._store.tx_hashes(record.channel_id).items()
            },
            participants=record.definition.participants,
            token=record.token,
            amount=record.amount,
            chain_id=record.chain_id,
            asset=self.asset if record.token == self.config.token else None,
            challenge_expiry=record.challenge_expiry or None,
            proofs_count=sum(1 for s in states if len(s.state.sigs) == 2),
            created_at=times[0],
            updated_at=times[1],
        )

    def channels(self) -> list[Channel]:
        """Every channel in the store, oldest first (closed ones included)."""
        return [self._public(r) for r in self._store.list_channels()]

    def get_channel(self, channel_id: str) -> Channel:
        """The channel ``channel_id`` (:class:`ChannelNotFoundError` if unknown)."""
        return self._public(self._record(_channel_key(channel_id)))

    def history(self, channel_id: str) -> pd.DataFrame:
        """The channel's timeline (signed states, transactions, transfers, status changes)
        as a DataFrame: ``time``, ``event``, ``status``, ``version``, ``intent``, ``amount``,
        ``asset``, ``counterparty``, ``tx_hash``, ``explorer_url``, ``detail``."""
        import pandas as pd

        cid = self._record(_channel_key(channel_id)).channel_id
        rows = self._store.history(cid)
        for row in rows:
            tx = row.get("tx_hash")
            row["explorer_url"] = self._explorer_url(tx) if tx else None
        columns = [*HISTORY_COLUMNS[:-1], "explorer_url", HISTORY_COLUMNS[-1]]
        frame = pd.DataFrame(rows, columns=columns)
        frame["time"] = pd.to_datetime(frame["time"], utc=True)
        frame["version"] = frame["version"].astype("Int64")
        # exact integers (uint256 does not fit int64); None where a row has no amount
        frame["amount"] = pd.Series(
            [row["amount"] for row in rows], index=frame.index, dtype=object
        )
        return frame

    def pending_work(self) -> dict[str, Any]:
        """What is half-done (see :meth:`ChannelStore.pending_work`)."""
        return self._store.pending_work()
