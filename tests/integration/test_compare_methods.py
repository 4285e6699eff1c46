"""``compare_methods`` on the sandbox, on both chain backends: 100 test USDC, paid once and in
20 instalments, through every method. Each check re-reads what the comparison claims from
the chains themselves: the receipts of every row's transactions, and the counterparty's
balances on the destination chain (the aggregator's USDC, the v1 token the cross-chain
channel route pays out there).

The sandbox's bridge relayer mines a block every 0.05 s while a transfer waits (a faster
block time than the default 0.2 s, as a sandbox parameter): the confirmations are still
real blocks, and the slowest route's twenty transfers take seconds rather than half a minute.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, NamedTuple

import pytest
import pytest_asyncio

from settlement_widgets.compare import Comparison, Intent, compare_methods
from settlement_widgets.contracts import load_artifact
from settlement_widgets.networks import Network
from settlement_widgets.sandbox import LocalSandbox

pytestmark = pytest.mark.asyncio(loop_scope="module")

BACKENDS = [
    pytest.param("inprocess", id="inprocess"),
    pytest.param("anvil", id="anvil", marks=pytest.mark.anvil),
]
EXPECTED = {
    "channel (nitrolite-v0.5)",
    "channel (nitrolite-v1)",
    "channel (nitrolite-v1-crosschain)",
    "v4 (policy hook)",
}
CROSSCHAIN = "channel (nitrolite-v1-crosschain)"


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=BACKENDS)
async def sandbox(request: pytest.FixtureRequest) -> AsyncIterator[LocalSandbox]:
    async with LocalSandbox(
        chain=request.param, protocol="v1", aggregator=True, wallets=4, bridge_block_time=0.05
    ) as sb:
        yield sb


async def _balance_b(sb: LocalSandbox, token: str, who: str) -> int:
    _, b = sb.chain_ids
    contract = sb.chain_on(b).w3.eth.contract(address=token, abi=load_artifact("TestToken").abi)  # type: ignore[call-overload]
    return int(await contract.functions.balanceOf(who).call())


def _usdc_b_token(sb: LocalSandbox) -> str:
    assert sb.crosschain is not None
    return sb.crosschain.chains[sb.chain_ids[1]].usdc


def _v1_token_b(sb: LocalSandbox) -> str:
    token = sb.network.on_chain(sb.chain_ids[1]).token
    assert token is not None and token != _usdc_b_token(sb)
    return token


class Compared(NamedTuple):
    comparison: Comparison
    #: the counterparty's destination-chain balance changes over the comparison: the
    #: aggregator's USDC, and the v1 token (the cross-chain channel route's payout)
    delta: int
    v1_delta: int


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def compared(sandbox: LocalSandbox) -> dict[int, Compared]:
    """payments -> the comparison and the counterparty's destination balance changes."""
    out = {}
    usdc, v1 = _usdc_b_token(sandbox), _v1_token_b(sandbox)
    for payments in (1, 20):
        intent = Intent("100", payments=payments)
        counterparty = sandbox.wallets[1].address
        before = await _balance_b(sandbox, usdc, counterparty)
        v1_before = await _balance_b(sandbox, v1, counterparty)
        comparison = await compare_methods(sandbox, intent)
        out[payments] = Compared(
            comparison,
            await _balance_b(sandbox, usdc, counterparty) - before,
            await _balance_b(sandbox, v1, counterparty) - v1_before,
        )
    return out


async def test_a_row_per_method(compared: dict[int, Compared]) -> None:
    for payments, (comparison, _, _) in compared.items():
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
    sandbox: LocalSandbox, compared: dict[int, Compared]
) -> None:
    for comparison, _, _ in compared.values():
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
    compared: dict[int, Compared],
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
    sandbox: LocalSandbox, compared: dict[int, Compared]
) -> None:
    transfer_topic = sandbox.chain_on(sandbox.chain_ids[1]).w3.keccak(
        text="Transfer(address,address,uint256)"
    )
    for comparison, delta, _ in compared.values():
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


