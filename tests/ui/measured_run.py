"""A comparison measured for real on the sandbox, for the browser test of the selector.

HOOK POINT (issue 36): this stands in for ``settlement_widgets.compare.compare_methods``
until that exists on this branch. After the merge, the notebook cell that calls
:func:`measure_methods` calls ``await compare_methods(session, Intent(...))`` instead and
hands its ``Comparison`` to ``dashboard.show_comparison`` and ``publish_comparison``; this
module can then go.

What it measures, as the dashboard's own buttons do it (``dashboard.click``): the ``channel``
run (faucet, open, ``payments`` off-chain transfers, close) and the ``v4`` run (one signed
intent settled through the policy hook per payment). Every figure comes from the run: the
transactions are those the user's and the operator's wallets sent in the blocks each action
mined, each with its receipt's gas and effective gas price; wall-clock time and blocks from
the run; wallet prompts counted at the user's signer (signatures and transactions it was
asked for). The aggregator is not run here (it bridges across two chains; compare_methods
does), so the comparison says so in ``unavailable``.

Imported by the notebook's kernel: the test copies this file next to the notebook.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

__all__ = ["measure_methods"]

_ERC20_BALANCE = [
    {
        "name": "balanceOf",
        "type": "function",
        "stateMutability": "view",
        "inputs": [{"name": "a", "type": "address"}],
        "outputs": [{"name": "", "type": "uint256"}],
    }
]


class _Prompts:
    """Counts what the user's wallet is asked for: signatures and transactions."""

    def __init__(self, signer: Any) -> None:
        self.signatures = 0
        self.transactions = 0
        for name, kind in (
            ("sign_typed_data", "signatures"),
            ("sign_message", "signatures"),
            ("send_transaction", "transactions"),
        ):
            setattr(signer, name, self._counting(getattr(signer, name), kind))

    def _counting(self, call: Callable[..., Awaitable[Any]], kind: str) -> Any:
        async def counted(*args: Any, **kwargs: Any) -> Any:
            setattr(self, kind, getattr(self, kind) + 1)
            return await call(*args, **kwargs)

        return counted

    def snapshot(self) -> tuple[int, int]:
        return self.signatures, self.transactions


async def _click(dashboard: Any, action: str) -> None:
    """Run one of the dashboard's actions as a click does; a failure fails the measurement."""
    task = dashboard.click(action)
    assert task is not None, f"{action} could not start: {dashboard.activity[-1:]}"
    await task
    last = dashboard.activity[-1]
    assert last.level != "error", last.text


async def _txs(dashboard: Any, first: int, last: int, step: str, payers: set[str]) -> list[dict]:
    """The transactions ``payers`` sent in blocks ``first..last``, with their receipts."""
    from settlement_widgets.sandbox.explorer import network_labels

    w3 = dashboard.user.w3
    labels = {k.lower(): v for k, v in network_labels(dashboard.network).items()}
    found = []
    for number in range(first, last + 1):
        block = await w3.eth.get_block(number, full_transactions=True)
        for tx in block["transactions"]:
            if tx["from"].lower() not in payers:
                continue
            receipt = await w3.eth.get_transaction_receipt(tx["hash"])
            to = (tx.get("to") or "").lower()
            tx_hash = "0x" + bytes(tx["hash"]).hex().removeprefix("0x")
            found.append(
                {
                    "hash": tx_hash,
                    "chainId": dashboard.network.chain_id,
                    "step": f"{step}: {labels.get(to, to[:10] or 'create')}",
                    "gasUsed": int(receipt["gasUsed"]),
                    "effectiveGasPriceWei": int(receipt["effectiveGasPrice"]),
                    "payer": tx["from"],
                    "valueWei": int(tx["value"]),
                    "explorerUrl": dashboard.network.explorer.tx_url(tx_hash),
                }
            )
    return found


