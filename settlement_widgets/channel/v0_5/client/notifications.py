"""The relay's pushed updates, as :class:`~.provider.ChannelProvider` sees them
(``_NotificationsMixin``).

The relay pushes ``bu`` (balances), ``cu`` and ``channels`` (channel states) and ``tr``
(ledger transactions). Balances are parsed and emitted as ``balance``; channel states are
remembered (steps wait for them with :meth:`_wait_relay`) and applied to stored records;
``tr`` frames go to :mod:`.transfers`. Also the parsing of the relay's decimal amounts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ....errors import InvalidStateError, SettlementError, SettlementTimeoutError
from ..core import lifecycle as L
from ..core.amounts import parse_decimal_amount
from ._base import _log, _ProviderBase

__all__ = ["_NotificationsMixin"]


class _NotificationsMixin(_ProviderBase):
    """Relay notifications (``bu``/``cu``/``channels``/``tr``), waiting for the relay, and
    the relay's amounts and balances parsed into integer units."""

    def _on_notification(self, frame: Any) -> None:
        result = frame.result if isinstance(frame.result, Mapping) else {}
        method = frame.method
        if method == "bu":
            balances = self._parse_balances(result.get("balance_updates") or [])
            self._balances = balances
            self._emit("balance", dict(balances))
        elif method == "cu":
            self._on_relay_channel(result)
        elif method == "channels":
            for info in result.get("channels") or []:
                if isinstance(info, Mapping):
                    self._on_relay_channel(info)
        elif method == "tr":
            for tx in result.get("transactions") or []:
                if isinstance(tx, Mapping):
                    self._on_relay_tx(tx)

    def _changed(self) -> asyncio.Event:
        if self._relay_changed is None:
            self._relay_changed = asyncio.Event()
        return self._relay_changed

    def _note_relay_channel(self, info: Mapping[str, Any]) -> str | None:
        cid = info.get("channel_id")
        if not isinstance(cid, str):
            return None
        cid = cid.lower()
        self._relay_channels[cid] = dict(info)
        event = self._changed()
        event.set()
        self._relay_changed = asyncio.Event()
        return cid

    def _on_relay_channel(self, info: Mapping[str, Any]) -> None:
        cid = self._note_relay_channel(info)
        if cid is None:
            return
        record = self._store.get_channel(cid)
        status = info.get("status")
        if record is None or not isinstance(status, str):
            return
        updated = L.apply_relay_status(record, status)
        if updated is None:
            return
        self._store.put_channel(updated)
        self._store.add_history(
            cid, f"relay reports {status}", status=updated.status, version=updated.version
        )
        self._emit_all(self._channel_emits(updated, record))

    def _parse_amount(self, text: str, asset: str) -> int:
        decimals = self._decimals.get(asset)
        if decimals is None:
            raise InvalidStateError(f"the relay uses asset {asset!r}, which it never described")
        if text.startswith("-"):
            return -parse_decimal_amount(text[1:], decimals)
        return parse_decimal_amount(text, decimals)

    def _parse_balances(self, rows: Iterable[Any]) -> dict[str, int]:
        out: dict[str, int] = {}
        for row in rows:
            if not isinstance(row, Mapping):
                continue
            asset, amount = row.get("asset"), row.get("amount")
            if not isinstance(asset, str) or not isinstance(amount, str):
                continue
            try:
                out[asset] = self._parse_amount(amount, asset)
            except SettlementError:
                _log.warning("ignoring an unreadable balance %r %r", asset, amount)
        return out

    async def _wait_relay(
        self, channel_id: str, predicate: Callable[[Mapping[str, Any]], bool], what: str
    ) -> Mapping[str, Any]:
        """Wait until the relay reports ``channel_id`` in a state matching ``predicate``
        (notifications first; a ``get_channels`` query every second as a fallback)."""
        relay = self._require_relay()
        loop = asyncio.get_running_loop()
        timeout = self.config.request_timeout
        deadline = loop.time() + timeout
        while True:
            info = self._relay_channels.get(channel_id)
            if info is not None and predicate(info):
                return info
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise SettlementTimeoutError(
                    f"the relay has not {what} within {timeout:g} s (the on-chain part is "
                    "done and stored): await provider.recover() to retry"
                )
            changed = self._changed()
            try:
                await asyncio.wait_for(changed.wait(), min(remaining, 1.0))
            except TimeoutError:
                for found in await relay.get_channels(participant=self.wallet.address):
                    self._note_relay_channel(found)
