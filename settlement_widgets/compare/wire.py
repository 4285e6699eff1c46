"""The JSON of a comparison, read strictly: what the selector, the dashboard and the endpoint
accept from ``Comparison.to_json()`` (version 1; its fields: ``docs/api/endpoint.md``).

A comparison reaches the views from places we do not control: a file another process
published, a POST body, a notebook variable. So it is parsed here, never trusted: every field
is checked for its type, range and length, and the first one that is wrong raises a
:class:`~settlement_widgets.errors.SettlementValueError` naming its path
(``runs[1].txs[0].gasUsed: expected a whole number >= 0, got "-12" (string)``). Duplicate
keys, ``NaN``/``Infinity`` and absurd sizes are refused too, fields it does not show are
ignored; the result is a
small read-only view (:class:`ComparisonView`), frozen dataclasses whose ``to_json()``
writes the same JSON back, canonically (addresses EIP-55, keys in order).

This module reads only the wire format and imports nothing of the comparison's engine, so
the widgets and the endpoint can show a comparison without loading pandas or a provider.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import Any, Final, Literal, TypeVar

from ..addresses import validate_address
from ..errors import InvalidAddressError, SettlementValueError
from ..json_depth import nesting_within
from ..links import is_link_target

#: deeper than any comparison nests (4 levels)
MAX_NESTING: Final = 32

__all__ = [
    "MAX_COMPARISON_BYTES",
    "METHODS",
    "WIRE_VERSION",
    "ComparisonView",
    "IntentView",
    "RunView",
    "TxView",
    "parse_comparison",
    "strict_loads",
]

#: the wire version this module reads
WIRE_VERSION: Final = 1
#: the methods a run can belong to
METHODS: Final = ("channel", "v4", "aggregator")
Method = Literal["channel", "v4", "aggregator"]
#: the largest comparison accepted as text (a comparison of every method at 20 payments,
#: each transaction with its explorer link, is well under 200 KiB)
MAX_COMPARISON_BYTES: Final = 1024 * 1024
_MAX_RUNS: Final = 64
_MAX_TXS: Final = 4096
_MAX_FEES: Final = 32
#: the largest whole number a field may hold: a uint256, as on chain
_MAX_UINT: Final = 2**256 - 1
_SHORT: Final = 200  # labels, names, steps, variants
_LONG: Final = 2000  # the qualitative sentences
_TX_HASH: Final = re.compile(r"^0x[0-9a-fA-F]{64}$")
_BASE_UNITS: Final = re.compile(r"^[0-9]{1,78}$")
_SIGNED_BASE_UNITS: Final = re.compile(r"^-?[0-9]{1,78}$")
_DECIMAL: Final = re.compile(r"^[0-9]{1,78}(\.[0-9]{1,78})?$")

T = TypeVar("T")


def _fail(path: str, message: str) -> SettlementValueError:
    return SettlementValueError(f"comparison {path}: {message}")


#: JSON's names for the types a parsed body holds: the error speaks the sender's language
_JSON_TYPES: Final = {
    bool: "boolean",
    int: "number",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}


def _shown(value: Any) -> str:
    """A bad value as an error message shows it: as JSON, cut short, with its JSON type
    (``null`` alone), never a Python type name."""
    if value is None:
        return "null"
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({_JSON_TYPES.get(type(value), 'value')})"


def _object(value: Any, path: str, keys: tuple[str, ...]) -> Mapping[str, Any]:
    """A JSON object with every one of ``keys``; other fields (the full record
    :meth:`~settlement_widgets.compare.result.Comparison.to_json` writes carries more than
    the cards show) are ignored, as the channel clients ignore fields a newer peer adds."""
    if not isinstance(value, Mapping):
        raise _fail(path, f"expected an object, got {_shown(value)}")
    missing = [k for k in keys if k not in value]
    if missing:
        raise _fail(path, f"missing field {missing[0]!r} (fields: {', '.join(keys)})")
    return value


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _text(value: Any, path: str, limit: int = _SHORT, *, empty: bool = False) -> str:
    if not isinstance(value, str):
        raise _fail(path, f"expected a string, got {_shown(value)}")
    if not empty and not value.strip():
        raise _fail(path, "must not be empty")
    if len(value) > limit:
        raise _fail(path, f"at most {limit} characters, got {len(value)}")
    return value


def _whole(value: Any, path: str, *, minimum: int = 0) -> int:
    """A JSON integer, or its decimal string (how wei travels beyond 2**53), in
    ``[minimum, 2**256)``; not a bool, not a float."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 78:
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(path, f"expected a whole number >= {minimum}, got {_shown(value)}")
    if value < minimum or value > _MAX_UINT:
        raise _fail(path, f"expected a whole number >= {minimum} (at most 2**256-1), got {value}")
    return value