async def _run(
    dashboard: Any, prompts: _Prompts, steps: list[str], payers: set[str]
) -> tuple[list[dict], float, int, tuple[int, int]]:
    """Click ``steps`` in order; their transactions, wall seconds, blocks and prompts."""
    w3 = dashboard.user.w3
    start_block = await w3.eth.block_number
    signatures, transactions = prompts.snapshot()
    txs: list[dict] = []
    started = time.perf_counter()
    for step in steps:
        before = await w3.eth.block_number
        await _click(dashboard, step)
        txs += await _txs(dashboard, before + 1, await w3.eth.block_number, step, payers)
    wall = time.perf_counter() - started
    blocks = await w3.eth.block_number - start_block
    after = prompts.snapshot()
    return txs, wall, blocks, (after[0] - signatures, after[1] - transactions)


def _row(
    method: str,
    variant: str,
    label: str,
    measured: tuple[list[dict], float, int, tuple[int, int]],
    **rest: Any,
) -> dict[str, Any]:
    txs, wall, blocks, (signatures, transactions) = measured
    return {
        "method": method,
        "variant": variant,
        "label": label,
        "txs": txs,
        "gasUsed": sum(t["gasUsed"] for t in txs),
        "costNativeWei": sum(t["gasUsed"] * t["effectiveGasPriceWei"] for t in txs),
        "costUsd": None,  # the sandbox's ETH has no price
        "feesBaseUnits": {},
        "wallSeconds": round(wall, 3),
        "blocks": blocks,
        "signaturePrompts": signatures,
        "transactionPrompts": transactions,
        **rest,
    }


async def measure_methods(session: Any, dashboard: Any, payments: int = 2) -> dict[str, Any]:
    """The channel and v4 methods measured on ``session``'s network through ``dashboard``:
    a comparison in the wire format (version 1)."""
    network = session.network
    user = dashboard.user
    payers = {user.address.lower()}
    if dashboard.operator is not None:
        payers.add(dashboard.operator.address.lower())
    prompts = _Prompts(user)

    channel = await _run(
        dashboard,
        prompts,
        ["faucet", "open_channel", *["transfer"] * payments, "close_channel"],
        payers,
    )
    challenge = dashboard.channel.challenge_period if dashboard.channel is not None else None
    runs = [
        _row(
            "channel",
            network.protocol.removeprefix("nitrolite-"),
            f"channel ({network.protocol})",
            channel,
            receivedBaseUnits=str(dashboard.transfer_amount * payments),
            lockedBaseUnits="0",  # opened without a deposit: the faucet's off-chain credit
            lockedSeconds=round(channel[1], 3),
            disputeWindowSeconds=challenge,
            trust="the node co-signs every state; the Custody contract holds the funds",
            ifCounterpartyVanishes="close with the last co-signed state after the challenge period",
        )
    ]

    pool = network.extra["v4"]["poolKey"]
    token_out = user.w3.eth.contract(address=pool["currency1"], abi=_ERC20_BALANCE)
    before = await token_out.functions.balanceOf(user.address).call()
    v4 = await _run(dashboard, prompts, ["settle_intent"] * payments, payers)
    received = await token_out.functions.balanceOf(user.address).call() - before
    runs.append(
        _row(
            "v4",
            "policy hook",
            "v4 hook",
            v4,
            receivedBaseUnits=str(received),
            lockedBaseUnits="0",
            lockedSeconds=0.0,
            disputeWindowSeconds=None,
            trust="the hook's policy and the solver the operator authorised",
            ifCounterpartyVanishes="nothing is locked: an intent not settled expires",
        )
    )
    cheapest = min(runs, key=lambda r: r["costNativeWei"])["label"]
    fastest = min(runs, key=lambda r: r["wallSeconds"])["label"]
    return {
        "version": 1,
        "network": network.name,
        "measuredAt": datetime.now(UTC).isoformat(timespec="seconds"),
        "intent": {
            "amount": str(payments),
            "asset": network.asset_symbol,
            "sourceChain": network.chain_id,
            "destinationChain": network.chain_id,
            "payments": payments,
            "counterparty": dashboard.recipient or user.address,
        },
        "runs": runs,
        "unavailable": {
            "aggregator": "not run by this measurement (it bridges across the sandbox's two "
            "chains; compare_methods runs it)"
        },
        "cheapest": cheapest,
        "fastest": fastest,
    }