async def test_v1_crosschain_pays_the_payee_on_the_destination_chain(
    sandbox: LocalSandbox, compared: dict[int, Compared]
) -> None:
    a, b = sandbox.chain_ids
    payer, payee = sandbox.wallets[0].address, sandbox.wallets[1].address
    v1_b = _v1_token_b(sandbox)
    transfer_topic = sandbox.chain_on(b).w3.keccak(text="Transfer(address,address,uint256)")
    for payments, (comparison, _, v1_delta) in compared.items():
        run = comparison.run(CROSSCHAIN)
        assert (run.method, run.variant) == ("channel", "nitrolite-v1-crosschain")
        assert run.chain_ids == (a, b) and run.payments == payments
        # every unit sent arrived on the destination chain: 100 USDC of the v1 token (6 dp)
        assert run.sent_base_units == run.received_base_units == 100 * 10**run.decimals
        assert run.fees_base_units["node"] == 0 and run.fees_base_units["bridge"] == 0
        # only this row pays in the v1 token on the destination chain
        assert v1_delta == run.received_base_units
        assert run.off_chain_operations == payments and run.dispute_window_seconds
        # the payer's transactions on the source chain, the payee's on the destination
        by_chain = {
            cid: [(t.step, t.phase, t.payer) for t in run.txs if t.chain_id == cid]
            for cid in (a, b)
        }
        assert {p for *_, p in by_chain[a]} == {payer}
        assert [s for s, *_ in by_chain[a]][-2:] == ["create", "close"]
        assert by_chain[b][-1] == ("withdraw (payee)", "close", payee)
        assert len(run.txs) == len(by_chain[a]) + len(by_chain[b])
        assert run.transaction_prompts == len(by_chain[a])  # the payer's prompts
        paid = 0
        for tx in run.txs:
            receipt: Any = await sandbox.chain_on(tx.chain_id).w3.eth.get_transaction_receipt(
                tx.hash  # type: ignore[arg-type]
            )
            assert receipt["status"] == 1 and receipt["from"] == tx.payer
            assert tx.explorer_url is not None and tx.explorer_url.endswith(f"/tx/{tx.hash}")
            assert (f"/chain/{b}/tx/" in tx.explorer_url) == (tx.chain_id == b)
            if tx.step != "withdraw (payee)":
                continue
            for log in receipt["logs"]:
                topics = log["topics"]
                if (
                    log["address"].lower() == v1_b.lower()
                    and topics[0] == transfer_topic
                    and topics[2][-20:].hex() == payee[2:].lower()
                ):
                    paid += int.from_bytes(bytes(log["data"]), "big")
        assert paid == run.received_base_units
        assert "no escrow, no bridge" in run.scope and "vault" in run.trust
    # the payee opened its home channel on the destination chain once, then kept it
    first, then = compared[1].comparison.run(CROSSCHAIN), compared[20].comparison.run(CROSSCHAIN)
    assert [t.step for t in first.txs if t.chain_id == b] == ["create (payee)", "withdraw (payee)"]
    assert [t.step for t in then.txs if t.chain_id == b] == ["withdraw (payee)"]
    assert then.cost_native_wei / 20 < first.cost_native_wei


async def test_v1_crosschain_refuses_an_intent_that_stays_on_one_chain(
    sandbox: LocalSandbox,
) -> None:
    a = sandbox.chain_ids[0]
    intent = Intent("1", source_chain=a, destination_chain=a)
    comparison = await compare_methods(sandbox, intent, methods=["channel/nitrolite-v1-crosschain"])
    assert comparison.runs == ()
    assert comparison.unavailable == {
        "channel/nitrolite-v1-crosschain": "the intent stays on one chain: "
        "channel/nitrolite-v1 serves it"
    }


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def one_chain() -> AsyncIterator[LocalSandbox]:
    async with LocalSandbox(chain="inprocess", protocol="v1", v4=False, wallets=2) as sb:
        yield sb


async def test_v1_crosschain_needs_a_second_v1_chain(one_chain: LocalSandbox) -> None:
    network: Network = one_chain.network
    assert network.chain_ids() == (network.chain_id,)
    reason = (
        f"this network's Nitrolite v1 node serves one chain ({network.chain_id}): start the "
        "sandbox with protocol='v1', aggregator=True for a home channel on a second chain"
    )
    # named alone, or as one of the channel's variants: refused, the others still run
    for methods, ran in (
        (["channel/nitrolite-v1-crosschain"], []),
        (["channel"], ["channel (nitrolite-v0.5)", "channel (nitrolite-v1)"]),
    ):
        comparison = await compare_methods(one_chain, Intent("1"), methods=methods)
        assert comparison.unavailable == {"channel/nitrolite-v1-crosschain": reason}
        assert [r.label for r in comparison.runs] == ran
