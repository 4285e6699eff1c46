"""A comparison in the wire format (version 1), for the parser, renderer and endpoint tests.

Synthetic on purpose: these tests check how a comparison is read, shown and served, so the
figures only need to be well-formed and distinct. The browser test shows one measured on the
sandbox (tests/ui/measured_run.py).
"""

from __future__ import annotations

import copy
from typing import Any

from settlement_widgets.addresses import to_checksum

__all__ = ["PAYER", "sample_comparison", "sample_run", "sample_tx"]

PAYER = to_checksum("0x" + "ab" * 20)


def sample_tx(n: int, gas: int, chain_id: int = 31337) -> dict[str, Any]:
    tx_hash = f"0x{n:064x}"
    return {
        "hash": tx_hash,
        "chainId": chain_id,
        "step": f"step {n}",
        "gasUsed": gas,
        "effectiveGasPriceWei": 1_000_000_000,
        "payer": PAYER,
        "valueWei": 0,
        "explorerUrl": f"http://127.0.0.1:8545/explorer/tx/{tx_hash}",
    }


def sample_run(
    method: str, label: str, gases: list[int], wall: float, *, usd: float | None = None
) -> dict[str, Any]:
    txs = [sample_tx(i + 1, g) for i, g in enumerate(gases)]
    return {
        "method": method,
        "variant": "v0.5" if method == "channel" else "",
        "label": label,
        "txs": txs,
        "gasUsed": sum(gases),
        "costNativeWei": sum(gases) * 1_000_000_000,
        "costUsd": usd,
        "feesBaseUnits": {"pool fee": "3000"} if method == "v4" else {},
        "receivedBaseUnits": "100000000",
        "wallSeconds": wall,
        "blocks": len(gases),
        "signaturePrompts": 1,
        "transactionPrompts": len(gases),
        "lockedBaseUnits": "100000000" if method == "channel" else "0",
        "lockedSeconds": wall if method == "channel" else 0.0,
        "disputeWindowSeconds": 3600 if method == "channel" else None,
        "trust": f"who can stop {label}",
        "ifCounterpartyVanishes": f"what if {label}'s counterparty vanishes",
    }


_SAMPLE: dict[str, Any] = {
    "version": 1,
    "network": "local",
    "measuredAt": "2026-11-29T00:40:00+00:00",
    "intent": {
        "amount": "100",
        "asset": "USDC",
        "sourceChain": 31337,
        "destinationChain": 31338,
        "payments": 20,
        "counterparty": "0x" + "cd" * 20,
    },
    "runs": [
        sample_run("channel", "channel v0.5", [120_000, 90_000, 60_000], 4.25),
        sample_run("v4", "v4 hook", [150_000], 2.5, usd=0.42),
    ],
    "unavailable": {"aggregator": "no route between the two chains"},
    "cheapest": "v4 hook",
    "fastest": "v4 hook",
}


def sample_comparison(**changes: Any) -> dict[str, Any]:
    """A fresh, valid comparison; ``changes`` replace top-level fields."""
    value = copy.deepcopy(_SAMPLE)
    value.update(changes)
    return value
