"""The strict parser of the comparison JSON (``Comparison.from_json``).

Every object is read by a :class:`_Reader` that refuses unknown and missing keys and
mistyped values, naming the path (``comparison.runs[2].txs[0].gasUsed``); the derived
figures (``gasUsed``, ``costNativeWei``, ``gasByStep``, ``cheapest``, ``fastest``) are
recomputed from the transactions and runs and must agree. A consumer (the selector, the
endpoint) can therefore trust a parsed comparison as much as one it measured itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..addresses import validate_address
from ..errors import InvalidComparisonError, SettlementError
from .intent import Intent
from .result import (
    COMPARISON_VERSION,
    FEE_KINDS,
    METHODS,
    PHASE_TIMES,
    PHASES,
    TX_KEYS,
    Comparison,
    MethodRun,
    TxRecord,
)

__all__ = ["parse_comparison"]


class _Reader:
    """Reads one JSON object at ``path``: every key must be expected, every expected key
    present, every value of its type."""

    def __init__(self, data: object, path: str, keys: tuple[str, ...]) -> None:
        if not isinstance(data, Mapping):
            raise _error(path, "must be an object", data)
        unknown = sorted(set(data) - set(keys))
        if unknown:
            raise InvalidComparisonError(f"comparison: {path} has unknown field(s) {unknown}")
        missing = [k for k in keys if k not in data]
        if missing:
            raise InvalidComparisonError(f"comparison: {path} lacks field(s) {missing}")
        self.data, self.path = data, path

    def at(self, key: str) -> str:
        return f"{self.path}.{key}"

    def integer(self, key: str, *, minimum: int = 0, optional: bool = False) -> Any:
        value = self.data[key]
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise _error(self.at(key), f"must be an integer >= {minimum}", value)
        return value

    def big(self, key: str) -> int:
        """A non-negative integer written as a decimal string (it may exceed 2**53)."""
        return _big(self.data[key], self.at(key))

    def num(self, key: str, *, optional: bool = False) -> Any:
        value = self.data[key]
        if value is None and optional:
            return None
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value < 0
        ):
            raise _error(self.at(key), "must be a non-negative number", value)
        return float(value)

    def text(self, key: str, *, optional: bool = False, choices: tuple[str, ...] = ()) -> Any:
        value = self.data[key]
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value:
            raise _error(self.at(key), "must be a non-empty string", value)
        if choices and value not in choices:
            raise _error(self.at(key), f"must be one of {list(choices)}", value)
        return value

    def array(self, key: str) -> list[Any]:
        value = self.data[key]
        if not isinstance(value, list):
            raise _error(self.at(key), "must be a list", value)
        return value

    def obj(self, key: str) -> Mapping[str, Any]:
        value = self.data[key]
        if not isinstance(value, Mapping):
            raise _error(self.at(key), "must be an object", value)
        return value


def _error(path: str, what: str, value: object) -> InvalidComparisonError:
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return InvalidComparisonError(f"comparison: {path} {what}, got {shown}")


def _big(value: object, path: str) -> int:
    if not isinstance(value, str) or not value.isdigit() or not value.isascii():
        raise _error(path, "must be a non-negative integer as a decimal string", value)
    return int(value)


_RUN_KEYS = (
    "method",
    "variant",
    "label",
    "asset",
    "decimals",
    "chainIds",
    "payments",
    "txs",
    "gasUsed",
    "gasByStep",
    "costNativeWei",
    "payerCostNativeWei",
    "costUsd",
    "feesBaseUnits",
    "sentBaseUnits",
    "receivedBaseUnits",
    "wallSeconds",
    "phaseSeconds",
    "blocks",
    "signaturePrompts",
    "transactionPrompts",
    "offChainOperations",
    "lockedBaseUnits",
    "lockedSeconds",
    "disputeWindowSeconds",
    "payer",
    "trust",
    "ifCounterpartyVanishes",
    "scope",
)
_TOP_KEYS = (
    "version",
    "network",
    "measuredAt",
    "intent",
    "nativeUsd",
    "priceSource",
    "runs",
    "unavailable",
    "cheapest",
    "fastest",
)
_INTENT_KEYS = (
    "amount",
    "asset",
    "sourceChain",
    "destinationChain",
    "payments",
    "counterparty",
    "maxSlippageBps",
)


def _address(value: object, path: str) -> str:
    try:
        return validate_address(value, field=path)
    except SettlementError:
        raise _error(path, "must be an address", value) from None


def _parse_tx(data: object, path: str) -> TxRecord:
    r = _Reader(data, path, TX_KEYS)
    phase = r.text("phase", choices=PHASES)
    payment = r.integer("payment", optional=True)
    if (phase == "payment") != (payment is not None):
        raise _error(r.at("payment"), "must be set exactly for a payment-phase tx", payment)
    url = r.text("explorerUrl", optional=True)
    tx_hash = r.text("hash")
    if not (len(tx_hash) == 66 and tx_hash.startswith("0x")):
        raise _error(r.at("hash"), "must be a 0x-prefixed 32-byte hex hash", tx_hash)
    return TxRecord(
        hash=tx_hash,
        chain_id=r.integer("chainId", minimum=1),
        step=r.text("step"),
        phase=phase,
        payment=payment,
        gas_used=r.integer("gasUsed"),
        effective_gas_price_wei=r.integer("effectiveGasPriceWei"),
        payer=_address(r.data["payer"], r.at("payer")),
        value_wei=r.integer("valueWei"),
        block=r.integer("block"),
        explorer_url=url,
    )


def _parse_run(data: object, path: str) -> MethodRun:
    r = _Reader(data, path, _RUN_KEYS)
    txs = tuple(_parse_tx(t, f"{r.at('txs')}[{i}]") for i, t in enumerate(r.array("txs")))
    fees_obj = _Reader(r.obj("feesBaseUnits"), r.at("feesBaseUnits"), FEE_KINDS)
    phases = _Reader(r.obj("phaseSeconds"), r.at("phaseSeconds"), PHASE_TIMES)
    chain_ids = r.array("chainIds")
    for i, c in enumerate(chain_ids):
        if isinstance(c, bool) or not isinstance(c, int) or c < 1:
            raise _error(f"{r.at('chainIds')}[{i}]", "must be a chain id", c)
    steps = r.obj("gasByStep")
    run = MethodRun(
        method=r.text("method", choices=METHODS),
        variant=r.text("variant"),
        label=r.text("label"),
        asset=r.text("asset"),
        decimals=r.integer("decimals"),
        chain_ids=tuple(chain_ids),
        payments=r.integer("payments", minimum=1),
        txs=txs,
        fees_base_units={k: fees_obj.big(k) for k in FEE_KINDS},
        sent_base_units=r.big("sentBaseUnits"),
        received_base_units=r.big("receivedBaseUnits"),
        wall_seconds=r.num("wallSeconds"),
        phase_seconds={k: phases.num(k) for k in PHASE_TIMES},
        blocks=r.integer("blocks"),
        signature_prompts=r.integer("signaturePrompts"),
        transaction_prompts=r.integer("transactionPrompts"),
        off_chain_operations=r.integer("offChainOperations"),
        locked_base_units=r.big("lockedBaseUnits"),
        locked_seconds=r.num("lockedSeconds"),
        dispute_window_seconds=r.integer("disputeWindowSeconds", optional=True),
        cost_usd=r.num("costUsd", optional=True),
        payer=_address(r.data["payer"], r.at("payer")),
        trust=r.text("trust"),
        if_counterparty_vanishes=r.text("ifCounterpartyVanishes"),
        scope=r.text("scope"),
    )
    # the derived figures must still be what the transactions say
    derived = {
        "gasUsed": (r.integer("gasUsed"), run.gas_used),
        "costNativeWei": (r.big("costNativeWei"), run.cost_native_wei),
        "payerCostNativeWei": (r.big("payerCostNativeWei"), run.payer_cost_native_wei),
        "gasByStep": (dict(steps), run.gas_by_step),
    }
    for key, (stated, computed) in derived.items():
        if stated != computed:
            raise _error(r.at(key), f"disagrees with its txs (they give {computed!r})", stated)
    return run


def _parse_intent(data: object, path: str) -> Intent:
    r = _Reader(data, path, _INTENT_KEYS)
    try:
        return Intent(
            amount=r.text("amount"),
            asset=r.text("asset"),
            source_chain=r.integer("sourceChain", minimum=1),
            destination_chain=r.integer("destinationChain", minimum=1),
            payments=r.integer("payments", minimum=1),
            counterparty=_address(r.data["counterparty"], r.at("counterparty")),
            max_slippage_bps=r.integer("maxSlippageBps"),
        )
    except InvalidComparisonError:
        raise
    except SettlementError as exc:
        raise InvalidComparisonError(f"comparison: {path}: {exc}") from None


def parse_comparison(data: object) -> Comparison:
    """The strict parse behind :meth:`Comparison.from_json`."""
    r = _Reader(data, "comparison", _TOP_KEYS)
    version = r.data["version"]
    if version != COMPARISON_VERSION or isinstance(version, bool):
        raise _error(r.at("version"), f"must be {COMPARISON_VERSION}", version)
    runs = tuple(_parse_run(x, f"{r.at('runs')}[{i}]") for i, x in enumerate(r.array("runs")))
    labels = [x.label for x in runs]
    if len(set(labels)) != len(labels):
        raise _error(r.at("runs"), "must have distinct labels", labels)
    unavailable = r.obj("unavailable")
    for key, reason in unavailable.items():
        if not isinstance(reason, str) or not reason:
            raise _error(f"{r.at('unavailable')}.{key}", "must be a non-empty reason", reason)
    price = r.num("nativeUsd", optional=True)
    source = r.text("priceSource", optional=True)
    if (price is None) != (source is None):
        raise _error(r.at("priceSource"), "must be given exactly when nativeUsd is", source)
    comparison = Comparison(
        network=r.text("network"),
        measured_at=r.text("measuredAt"),
        intent=_parse_intent(r.data["intent"], r.at("intent")),
        runs=runs,
        unavailable=dict(unavailable),
        native_usd=price,
        price_source=source,
    )
    for key in ("cheapest", "fastest"):
        stated = r.text(key, optional=True)
        computed = getattr(comparison, key)
        if stated != computed:
            raise _error(r.at(key), f"disagrees with the runs (they give {computed!r})", stated)
    return comparison
