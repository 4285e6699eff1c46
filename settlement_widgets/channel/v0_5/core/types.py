"""ERC-7824 (Nitrolite v0.3-v0.5) on-chain types as frozen, validated dataclasses.

Field names follow the Solidity structs (``Types.sol``); conversions cover the three shapes a
value takes: the ABI tuple web3 needs, the RPC JSON of the relay (``state_data``, amounts as
decimal strings) and back. Facts: Nitrolite v0.5 ``Types.sol``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any

from ....addresses import validate_address
from ....errors import InvalidAmountError, InvalidStateError

__all__ = [
    "UINT64_MAX",
    "UINT256_MAX",
    "Allocation",
    "Channel",
    "ChannelStatus",
    "State",
    "StateIntent",
    "hex_to_bytes",
]

UINT64_MAX = 2**64 - 1
UINT256_MAX = 2**256 - 1


class StateIntent(IntEnum):
    OPERATE = 0
    INITIALIZE = 1
    RESIZE = 2
    FINALIZE = 3


class ChannelStatus(IntEnum):
    """On-chain status in the custody contract (FINAL is transient: deleted in the same tx)."""

    VOID = 0
    INITIAL = 1
    ACTIVE = 2
    DISPUTE = 3
    FINAL = 4


def _uint(value: Any, bits: int, field_name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.isdigit():
            value = int(value)
        else:
            raise InvalidAmountError(f"{field_name} must be a non-negative integer, got {value!r}")
    if value < 0 or value >= 2**bits:
        raise InvalidAmountError(f"{field_name} {value} is outside uint{bits}")
    return value


def hex_to_bytes(value: str | bytes, field_name: str = "data") -> bytes:
    """``0x``-hex (or bytes) to bytes, with a clear error."""
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    if not isinstance(value, str) or not value.startswith("0x"):
        raise InvalidStateError(f"{field_name} must be 0x-prefixed hex, got {value!r}")
    try:
        return bytes.fromhex(value[2:])
    except ValueError:
        raise InvalidStateError(f"{field_name} is not valid hex: {value!r}") from None


@dataclass(frozen=True)
class Allocation:
    """``Allocation(address destination, address token, uint256 amount)``."""

    destination: str
    token: str
    amount: int

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "destination", validate_address(self.destination, field="destination")
        )
        object.__setattr__(self, "token", validate_address(self.token, field="token"))
        object.__setattr__(self, "amount", _uint(self.amount, 256, "allocation amount"))

    def to_abi(self) -> tuple[str, str, int]:
        return (self.destination, self.token, self.amount)

    def to_rpc(self) -> dict[str, str]:
        return {"destination": self.destination, "token": self.token, "amount": str(self.amount)}

    @classmethod
    def from_rpc(cls, data: Mapping[str, Any]) -> Allocation:
        try:
            return cls(data["destination"], data["token"], _uint(data["amount"], 256, "amount"))
        except (KeyError, TypeError) as exc:
            raise InvalidStateError(f"allocation is missing a field: {exc}") from None

    @classmethod
    def from_abi(cls, value: Sequence[Any]) -> Allocation:
        return cls(value[0], value[1], int(value[2]))


@dataclass(frozen=True)
class Channel:
    """``Channel(address[] participants, address adjudicator, uint64 challenge, uint64 nonce)``.

    Exactly two distinct, non-zero participants: index 0 the client, index 1 the broker.
    """

    participants: tuple[str, str]
    adjudicator: str
    challenge: int
    nonce: int

    def __post_init__(self) -> None:
        parts = tuple(self.participants)
        if len(parts) != 2:
            raise InvalidStateError(f"a channel has exactly 2 participants, got {len(parts)}")
        checked = tuple(
            validate_address(p, field=f"participants[{i}]", allow_zero=False)
            for i, p in enumerate(parts)
        )
        if checked[0] == checked[1]:
            raise InvalidStateError("the two channel participants must be distinct")
        object.__setattr__(self, "participants", checked)
        object.__setattr__(
            self,
            "adjudicator",
            validate_address(self.adjudicator, field="adjudicator", allow_zero=False),
        )
        object.__setattr__(self, "challenge", _uint(self.challenge, 64, "challenge"))
        object.__setattr__(self, "nonce", _uint(self.nonce, 64, "nonce"))

    def to_abi(self) -> tuple[list[str], str, int, int]:
        return (list(self.participants), self.adjudicator, self.challenge, self.nonce)

    def to_rpc(self) -> dict[str, Any]:
        return {
            "participants": list(self.participants),
            "adjudicator": self.adjudicator,
            "challenge": self.challenge,
            "nonce": self.nonce,
        }

    @classmethod
    def from_rpc(cls, data: Mapping[str, Any]) -> Channel:
        try:
            return cls(
                tuple(data["participants"]),  # type: ignore[arg-type]
                data["adjudicator"],
                _uint(data["challenge"], 64, "challenge"),
                _uint(data["nonce"], 64, "nonce"),
            )
        except (KeyError, TypeError) as exc:
            raise InvalidStateError(f"channel is missing a field: {exc}") from None

    @classmethod
    def from_abi(cls, value: Sequence[Any]) -> Channel:
        return cls(tuple(value[0]), value[1], int(value[2]), int(value[3]))  # type: ignore[arg-type]


@dataclass(frozen=True)
class State:
    """``State(uint8 intent, uint256 version, bytes data, Allocation[] allocations, bytes[] sigs)``.

    ``sigs[i]`` belongs to participant ``i`` (0x-hex, 65 bytes each once signed).
    """

    intent: StateIntent
    version: int
    data: bytes
    allocations: tuple[Allocation, ...]
    sigs: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "intent", StateIntent(self.intent))
        except ValueError:
            raise InvalidStateError(f"unknown state intent {self.intent!r}") from None
        object.__setattr__(self, "version", _uint(self.version, 256, "version"))
        object.__setattr__(self, "data", hex_to_bytes(self.data, "state data"))
        allocations = tuple(self.allocations)
        if not all(isinstance(a, Allocation) for a in allocations):
            raise InvalidStateError("allocations must be Allocation values")
        object.__setattr__(self, "allocations", allocations)
        sigs = []
        for i, s in enumerate(self.sigs):
            if not isinstance(s, str | bytes | bytearray):
                raise InvalidStateError(f"sigs[{i}] must be 0x-hex or bytes, got {s!r}")
            raw = hex_to_bytes(s, f"sigs[{i}]")
            sigs.append(s if isinstance(s, str) else "0x" + raw.hex())
        object.__setattr__(self, "sigs", tuple(sigs))

    def with_sigs(self, sigs: Iterable[str | bytes]) -> State:
        return replace(self, sigs=tuple(sigs))  # type: ignore[arg-type]

    def unsigned(self) -> State:
        return replace(self, sigs=())

    def to_abi(self) -> tuple[int, int, bytes, list[tuple[str, str, int]], list[bytes]]:
        return (
            int(self.intent),
            self.version,
            self.data,
            [a.to_abi() for a in self.allocations],
            [hex_to_bytes(s, "signature") for s in self.sigs],
        )

    def to_rpc(self) -> dict[str, Any]:
        """The relay's JSON shape (no sigs: the relay sends ``server_signature`` separately)."""
        return {
            "intent": int(self.intent),
            "version": self.version,
            "state_data": "0x" + self.data.hex(),
            "allocations": [a.to_rpc() for a in self.allocations],
        }

    @classmethod
    def from_rpc(cls, data: Mapping[str, Any]) -> State:
        try:
            raw = data.get("state_data", data.get("data", "0x"))
            return cls(
                StateIntent(int(data["intent"])),
                _uint(data["version"], 256, "version"),
                hex_to_bytes(raw or "0x", "state_data"),
                tuple(Allocation.from_rpc(a) for a in data["allocations"]),
                tuple(data.get("sigs") or ()),
            )
        except (KeyError, TypeError) as exc:
            raise InvalidStateError(f"state is missing a field: {exc}") from None
        except ValueError as exc:
            if isinstance(exc, InvalidStateError | InvalidAmountError):
                raise
            raise InvalidStateError(f"invalid state: {exc}") from None

    @classmethod
    def from_abi(cls, value: Sequence[Any]) -> State:
        return cls(
            StateIntent(int(value[0])),
            int(value[1]),
            bytes(value[2]),
            tuple(Allocation.from_abi(a) for a in value[3]),
            tuple("0x" + bytes(s).hex() for s in value[4]),
        )
