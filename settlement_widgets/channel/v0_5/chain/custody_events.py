"""Typed events of the custody contract, decoded from receipts and log ranges.

One frozen dataclass per Custody event (Nitrolite v0.5 ``Custody.sol``), each with where it
happened (block number, log index, transaction hash, emitting address) so a client can keep an
event cursor. Decoding is driven by the contract ABI (topic0 -> event), so the same code reads
our sandbox custody and the Sepolia one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ....addresses import to_checksum
from ..core.types import Channel, State

__all__ = [
    "EVENT_NAMES",
    "Challenged",
    "Checkpointed",
    "Closed",
    "Created",
    "CustodyEvent",
    "Deposited",
    "EventDecoder",
    "Joined",
    "Opened",
    "Resized",
    "Withdrawn",
]


@dataclass(frozen=True, kw_only=True)
class CustodyEvent:
    """Where an event was emitted: block, position in the block, transaction, contract."""

    name: ClassVar[str] = ""

    block_number: int
    log_index: int
    tx_hash: str
    address: str

    @property
    def cursor(self) -> tuple[int, int]:
        """``(block_number, log_index)``: total order of events on a chain."""
        return (self.block_number, self.log_index)


@dataclass(frozen=True, kw_only=True)
class Created(CustodyEvent):
    name: ClassVar[str] = "Created"
    channel_id: str
    wallet: str
    channel: Channel
    initial: State


@dataclass(frozen=True, kw_only=True)
class Joined(CustodyEvent):
    name: ClassVar[str] = "Joined"
    channel_id: str
    index: int


@dataclass(frozen=True, kw_only=True)
class Opened(CustodyEvent):
    name: ClassVar[str] = "Opened"
    channel_id: str


@dataclass(frozen=True, kw_only=True)
class Challenged(CustodyEvent):
    name: ClassVar[str] = "Challenged"
    channel_id: str
    state: State
    expiration: int


@dataclass(frozen=True, kw_only=True)
class Checkpointed(CustodyEvent):
    name: ClassVar[str] = "Checkpointed"
    channel_id: str
    state: State


@dataclass(frozen=True, kw_only=True)
class Resized(CustodyEvent):
    name: ClassVar[str] = "Resized"
    channel_id: str
    delta_allocations: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class Closed(CustodyEvent):
    name: ClassVar[str] = "Closed"
    channel_id: str
    final_state: State


@dataclass(frozen=True, kw_only=True)
class Deposited(CustodyEvent):
    name: ClassVar[str] = "Deposited"
    wallet: str
    token: str
    amount: int


@dataclass(frozen=True, kw_only=True)
class Withdrawn(CustodyEvent):
    name: ClassVar[str] = "Withdrawn"
    wallet: str
    token: str
    amount: int


_CLASSES: dict[str, type[CustodyEvent]] = {
    c.name: c
    for c in (
        Created,
        Joined,
        Opened,
        Challenged,
        Checkpointed,
        Resized,
        Closed,
        Deposited,
        Withdrawn,
    )
}
EVENT_NAMES: tuple[str, ...] = tuple(_CLASSES)


def _abi_type(param: Mapping[str, Any]) -> str:
    t: str = param["type"]
    if t.startswith("tuple"):
        return "(" + ",".join(_abi_type(c) for c in param["components"]) + ")" + t[len("tuple") :]
    return t


def _hex(value: Any) -> str:
    if isinstance(value, str):
        return value if value.startswith("0x") else "0x" + value
    return "0x" + bytes(value).hex()


def _convert(name: str, fields: dict[str, Any]) -> dict[str, Any]:
    """ABI-decoded values -> the dataclass fields (erc7824 types, hex ids, checksummed)."""
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if key == "channelId":
            out["channel_id"] = _hex(value)
        elif key in ("wallet", "token"):
            out[key] = to_checksum(value)
        elif key == "channel":
            out["channel"] = Channel.from_abi(value)
        elif key in ("initial", "state", "finalState"):
            out["final_state" if key == "finalState" else key] = State.from_abi(value)
        elif key == "deltaAllocations":
            out["delta_allocations"] = tuple(int(v) for v in value)
        else:  # index, expiration, amount
            out[key] = int(value)
    return out


class EventDecoder:
    """Decodes the custody's logs with its ABI; logs of other contracts/events are skipped."""

    def __init__(self, abi: Sequence[Mapping[str, Any]], address: str):
        from eth_hash.auto import keccak

        self.address = to_checksum(address)
        self._events: dict[bytes, tuple[str, list[Mapping[str, Any]]]] = {}
        for item in abi:
            if item.get("type") != "event" or item.get("name") not in _CLASSES:
                continue
            signature = f"{item['name']}({','.join(_abi_type(i) for i in item['inputs'])})"
            self._events[keccak(signature.encode())] = (item["name"], list(item["inputs"]))

    def topic(self, name: str) -> str:
        """0x-hex topic0 of event ``name``."""
        for topic, (event_name, _) in self._events.items():
            if event_name == name:
                return "0x" + topic.hex()
        from ....errors import UnknownOptionError

        raise UnknownOptionError(
            f"unknown custody event {name!r}: use one of {', '.join(EVENT_NAMES)}"
        )

    def decode_log(self, log: Mapping[str, Any]) -> CustodyEvent | None:
        """The typed event of one log entry, or ``None`` if it is not a custody event."""
        from eth_abi import decode

        if to_checksum(_hex(log["address"])) != self.address:
            return None
        topics = [bytes.fromhex(_hex(t)[2:]) for t in log.get("topics", ())]
        if not topics or topics[0] not in self._events:
            return None
        name, inputs = self._events[topics[0]]
        indexed = [i for i in inputs if i.get("indexed")]
        plain = [i for i in inputs if not i.get("indexed")]
        data = log.get("data") or b""
        data_bytes = bytes.fromhex(data[2:]) if isinstance(data, str) else bytes(data)
        fields: dict[str, Any] = {}
        for param, topic in zip(indexed, topics[1:], strict=False):
            (fields[param["name"]],) = decode([_abi_type(param)], topic)
        values = decode([_abi_type(p) for p in plain], data_bytes) if plain else ()
        for param, value in zip(plain, values, strict=True):
            fields[param["name"]] = value
        cls = _CLASSES[name]
        return cls(
            block_number=int(log["blockNumber"]),
            log_index=int(log["logIndex"]),
            tx_hash=_hex(log["transactionHash"]),
            address=self.address,
            **_convert(name, fields),
        )

    def decode_logs(self, logs: Iterable[Mapping[str, Any]]) -> tuple[CustodyEvent, ...]:
        decoded = (self.decode_log(log) for log in logs)
        return tuple(sorted((e for e in decoded if e is not None), key=lambda e: e.cursor))
