"""The sandbox bridges' relayer: watch the source chains, wait, release or refund.

Every ``poll_interval`` the relayer reads new ``TransferStarted`` events of every bridge on
every chain. A transfer waits until its source block has the bridge's ``confirmations``
(blocks mined after it count); then the relayer calls ``release`` on the destination chain's
instance of the same bridge, paying the amount minus the bridge fee. When the release would
revert (a paused bridge, too little liquidity, the sender's ``minAmountOut``, an unknown
destination chain or token) it calls ``refund`` on the source instead, with the reason, and
the sender gets the whole locked amount back.

A transfer whose destination token is the destination chain's WETH gets a destination swap:
the relayer releases the USDC to that chain's ``SandboxRouter`` and calls its ``deliver``,
which swaps for the receiver, or hands over the USDC when the swap would pay less than the
sender's minimum (the price moved while the transfer waited): LI.FI's ``PARTIAL``.

The sandbox chains mine only when a transaction arrives, so the relayer is also their block
producer while a transfer waits: one empty block on the source chain every ``block_time``
seconds, as a chain with that block time would. That is what makes a bridge with more
confirmations slower.

Nothing is kept but a cursor: the chains are the record. After a restart the relayer scans
from the first block again and skips transfers already released (``released(id)`` on the
destination) or no longer pending (``deposits(id)`` on the source), so a transfer is
released once even if the relayer dies between its two transactions.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...contracts import load_artifact
from ...errors import SettlementError, TransactionFailedError

if TYPE_CHECKING:
    from ...keys import PrivateKey
    from ...sandbox.chain import Chain
    from ...wallet import WalletClient
    from .deploy import CrossChainDeployment

__all__ = ["BridgeRelayer", "PendingTransfer", "transfer_started_topic"]

_log = logging.getLogger(__name__)
_PENDING = 1


def _event_abi(name: str) -> dict[str, Any]:
    return next(
        e for e in load_artifact("SandboxBridge").abi if e["type"] == "event" and e["name"] == name
    )


def transfer_started_topic() -> str:
    from web3._utils.events import event_abi_to_log_topic

    return "0x" + bytes(event_abi_to_log_topic(_event_abi("TransferStarted"))).hex()  # type: ignore[arg-type]


@dataclass(frozen=True)
class PendingTransfer:
    """A ``TransferStarted`` event the relayer has yet to settle."""

    transfer_id: str
    bridge: str
    source_chain_id: int
    block_number: int
    tx_hash: str
    sender: str
    receiver: str
    token: str
    amount: int
    fee: int
    destination_chain_id: int
    destination_token: str
    min_amount_out: int

    @property
    def amount_out(self) -> int:
        return self.amount - self.fee


class BridgeRelayer:
    """Relays the sandbox bridges between ``chains``; ``start()`` runs it as a task."""

    def __init__(
        self,
        chains: Mapping[int, Chain],
        deployment: CrossChainDeployment,
        key: PrivateKey,
        *,
        block_time: float = 0.2,
        poll_interval: float = 0.05,
    ) -> None:
        self.chains = dict(chains)
        self.deployment = deployment
        self.block_time = block_time
        self.poll_interval = poll_interval
        self._wallets: dict[int, WalletClient] = {
            cid: chain.wallet_for(key) for cid, chain in self.chains.items()
        }
        self._cursor: dict[int, int] = dict.fromkeys(self.chains, 0)
        self._pending: dict[str, PendingTransfer] = {}
        self._last_block_at: dict[int, float] = {}
        self._task: asyncio.Task[None] | None = None
        self._abi = load_artifact("SandboxBridge").abi
        self._topic = transfer_started_topic()
        #: what the relayer did, newest last (transfer id, action, detail), for the explorer
        self.journal: list[tuple[str, str, str]] = []

    @property
    def address(self) -> str:
        return next(iter(self._wallets.values())).address

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def pending(self) -> tuple[PendingTransfer, ...]:
        return tuple(self._pending.values())

    def start(self) -> None:
        """Start relaying (a task on the running loop); a no-op when already running."""
        if self.running:
            return
        self._cursor = dict.fromkeys(self.chains, 0)  # rescan: the chains are the record
        self._pending.clear()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="bridge-relayer")

    async def stop(self) -> None:
        """Stop relaying; transfers in flight stay on the chains until the next start."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        while True:
            try:
                await self.step()
            except asyncio.CancelledError:
                raise
            except Exception:  # a chain hiccup must not kill the relayer; retried next poll
                _log.exception("bridge relayer step failed; retrying")
            await asyncio.sleep(self.poll_interval)

    async def step(self) -> None:
        """One pass: read new events, produce blocks where transfers wait, settle the ready."""
        for chain_id in self.chains:
            await self._scan(chain_id)
        waiting: set[int] = set()
        for transfer in list(self._pending.values()):
            chain = self.chains[transfer.source_chain_id]
            head = await chain.block_number()
            needed = self.deployment.bridge_spec(transfer.bridge).confirmations
            if head - transfer.block_number + 1 < needed:
                waiting.add(transfer.source_chain_id)
                continue
            await self._settle(transfer)
            self._pending.pop(transfer.transfer_id, None)
        now = time.monotonic()
        for chain_id in waiting:
            if now - self._last_block_at.get(chain_id, 0.0) >= self.block_time:
                await self.chains[chain_id].mine(1)
                self._last_block_at[chain_id] = now

    def _bridge(self, chain_id: int, address: str) -> Any:
        w3 = self.chains[chain_id].w3
        return w3.eth.contract(address=address, abi=self._abi)  # type: ignore[call-overload]

    async def _scan(self, chain_id: int) -> None:
        chain = self.chains[chain_id]
        head = await chain.block_number()
        start = self._cursor[chain_id]
        if start > head:
            return
        addresses = list(self.deployment.chains[chain_id].bridges.values())
        logs = await chain.w3.eth.get_logs(
            {
                "fromBlock": start,
                "toBlock": head,
                "address": addresses,  # type: ignore[typeddict-item]
                "topics": [self._topic],  # type: ignore[list-item]
            }
        )
        self._cursor[chain_id] = head + 1
        for log in logs:
            bridge_key = self.deployment.bridge_at(chain_id, log["address"])
            if bridge_key is None:
                continue
            event = self._bridge(chain_id, log["address"]).events.TransferStarted().process_log(log)
            args = event["args"]
            transfer_id = "0x" + bytes(args["transferId"]).hex()
            source = self._bridge(chain_id, log["address"])
            deposit = await source.functions.deposits(args["transferId"]).call()
            if int(deposit[3]) != _PENDING:
                continue
            self._pending.setdefault(
                transfer_id,
                PendingTransfer(
                    transfer_id=transfer_id,
                    bridge=bridge_key,
                    source_chain_id=chain_id,
                    block_number=int(log["blockNumber"]),
                    tx_hash="0x" + bytes(log["transactionHash"]).hex(),
                    sender=args["sender"],
                    receiver=args["receiver"],
                    token=args["token"],
                    amount=int(args["amount"]),
                    fee=int(args["fee"]),
                    destination_chain_id=int(args["destinationChainId"]),
                    destination_token=args["destinationToken"],
                    min_amount_out=int(args["minAmountOut"]),
                ),
            )

    def _destination_problem(self, transfer: PendingTransfer) -> str | None:
        target = self.deployment.chains.get(transfer.destination_chain_id)
        if target is None or transfer.destination_chain_id not in self.chains:
            return f"unknown destination chain {transfer.destination_chain_id}"
        if transfer.bridge not in target.bridges:
            return f"{transfer.bridge} does not reach chain {transfer.destination_chain_id}"
        source = self.deployment.chains[transfer.source_chain_id]
        if transfer.token.lower() != source.usdc.lower():
            return f"token {transfer.token} is not bridged"
        if self._wants_weth(transfer) is None:
            return f"destination token {transfer.destination_token} is not bridged there"
        return None

    def _wants_weth(self, transfer: PendingTransfer) -> bool | None:
        """True for a destination swap to WETH, False for USDC, None for anything else."""
        target = self.deployment.chains[transfer.destination_chain_id]
        token = transfer.destination_token.lower()
        if token == target.usdc.lower():
            return False
        if target.weth is not None and target.router is not None and token == target.weth.lower():
            return True
        return None

    async def _settle(self, transfer: PendingTransfer) -> None:
        problem = self._destination_problem(transfer)
        if problem is None:
            dest_id = transfer.destination_chain_id
            target = self.deployment.chains[dest_id]
            swap = bool(self._wants_weth(transfer))
            bridge = self._bridge(dest_id, target.bridges[transfer.bridge])
            transfer_id = bytes.fromhex(transfer.transfer_id[2:])
            if not await bridge.functions.released(transfer_id).call():
                call = bridge.functions.release(
                    transfer_id,
                    transfer.source_chain_id,
                    target.usdc,
                    target.router if swap else transfer.receiver,
                    transfer.amount_out,
                    0 if swap else transfer.min_amount_out,  # a swap's minimum is in WETH
                )
                try:
                    receipt = await self._wallets[dest_id].transact(call, abis=[self._abi])
                except TransactionFailedError as exc:
                    problem = f"release on chain {dest_id} reverted: {exc}"
                except SettlementError as exc:  # the destination cannot be reached: stays
                    _log.warning("cannot release %s yet: %s", transfer.transfer_id, exc)  # pending
                    raise
                else:
                    tx = "0x" + bytes(receipt["transactionHash"]).hex()
                    self.journal.append((transfer.transfer_id, "released", tx))
            if problem is None:
                if swap:
                    await self._deliver(transfer)
                return
        await self._refund(transfer, problem)

    async def _deliver(self, transfer: PendingTransfer) -> None:
        """The destination swap of a released transfer (once: a restart checks first)."""
        dest_id = transfer.destination_chain_id
        target = self.deployment.chains[dest_id]
        assert target.router is not None and target.pool_key is not None
        abi = load_artifact("SandboxRouter").abi
        router = self.chains[dest_id].w3.eth.contract(address=target.router, abi=abi)  # type: ignore[call-overload]
        transfer_id = bytes.fromhex(transfer.transfer_id[2:])
        if await router.functions.delivered(transfer_id).call():
            return
        usdc_is_0 = target.pool_key.currency0.lower() == target.usdc.lower()
        call = router.functions.deliver(
            transfer_id,
            target.pool_key.as_abi(),
            usdc_is_0,  # sells USDC
            transfer.amount_out,
            transfer.min_amount_out,
            transfer.receiver,
        )
        receipt = await self._wallets[dest_id].transact(call, abis=[abi])
        tx = "0x" + bytes(receipt["transactionHash"]).hex()
        self.journal.append((transfer.transfer_id, "delivered", tx))

    async def _refund(self, transfer: PendingTransfer, reason: str) -> None:
        source_id = transfer.source_chain_id
        address = self.deployment.chains[source_id].bridges[transfer.bridge]
        call = self._bridge(source_id, address).functions.refund(
            bytes.fromhex(transfer.transfer_id[2:]), reason[:200]
        )
        receipt = await self._wallets[source_id].transact(call, abis=[self._abi])
        tx = "0x" + bytes(receipt["transactionHash"]).hex()
        self.journal.append((transfer.transfer_id, "refunded", tx))
