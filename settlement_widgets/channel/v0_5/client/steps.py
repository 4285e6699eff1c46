"""The steps of :class:`~.provider.ChannelProvider`'s operations (``_StepsMixin``).

One ``_step_<name>`` method per step name of :mod:`.lifecycle`'s plans, run by
:meth:`~.operations._OperationsMixin._drive`: ``rpc_create``, ``submit_create``,
``await_relay``, ``approve``, ``deposit`` (opening and funding), ``rpc_resize``,
``submit_resize`` (resizing), ``rpc_close``, ``submit_close``, ``withdraw`` (closing and
withdrawing), ``challenge`` and ``checkpoint`` (disputes). A step may run again after a
crash: each first checks whether an earlier run already did its work (a stored state, a
recorded transaction, the custody's state) before asking the relay or the chain.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Final

from ....errors import ChannelStateError, InsufficientBalanceError, InvalidStateError, RelayError
from ..chain.custody import CustodyTx
from ..core import lifecycle as L
from ..core.ids import packed_challenge
from ..core.types import ChannelStatus, State, StateIntent
from ._base import _ProviderBase, _StepResult

__all__ = ["_StepsMixin"]


class _StepsMixin(_ProviderBase):
    """``_step_<name>``: one method per operation step (see the module docstring)."""

    async def _step_rpc_create(self, op: L.Operation) -> _StepResult:
        relay = self._require_relay()
        asset = self._require_asset()
        try:
            reply = await relay.create_channel(self.config.chain_id, asset.token)
        except RelayError as exc:
            if "already exists" in exc.message:
                raise ChannelStateError(
                    f"the relay already has an open channel for this wallet and token "
                    f"({exc.message}); close it first (a channel this store does not know: "
                    "`await provider.adopt_open_channels()` takes it over, then close it)"
                ) from exc
            raise
        assert relay.broker_address is not None
        checked = L.check_create_reply(
            reply,
            wallet=self.wallet.address,
            broker=relay.broker_address,
            token=asset.token,
            chain_id=self.config.chain_id,
            adjudicator=self.config.adjudicator,
            min_challenge=self.config.challenge_period,
        )
        assert checked.definition is not None
        signed = await self._countersign(checked.channel_id, checked)
        record = L.new_record(checked.channel_id, self.config.chain_id, checked.definition, signed)

        def write() -> list[tuple[str, Any]]:
            self._store.put_channel(record)
            self._put_signed(record.channel_id, signed, checked.server_signature, op)
            self._store.add_history(
                record.channel_id,
                "INITIALIZE countersigned",
                status=record.status,
                version=0,
                intent="INITIALIZE",
                counterparty=record.broker,
            )
            return [("channel_updated", self._public(record))]

        return _StepResult(results={"channel_id": record.channel_id}, write=write)

    async def _step_submit_create(self, op: L.Operation) -> _StepResult:
        cid = self._op_channel(op)
        record = self._record(cid)
        stored = self._store.find_state(cid, 0, StateIntent.INITIALIZE)
        if stored is None:
            raise InvalidStateError(f"the countersigned INITIALIZE of {cid} is missing")
        await self._ensure_chain()
        if self._store.tx_for(op.id, "submit_create") is None:
            status = await self._chain(self.custody.channel_status(cid))
            if status != ChannelStatus.VOID:  # created by a run that died before recording
                return self._receipt_write(await self._tx_of_event(cid, "Created"), "submit_create")
        call = self.custody.contract.functions.create(
            record.definition.to_abi(), stored.state.to_abi()
        )
        tx = await self._send_tx(op, "submit_create", call, cid)
        return self._receipt_write(tx, "submit_create")

    async def _step_await_relay(self, op: L.Operation) -> _StepResult:
        cid = self._op_channel(op)
        record = self._record(cid)
        await self._wait_relay(
            cid, lambda info: L.relay_reflects(record, info), L.describe_relay_wait(record)
        )
        return _StepResult()

    async def _step_approve(self, op: L.Operation) -> _StepResult:
        amount = int(op.params["amount"])
        token = self._require_asset().token
        await self._ensure_chain()
        # an approval an earlier run sent is followed to its receipt (by _send_tx), even when
        # the allowance it set already shows: else it would stay "pending" in the store
        recorded = self._store.tx_for(op.id, "approve")
        following = recorded is not None and recorded[1] in ("pending", "confirmed")
        if not following and await self._chain(self.custody.allowance(token)) >= amount:
            return _StepResult()
        balance = await self._chain(self.custody.token_balance(token))
        if balance < amount:
            raise InsufficientBalanceError(
                f"the wallet holds {self._amount(balance)}, {self._amount(amount)} are needed"
            )
        contract = self.wallet.w3.eth.contract(address=token, abi=_APPROVE_ABI)  # type: ignore[call-overload]
        call = contract.functions.approve(self.config.custody, amount)
        tx = await self._send_tx(op, "approve", call, op.channel_id)
        return _StepResult(results={"approve_tx": tx.tx_hash}, proof=("approve", tx))

    async def _step_deposit(self, op: L.Operation) -> _StepResult:
        amount = int(op.params["amount"])
        token = self._require_asset().token
        await self._ensure_chain()
        if self._store.tx_for(op.id, "deposit") is None:
            balance = await self._chain(self.custody.token_balance(token))
            if balance < amount:
                raise InsufficientBalanceError(
                    f"the wallet holds {self._amount(balance)}, {self._amount(amount)} are needed"
                )
        call = self.custody.contract.functions.deposit(self.wallet.address, token, amount)
        tx = await self._send_tx(op, "deposit", call, op.channel_id)
        cid = op.channel_id

        write = self._history_write(cid, "deposited to custody", amount, tx, "Deposited")

        return _StepResult(results={"deposit_tx": tx.tx_hash}, write=write, proof=("deposit", tx))

    async def _step_rpc_resize(self, op: L.Operation) -> _StepResult:
        cid = self._op_channel(op)
        version = op.results.get("resize_version")
        if version is not None and self._store.find_state(cid, int(version), StateIntent.RESIZE):
            return _StepResult()
        record = self._record(cid)
        resize_amount = int(op.params.get("resize_amount", "0"))
        allocate_amount = int(op.params.get("allocate_amount", "0"))
        try:
            reply = await self._require_relay().resize_channel(
                cid,
                self.wallet.address,
                resize_amount=resize_amount or None,
                allocate_amount=allocate_amount or None,
            )
        except RelayError as exc:
            if "resize already ongoing" not in exc.message:
                raise
            # the relay signed a RESIZE for an earlier run of this step whose reply was lost
            # before it was stored (a crash): it will sign no other, and we cannot submit it
            remedy = f"await provider.close_channel({cid!r}, settle=False)" + (
                ", then await provider.withdraw()" if op.kind != "close" else ""
            )
            raise ChannelStateError(
                f"the relay has a RESIZE of channel {cid} in progress that this store never "
                f"received (relay: {exc.message}); it will not sign another, so this {op.kind} "
                f"cannot finish. Remedy: close without settling, {remedy}: nothing is lost "
                "(the off-chain balance stays on the relay, what was deposited is withdrawn)"
            ) from exc
        checked = L.check_resize_reply(
            reply,
            record=record,
            resize_amount=resize_amount,
            allocate_amount=allocate_amount,
            destination=self.wallet.address,
        )
        signed = await self._countersign(cid, checked)

        def write() -> list[tuple[str, Any]]:
            self._put_signed(cid, signed, checked.server_signature, op)
            current = self._record(cid)
            updated = replace(current, status=L.RESIZING) if current.status == L.ACTIVE else current
            self._store.put_channel(updated)
            self._store.add_history(
                cid,
                "RESIZE countersigned",
                status=updated.status,
                version=signed.version,
                intent="RESIZE",
                amount=resize_amount,
                detail=f"deltas [{resize_amount}, {allocate_amount}]",
            )
            return [("channel_updated", self._public(updated))]

        return _StepResult(results={"resize_version": signed.version}, write=write)

    async def _step_submit_resize(self, op: L.Operation) -> _StepResult:
        cid = self._op_channel(op)
        version = int(op.results["resize_version"])
        stored = self._store.find_state(cid, version, StateIntent.RESIZE)
        if stored is None:
            raise InvalidStateError(f"the countersigned RESIZE v{version} of {cid} is missing")
        await self._ensure_chain()
        data = await self._chain(self.custody.get_channel_data(cid))
        recorded = self._store.tx_for(op.id, "submit_resize")
        if recorded is None and data.last_valid_state.version >= version:
            # submitted by a run that died before recording it
            return self._receipt_write(await self._tx_of_event(cid, "Resized"), "submit_resize")
        # proofs[0] is the state the custody holds now (a recorded transaction still in
        # flight is followed to its receipt instead of being sent again)
        call = self.custody.contract.functions.resize(
            cid, stored.state.to_abi(), [data.last_valid_state.to_abi()]
        )
        tx = await self._send_tx(op, "submit_resize", call, cid)
        return self._receipt_write(tx, "submit_resize")

    async def _step_rpc_close(self, op: L.Operation) -> _StepResult:
        cid = self._op_channel(op)
        version = op.results.get("final_version")
        if version is not None and self._store.find_state(cid, int(version), StateIntent.FINALIZE):
            return _StepResult()
        record = self._record(cid)
        reply = await self._require_relay().close_channel(cid, self.wallet.address)
        checked = L.check_close_reply(reply, record=record, destination=self.wallet.address)
        signed = await self._countersign(cid, checked)

        def write() -> list[tuple[str, Any]]:
            self._put_signed(cid, signed, checked.server_signature, op)
            updated = replace(self._record(cid), status=L.CLOSING)
            self._store.put_channel(updated)
            self._store.add_history(
                cid,
                "FINALIZE countersigned",
                status=L.CLOSING,
                version=signed.version,
                intent="FINALIZE",
                amount=signed.allocations[0].amount,
            )
            return [("channel_updated", self._public(updated))]

        return _StepResult(results={"final_version": signed.version}, write=write)

    async def _step_submit_close(self, op: L.Operation) -> _StepResult:
        cid = self._op_channel(op)
        await self._ensure_chain()
        version = op.results.get("final_version")
        if version is not None:  # cooperative: the countersigned FINALIZE
            stored = self._store.find_state(cid, int(version), StateIntent.FINALIZE)
            if stored is None:
                raise InvalidStateError(
                    f"the countersigned FINALIZE v{version} of {cid} is missing"
                )
            candidate = stored.state
            funds = candidate
        else:  # after an expired challenge: any state; funds follow the challenged one
            candidate = self._store.latest_onchain_state(cid)  # type: ignore[assignment]
            if candidate is None:
                raise ChannelStateError(f"no fully signed state of {cid} is stored")
            funds = candidate
        if self._store.tx_for(op.id, "submit_close") is None:
            status = await self._chain(self.custody.channel_status(cid))
            if status == ChannelStatus.VOID:  # closed by a run that died, or by the broker
                tx = await self._tx_of_event(cid, "Closed")
                return self._close_result(tx, funds)
            if status == ChannelStatus.DISPUTE:
                data = await self._chain(self.custody.get_channel_data(cid))
                funds = data.last_valid_state
        call = self.custody.contract.functions.close(cid, candidate.to_abi(), [])
        tx = await self._send_tx(op, "submit_close", call, cid)
        return self._close_result(tx, funds)

    def _close_result(self, tx: CustodyTx, funds: State) -> _StepResult:
        result = self._receipt_write(tx, "submit_close")
        result.results["credited"] = str(L.credited_amount(funds, self.wallet.address))
        return result

    async def _step_withdraw(self, op: L.Operation) -> _StepResult:
        token = self._require_asset().token
        await self._ensure_chain()
        wanted = op.params.get("withdraw_amount", op.results.get("credited"))
        recorded = self._store.tx_for(op.id, "withdraw")
        receipt = None
        if recorded is not None and recorded[1] in ("pending", "confirmed"):
            receipt = await self._receipt(recorded[0])  # a withdrawal an earlier run sent
            if receipt is None:
                self._store.set_tx_status(recorded[0], "dropped")
        if receipt is not None:
            assert recorded is not None
            tx = await self._settled(recorded[0], receipt, op.channel_id)
            event = tx.event("Withdrawn")
            amount = int(getattr(event, "amount", 0))
        else:
            available = await self._chain(self.custody.balance(token))
            amount = available if wanted is None else int(wanted)
            if amount == 0:
                return _StepResult(results={"withdrawn": "0"})
            if available < amount:
                raise InsufficientBalanceError(
                    f"the custody holds {self._amount(available)} for the wallet; "
                    f"{self._amount(amount)} cannot be withdrawn"
                )
            call = self.custody.contract.functions.withdraw(token, amount)
            tx = await self._send_tx(op, "withdraw", call, op.channel_id)
        cid = op.channel_id

        write = self._history_write(cid, "withdrawn to wallet", amount, tx, "Withdrawn")

        return _StepResult(
            results={"withdraw_tx": tx.tx_hash, "withdrawn": str(amount)},
            write=write,
            proof=("withdraw", tx),
        )

    async def _step_challenge(self, op: L.Operation) -> _StepResult:
        cid = self._op_channel(op)
        candidate = self._store.latest_onchain_state(cid)
        if candidate is None:
            raise ChannelStateError(f"no fully signed on-chain state of {cid} is stored")
        await self._ensure_chain()
        if self._store.tx_for(op.id, "challenge") is None:
            status = await self._chain(self.custody.channel_status(cid))
            if status == ChannelStatus.DISPUTE:
                return self._receipt_write(await self._tx_of_event(cid, "Challenged"), "challenge")
        # EIP-191 over the packed state and "challenge", as the custody accepts from a wallet
        signature = await self.wallet.sign_message(packed_challenge(cid, candidate))
        call = self.custody.contract.functions.challenge(
            cid, candidate.to_abi(), [], bytes.fromhex(signature[2:])
        )
        tx = await self._send_tx(op, "challenge", call, cid)
        return self._receipt_write(tx, "challenge")

    async def _step_checkpoint(self, op: L.Operation) -> _StepResult:
        cid = self._op_channel(op)
        candidate = self._checkpoint_candidate(cid)
        call = self.custody.contract.functions.checkpoint(cid, candidate.to_abi(), [])
        tx = await self._send_tx(op, "checkpoint", call, cid)
        return self._receipt_write(tx, "checkpoint")

    def _checkpoint_candidate(self, cid: str) -> State:
        onchain = self._store.latest_onchain_state(cid)
        newer = [
            s.state
            for s in self._store.states(cid)
            if s.state.intent == StateIntent.OPERATE
            and len(s.state.sigs) == 2
            and (onchain is None or s.state.version > onchain.version)
        ]
        if not newer:
            latest = f"{onchain.intent.name} v{onchain.version}" if onchain else "none"
            raise ChannelStateError(
                f"nothing to checkpoint on {cid}: the custody only checkpoints a newer OPERATE "
                "state signed by both parties, and a v0.5 relay never co-signs OPERATE states "
                f"(the latest fully signed state, {latest}, is already on chain)"
            )
        return newer[-1]


_APPROVE_ABI: Final = [
    {
        "type": "function",
        "name": "approve",
        "stateMutability": "nonpayable",
        "inputs": [{"name": "spender", "type": "address"}, {"name": "value", "type": "uint256"}],
        "outputs": [{"name": "", "type": "bool"}],
    }
]
