"""EIP-712 domains and the ``AllowStateHash`` / ``AllowChallengeStateHash`` state digests.

The custody contract is OZ ``EIP712("Nitrolite:Custody", "0.3.0")``: domain = name, version,
chainId, verifyingContract = custody, no salt (Nitrolite v0.5 ``Utils.sol``).

Two encodings of the state struct exist, and they give **different** digests:

- ``"custody"`` (the default): what ``Utils.recoverStateEIP712Signer`` verifies on chain,
  ``keccak256(abi.encode(TYPEHASH, channelId, intent, version, keccak256(data),
  keccak256(abi.encode(allocations))))``. The allocations member is hashed as one
  ``abi.encode`` of the whole array, which is *not* what EIP-712 specifies for struct arrays.
- ``"eip712"``: strict EIP-712 (array = keccak of the concatenated element struct hashes),
  which is what wallets' ``eth_signTypedData_v4``, viem ``hashTypedData`` and eth-account
  compute from :func:`state_typed_data`. The vector ``eip712_state_digest_final`` is this one;
  a signature over it does **not** pass ``Custody``'s EIP-712 path.

So sign with ``"custody"`` for anything that goes on chain.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ....addresses import validate_address
from ....errors import SettlementValueError, UnknownOptionError
from .abi import encode_allocations
from .ids import as_channel_id_bytes
from .keccak import keccak256
from .types import UINT256_MAX, Allocation, State

__all__ = [
    "ALLOCATION_TYPEHASH",
    "CHALLENGE_STATE_TYPEHASH",
    "CUSTODY_DOMAIN_NAME",
    "CUSTODY_DOMAIN_VERSION",
    "STATE_TYPEHASH",
    "EIP712Domain",
    "StateEncoding",
    "as_domain_separator",
    "custody_domain",
    "state_eip712_digest",
    "state_struct_hash",
    "state_typed_data",
    "typed_data_digest",
]

CUSTODY_DOMAIN_NAME = "Nitrolite:Custody"
CUSTODY_DOMAIN_VERSION = "0.3.0"

_ALLOCATION_TYPE = "Allocation(address destination,address token,uint256 amount)"
_STATE_FIELDS = (
    "(bytes32 channelId,uint8 intent,uint256 version,bytes data,Allocation[] allocations)"
)
STATE_TYPEHASH = keccak256(("AllowStateHash" + _STATE_FIELDS + _ALLOCATION_TYPE).encode())
CHALLENGE_STATE_TYPEHASH = keccak256(
    ("AllowChallengeStateHash" + _STATE_FIELDS + _ALLOCATION_TYPE).encode()
)
ALLOCATION_TYPEHASH = keccak256(_ALLOCATION_TYPE.encode())

StateEncoding = Literal["custody", "eip712"]
_ENCODINGS = ("custody", "eip712")
_PAD12 = bytes(12)

_DOMAIN_FIELDS = (
    ("name", "string"),
    ("version", "string"),
    ("chainId", "uint256"),
    ("verifyingContract", "address"),
    ("salt", "bytes32"),
)


@dataclass(frozen=True)
class EIP712Domain:
    """An EIP-712 domain; only the fields that are set take part (as in viem/eth-account)."""

    name: str | None = None
    version: str | None = None
    chain_id: int | None = None
    verifying_contract: str | None = None
    salt: bytes | None = None
    separator: bytes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.verifying_contract is not None:
            object.__setattr__(
                self,
                "verifying_contract",
                validate_address(self.verifying_contract, field="verifyingContract"),
            )
        if self.chain_id is not None and (
            isinstance(self.chain_id, bool)
            or not isinstance(self.chain_id, int)
            or not 0 <= self.chain_id <= UINT256_MAX
        ):
            raise SettlementValueError(f"EIP-712 chainId must be a uint256, got {self.chain_id!r}")
        if self.salt is not None and (not isinstance(self.salt, bytes) or len(self.salt) != 32):
            raise SettlementValueError("EIP-712 salt must be 32 bytes")
        for label in ("name", "version"):
            value = getattr(self, label)
            if value is not None and not isinstance(value, str):
                raise SettlementValueError(f"EIP-712 domain {label} must be a string")
        names = [n for n, _ in _DOMAIN_FIELDS if self._value(n) is not None]
        type_string = (
            "EIP712Domain(" + ",".join(f"{t} {n}" for n, t in _DOMAIN_FIELDS if n in names) + ")"
        )
        words = [keccak256(type_string.encode())]
        if self.name is not None:
            words.append(keccak256(self.name.encode()))
        if self.version is not None:
            words.append(keccak256(self.version.encode()))
        if self.chain_id is not None:
            words.append(self.chain_id.to_bytes(32, "big"))
        if self.verifying_contract is not None:
            words.append(_PAD12 + bytes.fromhex(self.verifying_contract[2:]))
        if self.salt is not None:
            words.append(self.salt)
        object.__setattr__(self, "separator", keccak256(b"".join(words)))

    def _value(self, eip_name: str) -> Any:
        return {
            "name": self.name,
            "version": self.version,
            "chainId": self.chain_id,
            "verifyingContract": self.verifying_contract,
            "salt": self.salt,
        }[eip_name]

    def types(self) -> list[dict[str, str]]:
        """The ``EIP712Domain`` type list for a full typed-data message."""
        return [{"name": n, "type": t} for n, t in _DOMAIN_FIELDS if self._value(n) is not None]

    def to_dict(self) -> dict[str, Any]:
        """The ``domain`` object of a full typed-data message (EIP-712 field names)."""
        return {n: self._value(n) for n, _ in _DOMAIN_FIELDS if self._value(n) is not None}


def custody_domain(chain_id: int, custody: str) -> EIP712Domain:
    """The custody contract's domain: ``("Nitrolite:Custody", "0.3.0", chainId, custody)``."""
    return EIP712Domain(CUSTODY_DOMAIN_NAME, CUSTODY_DOMAIN_VERSION, chain_id, custody)


