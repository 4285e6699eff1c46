"""State and challenge signatures in the three EOA schemes Custody accepts (``Utils.sol``).

- ``"raw"``: ECDSA over ``keccak256(packedState)``, no prefix. The broker and the SDK's
  ``SessionKeyStateSigner`` sign this way.
- ``"eip191"``: ``personal_sign`` over the *full packed bytes* (not over the 32-byte hash),
  as the SDK's ``WalletStateSigner`` (viem ``signMessage({raw})``) does.
- ``"eip712"``: ``AllowStateHash`` under the custody domain, in the encoding the contract
  verifies (:mod:`.eip712`); ``domain`` is required.

A challenger signs the same thing with ``"challenge"`` appended to the packed state (or the
``AllowChallengeStateHash`` typehash for EIP-712).

Signing and recovery go straight to coincurve through :class:`~settlement_widgets.keys.PrivateKey`
(about 30 µs instead of about 170 µs through eth-account);
eth-account is the reference in the tests. Signatures are 0x-hex ``r||s||v``, v 27/28, low s.
"""

from __future__ import annotations

import difflib
from typing import Any, Literal, Protocol

from ....errors import InvalidSignatureError, SettlementValueError, UnknownOptionError
from ....keys import PrivateKey, recover_address_bytes, split_signature
from ._address_cache import address_bytes, recover_eip55
from .eip712 import EIP712Domain, state_eip712_digest
from .ids import CHALLENGE_SUFFIX, eip191_digest, packed_state
from .keccak import keccak256
from .types import State

__all__ = [
    "SCHEMES",
    "KeyLike",
    "SignatureScheme",
    "as_private_key",
    "challenge_digest",
    "recover_challenge_signer",
    "recover_state_signer",
    "sign_challenge",
    "sign_digest",
    "sign_state",
    "state_digest",
    "verify_challenge_signature",
    "verify_state_signature",
]

SignatureScheme = Literal["raw", "eip191", "eip712"]
SCHEMES: tuple[str, ...] = ("raw", "eip191", "eip712")


class _HasKey(Protocol):
    @property
    def key(self) -> Any: ...


KeyLike = PrivateKey | bytes | str | _HasKey
"""A :class:`PrivateKey`, a ``WalletClient`` (its ``.key``), an eth-account ``LocalAccount``
(its ``.key`` bytes), or the 32 secret bytes / hex. Pass a ``PrivateKey`` on hot paths: parsing
a key derives its public key (about 40 µs)."""

DomainLike = EIP712Domain | bytes | str


def as_private_key(key: KeyLike) -> PrivateKey:
    """Normalise anything that can sign to a :class:`PrivateKey` (never echoes the secret)."""
    if isinstance(key, PrivateKey):
        return key
    if isinstance(key, bytes | bytearray | str):
        return PrivateKey(bytes(key) if isinstance(key, bytearray) else key)
    inner = getattr(key, "key", None)
    if isinstance(inner, PrivateKey):
        return inner
    if isinstance(inner, bytes | bytearray):
        return PrivateKey(bytes(inner))
    raise SettlementValueError(
        f"cannot sign with a {type(key).__name__}: pass a PrivateKey, a WalletClient, "
        "or a 32-byte private key (bytes or hex)"
    )


