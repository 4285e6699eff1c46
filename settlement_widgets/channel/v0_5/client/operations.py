"""The write-ahead runner of :class:`~.provider.ChannelProvider`'s operations
(``_OperationsMixin``).

An operation (create, resize, withdraw, close, challenge, checkpoint) is stored with its
step plan (:mod:`.lifecycle`) before it starts; :meth:`_drive` journals each step before it
runs and commits the step's results and store writes in the same SQLite transaction that
marks it done, so a later provider over the same store resumes it (:meth:`_recover`). The
steps themselves are in :mod:`.steps`; the helpers they share (countersigning, persisting a
signed state, receipt and history writes) are here. Operations on one channel are serialized
by a per-channel lock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Final

from ....errors import (
    ChannelNotFoundError,
    ChannelStateError,
    InvalidSignatureError,
    InvalidStateError,
    SettlementError,
)
from ...models import StepEvent
from ..chain.custody import CustodyTx
from ..core import lifecycle as L
from ..core.ids import packed_state
from ..core.ids import state_hash as compute_state_hash
from ..core.signing import recover_state_signer
from ..core.types import State
from ._base import _TX_NAMES, _log, _ProviderBase, _StepResult

__all__ = ["_OperationsMixin", "_StepResult"]

_PROOF_STEPS: Final = {
    "submit_create": "create_channel",
    "approve": "approve",
    "deposit": "deposit",
    "submit_resize": "resize_channel",
    "submit_close": "close_channel",
    "withdraw": "withdraw",
    "challenge": "challenge",
    "checkpoint": "checkpoint",
}


class _OperationsMixin(_ProviderBase):
    """Running, journaling and resuming operations; the helpers their steps share."""

    def _lock_for(self, channel_id: str | None) -> asyncio.Lock:
        key = channel_id or "-"
        lock = self._channel_locks.get(key)
        if lock is None:
            lock = self._channel_locks[key] = asyncio.Lock()
        return lock

    def _check_no_unfinished(self, channel_id: str) -> None:
        for op in self._store.unfinished_operations():
            if op.channel_id == channel_id:
                raise ChannelStateError(
                    f"channel {channel_id} has an unfinished {op.kind} (operation {op.id}, "
                    f"next step {op.next_step}, {op.status}: {op.error or 'not resumed yet'}); "
                    "await provider.recover() to finish it first"
                )

    async def _run(
        self,
        kind: str,
        channel_id: str | None,
        plan: tuple[tuple[str, ...], dict[str, Any]],
    ) -> L.Operation:
        steps, params = plan
        op = self._store.begin_operation(kind, channel_id, steps, params)
        return await self._drive(op)

    async def _drive(self, op: L.Operation) -> L.Operation:
        """Run the remaining steps of ``op``, journaling each before and after."""
        runners: dict[str, Callable[[L.Operation], Any]] = {
            "rpc_create": self._step_rpc_create,
            "submit_create": self._step_submit_create,
            "approve": self._step_approve,
            "deposit": self._step_deposit,
            "rpc_resize": self._step_rpc_resize,
            "submit_resize": self._step_submit_resize,
            "await_relay": self._step_await_relay,
            "rpc_close": self._step_rpc_close,
            "submit_close": self._step_submit_close,
            "withdraw": self._step_withdraw,
            "challenge": self._step_challenge,
            "checkpoint": self._step_checkpoint,
        }
        self._store.save_operation(op)
        while (step := op.next_step) is not None:
            self._store.journal(op.id, step, "start")
            self._emit("step", StepEvent(op.id, op.kind, op.channel_id, step, "start"))
            try:
                outcome: _StepResult = await runners[step](op)
            except BaseException as exc:
                status = L.failure_status(exc)
                message = str(exc) or type(exc).__name__
                op = op.fail(status, message)
                with self._store.transaction():
                    self._store.save_operation(op)
                    self._store.journal(op.id, step, status, {"error": message})
                self._emit("step", StepEvent(op.id, op.kind, op.channel_id, step, status, message))
                raise
            emits: list[tuple[str, Any]] = []
            with self._store.transaction():
                if outcome.write is not None:
                    emits = outcome.write()
                op = op.advance(step, outcome.results)
                self._store.save_operation(op)
                self._store.journal(op.id, step, "done", outcome.results)
            if outcome.proof is not None:
                name, tx = outcome.proof
                self._proof(
                    name,
                    "on-chain",
                    tx_hash=tx.tx_hash,
                    data={"channelId": op.channel_id, "block": tx.block_number},
                )
            self._emit_all(emits)
            self._emit("step", StepEvent(op.id, op.kind, op.channel_id, step, "done"))
        return op

    def _record(self, channel_id: str) -> L.ChannelRecord:
        record = self._store.get_channel(channel_id)
        if record is None:
            raise ChannelNotFoundError(
                f"unknown channel {channel_id}: this provider's store has no such channel "
                f"(known: {', '.join(r.channel_id for r in self._store.list_channels()) or 'none'})"
            )
        return record

    def _receipt_write(
        self, tx: CustodyTx, step: str, extra: Callable[[], None] | None = None
    ) -> _StepResult:
        def write() -> list[tuple[str, Any]]:
            emits: list[tuple[str, Any]] = []
            for event in tx.events:
                emits += self._apply_chain_event(event)
            if extra is not None:
                extra()
            return emits

        return _StepResult(
            results={f"{_TX_NAMES.get(step, step)}_tx": tx.tx_hash},
            write=write,
            proof=(_PROOF_STEPS[step], tx),
        )

    async def _countersign(self, channel_id: str, checked: Any) -> State:
        """Our signature next to the broker's on a state the pure core has checked.

        The wallet signs EIP-191 ``personal_sign`` over the packed state (the form the
        custody accepts from any wallet, a browser wallet included: wallets do not sign raw
        digests); a signature by any other account is refused before it is stored."""
        signature = await self.wallet.sign_message(packed_state(channel_id, checked.state))
        signer = recover_state_signer(channel_id, checked.state, signature, "eip191")
        if signer != self.wallet.address:
            raise InvalidSignatureError(
                f"the wallet signed the state with account {signer}, not {self.wallet.address}: "
                "select that account in the wallet"
            )
        return L.two_party(checked.state, signature, checked.server_signature)

    def _put_signed(
        self, channel_id: str, signed: State, server_signature: str, op: L.Operation
    ) -> None:
        """Persist a countersigned state before anything relies on it (write-ahead)."""
        self._store.put_state(
            channel_id,
            signed,
            compute_state_hash(channel_id, signed),
            status="signed",
            server_signature=server_signature,
            op_id=op.id,
        )

    def _history_write(
        self, channel_id: str | None, event: str, amount: int, tx: CustodyTx, log_name: str
    ) -> Callable[[], list[tuple[str, Any]]]:
        """A step's write: one history row for a wallet-level transaction, keyed by its
        ``log_name`` event (Deposited, Withdrawn) so it is written once."""
        logs = [e for e in tx.events if e.name == log_name]
        cursor = logs[0].cursor if logs else None

        def write() -> list[tuple[str, Any]]:
            if channel_id:
                self._store.add_history(
                    channel_id,
                    event,
                    amount=amount,
                    asset=self.asset,
                    tx_hash=tx.tx_hash,
                    cursor=cursor,
                )
            return []

        return write

    @staticmethod
    def _op_channel(op: L.Operation) -> str:
        if not op.channel_id:
            raise InvalidStateError(f"operation {op.id} ({op.kind}) has no channel yet")
        return op.channel_id

    async def _recover(self, *, raise_errors: bool) -> list[L.Operation]:
        if self._recovering:
            return []
        self._recovering = True
        finished: list[L.Operation] = []
        try:
            for op in self._store.unfinished_operations():
                async with self._lock_for(op.channel_id if op.kind != "create" else None):
                    current = self._store.operation(op.id)
                    if current is None or not current.resumable:
                        continue
                    self._store.journal(op.id, current.next_step or "-", "resumed")
                    try:
                        done = await self._drive(current.resume())
                    except SettlementError as exc:
                        _log.warning("could not finish operation %s (%s): %s", op.id, op.kind, exc)
                        if raise_errors:
                            raise
                        continue
                finished.append(done)
                self._emit("recovered", done)
        finally:
            self._recovering = False
        return finished
