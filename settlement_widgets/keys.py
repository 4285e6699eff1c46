"""secp256k1 keys on the fast path: coincurve directly, key parsed once, never shown.

eth-account rebuilds the key object on every call (about 160 µs per signature against
26 µs for a cached coincurve key); the relay and the client sign
every frame, so both use :class:`PrivateKey`. eth-account stays the reference in tests.

Signatures are 65 bytes ``r || s || v`` with ``v`` in {27, 28} and a low ``s`` (libsecp256k1
only produces low-s), the form OpenZeppelin's ``ECDSA.recover`` and the ClearNode accept.
"""

from __future__ import annotations

import os
from typing import Any, Final

import coincurve

from ._keccak import keccak256 as keccak
from .addresses import checksum_from_bytes
from .errors import InvalidSignatureError, SettlementValueError

__all__ = [
    "SECP256K1_N",
    "PrivateKey",
    "address_from_public_key",
    "recover_address",
    "recover_address_bytes",
    "split_signature",
]

SECP256K1_N: Final = 0xFFFFFFFF_FFFFFFFF_FFFFFFFF_FFFFFFFE_BAAEDCE6_AF48A03B_BFD25E8C_D0364141
_HALF_N: Final = SECP256K1_N // 2


def address_from_public_key(public_key: coincurve.PublicKey) -> bytes:
    """The 20-byte Ethereum address of a public key."""
    return keccak(public_key.format(compressed=False)[1:])[-20:]


class PrivateKey:
    """A secp256k1 private key. Its repr and str show the address only."""

    __slots__ = ("_address", "_address_bytes", "_key")

    def __init__(self, secret: bytes | str) -> None:
        if isinstance(secret, str):
            text = secret[2:] if secret.startswith(("0x", "0X")) else secret
            try:
                secret = bytes.fromhex(text)
            except ValueError:
                raise SettlementValueError("private key must be 32 bytes of hex") from None
        if not isinstance(secret, bytes | bytearray) or len(secret) != 32:
            raise SettlementValueError("private key must be exactly 32 bytes")
        value = int.from_bytes(secret, "big")
        if not 0 < value < SECP256K1_N:
            raise SettlementValueError("private key is outside the secp256k1 range")
        self._key = coincurve.PrivateKey(bytes(secret))
        self._address_bytes = address_from_public_key(self._key.public_key)
        self._address = checksum_from_bytes(self._address_bytes)

    @classmethod
    def generate(cls) -> PrivateKey:
        """A fresh random key (session keys)."""
        while True:
            try:
                return cls(os.urandom(32))
            except SettlementValueError:  # pragma: no cover - probability ~2^-128
                continue

    @property
    def address(self) -> str:
        """EIP-55 address."""
        return self._address

    @property
    def address_bytes(self) -> bytes:
        return self._address_bytes

    def secret_hex(self) -> str:
        """The key as 0x-hex, for the few places that must persist it (mode-0600 stores)."""
        return "0x" + self._key.secret.hex()

    def sign_hash(self, digest: bytes) -> bytes:
        """65-byte ``r || s || v`` (v 27/28) over a 32-byte digest, no prefix."""
        if len(digest) != 32:
            raise SettlementValueError("can only sign a 32-byte digest")
        sig = self._key.sign_recoverable(digest, hasher=None)
        return sig[:64] + bytes((sig[64] + 27,))

    def sign_hash_hex(self, digest: bytes) -> str:
        return "0x" + self.sign_hash(digest).hex()

    def __repr__(self) -> str:
        return f"PrivateKey(address={self._address})"

    __str__ = __repr__

    def __reduce__(self) -> str | tuple[Any, ...]:  # never let a key leak through pickling
        raise TypeError("PrivateKey cannot be pickled")


def split_signature(signature: bytes | str) -> tuple[int, int, int]:
    """``(r, s, v)`` of a 65-byte signature, validated (length, v, low s)."""
    if isinstance(signature, str):
        text = signature[2:] if signature.startswith(("0x", "0X")) else signature
        try:
            signature = bytes.fromhex(text)
        except ValueError:
            raise InvalidSignatureError("signature is not hex") from None
    if len(signature) != 65:
        raise InvalidSignatureError(f"signature must be 65 bytes, got {len(signature)}")
    r = int.from_bytes(signature[:32], "big")
    s = int.from_bytes(signature[32:64], "big")
    v = signature[64]
    if v in (0, 1):
        v += 27
    if v not in (27, 28):
        raise InvalidSignatureError(f"signature recovery id v={signature[64]} is not 0/1/27/28")
    if not (0 < r < SECP256K1_N and 0 < s < SECP256K1_N):
        raise InvalidSignatureError("signature r or s is out of range")
    if s > _HALF_N:
        raise InvalidSignatureError("signature has a high s value (not canonical, EIP-2)")
    return r, s, v


def recover_address_bytes(digest: bytes, signature: bytes | str) -> bytes:
    """The 20-byte signer of ``digest``; raises :class:`InvalidSignatureError`."""
    r, s, v = split_signature(signature)
    compact = r.to_bytes(32, "big") + s.to_bytes(32, "big") + bytes((v - 27,))
    try:
        public = coincurve.PublicKey.from_signature_and_message(compact, digest, hasher=None)
    except Exception as exc:  # coincurve raises plain Exception/ValueError
        raise InvalidSignatureError(f"signature does not recover a public key: {exc}") from None
    return address_from_public_key(public)


def recover_address(digest: bytes, signature: bytes | str) -> str:
    """EIP-55 address of the signer of ``digest``."""
    return checksum_from_bytes(recover_address_bytes(digest, signature))
