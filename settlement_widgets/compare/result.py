"""What a comparison measured: one :class:`MethodRun` per method (per route for the
aggregator), gathered in a :class:`Comparison`.

Every figure here was read from a run: gas and prices from receipts re-read from the chain,
amounts from balances, times from the clock around the calls, prompts from what the code
asked the signer for. The derived figures (total gas, cost in wei, gas per step) are
computed from the transactions, never stored beside them, so they cannot disagree; the JSON
carries them for readers, and :meth:`Comparison.from_json` checks that they still agree.

The JSON (``Comparison.to_json()``, version 1) is a contract with the selector, the
dashboard and ``/api/settlement``: ``docs/api/compare.md`` writes it down field by field.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ..errors import InvalidComparisonError
from ..json_depth import check_nesting
from .intent import Intent

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "COMPARISON_VERSION",
    "FEE_KINDS",
    "METHODS",
    "PHASES",
    "PHASE_TIMES",
    "TX_KEYS",
    "Comparison",
    "MethodRun",
    "TxRecord",
]

COMPARISON_VERSION = 1
#: the methods a comparison runs, in the order rows are listed
METHODS = ("channel", "v4", "aggregator")
#: what a transaction was for: before the first payment, one payment, after the last
PHASES = ("open", "payment", "close")
#: fee kinds, in the asset's smallest units (``node`` is what the channel's node charged)
FEE_KINDS = ("bridge", "pool", "slippage", "node")


@dataclass(frozen=True)
class TxRecord:
    """One on-chain transaction of a run, as its receipt on ``chain_id`` says.

    ``phase`` places it (``open``, ``payment``, ``close``); ``payment`` is the instalment's
    index for a payment-phase transaction. ``payer`` is the receipt's sender: the user, a
    solver, the sandbox's bridge relayer.
    """

    hash: str
    chain_id: int
    step: str
    phase: str
    gas_used: int
    effective_gas_price_wei: int
    payer: str
    value_wei: int
    block: int
    payment: int | None = None
    explorer_url: str | None = None

    @property
    def cost_wei(self) -> int:
        """Gas used times the effective gas price: what the payer paid for it in wei."""
        return self.gas_used * self.effective_gas_price_wei

    def to_json(self) -> dict[str, Any]:
        return {
            "hash": self.hash,
            "chainId": self.chain_id,
            "step": self.step,
            "phase": self.phase,
            "payment": self.payment,
            "gasUsed": self.gas_used,
            "effectiveGasPriceWei": self.effective_gas_price_wei,
            "payer": self.payer,
            "valueWei": self.value_wei,
            "block": self.block,
            "explorerUrl": self.explorer_url,
        }


@dataclass(frozen=True)
class MethodRun:
    """One method (one variant, one route) run with the intent, as measured.

    Amounts are in the smallest units of ``asset`` (``decimals``), the asset the method
    actually moved on this network. ``phase_seconds`` splits ``wall_seconds`` into
    ``open``/``payments``/``close``; the curve of cost against payments is built from it
    and from each transaction's phase. ``trust``, ``if_counterparty_vanishes`` and ``scope``
    are stated once per method (``scope`` says what was actually done, e.g. that the
    channel pays on one chain).
    """

    method: str
    variant: str
    label: str
    asset: str
    decimals: int
    chain_ids: tuple[int, ...]
    payments: int
    txs: tuple[TxRecord, ...]
    fees_base_units: Mapping[str, int]
    sent_base_units: int
    received_base_units: int
    wall_seconds: float
    phase_seconds: Mapping[str, float]
    blocks: int
    signature_prompts: int
    transaction_prompts: int
    off_chain_operations: int
    locked_base_units: int
    locked_seconds: float
    dispute_window_seconds: int | None
    cost_usd: float | None
    payer: str
    trust: str
    if_counterparty_vanishes: str
    scope: str

    def __post_init__(self) -> None:
        # every fee kind and phase present, so a run equals its own JSON round trip
        fees = {k: int(self.fees_base_units.get(k, 0)) for k in FEE_KINDS}
        extra = sorted(set(self.fees_base_units) - set(FEE_KINDS))
        if extra:
            raise InvalidComparisonError(f"unknown fee kind(s) {extra}; kinds: {FEE_KINDS}")
        object.__setattr__(self, "fees_base_units", fees)
        phases = {k: float(self.phase_seconds.get(k, 0.0)) for k in PHASE_TIMES}
        object.__setattr__(self, "phase_seconds", phases)
        object.__setattr__(self, "chain_ids", tuple(self.chain_ids))

    @property
    def gas_used(self) -> int:
        """Gas of every transaction of the run, summed."""
        return sum(t.gas_used for t in self.txs)

    @property
    def cost_native_wei(self) -> int:
        """What all the run's transactions cost in the native coin (anyone's gas)."""
        return sum(t.cost_wei for t in self.txs)

    @property
    def payer_cost_native_wei(self) -> int:
        """The part of :attr:`cost_native_wei` the intent's payer paid."""
        return sum(t.cost_wei for t in self.txs if t.payer == self.payer)

    @property
    def gas_by_step(self) -> dict[str, int]:
        """Gas per step name (``create``, ``settleIntent``...), summed over payments."""
        out: dict[str, int] = {}
        for t in self.txs:
            out[t.step] = out.get(t.step, 0) + t.gas_used
        return out

    def phase_gas(self, phase: str) -> int:
        return sum(t.gas_used for t in self.txs if t.phase == phase)

    def phase_cost_wei(self, phase: str) -> int:
        return sum(t.cost_wei for t in self.txs if t.phase == phase)

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "variant": self.variant,
            "label": self.label,
            "asset": self.asset,
            "decimals": self.decimals,
            "chainIds": list(self.chain_ids),
            "payments": self.payments,
            "txs": [t.to_json() for t in self.txs],
            "gasUsed": self.gas_used,
            "gasByStep": self.gas_by_step,
            "costNativeWei": str(self.cost_native_wei),
            "payerCostNativeWei": str(self.payer_cost_native_wei),
            "costUsd": self.cost_usd,
            "feesBaseUnits": {k: str(self.fees_base_units.get(k, 0)) for k in FEE_KINDS},
            "sentBaseUnits": str(self.sent_base_units),
            "receivedBaseUnits": str(self.received_base_units),
            "wallSeconds": self.wall_seconds,
            "phaseSeconds": {k: self.phase_seconds.get(k, 0.0) for k in PHASE_TIMES},
            "blocks": self.blocks,
            "signaturePrompts": self.signature_prompts,
            "transactionPrompts": self.transaction_prompts,
            "offChainOperations": self.off_chain_operations,
            "lockedBaseUnits": str(self.locked_base_units),
            "lockedSeconds": self.locked_seconds,
            "disputeWindowSeconds": self.dispute_window_seconds,
            "payer": self.payer,
            "trust": self.trust,
            "ifCounterpartyVanishes": self.if_counterparty_vanishes,
            "scope": self.scope,
        }


