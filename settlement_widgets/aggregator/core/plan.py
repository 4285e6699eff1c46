"""What a wallet must sign to execute a route: an ERC-20 approval (if any) and the step's
transaction, built as plain values (pure).

LI.FI's transaction pulls ``fromAmount`` of the source token from the sender, so an ERC-20
source needs ``approve(estimate.approvalAddress, fromAmount)`` first; a native-coin source
needs none. The approval is for the exact amount, never unlimited. Nothing here sends
anything: :meth:`AggregatorProvider.execute_plan` sends only when given a wallet and
``send=True``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any, Literal

from ...addresses import short, validate_address
from ...errors import InvalidAddressError, SettlementValueError
from .models import Step

__all__ = [
    "ALLOWANCE_SELECTOR",
    "APPROVE_SELECTOR",
    "ExecutionPlan",
    "PlannedTransaction",
    "allowance_calldata",
    "approve_calldata",
    "plan_step",
]

APPROVE_SELECTOR = bytes.fromhex("095ea7b3")  # approve(address,uint256)
ALLOWANCE_SELECTOR = bytes.fromhex("dd62ed3e")  # allowance(address,address)


def approve_calldata(spender: str, amount: int) -> str:
    """ABI-encoded ``approve(spender, amount)`` as 0x-hex."""
    from eth_abi import encode

    return "0x" + (APPROVE_SELECTOR + encode(["address", "uint256"], [spender, amount])).hex()


def allowance_calldata(owner: str, spender: str) -> str:
    """ABI-encoded ``allowance(owner, spender)`` as 0x-hex."""
    from eth_abi import encode

    return "0x" + (ALLOWANCE_SELECTOR + encode(["address", "address"], [owner, spender])).hex()


@dataclass(frozen=True)
class PlannedTransaction:
    """One transaction to sign. ``tx_hash`` is set once sent; ``note`` says if it was skipped."""

    kind: Literal["approve", "step"]
    step_id: str
    chain_id: int
    to: str
    data: str
    value: int
    gas_limit: int | None
    description: str
    amount: int | None = None
    spender: str | None = None
    tx_hash: str | None = None
    note: str | None = None

    def as_tx(self) -> dict[str, Any]:
        """The transaction as a web3/eth-account dict (``to``, ``data``, ``value``, ``chainId``)."""
        tx: dict[str, Any] = {
            "to": self.to,
            "data": self.data,
            "value": self.value,
            "chainId": self.chain_id,
        }
        if self.gas_limit is not None:
            tx["gas"] = self.gas_limit
        return tx


@dataclass(frozen=True)
class ExecutionPlan:
    """Every transaction of a route in order; ``tx_hash`` is set on those sent."""

    route_id: str
    from_address: str
    transactions: tuple[PlannedTransaction, ...]

    @property
    def sent(self) -> bool:
        return any(t.tx_hash for t in self.transactions)

    @property
    def tx_hashes(self) -> tuple[str, ...]:
        return tuple(t.tx_hash for t in self.transactions if t.tx_hash)

    def with_transaction(self, index: int, tx: PlannedTransaction) -> ExecutionPlan:
        items = list(self.transactions)
        items[index] = tx
        return replace(self, transactions=tuple(items))


def _units(amount: int, decimals: int) -> str:
    return format(Decimal(amount).scaleb(-decimals).normalize(), "f")


def plan_step(step: Step) -> tuple[PlannedTransaction, ...]:
    """The approval (ERC-20 source only) and the transaction of one populated step."""
    tx = step.transaction_request
    if tx is None:
        raise SettlementValueError(
            f"step {step.id} has no transactionRequest; populate it first "
            "(POST /advanced/stepTransaction)"
        )
    action, estimate = step.action, step.estimate
    chain_id = tx.chain_id if tx.chain_id is not None else action.from_chain_id
    if chain_id != action.from_chain_id:
        raise SettlementValueError(
            f"step {step.id}: transactionRequest.chainId {chain_id} differs from the action's "
            f"fromChainId {action.from_chain_id}"
        )
    token = action.from_token
    amount_text = f"{_units(action.from_amount, token.decimals)} {token.symbol}"
    out: list[PlannedTransaction] = []
    if not token.is_native:
        try:
            token_address = validate_address(token.address, field="action.fromToken.address")
            spender = validate_address(estimate.approval_address, field="estimate.approvalAddress")
        except InvalidAddressError as exc:
            raise SettlementValueError(
                f"step {step.id} cannot be approved on an EVM chain: {exc}"
            ) from exc
        out.append(
            PlannedTransaction(
                kind="approve",
                step_id=step.id,
                chain_id=chain_id,
                to=token_address,
                data=approve_calldata(spender, action.from_amount),
                value=0,
                gas_limit=None,
                description=(
                    f"approve {amount_text} for {short(spender)} (LI.FI approval address) "
                    f"on chain {chain_id}"
                ),
                amount=action.from_amount,
                spender=spender,
            )
        )
    tools = " + ".join(step.tools)
    out.append(
        PlannedTransaction(
            kind="step",
            step_id=step.id,
            chain_id=chain_id,
            to=tx.to,
            data=tx.data,
            value=tx.value,
            gas_limit=tx.gas_limit,
            description=(
                f"{step.type} via {tools}: {amount_text} on chain {action.from_chain_id} -> "
                f"{action.to_token.symbol} on chain {action.to_chain_id}"
            ),
        )
    )
    return tuple(out)
