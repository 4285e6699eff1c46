"""What the ``ChannelHub`` client returns and decodes: statuses, events, mined
transactions, channel data, and the definition and id of a channel as the hub takes them.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...._keccak import keccak256
from ....addresses import to_checksum, validate_address
from ....errors import InvalidStateError
from ..core.calldata import (
    hex_bytes,
)
from ..core.ids import (
    CHANNEL_HUB_VERSION,
    DEFAULT_CHALLENGE_DURATION,
    as_bytes32,
    channel_metadata,
    encode_channel_definition,
    parse_sig_validators_hex,
)

__all__ = [
    "HubChannelData",
    "HubChannelStatus",
    "HubEscrowData",
    "HubEvent",
    "HubTx",
    "channel_id_of",
    "contract_definition",
    "hub_status_name",
]


class HubChannelStatus(enum.IntEnum):
    """The hub's ``ChannelStatus`` (Nitrolite v1.4.1 ``Types.sol``): the node's
    void/open/challenged/closed, then the migration statuses a real hub can report."""

    VOID = 0
    OPERATING = 1
    DISPUTED = 2
    CLOSED = 3
    MIGRATING_IN = 4
    MIGRATED_OUT = 5


def hub_status_name(code: int) -> str:
    """The enum name of a status code; a code this client does not know (a newer hub) reads
    as ``"UNKNOWN_<code>"`` rather than failing the whole read."""
    try:
        return HubChannelStatus(code).name
    except ValueError:
        return f"UNKNOWN_{code}"


@dataclass(frozen=True)
class HubEvent:
    """One hub event: its name, its arguments by ABI name (structs as dicts, bytes as 0x-hex)
    and where it was emitted."""

    name: str
    args: Mapping[str, Any]
    block_number: int
    log_index: int
    tx_hash: str


@dataclass(frozen=True)
class HubTx:
    """A mined hub (or token) transaction and the hub events it emitted."""

    tx_hash: str
    block_number: int
    gas_used: int
    events: tuple[HubEvent, ...]
    #: the channel the transaction is about, when it is about one
    channel_id: str | None = None

    @property
    def event_names(self) -> tuple[str, ...]:
        return tuple(e.name for e in self.events)

    def event(self, name: str) -> HubEvent:
        """The first event called ``name``; :class:`InvalidStateError` if there is none."""
        for event in self.events:
            if event.name == name:
                return event
        raise InvalidStateError(
            f"transaction {self.tx_hash} emitted no {name} event "
            f"(it emitted: {', '.join(self.event_names) or 'none'})"
        )


@dataclass(frozen=True)
class HubChannelData:
    """``getChannelData``: status (enum name), definition and last accepted state in the
    contract JSON form, challenge expiry (0 unless disputed) and the funds the hub holds."""

    channel_id: str
    status: str
    definition: Mapping[str, Any]
    last_state: Mapping[str, Any]
    challenge_expiry: int
    locked_funds: int
    status_code: int = field(default=0, repr=False)


ESCROW_STATUS_NAMES: tuple[str, ...] = ("VOID", "INITIALIZED", "DISPUTED", "FINALIZED")
"""The hub's ``EscrowStatus`` (Nitrolite v1.4.1 ``Types.sol``), by code."""


@dataclass(frozen=True)
class HubEscrowData:
    """``getEscrowDepositData`` / ``getEscrowWithdrawalData``: the escrow record on its
    non-home chain (status ``"VOID"`` and a zero channel id for no record), its unlock time
    (deposits only; 0 for a withdrawal), challenge expiry (0 unless disputed), the funds it
    locks and its initiating state in the contract JSON form."""

    escrow_id: str
    channel_id: str
    status: str
    unlock_at: int
    challenge_expiry: int
    locked_amount: int
    init_state: Mapping[str, Any]
    status_code: int = field(default=0, repr=False)


def escrow_status_name(code: int) -> str:
    """The enum name of an escrow status code (``"UNKNOWN_<code>"`` for a code past FINALIZED)."""
    return ESCROW_STATUS_NAMES[code] if 0 <= code < len(ESCROW_STATUS_NAMES) else f"UNKNOWN_{code}"


# --- definitions and ids -----------------------------------------------------------------


def contract_definition(
    *,
    user: str,
    node: str,
    asset: str,
    nonce: int,
    challenge_duration: int = DEFAULT_CHALLENGE_DURATION,
    approved_sig_validators: int | str = 0,
) -> dict[str, Any]:
    """A ``ChannelDefinition`` in the contract JSON form that
    :mod:`~settlement_widgets.channel.v1.core.calldata` takes.

    The metadata binds the channel to ``asset`` (case-sensitive), so the id computed from
    it equals :func:`~settlement_widgets.channel.v1.core.ids.home_channel_id` for the same inputs.
    """
    return {
        "challengeDuration": challenge_duration,
        "user": validate_address(user, field="user", allow_zero=False),
        "node": validate_address(node, field="node", allow_zero=False),
        "nonce": nonce,
        "approvedSignatureValidators": parse_sig_validators_hex(approved_sig_validators),
        "metadata": "0x" + channel_metadata(asset).hex(),
    }


