"""How a comparison measures: a signer that counts what it is asked and records what it sent,
a clock of a run's phases, receipts re-read from the chains, block-number deltas, and the
context one comparison runs in (:mod:`.run` builds it).

Nothing here is a figure: every number comes from a signer call, the clock or a receipt.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import SettlementError
from ..signer import Signer, TxRequest
from .intent import Intent
from .result import TxRecord

if TYPE_CHECKING:
    from web3 import AsyncWeb3

    from ..networks import Network
    from ..wallet import WalletClient

__all__ = [
    "APPROVE",
    "Clock",
    "CountingSigner",
    "RunContext",
    "Sent",
    "blocks_between",
    "cost_usd",
    "explorer_for",
    "heads",
    "receipts",
    "selector_of",
]


# --- measuring what the code asks a signer for --------------------------------------------


@dataclass
class Sent:
    hash: str
    chain_id: int
    step: str
    phase: str
    payment: int | None
    selector: str = ""


#: ERC-20 ``approve(address,uint256)``
APPROVE = "0x095ea7b3"


def selector_of(tx: TxRequest) -> str:
    data = tx.get("data") or b""
    return data[:10].lower() if isinstance(data, str) else "0x" + bytes(data[:4]).hex()


class CountingSigner(Signer):
    """A signer that passes every call to ``inner`` and records it: signatures asked for,
    transactions sent (with the step, phase and payment the runner is in)."""

    def __init__(self, inner: Signer, chain_id: int) -> None:
        self.inner = inner
        self.chain_id_value = chain_id
        self.receipt_timeout = inner.receipt_timeout
        self.signatures = 0
        self.sent: list[Sent] = []
        self.label: tuple[str, str, int | None] = ("tx", "open", None)

    @property
    def address(self) -> str:
        return self.inner.address

    @property
    def w3(self) -> AsyncWeb3:
        return self.inner.w3

    @property
    def rpc_url(self) -> str | None:
        return self.inner.rpc_url

    def reset_nonce(self) -> None:
        self.inner.reset_nonce()

    async def chain_id(self) -> int:
        return await self.inner.chain_id()

    async def sign_typed_data(self, full_message: Mapping[str, Any]) -> str:
        self.signatures += 1
        return await self.inner.sign_typed_data(full_message)

    async def sign_message(self, message: bytes) -> str:
        self.signatures += 1
        return await self.inner.sign_message(message)

    async def send_transaction(
        self, tx: TxRequest, *, on_signed: Callable[[str], Any] | None = None
    ) -> str:
        tx_hash = await self.inner.send_transaction(tx, on_signed=on_signed)
        step, phase, payment = self.label
        self.sent.append(Sent(tx_hash, self.chain_id_value, step, phase, payment, selector_of(tx)))
        return tx_hash

    def at(self, step: str, phase: str, payment: int | None = None) -> CountingSigner:
        """Label the transactions sent from now on."""
        self.label = (step, phase, payment)
        return self


@dataclass
class Clock:
    """Wall-clock seconds of the phases of one run."""

    started: float = field(default_factory=time.monotonic)
    marks: dict[str, float] = field(default_factory=dict)

    def mark(self, name: str) -> None:
        self.marks[name] = time.monotonic()

    def phases(self) -> dict[str, float]:
        opened = self.marks.get("opened", self.started)
        paid = self.marks.get("paid", opened)
        closed = self.marks.get("closed", paid)
        return {
            "open": round(opened - self.started, 4),
            "payments": round(paid - opened, 4),
            "close": round(closed - paid, 4),
        }

    def total(self) -> float:
        return round(max(self.marks.values(), default=self.started) - self.started, 4)


# --- what the sandbox gives a comparison --------------------------------------------------


@dataclass
class RunContext:
    sandbox: Any
    network: Network
    user: Signer
    counterparty: str
    counterparty_wallet: WalletClient | None
    solver: Signer | None
    operator: Signer | None
    intent: Intent
    max_routes: int
    explorer: Callable[[int, str], str | None]
    native_usd: float | None = None
    price_source: str | None = None


def explorer_for(sandbox: Any, network: Network) -> Callable[[int, str], str | None]:
    def url(chain_id: int, tx_hash: str) -> str | None:
        if sandbox is not None:
            with contextlib.suppress(SettlementError):
                return str(sandbox.explorer_tx(chain_id, tx_hash))
        if chain_id == network.chain_id:
            return network.explorer.tx_url(tx_hash)
        return None

    return url


async def receipts(
    sent: Iterable[Sent],
    w3_of: Callable[[int], AsyncWeb3],
    explorer: Callable[[int, str], str | None],
    names: Mapping[str, str] | None = None,
) -> list[TxRecord]:
    """Every sent transaction as its receipt on its chain says (re-read here)."""
    records = []
    for s in sent:
        w3 = w3_of(s.chain_id)
        receipt = await w3.eth.wait_for_transaction_receipt(
            s.hash,  # type: ignore[arg-type]
            timeout=60,
            poll_latency=0.02,
        )
        tx = await w3.eth.get_transaction(s.hash)  # type: ignore[arg-type]
        records.append(
            TxRecord(
                hash=s.hash,
                chain_id=s.chain_id,
                step=(names or {}).get(
                    s.hash.lower(), "approve" if s.selector == APPROVE else s.step
                ),
                phase=s.phase,
                payment=s.payment if s.phase == "payment" else None,
                gas_used=int(receipt["gasUsed"]),
                effective_gas_price_wei=int(receipt["effectiveGasPrice"]),
                payer=str(receipt["from"]),
                value_wei=int(tx["value"]),
                block=int(receipt["blockNumber"]),
                explorer_url=explorer(s.chain_id, s.hash),
            )
        )
    return records


async def heads(w3s: Mapping[int, AsyncWeb3]) -> dict[int, int]:
    return {cid: int(await w3.eth.block_number) for cid, w3 in w3s.items()}


def blocks_between(before: Mapping[int, int], after: Mapping[int, int]) -> int:
    return sum(after[c] - before[c] for c in before)


def cost_usd(ctx: RunContext, txs: Sequence[TxRecord]) -> float | None:
    if ctx.native_usd is None:
        return None
    wei = sum(t.cost_wei for t in txs)
    return round(wei / 10**18 * ctx.native_usd, 6)
