"""Transactions and proofs of :class:`~.provider.ChannelProvider` (``_TransactionsMixin``).

A transaction is sent at most once per (operation, step): its hash is stored as soon as it
is signed, and a later run follows a recorded hash to its receipt instead of sending again.
Also here: :class:`Tx` values for mined transactions, finding a step's transaction by its
custody event, and the proof log (on-chain proofs written at once, off-chain ones batched).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Final

from ....errors import InvalidStateError, SettlementError, TransactionFailedError
from ...models import Tx
from ..chain.custody import CustodyTx
from ..chain.custody_events import CustodyEvent
from ..core import lifecycle as L
from ._base import _TX_NAMES, _log, _ProviderBase

__all__ = ["_TransactionsMixin"]

#: how long off-chain proofs wait to be written together (seconds)
_PROOF_BATCH_DELAY: Final = 0.05


def _hex(value: Any) -> str:
    if isinstance(value, str):
        return value if value.startswith("0x") else "0x" + value
    return "0x" + bytes(value).hex()


class _TransactionsMixin(_ProviderBase):
    """Sending and following custody transactions; recording proofs."""

    def _explorer_url(self, tx_hash: str) -> str | None:
        return self._explorer.tx_url(tx_hash) if self._explorer is not None else None

    async def _receipt(self, tx_hash: str) -> Any:
        """The receipt of a recorded transaction, waiting if it is still pending; None when
        the node never saw it (signed and recorded, then the process died before sending)."""
        from web3.exceptions import TransactionNotFound

        w3 = self.wallet.w3
        try:
            return await self._chain(w3.eth.get_transaction_receipt(tx_hash))  # type: ignore[arg-type]
        except TransactionNotFound:
            pass
        try:
            await self._chain(w3.eth.get_transaction(tx_hash))  # type: ignore[arg-type]
        except TransactionNotFound:
            return None
        return await self.wallet.wait(tx_hash, abis=self.custody.error_abis)

    async def _send_tx(
        self, op: L.Operation, step: str, call: Any, channel_id: str | None
    ) -> CustodyTx:
        """Send ``call`` once per (operation, step): a transaction recorded by an earlier run
        is followed to its receipt instead of being sent again."""
        await self._ensure_chain()
        recorded = self._store.tx_for(op.id, step)
        if recorded is not None and recorded[1] in ("pending", "confirmed"):
            receipt = await self._receipt(recorded[0])
            if receipt is not None:
                return await self._settled(recorded[0], receipt, channel_id)
            self._store.set_tx_status(recorded[0], "dropped")
        signed: list[str] = []

        def on_signed(tx_hash: str) -> None:
            signed.append(tx_hash)
            self._store.add_tx(tx_hash, step=step, channel_id=channel_id, op_id=op.id)

        try:
            tx_hash = await self.wallet.send(
                call, abis=self.custody.error_abis, on_signed=on_signed
            )
        except TransactionFailedError:
            for h in signed:
                self._store.set_tx_status(h, "dropped")
            raise
        try:
            receipt = await self.wallet.wait(tx_hash, abis=self.custody.error_abis)
        except TransactionFailedError as exc:
            self._store.set_tx_status(tx_hash, "reverted")
            if exc.error_name is None and exc.tx_hash:
                raise await self.custody.explain_failure(exc) from exc
            raise
        return await self._settled(tx_hash, receipt, channel_id)

    async def _settled(self, tx_hash: str, receipt: Any, channel_id: str | None) -> CustodyTx:
        if int(receipt["status"]) != 1:
            self._store.set_tx_status(tx_hash, "reverted")
            failure = TransactionFailedError(f"transaction {tx_hash} reverted", tx_hash=tx_hash)
            raise await self.custody.explain_failure(failure)
        self._store.set_tx_status(tx_hash, "confirmed", int(receipt["blockNumber"]))
        return self.custody.result(receipt, channel_id=channel_id)

    async def _tx(self, tx_hash: str, step: str, channel_id: str | None) -> Tx:
        """A :class:`Tx` for a mined transaction (its receipt read from the chain)."""
        receipt = await self._chain(self.wallet.w3.eth.get_transaction_receipt(tx_hash))  # type: ignore[arg-type]
        return Tx(
            hash=_hex(receipt["transactionHash"]),
            explorer_url=self._explorer_url(_hex(receipt["transactionHash"])),
            step=_TX_NAMES.get(step, step),
            channel_id=channel_id,
            block_number=int(receipt["blockNumber"]),
            gas_used=int(receipt["gasUsed"]),
            status=int(receipt["status"]),
            events=self.custody.decode_receipt(receipt),
            receipt=dict(receipt),
        )

    async def _find_event(self, channel_id: str, name: str) -> CustodyEvent | None:
        events = await self._chain(
            self.custody.get_events(0, "latest", names=[name], channel_id=channel_id)
        )
        return events[-1] if events else None

    async def _tx_of_event(self, channel_id: str, name: str) -> CustodyTx:
        event = await self._find_event(channel_id, name)
        if event is None:
            raise InvalidStateError(
                f"the chain shows channel {channel_id} past this step, but no {name} event"
            )
        receipt = await self._chain(self.wallet.w3.eth.get_transaction_receipt(event.tx_hash))  # type: ignore[arg-type]
        return self.custody.result(receipt, channel_id=channel_id)

    def _proof_later(self, step: str, type_: str, *, data: Mapping[str, Any]) -> None:
        """Queue an off-chain proof: the proof log's commit (an fsync, a connection) must not
        add to a transfer's latency. A burst is written in one worker-thread call after
        ``_PROOF_BATCH_DELAY``; :meth:`flush_proofs` (and :meth:`close`) wait for it."""
        self._proof_queue.append((step, type_, dict(data)))
        if self._proof_writer is None or self._proof_writer.done():
            self._proof_writer = asyncio.get_running_loop().create_task(self._write_proofs())

    async def _write_proofs(self) -> None:
        while self._proof_queue:
            await asyncio.sleep(_PROOF_BATCH_DELAY)  # let a burst of transfers accumulate
            batch, self._proof_queue = self._proof_queue, []

            def write(items: list[tuple[str, str, dict[str, Any]]] = batch) -> None:
                config = self.config
                try:  # the whole burst in one transaction of the proof log
                    results = self._proof_log.record_proofs(
                        "channel", config.network_name, config.chain_id, items
                    )
                except Exception:  # bookkeeping: log, never break the writer
                    _log.exception("could not record %d proofs", len(items))
                    return
                for (step, _, _), result in zip(items, results, strict=True):
                    if result is not None:
                        _log.warning("could not record the %s proof: %s", step, result)

            await asyncio.to_thread(write)

    async def flush_proofs(self) -> None:
        """Wait until every proof queued in the background is written."""
        while self._proof_writer is not None and not self._proof_writer.done():
            await asyncio.shield(self._proof_writer)

    def _proof(
        self,
        step: str,
        type_: str,
        *,
        tx_hash: str | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> None:
        from ....proofs import record_proof

        try:
            record_proof(
                "channel",
                self.config.network_name,
                self.config.chain_id,
                step,
                type_,
                tx_hash=tx_hash,
                explorer_url=self._explorer_url(tx_hash) if tx_hash else None,
                data=data or {},
            )
        except SettlementError as exc:  # bookkeeping after the fact: never fail the step
            _log.warning("could not record the %s proof: %s", step, exc)
