"""The v1 provider's off-chain side: transfers, their history, ``sync`` and balances."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ....addresses import validate_address
from ....errors import (
    InvalidAmountError,
    InvalidStateError,
    RelayError,
)
from ...models import Transfer
from .base import (
    _SEND,
)
from .cross_chain import CrossChainOps
from .store import StoredTransfer

__all__ = ["TransferOps"]


class TransferOps(CrossChainOps):
    """Off-chain transfers and the node's view of this wallet."""

    # --- transfers ----------------------------------------------------------------------

    async def transfer(self, channel_id: str | None, amount: int, recipient: str) -> Transfer:
        """Send ``amount`` off-chain to ``recipient``: one state the wallet signs and the
        node co-signs; instant, no gas. The recipient needs no channel to receive."""
        await self.connect()
        recipient = validate_address(recipient, field="recipient", allow_zero=False)
        if not amount:
            raise InvalidAmountError("a transfer must be positive")
        display = self._display(amount)
        async with self._op_lock:
            self._open_channel_id(channel_id)
            state = await self._transfer_state(recipient, display)
            # the node's signature and the history line: one COMMIT, not fsynced, as the
            # write-ahead before it (ProviderV1Base._on_signed): the node fsynced the state
            # before it co-signed, so a transfer acknowledged here is durable there; a
            # killed process keeps both commits, and what a power cut takes sync() gives
            # back (the node's latest state and the history line)
            with self.store.transaction(durable=False):
                self.store.put_state(state)
                transfer = self._record_transfer(state, "out", recipient)
        self._emit("transfer", transfer)
        return transfer

    async def _transfer_state(self, recipient: str, display: str) -> dict[str, Any]:
        """The co-signed transfer state, in one round trip when we hold the latest state.

        The SDK asks the node for the latest state before every transfer (two round trips).
        The state this wallet last co-signed is in the store; built on it, the transfer is
        one ``submit_state``. If the node has moved on (a transfer received, another client
        of the same wallet), it refuses the state as stale, the refused state is dropped
        from the store (:meth:`_node_may_refuse`), and the transfer goes the SDK's way. Any
        refusal falls back, not only a version mismatch: the node's wording is not an API,
        and a refusal for another reason (too little balance) comes back the same on the
        SDK's path, which raises it. A lost connection is not a refusal and is not retried
        (the node may have the state)."""
        held = self._held_state()
        if held is not None:
            try:
                async with self._node_may_refuse():
                    return await self._client.transfer_from(held, recipient, self._asset, display)
            except (RelayError, InvalidStateError):
                pass  # stale, or refused: the SDK's way below decides
        async with self._node_may_refuse():
            return await self._client.transfer(recipient, self._asset, display)

    def _held_state(self) -> dict[str, Any] | None:
        """The latest state of our channel, if both sides signed it and it is the newest
        state we have (a state still waiting for the node's signature is left to the
        SDK's way, which asks the node)."""
        state = self.store.latest_state(self._asset)
        if state is None or not state.get("user_sig") or not state.get("node_sig"):
            return None
        return state  # a finalized channel's state is refused by transfer_from, unsent

    def _record_transfer(self, state: Mapping[str, Any], direction: str, other: str) -> Transfer:
        transition = state["transition"]
        row = self.store.put_transfer(
            str(transition["tx_id"]),
            direction=direction,
            asset=self._asset,
            amount=str(transition["amount"]),
            counterparty=other,
        )
        if row is not None:
            return self._public_transfer(row, state.get("home_channel_id"))
        return self._transfer_row(str(transition["tx_id"]), direction, state.get("home_channel_id"))

    def _transfer_row(self, tx_id: str, direction: str, channel_id: Any = None) -> Transfer:
        row = self.store.transfer(tx_id, direction)
        assert row is not None  # just written
        return self._public_transfer(row, channel_id)

    def _public_transfer(self, row: StoredTransfer, channel_id: Any = None) -> Transfer:
        sender, recipient = (
            (self.address, row.counterparty)
            if row.direction == "out"
            else (row.counterparty, self.address)
        )
        from datetime import UTC, datetime

        return Transfer(
            id=row.row,
            channel_id=str(channel_id) if channel_id else None,
            amount=self._units(row.amount),
            asset=row.asset,
            sender=sender,
            recipient=recipient,
            created_at=datetime.fromtimestamp(row.created_at, UTC).isoformat(),
            direction=row.direction,
        )

    def transfers(self) -> list[Transfer]:
        """Every transfer sent and received (as far as :meth:`sync` has seen), oldest first."""
        return [self._public_transfer(r) for r in self.store.transfers()]

    async def sync(self) -> dict[str, Any] | None:
        """Read what the node holds for us (v1 nodes push nothing): transfers since the last
        sync are recorded once each (the node's history, keyed by its transaction id):
        received ones, and sent ones this store does not have (another client of the same
        wallet, or a transfer whose unsynced rows a power cut took, see :meth:`transfer`);
        a node-issued latest state (a receive, a release) is acknowledged (co-signed) when
        we hold a channel, so the channel's latest co-signed state includes it. Returns the
        latest state."""
        await self.connect()
        async with self._op_lock:
            for tx in await self._node_history():
                sender = validate_address(tx["from_account"], field="from_account")
                receiver = validate_address(tx["to_account"], field="to_account")
                if receiver == self.address:
                    direction, other = "in", sender
                elif sender == self.address:
                    direction, other = "out", receiver
                else:
                    continue
                row = self.store.put_transfer(
                    str(tx["id"]),
                    direction=direction,
                    asset=self._asset,
                    amount=str(tx["amount"]),
                    counterparty=other,
                )
                if row is not None:
                    self._emit("transfer", self._public_transfer(row))
            state = await self._latest_state()
            if state is None or state.get("user_sig"):
                return state
            if state.get("home_channel_id") and self._has_open_channel():
                async with self._node_may_refuse():
                    state = await self._client.acknowledge(self._asset)
                self.store.put_state(state)
            return state

    async def _node_history(self) -> list[dict[str, Any]]:
        """Every transfer the node records for this wallet, oldest first, page by page."""
        out: list[dict[str, Any]] = []
        offset = 0
        while True:
            page = await self._client.get_transactions(
                self.address,
                asset=self._asset,
                tx_type=_SEND,
                pagination={"offset": offset, "limit": 100, "sort": "asc"},
            )
            items = list(page.get("transactions", ()))
            out.extend(items)
            offset += len(items)
            if not items or offset >= int(page.get("metadata", {}).get("total_count", 0)):
                return out

    def _has_open_channel(self) -> bool:
        return any(c["status"] != "final" for c in self.store.channels())

    async def balances(self) -> dict[str, int]:
        """``{asset: units}``: what the node's ledger says the wallet holds off-chain."""
        await self.connect()
        entries = await self._client.get_balances(self.address)
        out = {str(e["asset"]): self._units(e["amount"]) for e in entries}
        self._emit("balance", out)
        return out