def _check_scheme(scheme: str) -> None:
    if scheme not in SCHEMES:
        close = difflib.get_close_matches(str(scheme), SCHEMES, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UnknownOptionError(
            f"unknown signature scheme {scheme!r}{hint}: use one of {', '.join(SCHEMES)}"
        )


def _digest(
    channel_id: str | bytes,
    state: State,
    scheme: str,
    domain: DomainLike | None,
    challenge: bool,
) -> bytes:
    _check_scheme(scheme)
    if scheme == "eip712":
        if domain is None:
            raise SettlementValueError(
                "EIP-712 state signatures need the custody domain: "
                "pass domain=custody_domain(chain_id, custody_address)"
            )
        return state_eip712_digest(channel_id, state, domain, challenge=challenge)
    message = packed_state(channel_id, state)
    if challenge:
        message += CHALLENGE_SUFFIX
    return keccak256(message) if scheme == "raw" else eip191_digest(message)


def state_digest(
    channel_id: str | bytes,
    state: State,
    scheme: SignatureScheme = "raw",
    domain: DomainLike | None = None,
) -> bytes:
    """The 32-byte digest a state signature in ``scheme`` signs."""
    return _digest(channel_id, state, scheme, domain, False)


def challenge_digest(
    channel_id: str | bytes,
    state: State,
    scheme: SignatureScheme = "raw",
    domain: DomainLike | None = None,
) -> bytes:
    """The 32-byte digest a challenger signature in ``scheme`` signs."""
    return _digest(channel_id, state, scheme, domain, True)


def sign_digest(digest: bytes, key: KeyLike) -> str:
    """Raw ECDSA over a 32-byte digest, 0x-hex ``r||s||v`` (v 27/28)."""
    return as_private_key(key).sign_hash_hex(digest)


def sign_state(
    channel_id: str | bytes,
    state: State,
    key: KeyLike,
    scheme: SignatureScheme = "raw",
    domain: DomainLike | None = None,
) -> str:
    """Sign ``state`` of channel ``channel_id`` for ``State.sigs`` (0x-hex, 65 bytes)."""
    return as_private_key(key).sign_hash_hex(_digest(channel_id, state, scheme, domain, False))


def recover_state_signer(
    channel_id: str | bytes,
    state: State,
    signature: str | bytes,
    scheme: SignatureScheme = "raw",
    domain: DomainLike | None = None,
) -> str:
    """EIP-55 address that produced ``signature`` in ``scheme``.

    Raises :class:`InvalidSignatureError` for a wrong length, a bad v or a high s.
    """
    return recover_eip55(_digest(channel_id, state, scheme, domain, False), signature)


def sign_challenge(
    channel_id: str | bytes,
    state: State,
    key: KeyLike,
    scheme: SignatureScheme = "raw",
    domain: DomainLike | None = None,
) -> str:
    """The ``challengerSig`` argument of ``Custody.challenge`` (SDK ``signRawMessage(
    getPackedChallengeState(...))`` is ``scheme="raw"``)."""
    return as_private_key(key).sign_hash_hex(_digest(channel_id, state, scheme, domain, True))


def recover_challenge_signer(
    channel_id: str | bytes,
    state: State,
    signature: str | bytes,
    scheme: SignatureScheme = "raw",
    domain: DomainLike | None = None,
) -> str:
    return recover_eip55(_digest(channel_id, state, scheme, domain, True), signature)


def _verify(
    channel_id: str | bytes,
    state: State,
    signature: str | bytes,
    signer: str,
    domain: DomainLike | None,
    challenge: bool,
) -> bool:
    expected = address_bytes(signer, "signer")
    split_signature(signature)  # malformed (length, v, high s) is malformed in every scheme
    schemes = ("raw", "eip191", "eip712") if domain is not None else ("raw", "eip191")
    for scheme in schemes:
        digest = _digest(channel_id, state, scheme, domain, challenge)
        try:
            if recover_address_bytes(digest, signature) == expected:
                return True
        except InvalidSignatureError:  # no public key for this digest: not this scheme
            continue
    return False


def verify_state_signature(
    channel_id: str | bytes,
    state: State,
    signature: str | bytes,
    signer: str,
    domain: DomainLike | None = None,
) -> bool:
    """True when ``signature`` is ``signer``'s in any EOA scheme Custody accepts, tried in the
    contract's order (raw, EIP-191, then EIP-712 when ``domain`` is given).

    A malformed signature raises :class:`InvalidSignatureError`: the contract reverts on it
    rather than treating it as "someone else's".
    """
    return _verify(channel_id, state, signature, signer, domain, False)


def verify_challenge_signature(
    channel_id: str | bytes,
    state: State,
    signature: str | bytes,
    signer: str,
    domain: DomainLike | None = None,
) -> bool:
    """Like :func:`verify_state_signature` for a challenger signature."""
    return _verify(channel_id, state, signature, signer, domain, True)
