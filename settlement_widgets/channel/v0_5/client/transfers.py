"""Off-chain transfers of :class:`~.provider.ChannelProvider` (``_TransfersMixin``).

:meth:`transfer` sends through the relay's ledger (instant, no gas): the transfer row is
stored before the request, so an unanswered request is kept as ``unknown`` for review.
Transfers received from others arrive as the relay's ``tr`` notifications
(:meth:`_on_relay_tx`) and are stored once each. Both are emitted as ``transfer``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ....addresses import validate_address
from ....errors import (
    ChannelStateError,
    InsufficientBalanceError,
    InvalidStateError,
    RelayError,
    RelayUnavailableError,
    SettlementError,
    SettlementTimeoutError,
    SettlementValueError,
)
from ...models import Transfer
from ..core import lifecycle as L
from ..core.amounts import to_decimal_string
from ._base import _channel_key, _ProviderBase

if TYPE_CHECKING:
    from ._base import _Asset
    from .relay_client import RelayClient

__all__ = ["_TransfersMixin"]


class _TransfersMixin(_ProviderBase):
    """Sending (:meth:`transfer`) and receiving (``tr`` notifications) off-chain transfers."""

    async def transfer(self, channel_id: str, amount: int, recipient: str) -> Transfer:
        """Send ``amount`` smallest units to ``recipient`` through the relay's ledger:
        off-chain, instant, ``gas_fee == 0``. The channel must be active (v0.5 transfers move
        the unified balance; the channel is what funds it)."""
        cid = _channel_key(channel_id)
        units = L.units(amount, "amount")
        to = validate_address(recipient, field="recipient", allow_zero=False)
        if to == self.wallet.address:
            raise SettlementValueError(
                "recipient is this wallet: a transfer to yourself is refused"
            )
        await self.connect()
        record = self._record(cid)
        if record.status != L.ACTIVE:
            raise ChannelStateError(
                f"channel {cid} is {record.status}: transfers need an active channel"
            )
        asset = self._require_asset()
        if self._balances is not None and units > self._balances.get(asset.symbol, 0):
            available = (await self.balances()).get(asset.symbol, 0)
            if units > available:
                raise InsufficientBalanceError(
                    f"amount {self._amount(units)} exceeds the off-chain balance of "
                    f"{self._amount(available)}: nothing was sent"
                )
        relay = self._require_relay()
        self._transfers_in_flight += 1
        try:
            return await self._send_transfer(relay, cid, units, to, asset)
        finally:
            self._transfers_in_flight -= 1

    async def _send_transfer(
        self, relay: RelayClient, cid: str, units: int, to: str, asset: _Asset
    ) -> Transfer:
        text = to_decimal_string(units, asset.decimals)
        req = relay.transfer_request(to, [(asset.symbol, text)])
        store = self._store
        # the pending row commits before the request leaves (with the other writes of this
        # loop turn: see write_group)
        row = await self._writes.write(
            lambda: store.insert_transfer(
                store.open_transaction(),
                channel_id=cid,
                direction="out",
                from_account=self.wallet.address,
                to_account=to,
                asset=asset.symbol,
                amount=units,
                request_id=req.request_id,
            ),
            alone=self._transfers_in_flight == 1,  # sequential use: no one to share a COMMIT
        )
        assert row is not None
        try:
            response = await relay.request(req)
        except RelayError as exc:
            self._store.finish_transfer(row, status="failed", error=exc.message)
            if exc.message.startswith("insufficient funds"):
                raise InsufficientBalanceError(
                    f"the relay refused: {exc.message} ({self._amount(units)} requested)"
                ) from exc
            raise
        except (RelayUnavailableError, SettlementTimeoutError) as exc:
            # sent, but unanswered: it may have been applied. Kept as "unknown" for review.
            self._store.finish_transfer(row, status="unknown", error=str(exc))
            raise
        result = response.result if isinstance(response.result, Mapping) else {}
        txs = result.get("transactions")
        try:
            tx = txs[0]  # type: ignore[index]
            relay_id = int(tx["id"])
        except (TypeError, IndexError, KeyError, ValueError):
            self._store.finish_transfer(row, status="unknown", error=f"odd answer {result!r}")
            raise InvalidStateError(
                f"the relay accepted the transfer but its answer names no transaction: {result!r}"
            ) from None
        created = str(tx.get("created_at", ""))

        def finish() -> None:
            conn = store.open_transaction()
            store.update_transfer(conn, row, status="done", relay_tx_id=relay_id)
            store.insert_history(
                conn,
                cid,
                "transfer sent",
                amount=units,
                asset=asset.symbol,
                counterparty=to,
                detail=f"relay tx {relay_id}",
            )

        # committed before we return
        await self._writes.write(finish, alone=self._transfers_in_flight == 1)
        if self._balances is not None:
            self._balances[asset.symbol] = self._balances.get(asset.symbol, 0) - units
        self._proof_later(
            "transfer",
            "off-chain",
            data={
                "channelId": cid,
                "amount": text,
                "asset": asset.symbol,
                "recipient": to,
                "relayTxId": relay_id,
            },
        )
        transfer = Transfer(
            id=relay_id,
            channel_id=cid,
            amount=units,
            asset=asset.symbol,
            sender=self.wallet.address,
            recipient=to,
            created_at=created,
        )
        self._emit("transfer", transfer)
        return transfer

    def _on_relay_tx(self, tx: Mapping[str, Any]) -> None:
        if tx.get("tx_type") != "transfer":
            return
        me = self.wallet.address
        if tx.get("to_account") != me or tx.get("from_account") == me:
            return  # our own transfers are recorded by transfer()
        try:
            relay_id = int(tx["id"])
            asset = str(tx["asset"])
            amount = self._parse_amount(str(tx["amount"]), asset)
        except (KeyError, TypeError, ValueError, SettlementError):
            return
        channel = self._open_channel_for_token()
        cid = channel.channel_id if channel is not None else None
        with self._store.transaction(durable=False):
            row = self._store.add_transfer(
                channel_id=cid,
                direction="in",
                from_account=str(tx.get("from_account")),
                to_account=me,
                asset=asset,
                amount=amount,
                status="done",
                relay_tx_id=relay_id,
            )
            if row is not None and cid is not None:
                self._store.add_history(
                    cid,
                    "transfer received",
                    amount=amount,
                    asset=asset,
                    counterparty=str(tx.get("from_account")),
                    detail=f"relay tx {relay_id}",
                )
        if row is None:
            return  # seen before
        self._emit(
            "transfer",
            Transfer(
                id=relay_id,
                channel_id=cid,
                amount=amount,
                asset=asset,
                sender=str(tx.get("from_account")),
                recipient=me,
                created_at=str(tx.get("created_at", "")),
                direction="in",
            ),
        )

    def _open_channel_for_token(self) -> L.ChannelRecord | None:
        open_ = [
            r
            for r in self._store.list_channels()
            if r.token == self.config.token and r.status != L.FINAL
        ]
        return open_[-1] if open_ else None
