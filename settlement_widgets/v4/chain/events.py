"""Decode a receipt's logs into named events with the ABIs of the contracts involved (pure).

A settlement touches four contracts (adapter, hook, PoolManager, two ERC-20s); a receipt is
only useful to a reader once its logs say ``IntentSettled``, ``PolicyChecked``, ``Swap``,
``Transfer``. Logs no ABI knows are kept with the name ``"0x<topic0>"``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from eth_abi import decode
from eth_hash.auto import keccak

from ...addresses import to_checksum

__all__ = ["DecodedEvent", "decode_logs", "event_table"]


@dataclass(frozen=True)
class DecodedEvent:
    """One log: the event's name, the emitting contract and its arguments by name."""

    name: str
    address: str
    args: Mapping[str, Any] = field(default_factory=dict)
    log_index: int = 0

    def to_json(self) -> dict[str, Any]:
        def plain(v: Any) -> Any:
            if isinstance(v, bytes):
                return "0x" + v.hex()
            if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 2**53:
                return str(v)
            if isinstance(v, tuple | list):
                return [plain(x) for x in v]
            return v

        return {
            "name": self.name,
            "address": self.address,
            "logIndex": self.log_index,
            "args": {k: plain(v) for k, v in self.args.items()},
        }


def _type(inp: Mapping[str, Any]) -> str:
    t: str = inp["type"]
    if t.startswith("tuple"):
        return "(" + ",".join(_type(c) for c in inp["components"]) + ")" + t[len("tuple") :]
    return t


def event_table(*abis: Iterable[Mapping[str, Any]]) -> dict[bytes, Mapping[str, Any]]:
    """topic0 -> event ABI entry, over all ``abis`` (later ABIs win on identical signatures)."""
    table: dict[bytes, Mapping[str, Any]] = {}
    for abi in abis:
        for item in abi:
            if item.get("type") == "event" and not item.get("anonymous"):
                sig = f"{item['name']}({','.join(_type(i) for i in item.get('inputs', []))})"
                table[keccak(sig.encode())] = item
    return table


def _as_bytes(value: Any) -> bytes:
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    text = str(value)
    return bytes.fromhex(text[2:] if text.startswith("0x") else text)


def _normalise(typ: str, value: Any) -> Any:
    if typ == "address" and isinstance(value, str):
        return to_checksum(value)
    return value


def decode_logs(
    logs: Iterable[Mapping[str, Any]], table: Mapping[bytes, Mapping[str, Any]]
) -> tuple[DecodedEvent, ...]:
    """Decode receipt ``logs`` with an :func:`event_table`."""
    out: list[DecodedEvent] = []
    for log in logs:
        topics = [_as_bytes(t) for t in log.get("topics", [])]
        address = to_checksum(str(log["address"]))
        index = int(log.get("logIndex", 0) or 0)
        item = table.get(topics[0]) if topics else None
        if item is None:
            name = "0x" + topics[0].hex() if topics else "anonymous"
            out.append(DecodedEvent(name, address, {}, index))
            continue
        inputs = item.get("inputs", [])
        indexed = [i for i in inputs if i.get("indexed")]
        plain = [i for i in inputs if not i.get("indexed")]
        if len(indexed) != len(topics) - 1:  # same signature, different indexing: keep raw
            out.append(DecodedEvent(item["name"], address, {}, index))
            continue
        args: dict[str, Any] = {}
        for inp, topic in zip(indexed, topics[1:], strict=True):
            typ = _type(inp)
            if typ in ("string", "bytes") or typ.endswith("]") or typ.startswith("("):
                args[inp["name"]] = topic  # dynamic indexed values are stored as their hash
            else:
                args[inp["name"]] = _normalise(typ, decode([typ], topic)[0])
        values = decode([_type(i) for i in plain], _as_bytes(log.get("data", b"")))
        for inp, value in zip(plain, values, strict=True):
            args[inp["name"]] = _normalise(_type(inp), value)
        out.append(DecodedEvent(item["name"], address, args, index))
    return tuple(out)