def as_domain_separator(domain: EIP712Domain | bytes | str) -> bytes:
    """A domain separator from a domain, or from the 32 bytes (or 0x-hex) read on chain."""
    if isinstance(domain, EIP712Domain):
        return domain.separator
    if isinstance(domain, str) and domain.startswith("0x"):
        try:
            domain = bytes.fromhex(domain[2:])
        except ValueError:
            raise SettlementValueError("EIP-712 domain separator is not hex") from None
    if isinstance(domain, bytes | bytearray) and len(domain) == 32:
        return bytes(domain)
    raise SettlementValueError(
        "domain must be an EIP712Domain (e.g. custody_domain(chain_id, custody)) "
        "or a 32-byte domain separator"
    )


def typed_data_digest(domain_separator: bytes, struct_hash: bytes) -> bytes:
    """``keccak256("\\x19\\x01" || domainSeparator || structHash)``."""
    return keccak256(b"\x19\x01" + domain_separator + struct_hash)


def _allocations_hash(allocations: Sequence[Allocation], encoding: str) -> bytes:
    if encoding == "custody":
        return keccak256(
            encode_allocations([(a.destination, a.token, a.amount) for a in allocations])
        )
    return keccak256(
        b"".join(
            keccak256(
                ALLOCATION_TYPEHASH
                + _PAD12
                + bytes.fromhex(a.destination[2:])
                + _PAD12
                + bytes.fromhex(a.token[2:])
                + a.amount.to_bytes(32, "big")
            )
            for a in allocations
        )
    )


def state_struct_hash(
    channel_id: str | bytes,
    state: State,
    *,
    challenge: bool = False,
    encoding: StateEncoding = "custody",
) -> bytes:
    """Struct hash of ``AllowStateHash`` (or ``AllowChallengeStateHash`` when ``challenge``)."""
    if encoding not in _ENCODINGS:
        raise UnknownOptionError(
            f"unknown EIP-712 state encoding {encoding!r}: use 'custody' or 'eip712'"
        )
    typehash = CHALLENGE_STATE_TYPEHASH if challenge else STATE_TYPEHASH
    return keccak256(
        b"".join(
            [
                typehash,
                as_channel_id_bytes(channel_id),
                int(state.intent).to_bytes(32, "big"),
                state.version.to_bytes(32, "big"),
                keccak256(state.data),
                _allocations_hash(state.allocations, encoding),
            ]
        )
    )


def state_eip712_digest(
    channel_id: str | bytes,
    state: State,
    domain: EIP712Domain | bytes | str,
    *,
    challenge: bool = False,
    encoding: StateEncoding = "custody",
) -> bytes:
    """The 32-byte digest an EIP-712 state (or challenge) signature signs.

    ``encoding="custody"`` is what the contract verifies; ``"eip712"`` is the strict-standard
    digest of :func:`state_typed_data` (see the module docstring).
    """
    return typed_data_digest(
        as_domain_separator(domain),
        state_struct_hash(channel_id, state, challenge=challenge, encoding=encoding),
    )


def state_typed_data(
    channel_id: str | bytes, state: State, domain: EIP712Domain, *, challenge: bool = False
) -> dict[str, Any]:
    """The full typed-data message (eth-account ``encode_typed_data(full_message=...)``, viem
    ``hashTypedData``); its standard digest is ``state_eip712_digest(..., encoding="eip712")``."""
    primary = "AllowChallengeStateHash" if challenge else "AllowStateHash"
    return {
        "types": {
            "EIP712Domain": domain.types(),
            primary: [
                {"name": "channelId", "type": "bytes32"},
                {"name": "intent", "type": "uint8"},
                {"name": "version", "type": "uint256"},
                {"name": "data", "type": "bytes"},
                {"name": "allocations", "type": "Allocation[]"},
            ],
            "Allocation": [
                {"name": "destination", "type": "address"},
                {"name": "token", "type": "address"},
                {"name": "amount", "type": "uint256"},
            ],
        },
        "primaryType": primary,
        "domain": domain.to_dict(),
        "message": {
            "channelId": as_channel_id_bytes(channel_id),
            "intent": int(state.intent),
            "version": state.version,
            "data": state.data,
            "allocations": [
                {"destination": a.destination, "token": a.token, "amount": a.amount}
                for a in state.allocations
            ],
        },
    }
