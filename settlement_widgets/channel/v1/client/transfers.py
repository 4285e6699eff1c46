"""The v1 provider's off-chain side: transfers, their history, ``sync`` and balances."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from ....addresses import validate_address
from ....errors import (
    InvalidAmountError,
    InvalidStateError,
    RelayError,
)
from ...models import Transfer
from ..core.wire import Frame
from .base import (
    _SEND,
)
from .cross_chain import CrossChainOps
from .rpc_client import REQUEST_SENT, V1RpcClient
from .store import StoredTransfer

__all__ = ["TransferOps"]

_SUBMIT_STATE: Final = "channels.v1.submit_state"


@dataclass(frozen=True, eq=False)
class _InFlight:
    """A transfer state sent and not yet answered: the state (written ahead, our signature)
    and the task awaiting the node's reply."""

    state: dict[str, Any]
    task: asyncio.Future[dict[str, Any]]


class TransferOps(CrossChainOps):
    """Off-chain transfers and the node's view of this wallet."""

    # --- transfers ----------------------------------------------------------------------

    async def transfer(self, channel_id: str | None, amount: int, recipient: str) -> Transfer:
        """Send ``amount`` off-chain to ``recipient``: one state the wallet signs and the
        node co-signs; instant, no gas. The recipient needs no channel to receive.

        Concurrent calls are pipelined (:meth:`_send_pipelined`): each state is built on the
        one before it, co-signed or still in flight, and the next is sent before the first
        is answered, so the node commits many in one fsync and the client does not wait a
        round trip per transfer."""
        await self.connect()
        recipient = validate_address(recipient, field="recipient", allow_zero=False)
        if not amount:
            raise InvalidAmountError("a transfer must be positive")
        display = self._display(amount)
        async with self._op_lock:
            self._open_channel_id(channel_id)
            flight = await self._send_pipelined(recipient, display)
            if flight is None:  # nothing to build on here: the SDK's way, under the lock
                async with self._node_may_refuse():
                    state = await self._client.transfer(recipient, self._asset, display)
                return self._transfer_done(state, recipient)
        state = await self._pipelined_reply(flight, recipient, display)
        return await self._transfer_recorded(state, recipient)

    def _transfer_done(self, state: Mapping[str, Any], recipient: str) -> Transfer:
        """Keep the co-signed ``state`` and its history line."""
        # the node's signature and the history line: one COMMIT, not fsynced, as the
        # write-ahead before it (ProviderV1Base._on_signed): the node fsynced the state
        # before it co-signed, so a transfer acknowledged here is durable there; a
        # killed process keeps both commits, and what a power cut takes sync() gives
        # back (the node's latest state and the history line)
        with self.store.transaction(durable=False):
            transfer = self._store_transfer(state, recipient)
        self._emit("transfer", transfer)
        return transfer

    async def _transfer_recorded(self, state: Mapping[str, Any], recipient: str) -> Transfer:
        """:meth:`_transfer_done` for a pipelined transfer, in one COMMIT with the others
        answered in the same turn of the event loop (the node answers a pipeline in bursts,
        one group commit at a time): each caller still returns only once its own rows are
        committed. With nothing left in flight it is written at once, with anything
        waiting: the next transfer builds on the store's latest state, which must then
        carry the node's signature (see :meth:`_held_state`)."""
        future: asyncio.Future[Transfer] = asyncio.get_running_loop().create_future()
        if not self._done_batch and self._pipeline:
            asyncio.get_running_loop().call_soon(self._flush_done)
        self._done_batch.append((state, recipient, future))
        if not self._pipeline:
            self._flush_done()
        # a caller cancelled now cancels only its future: the batch still stores its rows
        return await future

    def _flush_done(self) -> None:
        """Store every transfer waiting in :attr:`_done_batch` in one transaction, then
        answer their callers; if that fails, each is stored (or fails) on its own, as
        :meth:`_transfer_done` would have."""
        batch, self._done_batch = self._done_batch, []
        if not batch:
            return
        try:
            with self.store.transaction(durable=False):
                done = [self._store_transfer(state, recipient) for state, recipient, _ in batch]
        except Exception:
            for state, recipient, future in batch:
                try:
                    transfer = self._transfer_done(state, recipient)
                except Exception as exc:
                    if not future.done():
                        future.set_exception(exc)
                else:
                    if not future.done():
                        future.set_result(transfer)
            return
        for (_, _, future), transfer in zip(batch, done, strict=True):
            self._emit("transfer", transfer)
            if not future.done():
                future.set_result(transfer)

    def _store_transfer(self, state: Mapping[str, Any], recipient: str) -> Transfer:
        """The node's signature and the history line of a sent transfer (in the caller's
        transaction)."""
        self.store.put_state(state)
        return self._record_transfer(state, "out", recipient)

    async def _send_pipelined(self, recipient: str, display: str) -> _InFlight | None:
        """Build the transfer on the newest state this wallet signed and send it (under
        ``_op_lock``, which the caller releases once it is sent, not answered).

        The base is the last state still in flight, else the latest co-signed state in the
        store (:meth:`_held_state`). None (the caller goes the SDK's way, which asks the
        node) when there is no such state, when a state in flight was refused (those sent
        after it will be refused too: their predecessor is not the node's latest), or when
        the state is refused before it leaves (an invalid advancement, e.g. too little
        balance: the SDK's way raises it from the node's latest). A lost connection raises.
        """
        if self._pipeline_broken:
            return None
        base = self._pipeline[-1].state if self._pipeline else self._held_state()
        if base is None:
            return None
        left: asyncio.Future[Mapping[str, Any]] = asyncio.get_running_loop().create_future()

        def on_sent(client: V1RpcClient, request: Frame) -> None:
            # synchronous with the send, in the task that signed: the state it wrote ahead
            # (the task's context reaches whatever it awaits, another provider's client too)
            if client is self._client and request.method == _SUBMIT_STATE and not left.done():
                assert self._last_signed is not None  # on_signed ran before the send
                left.set_result(self._last_signed)

        async def send() -> dict[str, Any]:
            REQUEST_SENT.set(on_sent)  # this task's context only
            return await self._client.transfer_from(base, recipient, self._asset, display)

        task = asyncio.ensure_future(send())
        try:
            await asyncio.wait((task, left), return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            task.cancel()
            raise
        if not left.done():  # the task ended before the state left
            left.cancel()
            error = task.exception()
            if isinstance(error, InvalidStateError | RelayError):
                return None  # refused before sending (nothing of ours was written)
            # it ended after its state was written ahead (a lost connection): nothing more
            # is built on the states in flight, or the next transfer would take that
            # state's version and overwrite it in the store (recovery would then send
            # another transfer in its place); cleared as usual once they have landed
            if self._pipeline:
                self._pipeline_broken = True
            return _InFlight(dict(task.result()), task)  # raises what ended it
        flight = _InFlight(dict(left.result()), task)
        self._pipeline.append(flight)
        return flight

    async def _pipelined_reply(
        self, flight: _InFlight, recipient: str, display: str
    ) -> dict[str, Any]:
        """The node's answer to a pipelined state: the co-signed state, or on a refusal the
        refused state dropped from the store and the transfer sent again the SDK's way
        (which raises a real refusal); a lost connection is not retried (the node may
        have the state)."""
        try:
            state = await flight.task
        except BaseException as exc:
            self._pipeline_broken = True  # followers in flight build on a state not co-signed
            self._land(flight)
            if not isinstance(exc, RelayError):
                raise
            self.store.forget_refused(flight.state)
        else:
            self._land(flight)  # and, without a pause, its signature stored by the caller
            return state
        async with self._op_lock, self._node_may_refuse():
            return await self._client.transfer(recipient, self._asset, display)

    def _land(self, flight: _InFlight) -> None:
        """``flight`` is answered: off the pipeline; an empty pipeline is whole again."""
        if flight in self._pipeline:  # not if its client never reported the send
            self._pipeline.remove(flight)
        if not self._pipeline:
            self._pipeline_broken = False

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
