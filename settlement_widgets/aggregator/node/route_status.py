"""``/status`` of the sandbox's route server, read from the chains.

The source receipt and its ``TransferStarted`` event, then the destination bridge's
``TransferReleased`` (``DONE``/``COMPLETED``) or the source bridge's ``TransferRefunded``
(``DONE``/``REFUNDED``); with a destination swap the router's ``Delivered`` (``COMPLETED``, or
``PARTIAL`` when the receiver got the bridged USDC instead of WETH); before that ``PENDING``.
A reverted source transaction is ``FAILED``, an unknown hash ``NOT_FOUND``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from .lifi_schema import LifiError, decimal_str, kind_of, usd_of
from .route_base import RouteServerBase

__all__ = ["RouteStatusMixin"]


@dataclass
class _LogIndex:
    """What :meth:`RouteStatusMixin._indexed` has read of one event of one contract."""

    next_block: int = 0
    last_hash: str | None = None
    found: dict[str, Any] = field(default_factory=dict)


class RouteStatusMixin(RouteServerBase):
    """``/status`` in LI.FI's schema (see the module docstring)."""

    async def status_body(self, params: Mapping[str, Any]) -> dict[str, Any]:
        tx_hash = str(params.get("txHash") or "")
        if len(tx_hash) != 66 or not tx_hash.startswith("0x"):
            raise LifiError(400, f"txHash must be 0x followed by 64 hex digits, got {tx_hash!r}")
        try:
            bytes.fromhex(tx_hash[2:])
        except ValueError:
            raise LifiError(400, f"txHash is not hex: {tx_hash!r}") from None
        chains = self._order
        if params.get("fromChain"):
            chains = [self._chain(params["fromChain"], "fromChain")]
        for chain_id in chains:
            receipt = await self._receipt(chain_id, tx_hash)
            if receipt is not None:
                return await self._status_of(chain_id, tx_hash, receipt)
        return {"status": "NOT_FOUND", "substatusMessage": "the transaction is not mined yet"}

    async def _receipt(self, chain_id: int, tx_hash: str) -> Any:
        from web3.exceptions import TransactionNotFound

        try:
            return await self.chains[chain_id].w3.eth.get_transaction_receipt(tx_hash)  # type: ignore[arg-type]
        except TransactionNotFound:
            return None

    async def _status_of(self, chain_id: int, tx_hash: str, receipt: Any) -> dict[str, Any]:
        w3 = self.chains[chain_id].w3
        tx = await w3.eth.get_transaction(tx_hash)  # type: ignore[arg-type]
        block = await w3.eth.get_block(receipt["blockNumber"])
        gas_price = int(receipt.get("effectiveGasPrice") or 0)
        price = await self.eth_price()
        gas_wei = gas_price * int(receipt["gasUsed"])
        sending: dict[str, Any] = {
            "txHash": tx_hash,
            "txLink": self.tx_link(chain_id, tx_hash),
            "chainId": chain_id,
            "gasPrice": str(gas_price),
            "gasUsed": str(int(receipt["gasUsed"])),
            "gasToken": self._native(chain_id, price),
            "gasAmount": str(gas_wei),
            "value": str(int(tx["value"])),
            "timestamp": int(block["timestamp"]),
        }
        if price is not None:
            sending["gasAmountUSD"] = decimal_str(Decimal(gas_wei).scaleb(-18) * price, 4)
        base = {"sending": sending, "fromAddress": tx["from"]}
        if receipt["status"] != 1:
            return base | {
                "status": "FAILED",
                "substatus": "UNKNOWN_ERROR",
                "substatusMessage": "the source transaction reverted; nothing was bridged",
            }
        started = self._started(chain_id, receipt)
        if started is None:
            return base | {
                "status": "INVALID",
                "substatusMessage": "the transaction started no sandbox bridge transfer",
            }
        tool, args = started
        transfer_id = "0x" + bytes(args["transferId"]).hex()
        to_chain = int(args["destinationChainId"])
        swapped = self._swapped(chain_id, receipt)
        if swapped is not None:  # a source swap: the user sent WETH
            amount, token = int(swapped["amountIn"]), self._weth(chain_id, price)
        else:
            amount, token = int(args["amount"]), self._usdc(chain_id)
        assert token is not None
        sending |= {
            "amount": str(amount),
            "token": token,
            "amountUSD": decimal_str(usd_of(amount, token), 4),
        }
        common = base | {
            "transactionId": transfer_id,
            "tool": tool,
            "toAddress": args["receiver"],
            "lifiExplorerLink": self.tx_link(chain_id, tx_hash),
        }
        refunded = await self._event(chain_id, tool, "TransferRefunded", transfer_id)
        if refunded is not None:
            log, event = refunded
            return common | {
                "status": "DONE",
                "substatus": "REFUNDED",
                "substatusMessage": f"the bridge refunded the tokens on the source chain: "
                f"{event['args']['reason']}",
                "receiving": await self._receiving(
                    chain_id, log, int(event["args"]["amount"]), self._usdc(chain_id)
                ),
            }
        target = self.deployment.chains.get(to_chain)
        released = None
        if target is not None and to_chain in self.chains:
            released = await self._event(to_chain, tool, "TransferReleased", transfer_id)
        if target is not None and released is not None:
            wants_weth = kind_of(target, str(args["destinationToken"])) == "weth"
            if not wants_weth:
                log, event = released
                return common | {
                    "status": "DONE",
                    "substatus": "COMPLETED",
                    "substatusMessage": "the transfer is complete",
                    "receiving": await self._receiving(
                        to_chain, log, int(event["args"]["amount"]), self._usdc(to_chain)
                    ),
                }
            delivered = await self._delivered(to_chain, transfer_id)
            if delivered is not None:
                log, event = delivered
                ok = bool(event["args"]["swapped"])
                price_to = await self.eth_price(to_chain)
                kind = "weth" if ok else "usdc"
                return common | {
                    "status": "DONE",
                    "substatus": "COMPLETED" if ok else "PARTIAL",
                    "substatusMessage": (
                        "the transfer is complete"
                        if ok
                        else "the destination swap would have paid less than the minimum "
                        "(the price moved): you received the bridged USDC instead"
                    ),
                    "receiving": await self._receiving(
                        to_chain,
                        log,
                        int(event["args"]["amount"]),
                        self._token_json(to_chain, kind, price_to),
                    ),
                }
        head = await self.chains[chain_id].block_number()
        confirmations = head - int(receipt["blockNumber"]) + 1
        needed = self.deployment.bridge_spec(tool).confirmations
        waiting = confirmations < needed
        return common | {
            "status": "PENDING",
            "substatus": "WAIT_SOURCE_CONFIRMATIONS" if waiting else "WAIT_DESTINATION_TRANSACTION",
            "substatusMessage": (
                f"{confirmations} of {needed} source confirmations"
                if waiting
                else "waiting for the relayer's transaction on the destination chain"
            ),
            "receiving": {"chainId": to_chain},
        }

    def _started(self, chain_id: int, receipt: Any) -> tuple[str, Any] | None:
        for log in receipt["logs"]:
            tool = self.deployment.bridge_at(chain_id, log["address"])
            if tool is None:
                continue
            contract = self.chains[chain_id].w3.eth.contract(
                address=log["address"], abi=self._bridge_abi
            )  # type: ignore[call-overload]
            try:
                event = contract.events.TransferStarted().process_log(log)
            except Exception:
                continue
            return tool, event["args"]
        return None

    async def _event(
        self, chain_id: int, tool: str, name: str, transfer_id: str
    ) -> tuple[Any, Any] | None:
        """The first ``name`` event of ``transfer_id`` on ``tool``'s bridge: (log, decoded)."""
        d = self.deployment.chains[chain_id]
        address = d.bridges.get(tool)
        if address is None:
            return None
        contract = self.chains[chain_id].w3.eth.contract(address=address, abi=self._bridge_abi)  # type: ignore[call-overload]
        log = (await self._indexed(chain_id, getattr(contract.events, name)())).get(transfer_id)
        return (log, log) if log is not None else None

    async def _indexed(self, chain_id: int, event: Any) -> dict[str, Any]:
        """Every ``event`` log of one contract by ``transferId``, read incrementally.

        ``/status`` is polled while a transfer waits; asking the chain for the logs from
        block 0 at every poll made each answer cost more as the chain grew (half a second
        per query on the in-process chain after a few dozen transfers, most of a
        comparison's time). The index reads only the blocks it has not read, and starts
        again from block 0 when the last block it read is no longer on the chain (a
        sandbox snapshot reverted, a time travel).
        """
        index: dict[tuple[int, str, str], _LogIndex] = self.__dict__.setdefault("_log_index", {})
        key = (chain_id, str(event.address).lower(), event.event_name)
        w3 = self.chains[chain_id].w3
        entry = index.get(key)
        if entry is not None and entry.last_hash is not None:
            try:
                seen = await w3.eth.get_block(entry.next_block - 1)
                same = "0x" + bytes(seen["hash"]).hex() == entry.last_hash
            except Exception:  # the block is gone: the chain went back
                same = False
            if not same:
                entry = None
        if entry is None:
            entry = index[key] = _LogIndex()
        head = await self.chains[chain_id].block_number()
        if entry.next_block <= head:
            for log in await event.get_logs(from_block=entry.next_block, to_block=head):
                entry.found.setdefault("0x" + bytes(log["args"]["transferId"]).hex(), log)
            last = await w3.eth.get_block(head)
            entry.next_block, entry.last_hash = head + 1, "0x" + bytes(last["hash"]).hex()
        return entry.found

    def _swapped(self, chain_id: int, receipt: Any) -> Any:
        """The router's ``SwappedAndBridged`` arguments in ``receipt``, or None."""
        router = self.deployment.chains[chain_id].router
        if router is None:
            return None
        contract = self.chains[chain_id].w3.eth.contract(address=router, abi=self._router_abi)  # type: ignore[call-overload]
        for log in receipt["logs"]:
            if str(log["address"]).lower() != router.lower():
                continue
            try:
                return contract.events.SwappedAndBridged().process_log(log)["args"]
            except Exception:
                continue
        return None

    async def _delivered(self, chain_id: int, transfer_id: str) -> tuple[Any, Any] | None:
        """The destination router's ``Delivered`` event of ``transfer_id``: (log, decoded)."""
        router = self.deployment.chains[chain_id].router
        if router is None:
            return None
        contract = self.chains[chain_id].w3.eth.contract(address=router, abi=self._router_abi)  # type: ignore[call-overload]
        log = (await self._indexed(chain_id, contract.events.Delivered())).get(transfer_id)
        return (log, log) if log is not None else None

    async def _receiving(
        self, chain_id: int, log: Any, amount: int, token: dict[str, Any]
    ) -> dict[str, Any]:
        tx_hash = "0x" + bytes(log["transactionHash"]).hex()
        w3 = self.chains[chain_id].w3
        receipt = await w3.eth.get_transaction_receipt(tx_hash)  # type: ignore[arg-type]
        block = await w3.eth.get_block(receipt["blockNumber"])
        gas_price = int(receipt.get("effectiveGasPrice") or 0)
        return {
            "txHash": tx_hash,
            "txLink": self.tx_link(chain_id, tx_hash),
            "chainId": chain_id,
            "amount": str(amount),
            "token": token,
            "amountUSD": decimal_str(usd_of(amount, token), 4),
            "gasPrice": str(gas_price),
            "gasUsed": str(int(receipt["gasUsed"])),
            "timestamp": int(block["timestamp"]),
        }
