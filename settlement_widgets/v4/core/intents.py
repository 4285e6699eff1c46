"""EIP-712 intents of the settlement adapter: the type, its hashes and signatures (pure).

The adapter verifies ``Intent(bytes32 id,address user,address tokenIn,address tokenOut,uint256
amountIn,uint256 minAmountOut,uint256 deadline)`` under its own EIP-712 domain; ``signature``
is carried in the struct but not hashed. The domain is *read from the chain* (ERC-5267
``eip712Domain()``) by the provider, so the same code signs for our adapter (name
``"SettlementAdapter"``) and the deployed Sepolia one (``"JACKSettlementAdapter"``): see
:data:`SEPOLIA_ADAPTER_DOMAIN` and the verified vector in tests/unit/test_v4_intents.py.

Hashing uses eth-abi directly (the struct is flat); tests check it against eth-account's
``encode_typed_data`` as the reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, Protocol

from eth_abi import encode
from eth_hash.auto import keccak

from ...addresses import validate_address
from ...errors import (
    ConfigurationError,
    InvalidAmountError,
    InvalidSignatureError,
    SettlementValueError,
)
from ...keys import PrivateKey, recover_address
from ...networks import SEPOLIA

__all__ = [
    "EIP712_DOMAIN_TYPEHASH",
    "INTENT_TYPE",
    "INTENT_TYPEHASH",
    "SEPOLIA_ADAPTER_DOMAIN",
    "UINT256_MAX",
    "Eip712Domain",
    "Intent",
    "domain_separator",
    "intent_digest",
    "intent_id",
    "intent_struct_hash",
    "recover_intent_signer",
    "sign_intent",
]

UINT256_MAX: Final = 2**256 - 1
INTENT_TYPE: Final = (
    "Intent(bytes32 id,address user,address tokenIn,address tokenOut,uint256 amountIn,"
    "uint256 minAmountOut,uint256 deadline)"
)
INTENT_TYPEHASH: Final = keccak(INTENT_TYPE.encode())
EIP712_DOMAIN_TYPEHASH: Final = keccak(
    b"EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"
)
#: ERC-5267 ``fields`` bitmap for name, version, chainId, verifyingContract (no salt, no extensions)
_ERC5267_FIELDS: Final = 0x0F


def _uint(value: object, field: str, *, positive: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidAmountError(f"{field} must be an integer, got {type(value).__name__}")
    if value < (1 if positive else 0) or value > UINT256_MAX:
        low = "1" if positive else "0"
        raise InvalidAmountError(f"{field} must be between {low} and 2**256-1, got {value}")
    return value


def _bytes32_hex(value: object, field: str) -> str:
    if isinstance(value, bytes | bytearray):
        raw = bytes(value)
    elif isinstance(value, str):
        text = value[2:] if value.startswith(("0x", "0X")) else value
        try:
            raw = bytes.fromhex(text)
        except ValueError:
            raise SettlementValueError(f"{field} must be 32 bytes of hex, got {value!r}") from None
    else:
        raise SettlementValueError(
            f"{field} must be 32 bytes (hex or bytes), got {type(value).__name__}"
        )
    if len(raw) != 32:
        raise SettlementValueError(f"{field} must be 32 bytes, got {len(raw)}")
    return "0x" + raw.hex()


def _hex_bytes(value: object, field: str) -> str:
    if isinstance(value, bytes | bytearray):
        return "0x" + bytes(value).hex()
    if isinstance(value, str):
        text = value[2:] if value.startswith(("0x", "0X")) else value
        try:
            return "0x" + bytes.fromhex(text).hex()
        except ValueError:
            raise InvalidSignatureError(f"{field} is not hex: {value[:12]!r}...") from None
    raise InvalidSignatureError(f"{field} must be hex or bytes, got {type(value).__name__}")


def intent_id(label: str | bytes) -> str:
    """An intent id as keccak256 of a label (the Sepolia demo: ``jack-demo-intent-hash``)."""
    data = label.encode() if isinstance(label, str) else bytes(label)
    return "0x" + keccak(data).hex()


@dataclass(frozen=True)
class Eip712Domain:
    """An EIP-712 domain of name, version, chainId, verifyingContract (OZ's EIP712)."""

    name: str
    version: str
    chain_id: int
    verifying_contract: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not isinstance(self.version, str):
            raise SettlementValueError("EIP-712 domain name and version must be strings")
        if (
            isinstance(self.chain_id, bool)
            or not isinstance(self.chain_id, int)
            or self.chain_id <= 0
        ):
            raise SettlementValueError(
                f"EIP-712 chainId must be a positive integer, got {self.chain_id!r}"
            )
        object.__setattr__(
            self,
            "verifying_contract",
            validate_address(self.verifying_contract, field="verifyingContract"),
        )

    @classmethod
    def from_erc5267(cls, result: Sequence[Any]) -> Eip712Domain:
        """From the tuple ``eip712Domain()`` returns: (fields, name, version, chainId,
        verifyingContract, salt, extensions)."""
        try:
            fields, name, version, chain_id, contract, _salt, extensions = result
        except (TypeError, ValueError):
            raise ConfigurationError(
                f"eip712Domain() returned an unexpected shape: {result!r}"
            ) from None
        bitmap = fields[0] if isinstance(fields, bytes | bytearray) else int(fields)
        if bitmap != _ERC5267_FIELDS or list(extensions):
            raise ConfigurationError(
                f"the adapter's EIP-712 domain uses fields 0x{bitmap:02x} (extensions "
                f"{list(extensions)}); only name+version+chainId+verifyingContract (0x0f) "
                "is supported"
            )
        return cls(name=name, version=version, chain_id=int(chain_id), verifying_contract=contract)

    def separator(self) -> bytes:
        return domain_separator(self)

    def as_typed_data(self) -> dict[str, Any]:
        """The ``domain`` object of an eth_signTypedData_v4 message."""
        return {
            "name": self.name,
            "version": self.version,
            "chainId": self.chain_id,
            "verifyingContract": self.verifying_contract,
        }


#: The deployed Sepolia adapter's domain (``JACKSettlementAdapter.sol``); chain and
#: adapter address come from :data:`settlement_widgets.networks.SEPOLIA`.
SEPOLIA_ADAPTER_DOMAIN: Final = Eip712Domain(
    name="JACKSettlementAdapter",
    version="1",
    chain_id=SEPOLIA.chain_id,
    verifying_contract=SEPOLIA.contracts.settlement_adapter,
)


@dataclass(frozen=True)
class Intent:
    """A user's intent: sell exactly ``amount_in`` of ``token_in`` for at least
    ``min_amount_out`` of ``token_out`` before ``deadline`` (unix seconds).

    ``id`` is 32 bytes (0x-hex); ``signature`` is the user's EIP-712 signature (0x-hex) or
    None until signed. Amounts are integers in the tokens' smallest units.
    """

    id: str
    user: str
    token_in: str
    token_out: str
    amount_in: int
    min_amount_out: int
    deadline: int
    signature: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "id", _bytes32_hex(self.id, "intent id"))
        object.__setattr__(
            self, "user", validate_address(self.user, field="user", allow_zero=False)
        )
        token_in = validate_address(self.token_in, field="tokenIn")
        token_out = validate_address(self.token_out, field="tokenOut")
        if token_in == token_out:
            raise SettlementValueError(f"tokenIn and tokenOut are the same token ({token_in})")
        object.__setattr__(self, "token_in", token_in)
        object.__setattr__(self, "token_out", token_out)
        _uint(self.amount_in, "amountIn", positive=True)
        _uint(self.min_amount_out, "minAmountOut")
        _uint(self.deadline, "deadline")
        if self.signature is not None:
            object.__setattr__(self, "signature", _hex_bytes(self.signature, "signature"))

    @staticmethod
    def normalise_id(value: str | bytes) -> str:
        """An intent id (32 bytes as hex or bytes) in the 0x-lowercase-hex form we store."""
        return _bytes32_hex(value, "intent id")

    @property
    def id_bytes(self) -> bytes:
        return bytes.fromhex(self.id[2:])

    @property
    def signature_bytes(self) -> bytes:
        return bytes.fromhex(self.signature[2:]) if self.signature else b""

    def with_signature(self, signature: str | bytes) -> Intent:
        return replace(self, signature=_hex_bytes(signature, "signature"))

    def as_abi(self) -> tuple[Any, ...]:
        """The ``Intent`` struct tuple for the adapter's ABI (signature last, empty if unsigned)."""
        return (
            self.id_bytes,
            self.user,
            self.token_in,
            self.token_out,
            self.amount_in,
            self.min_amount_out,
            self.deadline,
            self.signature_bytes,
        )

    def message(self) -> dict[str, Any]:
        """The EIP-712 ``message`` object (what the user signs)."""
        return {
            "id": self.id_bytes,
            "user": self.user,
            "tokenIn": self.token_in,
            "tokenOut": self.token_out,
            "amountIn": self.amount_in,
            "minAmountOut": self.min_amount_out,
            "deadline": self.deadline,
        }

    def typed_data(self, domain: Eip712Domain) -> dict[str, Any]:
        """The full eth_signTypedData_v4 message (for wallets and eth-account)."""
        return {
            "types": {
                "EIP712Domain": [
                    {"name": "name", "type": "string"},
                    {"name": "version", "type": "string"},
                    {"name": "chainId", "type": "uint256"},
                    {"name": "verifyingContract", "type": "address"},
                ],
                "Intent": [
                    {"name": "id", "type": "bytes32"},
                    {"name": "user", "type": "address"},
                    {"name": "tokenIn", "type": "address"},
                    {"name": "tokenOut", "type": "address"},
                    {"name": "amountIn", "type": "uint256"},
                    {"name": "minAmountOut", "type": "uint256"},
                    {"name": "deadline", "type": "uint256"},
                ],
            },
            "primaryType": "Intent",
            "domain": domain.as_typed_data(),
            "message": self.message(),
        }

    def to_json(self) -> dict[str, Any]:
        """camelCase JSON, amounts as decimal strings (exact for uint256)."""
        return {
            "id": self.id,
            "user": self.user,
            "tokenIn": self.token_in,
            "tokenOut": self.token_out,
            "amountIn": str(self.amount_in),
            "minAmountOut": str(self.min_amount_out),
            "deadline": self.deadline,
            "signature": self.signature,
        }


