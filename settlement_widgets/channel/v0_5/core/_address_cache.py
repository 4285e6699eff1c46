"""Memoised address conversions for the signature hot paths.

An EIP-55 checksum is a keccak plus a Python loop over 40 characters, which costs about as
much as half an ECDSA recovery. A relay or client sees the same few addresses over and over
(the broker, its users, their session keys), so both directions are cached; the functions
are pure, so a cache can never go stale. Errors are raised, never cached.
"""

from __future__ import annotations

from functools import lru_cache

from ....addresses import checksum_from_bytes, validate_address
from ....keys import recover_address_bytes

__all__ = ["address_bytes", "checksummed", "eip55", "recover_eip55"]


@lru_cache(maxsize=4096)
def _checksummed(address: str, field: str) -> str:
    return validate_address(address, field=field)


def checksummed(address: object, field: str = "address") -> str:
    """:func:`validate_address`, memoised for string input."""
    if not isinstance(address, str):
        return validate_address(address, field=field)  # raises the clear error
    return _checksummed(address, field)


def address_bytes(address: object, field: str = "address") -> bytes:
    """The 20 bytes of a validated address."""
    return bytes.fromhex(checksummed(address, field)[2:])


@lru_cache(maxsize=4096)
def eip55(raw20: bytes) -> str:
    """EIP-55 text of 20 address bytes."""
    return checksum_from_bytes(raw20)


def recover_eip55(digest: bytes, signature: str | bytes) -> str:
    """:func:`settlement_widgets.keys.recover_address` with the checksum memoised."""
    return eip55(recover_address_bytes(digest, signature))