def channel_id_of(definition: Mapping[str, Any]) -> str:
    """The home channel id the hub derives from a contract-form definition."""
    encoded = encode_channel_definition(
        challenge_duration=int(definition["challengeDuration"]),
        user=definition["user"],
        node=definition["node"],
        nonce=int(definition["nonce"]),
        approved_sig_validators=int(definition["approvedSignatureValidators"]),
        metadata=hex_bytes(definition["metadata"], "definition.metadata", 32),
    )
    return "0x" + (bytes([CHANNEL_HUB_VERSION]) + keccak256(encoded)[1:]).hex()


def _channel_id_hex(channel_id: str | bytes) -> str:
    return "0x" + as_bytes32(channel_id, "channel_id").hex()


def _hex(value: Any) -> str:
    if isinstance(value, str):
        return value if value.startswith("0x") else "0x" + value
    return "0x" + bytes(value).hex()


# --- ABI value conversion ------------------------------------------------------------------


def _abi_type(param: Mapping[str, Any]) -> str:
    kind: str = param["type"]
    if kind.startswith("tuple"):
        return "(" + ",".join(_abi_type(c) for c in param["components"]) + ")" + kind[5:]
    return kind


def _to_json(param: Mapping[str, Any], value: Any) -> Any:
    """An eth-abi value as the contract JSON form: structs as dicts keyed by component name,
    bytes as 0x-hex, addresses checksummed, integers as ints."""
    kind: str = param["type"]
    if kind.endswith("]"):
        element = {**param, "type": kind[: kind.rindex("[")]}
        return [_to_json(element, v) for v in value]
    if kind == "tuple":
        return {c["name"]: _to_json(c, v) for c, v in zip(param["components"], value, strict=True)}
    if kind == "address":
        return to_checksum(value)
    if kind.startswith("bytes"):
        return _hex(value)
    return value


def _outputs(abi: Sequence[Mapping[str, Any]], name: str) -> list[Mapping[str, Any]]:
    for item in abi:
        if item.get("type") == "function" and item.get("name") == name:
            return list(item["outputs"])
    raise InvalidStateError(f"the ChannelHub ABI has no function {name!r}")


class _EventDecoder:
    """Decodes the hub's logs by topic0 from its ABI; other contracts' logs are skipped."""

    def __init__(self, abi: Sequence[Mapping[str, Any]], address: str) -> None:
        self._address = to_checksum(address)
        self._events: dict[bytes, tuple[str, list[Mapping[str, Any]]]] = {}
        for item in abi:
            if item.get("type") == "event":
                inputs = list(item["inputs"])
                signature = f"{item['name']}({','.join(_abi_type(i) for i in inputs)})"
                self._events[keccak256(signature.encode())] = (item["name"], inputs)

    def decode_log(self, log: Mapping[str, Any]) -> HubEvent | None:
        from eth_abi import decode

        if to_checksum(_hex(log["address"])) != self._address:
            return None
        topics = [bytes.fromhex(_hex(t)[2:]) for t in log.get("topics", ())]
        if not topics or topics[0] not in self._events:
            return None
        name, inputs = self._events[topics[0]]
        indexed = [i for i in inputs if i.get("indexed")]
        plain = [i for i in inputs if not i.get("indexed")]
        data = log.get("data") or b""
        raw = bytes.fromhex(data[2:]) if isinstance(data, str) else bytes(data)
        args: dict[str, Any] = {}
        for param, topic in zip(indexed, topics[1:], strict=False):
            (value,) = decode([_abi_type(param)], topic)
            args[param["name"]] = _to_json(param, value)
        values = decode([_abi_type(p) for p in plain], raw) if plain else ()
        for param, value in zip(plain, values, strict=True):
            args[param["name"]] = _to_json(param, value)
        return HubEvent(
            name=name,
            args=args,
            block_number=int(log["blockNumber"]),
            log_index=int(log["logIndex"]),
            tx_hash=_hex(log["transactionHash"]),
        )

    def decode_logs(self, logs: Iterable[Mapping[str, Any]]) -> tuple[HubEvent, ...]:
        decoded = (self.decode_log(log) for log in logs)
        events = [e for e in decoded if e is not None]
        return tuple(sorted(events, key=lambda e: (e.block_number, e.log_index)))


# --- the client ------------------------------------------------------------------------------
