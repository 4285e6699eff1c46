"""The EIP-712 ``Policy`` the wallet signs to authorise a session key (ClearNode v0.5 auth).

``domain = {name: application}`` (the only field),
``Policy(string challenge,string scope,address wallet,address session_key,uint64 expires_at,
Allowance[] allowances)`` with ``Allowance(string asset,string amount)``. The relay rebuilds this
from the stored ``auth_request`` values, so they must match exactly: :class:`AuthPolicy` keeps
them together between ``auth_request`` and ``auth_verify``.

The digest is computed by hand (strict EIP-712; a few keccak calls); eth-account's
``encode_typed_data`` over :func:`auth_typed_data` is the reference in the tests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ....addresses import validate_address
from ....errors import InvalidAmountError, SettlementValueError
from ._address_cache import recover_eip55
from .amounts import is_decimal_amount
from .eip712 import EIP712Domain, typed_data_digest
from .keccak import keccak256
from .messages import auth_request_message, auth_verify_message
from .rpc import Request
from .signing import KeyLike, as_private_key
from .types import UINT64_MAX

__all__ = [
    "ALLOWANCE_TYPEHASH",
    "POLICY_TYPEHASH",
    "Allowance",
    "AuthPolicy",
    "auth_digest",
    "auth_typed_data",
    "recover_auth_signer",
    "sign_auth",
]

_ALLOWANCE_TYPE = "Allowance(string asset,string amount)"
POLICY_TYPEHASH = keccak256(
    (
        "Policy(string challenge,string scope,address wallet,address session_key,"
        "uint64 expires_at,Allowance[] allowances)" + _ALLOWANCE_TYPE
    ).encode()
)
ALLOWANCE_TYPEHASH = keccak256(_ALLOWANCE_TYPE.encode())
_PAD12 = bytes(12)


@dataclass(frozen=True)
class Allowance:
    """What a session key may spend: ``asset`` symbol and a human decimal string amount."""

    asset: str
    amount: str

    def __post_init__(self) -> None:
        if not isinstance(self.asset, str) or not self.asset:
            raise SettlementValueError(f"allowance asset must be a symbol, got {self.asset!r}")
        if not is_decimal_amount(self.amount):
            raise InvalidAmountError(
                f"allowance amount must be a decimal string in asset units such as '100', "
                f"got {self.amount!r}"
            )

    @classmethod
    def of(cls, value: Allowance | Mapping[str, Any] | Sequence[str]) -> Allowance:
        if isinstance(value, Allowance):
            return value
        if isinstance(value, Mapping):
            return cls(value.get("asset"), value.get("amount"))  # type: ignore[arg-type]
        if isinstance(value, tuple | list) and len(value) == 2:
            return cls(value[0], value[1])
        raise SettlementValueError(
            f"an allowance is {{'asset', 'amount'}} or (asset, amount), got {value!r}"
        )

    def to_json(self) -> dict[str, str]:
        return {"asset": self.asset, "amount": self.amount}


@dataclass(frozen=True)
class AuthPolicy:
    """The values of one ``auth_request``, which the ``auth_verify`` signature must repeat."""

    wallet: str
    session_key: str
    application: str
    allowances: tuple[Allowance, ...]
    expires_at: int
    scope: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "wallet", validate_address(self.wallet, field="wallet"))
        object.__setattr__(
            self, "session_key", validate_address(self.session_key, field="session_key")
        )
        object.__setattr__(self, "allowances", tuple(Allowance.of(a) for a in self.allowances))
        if not isinstance(self.application, str) or not self.application:
            raise SettlementValueError(
                "application (the EIP-712 domain name) must be a non-empty string"
            )
        if not isinstance(self.scope, str):
            raise SettlementValueError("scope must be a string")
        if (
            isinstance(self.expires_at, bool)
            or not isinstance(self.expires_at, int)
            or not 0 <= self.expires_at <= UINT64_MAX
        ):
            raise SettlementValueError(
                f"expires_at must be Unix seconds (uint64), got {self.expires_at!r}"
            )

    @property
    def domain(self) -> EIP712Domain:
        return EIP712Domain(name=self.application)

    def request(self, *, request_id: int | None = None, timestamp: int | None = None) -> Request:
        """The ``auth_request`` frame for this policy."""
        return auth_request_message(
            self.wallet,
            self.session_key,
            self.application,
            [a.to_json() for a in self.allowances],
            self.expires_at,
            self.scope,
            request_id=request_id,
            timestamp=timestamp,
        )

    def typed_data(self, challenge: str) -> dict[str, Any]:
        """Full typed-data message (eth-account ``encode_typed_data(full_message=...)``)."""
        return {
            "types": {
                "EIP712Domain": [{"name": "name", "type": "string"}],
                "Policy": [
                    {"name": "challenge", "type": "string"},
                    {"name": "scope", "type": "string"},
                    {"name": "wallet", "type": "address"},
                    {"name": "session_key", "type": "address"},
                    {"name": "expires_at", "type": "uint64"},
                    {"name": "allowances", "type": "Allowance[]"},
                ],
                "Allowance": [
                    {"name": "asset", "type": "string"},
                    {"name": "amount", "type": "string"},
                ],
            },
            "primaryType": "Policy",
            "domain": {"name": self.application},
            "message": {
                "challenge": challenge,
                "scope": self.scope,
                "wallet": self.wallet,
                "session_key": self.session_key,
                "expires_at": self.expires_at,
                "allowances": [a.to_json() for a in self.allowances],
            },
        }

    def digest(self, challenge: str) -> bytes:
        """The EIP-712 digest the wallet signs for ``challenge``."""
        if not isinstance(challenge, str):
            raise SettlementValueError("challenge must be the challenge_message string")
        allowances = b"".join(
            keccak256(
                ALLOWANCE_TYPEHASH + keccak256(a.asset.encode()) + keccak256(a.amount.encode())
            )
            for a in self.allowances
        )
        struct = keccak256(
            b"".join(
                [
                    POLICY_TYPEHASH,
                    keccak256(challenge.encode()),
                    keccak256(self.scope.encode()),
                    _PAD12 + bytes.fromhex(self.wallet[2:]),
                    _PAD12 + bytes.fromhex(self.session_key[2:]),
                    self.expires_at.to_bytes(32, "big"),
                    keccak256(allowances),
                ]
            )
        )
        return typed_data_digest(self.domain.separator, struct)

    def sign(self, challenge: str, key: KeyLike) -> str:
        """The wallet's signature for ``auth_verify``; ``key`` must be the wallet's own key."""
        private = as_private_key(key)
        if private.address != self.wallet:
            raise SettlementValueError(
                f"the auth policy names wallet {self.wallet}, but the key is {private.address}: "
                "the main wallet signs the policy, not the session key"
            )
        return private.sign_hash_hex(self.digest(challenge))

    def verify_request(
        self,
        challenge: str,
        key: KeyLike,
        *,
        request_id: int | None = None,
        timestamp: int | None = None,
    ) -> Request:
        """The signed ``auth_verify`` frame for ``challenge``."""
        return auth_verify_message(
            challenge, self.sign(challenge, key), request_id=request_id, timestamp=timestamp
        )

    def recover(self, challenge: str, signature: str | bytes) -> str:
        """EIP-55 signer of an ``auth_verify`` signature (should equal ``wallet``)."""
        return recover_eip55(self.digest(challenge), signature)


def _policy(
    scope: str,
    wallet: str,
    session_key: str,
    expires_at: int,
    allowances: Sequence[Allowance | Mapping[str, Any] | Sequence[str]],
    application: str,
) -> AuthPolicy:
    return AuthPolicy(
        wallet,
        session_key,
        application,
        tuple(Allowance.of(a) for a in allowances),
        expires_at,
        scope,
    )


def auth_typed_data(
    challenge: str,
    scope: str,
    wallet: str,
    session_key: str,
    expires_at: int,
    allowances: Sequence[Allowance | Mapping[str, Any] | Sequence[str]],
    application: str,
) -> dict[str, Any]:
    """The ``Policy`` typed data exactly as SDK ``createEIP712AuthMessageSigner`` signs it."""
    return _policy(scope, wallet, session_key, expires_at, allowances, application).typed_data(
        challenge
    )


def auth_digest(
    challenge: str,
    scope: str,
    wallet: str,
    session_key: str,
    expires_at: int,
    allowances: Sequence[Allowance | Mapping[str, Any] | Sequence[str]],
    application: str,
) -> bytes:
    """EIP-712 digest of the ``Policy`` (``hashTypedData`` of :func:`auth_typed_data`)."""
    return _policy(scope, wallet, session_key, expires_at, allowances, application).digest(
        challenge
    )


def sign_auth(
    key: KeyLike,
    challenge: str,
    scope: str,
    session_key: str,
    expires_at: int,
    allowances: Sequence[Allowance | Mapping[str, Any] | Sequence[str]],
    application: str,
) -> str:
    """The wallet's ``auth_verify`` signature; ``wallet`` is the key's own address."""
    private = as_private_key(key)
    policy = _policy(scope, private.address, session_key, expires_at, allowances, application)
    return policy.sign(challenge, private)


def recover_auth_signer(
    signature: str | bytes,
    challenge: str,
    scope: str,
    wallet: str,
    session_key: str,
    expires_at: int,
    allowances: Sequence[Allowance | Mapping[str, Any] | Sequence[str]],
    application: str,
) -> str:
    """Who signed an ``auth_verify`` for these ``auth_request`` values (the relay's check)."""
    return _policy(scope, wallet, session_key, expires_at, allowances, application).recover(
        challenge, signature
    )
