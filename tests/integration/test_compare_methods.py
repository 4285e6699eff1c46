"""``compare_methods`` on the sandbox, on both chain backends: 100 test USDC, paid once and in
20 instalments, through every method. Each check re-reads what the comparison claims from
the chains themselves: the receipts of every row's transactions, and the counterparty's
balance on the destination chain.

The sandbox's bridge relayer mines a block every 0.05 s while a transfer waits (a faster
block time than the default 0.2 s, as a sandbox parameter): the confirmations are still
real blocks, and the slowest route's twenty transfers take seconds rather than half a minute.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from settlement_widgets.compare import Comparison, Intent, compare_methods
from settlement_widgets.contracts import load_artifact
from settlement_widgets.sandbox import LocalSandbox

pytestmark = pytest.mark.asyncio(loop_scope="module")

BACKENDS = [
    pytest.param("inprocess", id="inprocess"),
    pytest.param("anvil", id="anvil", marks=pytest.mark.anvil),
]
EXPECTED = {
    "channel (nitrolite-v0.5)",
    "channel (nitrolite-v1)",
    "v4 (policy hook)",
}


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=BACKENDS)
async def sandbox(request: pytest.FixtureRequest) -> AsyncIterator[LocalSandbox]:
    async with LocalSandbox(
        chain=request.param, protocol="v1", aggregator=True, wallets=4, bridge_block_time=0.05
    ) as sb:
        yield sb


async def _usdc_b(sb: LocalSandbox, who: str) -> int:
    _, b = sb.chain_ids
    assert sb.crosschain is not None
    token = sb.crosschain.chains[b].usdc
    contract = sb.chain_on(b).w3.eth.contract(address=token, abi=load_artifact("TestToken").abi)  # type: ignore[call-overload]
    return int(await contract.functions.balanceOf(who).call())


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def compared(sandbox: LocalSandbox) -> dict[int, tuple[Comparison, int]]:
    """payments -> (the comparison, the counterparty's destination balance change over it)."""
    out = {}
    for payments in (1, 20):
        intent = Intent("100", payments=payments)
        counterparty = sandbox.wallets[1].address
        before = await _usdc_b(sandbox, counterparty)
        comparison = await compare_methods(sandbox, intent)
        out[payments] = (comparison, await _usdc_b(sandbox, counterparty) - before)
    return out


async def test_a_row_per_method(compared: dict[int, tuple[Comparison, int]]) -> None:
    for payments, (comparison, _) in compared.items():
        labels = {r.label for r in comparison.runs}
        assert labels >= EXPECTED, labels
        aggregator = [r for r in comparison.runs if r.method == "aggregator"]
        assert len(aggregator) == 2  # the default cap on executed routes
        assert comparison.unavailable == {}
        assert comparison.intent.payments == payments
        assert comparison.intent.counterparty is not None
        for run in comparison.runs:
            assert run.payments == payments and run.received_base_units > 0 and run.txs
            if run.method != "v4":  # v4 swaps into another token: no like-for-like difference
                fees = run.fees_base_units["bridge"] + run.fees_base_units["node"]
                assert run.sent_base_units == run.received_base_units + fees, run.label
        assert comparison.cheapest in labels and comparison.fastest in labels
        assert Comparison.from_json(comparison.to_json()) == comparison


async def test_gas_of_every_row_is_the_sum_of_its_receipts(
    sandbox: LocalSandbox, compared: dict[int, tuple[Comparison, int]]
) -> None:
    for comparison, _ in compared.values():
        for run in comparison.runs:
            gas = cost = 0
            for tx in run.txs:
                receipt: Any = await sandbox.chain_on(tx.chain_id).w3.eth.get_transaction_receipt(
                    tx.hash  # type: ignore[arg-type]
                )
                assert receipt["status"] == 1 and receipt["from"] == tx.payer
                gas += int(receipt["gasUsed"])
                cost += int(receipt["gasUsed"]) * int(receipt["effectiveGasPrice"])
            assert run.gas_used == gas, run.label
            assert run.cost_native_wei == cost, run.label
            assert sum(run.gas_by_step.values()) == gas


async def test_channel_cost_per_payment_falls(
    compared: dict[int, tuple[Comparison, int]],
) -> None:
    one, twenty = compared[1][0], compared[20][0]
    for variant in ("nitrolite-v0.5", "nitrolite-v1"):
        label = f"channel ({variant})"
        a, b = one.run(label), twenty.run(label)
        assert b.cost_native_wei / 20 < a.cost_native_wei / 1, label
        # opened once, closed once: as many transactions for 20 payments as for one
        assert len(b.txs) == len(a.txs) and b.off_chain_operations == 20
    # the per-settlement methods send more with more payments
    assert len(twenty.run("v4 (policy hook)").txs) > len(one.run("v4 (policy hook)").txs)


async def test_aggregator_received_is_the_destination_balance_change(
    sandbox: LocalSandbox, compared: dict[int, tuple[Comparison, int]]
) -> None:
    transfer_topic = sandbox.chain_on(sandbox.chain_ids[1]).w3.keccak(
        text="Transfer(address,address,uint256)"
    )
    for comparison, delta in compared.values():
        rows = [r for r in comparison.runs if r.method == "aggregator"]
        # only the aggregator pays on the destination chain: the balance change is theirs
        assert sum(r.received_base_units for r in rows) == delta
        counterparty = comparison.intent.counterparty
        assert counterparty is not None
        for run in rows:
            paid = 0
            for tx in run.txs:
                if tx.step != "release":
                    continue
                receipt: Any = await sandbox.chain_on(tx.chain_id).w3.eth.get_transaction_receipt(
                    tx.hash  # type: ignore[arg-type]
                )
                for log in receipt["logs"]:
                    topics = log["topics"]
                    if topics[0] == transfer_topic and topics[2][-20:].hex() == (
                        counterparty[2:].lower()
                    ):
                        paid += int.from_bytes(bytes(log["data"]), "big")
            assert paid == run.received_base_units, run.label