def domain_separator(domain: Eip712Domain) -> bytes:
    """``hashStruct(EIP712Domain)`` (OZ ``_domainSeparatorV4``)."""
    return keccak(
        encode(
            ["bytes32", "bytes32", "bytes32", "uint256", "address"],
            [
                EIP712_DOMAIN_TYPEHASH,
                keccak(domain.name.encode()),
                keccak(domain.version.encode()),
                domain.chain_id,
                domain.verifying_contract,
            ],
        )
    )


def intent_struct_hash(intent: Intent) -> bytes:
    """``hashStruct(Intent)``: the signature field is not part of the type."""
    return keccak(
        encode(
            [
                "bytes32",
                "bytes32",
                "address",
                "address",
                "address",
                "uint256",
                "uint256",
                "uint256",
            ],
            [
                INTENT_TYPEHASH,
                intent.id_bytes,
                intent.user,
                intent.token_in,
                intent.token_out,
                intent.amount_in,
                intent.min_amount_out,
                intent.deadline,
            ],
        )
    )


def intent_digest(intent: Intent, domain: Eip712Domain) -> bytes:
    """The 32-byte digest the adapter's ``hashIntent`` returns and the user signs."""
    return keccak(b"\x19\x01" + domain_separator(domain) + intent_struct_hash(intent))