#: the keys of ``phaseSeconds``
PHASE_TIMES = ("open", "payments", "close")

#: the DataFrame's columns, in order (all measured on this run)
FRAME_COLUMNS = (
    "label",
    "method",
    "variant",
    "asset",
    "payments",
    "txs",
    "gas_used",
    "cost_native_wei",
    "payer_cost_native_wei",
    "cost_usd",
    "fee_bridge",
    "fee_pool",
    "fee_slippage",
    "fee_node",
    "sent",
    "received",
    "wall_seconds",
    "blocks",
    "signature_prompts",
    "transaction_prompts",
    "off_chain_operations",
    "locked",
    "locked_seconds",
    "dispute_window_seconds",
)


@dataclass(frozen=True)
class Comparison:
    """Every method that could serve ``intent`` on ``network``, run and measured.

    ``unavailable`` maps a method (or ``method/variant``) that could not serve it to the
    reason; ``native_usd`` is the native coin's USD price used for ``cost_usd`` and
    ``price_source`` says where it came from (``None`` when no price is known: then every
    ``cost_usd`` is ``None`` too).
    """

    network: str
    measured_at: str
    intent: Intent
    runs: tuple[MethodRun, ...]
    unavailable: Mapping[str, str] = field(default_factory=dict)
    native_usd: float | None = None
    price_source: str | None = None

    # --- the two marks the selector shows -----------------------------------------------

    @property
    def cheapest(self) -> str | None:
        """The label of the run whose transactions cost least in the native coin (fees in
        the asset are in :attr:`MethodRun.fees_base_units`, listed apart: no price joins
        the two on every network)."""
        return _best(self.runs, lambda r: (r.cost_native_wei, r.label))

    @property
    def fastest(self) -> str | None:
        """The label of the run that reached final in the least wall-clock time."""
        return _best(self.runs, lambda r: (r.wall_seconds, r.label))

    def run(self, label: str) -> MethodRun:
        """The run called ``label``."""
        for r in self.runs:
            if r.label == label:
                return r
        raise InvalidComparisonError(
            f"no run is labelled {label!r}; labels: {[r.label for r in self.runs]}"
        )

    # --- a table ------------------------------------------------------------------------

    def frame(self) -> pd.DataFrame:
        """A tidy DataFrame: one row per run, measured columns only (amounts in the asset's
        units as Decimals, gas in gas, cost in wei); ``attrs`` carries the network, the
        intent, the price source and what was unavailable."""
        import pandas as pd

        rows = []
        for r in self.runs:
            unit = Decimal(10) ** -r.decimals
            fees = {f"fee_{k}": Decimal(r.fees_base_units.get(k, 0)) * unit for k in FEE_KINDS}
            rows.append(
                {
                    "label": r.label,
                    "method": r.method,
                    "variant": r.variant,
                    "asset": r.asset,
                    "payments": r.payments,
                    "txs": len(r.txs),
                    "gas_used": r.gas_used,
                    "cost_native_wei": r.cost_native_wei,
                    "payer_cost_native_wei": r.payer_cost_native_wei,
                    "cost_usd": r.cost_usd,
                    **fees,
                    "sent": Decimal(r.sent_base_units) * unit,
                    "received": Decimal(r.received_base_units) * unit,
                    "wall_seconds": r.wall_seconds,
                    "blocks": r.blocks,
                    "signature_prompts": r.signature_prompts,
                    "transaction_prompts": r.transaction_prompts,
                    "off_chain_operations": r.off_chain_operations,
                    "locked": Decimal(r.locked_base_units) * unit,
                    "locked_seconds": r.locked_seconds,
                    "dispute_window_seconds": r.dispute_window_seconds,
                }
            )
        frame = pd.DataFrame(rows, columns=list(FRAME_COLUMNS))
        frame.attrs.update(
            {
                "kind": "measured",
                "network": self.network,
                "measuredAt": self.measured_at,
                "intent": self.intent.to_json(),
                "priceSource": self.price_source,
                "unavailable": dict(self.unavailable),
            }
        )
        return frame

    def transactions(self) -> pd.DataFrame:
        """Every transaction of every run, one row each (label, step, phase, hash, gas...)."""
        import pandas as pd

        return pd.DataFrame(
            [{"label": r.label, **t.to_json()} for r in self.runs for t in r.txs],
            columns=["label", *TX_KEYS],
        )

    # --- JSON ---------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The version-1 JSON object (``docs/api/compare.md``)."""
        return {
            "version": COMPARISON_VERSION,
            "network": self.network,
            "measuredAt": self.measured_at,
            "intent": self.intent.to_json(),
            "nativeUsd": self.native_usd,
            "priceSource": self.price_source,
            "runs": [r.to_json() for r in self.runs],
            "unavailable": dict(self.unavailable),
            "cheapest": self.cheapest,
            "fastest": self.fastest,
        }

    def dumps(self) -> str:
        """:meth:`to_json` as a JSON string."""
        return json.dumps(self.to_json())

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | str) -> Comparison:
        """Parse :meth:`to_json`'s output (an object or a JSON string), strictly: a missing,
        unknown or mistyped field, or a derived figure (``gasUsed``, ``costNativeWei``,
        ``cheapest``...) that disagrees with the transactions, raises
        :class:`~settlement_widgets.errors.InvalidComparisonError` naming its path."""
        if isinstance(data, str):
            try:
                check_nesting(data)
                data = json.loads(data)
            except ValueError as exc:
                raise InvalidComparisonError(f"comparison: not JSON ({exc})") from None
        from .parse import parse_comparison

        return parse_comparison(data)


def _best(runs: tuple[MethodRun, ...], key: Callable[[MethodRun], Any]) -> str | None:
    delivered = [r for r in runs if r.received_base_units > 0]
    return min(delivered, key=key).label if delivered else None


#: a transaction's JSON keys, in the order ``TxRecord.to_json`` writes them
TX_KEYS = tuple(TxRecord("0x", 1, "s", "open", 0, 0, "0x", 0, 0).to_json())