def _seconds(value: Any, path: str) -> float:
    """A finite number >= 0 (an integer is accepted: ``3`` seconds is ``3.0``)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(path, f"expected a number of seconds >= 0, got {_shown(value)}")
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise _fail(path, f"expected a finite number >= 0, got {value!r}")
    return number


def _optional(value: Any, parse: Callable[[Any, str], T], path: str) -> T | None:
    return None if value is None else parse(value, path)


def _units(value: Any, path: str, pattern: re.Pattern[str] = _BASE_UNITS) -> str:
    """Base units as a decimal string of digits (exact at any size, as the wire writes them)."""
    if not isinstance(value, str) or not pattern.match(value):
        kind = "a string of digits" + (", optionally signed" if pattern is not _BASE_UNITS else "")
        raise _fail(path, f"expected base units as {kind}, got {_shown(value)}")
    return value


def _list(value: Any, path: str, limit: int) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(path, f"expected an array, got {_shown(value)}")
    if len(value) > limit:
        raise _fail(path, f"at most {limit} entries, got {len(value)}")
    return value


def _method(value: Any, path: str) -> Method:
    if value not in METHODS or not isinstance(value, str):
        raise _fail(path, f"expected one of {', '.join(METHODS)}, got {_shown(value)}")
    return value  # type: ignore[return-value]


@dataclass(frozen=True)
class IntentView:
    """The intent every run carried out: amount (a decimal string), asset, the two chains,
    the number of payments and the counterparty."""

    amount: str
    asset: str
    source_chain: int
    destination_chain: int
    payments: int
    counterparty: str

    _KEYS = ("amount", "asset", "sourceChain", "destinationChain", "payments", "counterparty")

    @classmethod
    def parse(cls, value: Any, path: str = "intent") -> IntentView:
        v = _object(value, path, cls._KEYS)
        amount = v["amount"]
        if not isinstance(amount, str) or not _DECIMAL.match(amount):
            raise _fail(
                _join(path, "amount"),
                f"expected a decimal string such as '100', got {_shown(amount)}",
            )
        return cls(
            amount=amount,
            asset=_text(v["asset"], _join(path, "asset")),
            source_chain=_whole(v["sourceChain"], _join(path, "sourceChain"), minimum=1),
            destination_chain=_whole(
                v["destinationChain"], _join(path, "destinationChain"), minimum=1
            ),
            payments=_whole(v["payments"], _join(path, "payments"), minimum=1),
            counterparty=_text(v["counterparty"], _join(path, "counterparty")),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "amount": self.amount,
            "asset": self.asset,
            "sourceChain": self.source_chain,
            "destinationChain": self.destination_chain,
            "payments": self.payments,
            "counterparty": self.counterparty,
        }


@dataclass(frozen=True)
class TxView:
    """One on-chain transaction of a run, as its receipt says: gas used and the effective
    gas price, who paid, the value sent; ``explorer_url`` only when it is a link target."""

    hash: str
    chain_id: int
    step: str
    gas_used: int
    effective_gas_price_wei: int
    payer: str
    value_wei: int
    explorer_url: str | None

    _KEYS = (
        "hash",
        "chainId",
        "step",
        "gasUsed",
        "effectiveGasPriceWei",
        "payer",
        "valueWei",
        "explorerUrl",
    )

    @classmethod
    def parse(cls, value: Any, path: str) -> TxView:
        v = _object(value, path, cls._KEYS)
        tx_hash = v["hash"]
        if not isinstance(tx_hash, str) or not _TX_HASH.match(tx_hash):
            raise _fail(
                _join(path, "hash"), f"expected 0x and 64 hex digits, got {_shown(tx_hash)}"
            )
        try:
            payer = validate_address(v["payer"], field="payer")
        except InvalidAddressError as exc:
            raise _fail(_join(path, "payer"), str(exc)) from None
        url = v["explorerUrl"]
        if url is not None and (
            not isinstance(url, str) or len(url) > _LONG or not is_link_target(url)
        ):
            raise _fail(
                _join(path, "explorerUrl"),
                f"expected null or an http(s) URL or a server path, got {_shown(url)}",
            )
        return cls(
            hash=tx_hash.lower(),
            chain_id=_whole(v["chainId"], _join(path, "chainId"), minimum=1),
            step=_text(v["step"], _join(path, "step")),
            gas_used=_whole(v["gasUsed"], _join(path, "gasUsed")),
            effective_gas_price_wei=_whole(
                v["effectiveGasPriceWei"], _join(path, "effectiveGasPriceWei")
            ),
            payer=payer,
            value_wei=_whole(v["valueWei"], _join(path, "valueWei")),
            explorer_url=url,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "hash": self.hash,
            "chainId": self.chain_id,
            "step": self.step,
            "gasUsed": self.gas_used,
            "effectiveGasPriceWei": self.effective_gas_price_wei,
            "payer": self.payer,
            "valueWei": self.value_wei,
            "explorerUrl": self.explorer_url,
        }


def _fees(value: Any, path: str) -> Mapping[str, str]:
    if not isinstance(value, Mapping):
        raise _fail(path, f"expected an object of name -> base units, got {_shown(value)}")
    if len(value) > _MAX_FEES:
        raise _fail(path, f"at most {_MAX_FEES} fees, got {len(value)}")
    fees: dict[str, str] = {}
    for name, amount in value.items():
        key = _text(name, f"{path} key")
        fees[key] = _units(amount, f"{path}[{key[:40]!r}]", _SIGNED_BASE_UNITS)
    return MappingProxyType(fees)


@dataclass(frozen=True)
class RunView:
    """One method (one variant, one route) measured on the intent.

    Every figure is what the run measured: ``gas_used`` is the sum of its transactions'
    receipts (checked here), ``cost_native_wei`` what they cost in the native token,
    ``cost_usd`` None where no price was known; amounts are base-unit strings (exact)."""

    method: Method
    variant: str
    label: str
    txs: tuple[TxView, ...]
    gas_used: int
    cost_native_wei: int
    cost_usd: float | None
    fees_base_units: Mapping[str, str]
    received_base_units: str
    wall_seconds: float
    blocks: int
    signature_prompts: int
    transaction_prompts: int
    locked_base_units: str
    locked_seconds: float
    dispute_window_seconds: int | None
    trust: str
    if_counterparty_vanishes: str

    _KEYS = (
        "method",
        "variant",
        "label",
        "txs",
        "gasUsed",
        "costNativeWei",
        "costUsd",
        "feesBaseUnits",
        "receivedBaseUnits",
        "wallSeconds",
        "blocks",
        "signaturePrompts",
        "transactionPrompts",
        "lockedBaseUnits",
        "lockedSeconds",
        "disputeWindowSeconds",
        "trust",
        "ifCounterpartyVanishes",
    )

    @property
    def prompts(self) -> int:
        """Every wallet prompt the user answered: signatures plus transactions."""
        return self.signature_prompts + self.transaction_prompts

    @classmethod
    def parse(cls, value: Any, path: str) -> RunView:
        v = _object(value, path, cls._KEYS)
        p = path
        txs = tuple(
            TxView.parse(tx, f"{p}.txs[{i}]")
            for i, tx in enumerate(_list(v["txs"], _join(p, "txs"), _MAX_TXS))
        )
        gas_used = _whole(v["gasUsed"], _join(p, "gasUsed"))
        receipts = sum(tx.gas_used for tx in txs)
        if gas_used != receipts:
            raise _fail(
                _join(p, "gasUsed"),
                f"{gas_used} is not the sum of its transactions' gasUsed ({receipts})",
            )
        return cls(
            method=_method(v["method"], _join(p, "method")),
            variant=_text(v["variant"], _join(p, "variant"), empty=True),
            label=_text(v["label"], _join(p, "label")),
            txs=txs,
            gas_used=gas_used,
            cost_native_wei=_whole(v["costNativeWei"], _join(p, "costNativeWei")),
            cost_usd=_optional(v["costUsd"], _seconds, _join(p, "costUsd")),
            fees_base_units=_fees(v["feesBaseUnits"], _join(p, "feesBaseUnits")),
            received_base_units=_units(v["receivedBaseUnits"], _join(p, "receivedBaseUnits")),
            wall_seconds=_seconds(v["wallSeconds"], _join(p, "wallSeconds")),
            blocks=_whole(v["blocks"], _join(p, "blocks")),
            signature_prompts=_whole(v["signaturePrompts"], _join(p, "signaturePrompts")),
            transaction_prompts=_whole(v["transactionPrompts"], _join(p, "transactionPrompts")),
            locked_base_units=_units(v["lockedBaseUnits"], _join(p, "lockedBaseUnits")),
            locked_seconds=_seconds(v["lockedSeconds"], _join(p, "lockedSeconds")),
            dispute_window_seconds=_optional(
                v["disputeWindowSeconds"], _whole, _join(p, "disputeWindowSeconds")
            ),
            trust=_text(v["trust"], _join(p, "trust"), _LONG),
            if_counterparty_vanishes=_text(
                v["ifCounterpartyVanishes"], _join(p, "ifCounterpartyVanishes"), _LONG
            ),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "variant": self.variant,
            "label": self.label,
            "txs": [tx.to_json() for tx in self.txs],
            "gasUsed": self.gas_used,
            "costNativeWei": self.cost_native_wei,
            "costUsd": self.cost_usd,
            "feesBaseUnits": dict(self.fees_base_units),
            "receivedBaseUnits": self.received_base_units,
            "wallSeconds": self.wall_seconds,
            "blocks": self.blocks,
            "signaturePrompts": self.signature_prompts,
            "transactionPrompts": self.transaction_prompts,
            "lockedBaseUnits": self.locked_base_units,
            "lockedSeconds": self.locked_seconds,
            "disputeWindowSeconds": self.dispute_window_seconds,
            "trust": self.trust,
            "ifCounterpartyVanishes": self.if_counterparty_vanishes,
        }


def _label_of(value: Any, path: str, labels: Mapping[str, RunView]) -> str | None:
    """``cheapest``/``fastest``: the label of one of the runs (null only without runs)."""
    if value is None and not labels:
        return None
    label = _text(value, path)
    if label not in labels:
        raise _fail(path, f"{label[:60]!r} is not the label of any run")
    return label


def _measured_at(value: Any, path: str) -> datetime:
    text = _text(value, path, 64)
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise _fail(path, f"expected an ISO 8601 date-time, got {_shown(value)}") from None
    if when.tzinfo is None:
        raise _fail(path, f"the date-time must say its time zone (Z or +hh:mm), got {text!r}")
    return when


@dataclass(frozen=True)
class ComparisonView:
    """A comparison as the views read it: the network, when, the intent, the runs (in the
    order measured), the methods that could not serve the intent and why, and the labels of
    the cheapest and the fastest run. Build it with :func:`parse_comparison`."""

    version: int
    network: str
    measured_at: datetime
    measured_at_text: str
    intent: IntentView
    runs: tuple[RunView, ...]
    unavailable: Mapping[str, str]
    cheapest: str | None
    fastest: str | None

    _KEYS = (
        "version",
        "network",
        "measuredAt",
        "intent",
        "runs",
        "unavailable",
        "cheapest",
        "fastest",
    )

    @classmethod
    def parse(cls, value: Any) -> ComparisonView:
        v = _object(value, "", cls._KEYS)
        version = v["version"]
        if isinstance(version, bool) or version != WIRE_VERSION:
            raise _fail("version", f"expected {WIRE_VERSION}, got {_shown(version)}")
        runs = tuple(
            RunView.parse(run, f"runs[{i}]")
            for i, run in enumerate(_list(v["runs"], "runs", _MAX_RUNS))
        )
        by_label: dict[str, RunView] = {}
        for i, run in enumerate(runs):
            if run.label in by_label:
                raise _fail(f"runs[{i}].label", f"{run.label[:60]!r} labels two runs")
            by_label[run.label] = run
        raw = v["unavailable"]
        if not isinstance(raw, Mapping):
            raise _fail("unavailable", f"expected an object of method -> reason, got {_shown(raw)}")
        unavailable: dict[str, str] = {
            _method(m, "unavailable key"): _text(why, f"unavailable.{m}", _LONG)
            for m, why in raw.items()
        }
        return cls(
            version=WIRE_VERSION,
            network=_network_name(v["network"], "network"),
            measured_at=_measured_at(v["measuredAt"], "measuredAt"),
            measured_at_text=v["measuredAt"],
            intent=IntentView.parse(v["intent"]),
            runs=runs,
            unavailable=MappingProxyType(unavailable),
            cheapest=_label_of(v["cheapest"], "cheapest", by_label),
            fastest=_label_of(v["fastest"], "fastest", by_label),
        )

    def runs_of(self, method: str) -> tuple[RunView, ...]:
        """The runs of ``method``, in the order measured (empty when it was not measured)."""
        return tuple(run for run in self.runs if run.method == method)

    def run(self, label: str) -> RunView:
        """The run labelled ``label``."""
        for run in self.runs:
            if run.label == label:
                return run
        raise SettlementValueError(f"no run of this comparison is labelled {label!r}")

    def to_json(self) -> dict[str, Any]:
        """The comparison as the wire writes it (what :func:`parse_comparison` reads back)."""
        return {
            "version": self.version,
            "network": self.network,
            "measuredAt": self.measured_at_text,
            "intent": self.intent.to_json(),
            "runs": [run.to_json() for run in self.runs],
            "unavailable": dict(self.unavailable),
            "cheapest": self.cheapest,
            "fastest": self.fastest,
        }

    def __repr__(self) -> str:
        labels = ", ".join(repr(run.label) for run in self.runs)
        return f"ComparisonView(network={self.network!r}, runs=[{labels}])"


_NETWORK: Final = re.compile(r"^[a-z0-9][a-z0-9.-]{0,63}$")


def _network_name(value: Any, path: str) -> str:
    if not isinstance(value, str) or not _NETWORK.match(value):
        raise _fail(
            path, f"expected a network name such as 'local' or 'sepolia', got {_shown(value)}"
        )
    return value


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise SettlementValueError(f"comparison: the key {key[:60]!r} appears twice")
        seen[key] = value
    return seen


def _no_constant(name: str) -> Any:
    raise SettlementValueError(f"comparison: {name} is not a JSON number")


def strict_loads(text: str | bytes) -> Any:
    """Strict JSON: no duplicate keys, no ``NaN``/``Infinity``, at most
    :data:`MAX_COMPARISON_BYTES`, bad UTF-8 and absurd nesting as clear errors."""
    size = len(text.encode() if isinstance(text, str) else text)
    if size > MAX_COMPARISON_BYTES:
        raise SettlementValueError(
            f"comparison: at most {MAX_COMPARISON_BYTES} bytes of JSON, got {size}"
        )
    if isinstance(text, bytes):
        try:
            text = text.decode()
        except UnicodeDecodeError as exc:
            raise SettlementValueError(f"comparison: not valid JSON ({exc.reason})") from exc
    if not nesting_within(text, MAX_NESTING):
        raise SettlementValueError(
            f"comparison: not valid JSON (nested deeper than {MAX_NESTING} levels)"
        )
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except SettlementValueError:
        raise
    except (ValueError, RecursionError) as exc:  # bad JSON or UTF-8, or absurd nesting
        raise SettlementValueError(f"comparison: not valid JSON ({str(exc)[:120]})") from None


def parse_comparison(value: Any) -> ComparisonView:
    """A :class:`ComparisonView` of ``value``: JSON text (``str``/``bytes``), the decoded
    object, a :class:`ComparisonView` (returned as is), or anything with a ``to_json()``
    (the comparison engine's ``Comparison``), whose answer is read the same way. Raises
    :class:`~settlement_widgets.errors.SettlementValueError` naming the first bad field."""
    if isinstance(value, ComparisonView):
        return value
    if not isinstance(value, str | bytes | bytearray | Mapping) and callable(
        getattr(value, "to_json", None)
    ):
        value = value.to_json()
    if isinstance(value, bytearray):
        value = bytes(value)
    if isinstance(value, str | bytes):
        value = strict_loads(value)
    if not isinstance(value, Mapping):
        raise SettlementValueError(
            f"comparison: expected a JSON object (Comparison.to_json()), got {_shown(value)}"
        )
    return ComparisonView.parse(value)