class _HasKey(Protocol):
    @property
    def key(self) -> PrivateKey: ...


def _as_key(key: PrivateKey | _HasKey | str | bytes) -> PrivateKey:
    if isinstance(key, PrivateKey):
        return key
    if isinstance(key, str | bytes):
        return PrivateKey(key)
    inner = getattr(key, "key", None)
    if isinstance(inner, PrivateKey):
        return inner
    raise SettlementValueError("key must be a PrivateKey, a WalletClient or a 32-byte hex secret")


def sign_intent(
    intent: Intent, key: PrivateKey | _HasKey | str | bytes, domain: Eip712Domain
) -> Intent:
    """``intent`` with the user's EIP-712 signature under ``domain``.

    The key must be the intent's user: the adapter checks the signature against
    ``intent.user``, so signing with any other key could only produce a rejected intent.
    """
    signer = _as_key(key)
    if signer.address != intent.user:
        raise InvalidSignatureError(
            f"the signing key is {signer.address}, but the intent's user is {intent.user}: "
            "only the user can sign their intent"
        )
    return intent.with_signature(signer.sign_hash(intent_digest(intent, domain)))


def recover_intent_signer(intent: Intent, domain: Eip712Domain) -> str:
    """The address whose key produced ``intent.signature`` (EOA signatures only)."""
    if not intent.signature:
        raise InvalidSignatureError("the intent is not signed")
    return recover_address(intent_digest(intent, domain), intent.signature_bytes)
