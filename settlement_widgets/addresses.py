"""Address validation shared by every component.

The relay compares address strings case-sensitively (the v0.5 ClearNode), so
everything we send is EIP-55 checksummed. Input may be all-lowercase (or all-uppercase) hex,
which has no checksum to check, or mixed-case, which must carry a correct checksum.

This module holds the package's only EIP-55 implementation: :mod:`settlement_widgets.keys`
(addresses of keys and signers) and :mod:`settlement_widgets.channel.v0_5.core._address_cache` call
:func:`checksum_from_bytes` / :func:`to_checksum`, so the rule cannot drift between copies.
It sits below both (it imports only :mod:`.errors` and :mod:`._keccak`), so there is no cycle.
"""

from __future__ import annotations

import functools
import re

from ._keccak import keccak256
from .errors import InvalidAddressError

__all__ = [
    "ZERO_ADDRESS",
    "checksum_from_bytes",
    "is_address",
    "short",
    "to_checksum",
    "validate_address",
]

ZERO_ADDRESS = "0x0000000000000000000000000000000000000000"
_HEX40 = re.compile(r"^0x[0-9a-fA-F]{40}$")


@functools.lru_cache(maxsize=4096)
def _eip55(lower: str) -> str:
    """EIP-55 over 40 lowercase hex digits: a letter is uppercased where the matching nibble
    of keccak256(lower) is >= 8. The one implementation; both public entry points use it.

    keccak comes from :mod:`._keccak` (pysha3 when installed), the backend the signature hot
    path uses, because :mod:`.keys` checksums every recovered signer through here.

    Cached (a pure function of its argument): a session sees a handful of addresses, each
    checksummed several times per transfer (recipient, recovered signers, replies), and the
    per-character rule costs ~25 µs where a cache hit costs well under 1 µs. The bound keeps
    a relay that sees many signers from growing without limit.
    """
    digest = keccak256(lower.encode("ascii")).hex()
    return "0x" + "".join(
        c.upper() if c.isalpha() and int(digest[i], 16) >= 8 else c for i, c in enumerate(lower)
    )


def to_checksum(address: str) -> str:
    """EIP-55 checksum of a syntactically valid address (no checksum verification)."""
    if not isinstance(address, str) or not _HEX40.match(address):
        raise InvalidAddressError(
            f"invalid address {address!r}: expected 0x followed by 40 hex digits"
        )
    return _eip55(address[2:].lower())


def checksum_from_bytes(raw20: bytes) -> str:
    """EIP-55 text of 20 raw address bytes.

    For callers that already hold bytes (a key's address, a recovered signer): it skips the
    hex round trip and regex of :func:`to_checksum`.
    """
    if len(raw20) != 20:
        raise InvalidAddressError(f"an address is 20 bytes, got {len(raw20)}")
    return _eip55(raw20.hex())


def validate_address(address: object, *, field: str = "address", allow_zero: bool = True) -> str:
    """Return the EIP-55 form of ``address`` or raise :class:`InvalidAddressError`.

    Accepts lowercase or uppercase hex, or mixed case with a correct checksum.
    """
    if type(address) is str:
        known = _VALID.get(address)
        if known is not None:  # accepted before: the same text gives the same answer
            if not allow_zero and known == ZERO_ADDRESS:
                raise InvalidAddressError(f"{field} must not be the zero address")
            return known
    if not isinstance(address, str):
        raise InvalidAddressError(f"{field} must be a string, got {type(address).__name__}")
    if not _HEX40.match(address):
        raise InvalidAddressError(
            f"invalid {field} {address!r}: expected 0x followed by 40 hex digits (20 bytes)"
        )
    checksummed = to_checksum(address)
    body = address[2:]
    if body != body.lower() and body != body.upper() and address != checksummed:
        raise InvalidAddressError(
            f"invalid {field} {address!r}: mixed-case address with a wrong EIP-55 checksum "
            f"(did you mean {checksummed}?)"
        )
    if type(address) is str:
        if len(_VALID) >= _VALID_MAX:
            _VALID.clear()
        _VALID[address] = checksummed
    if not allow_zero and checksummed == ZERO_ADDRESS:
        raise InvalidAddressError(f"{field} must not be the zero address")
    return checksummed


#: texts :func:`validate_address` accepted -> their EIP-55 form: a transfer validates the
#: same few addresses (recipient, token, wallet) several times on each side, and the regex,
#: case checks and checksum lookup cost more than this one dict hit. Bounded: cleared when
#: full (a relay that sees many addresses only loses the shortcut for a moment).
_VALID: dict[str, str] = {}
_VALID_MAX = 4096


def is_address(address: object) -> bool:
    """True when :func:`validate_address` would accept ``address``."""
    try:
        validate_address(address)
    except InvalidAddressError:
        return False
    return True


def short(value: str, head: int = 10, tail: int = 8) -> str:
    """The dashboard's truncation rule: over 20 characters -> first 10 + ``...`` + last 8."""
    if len(value) <= head + tail + 2:
        return value
    return f"{value[:head]}...{value[-tail:]}"
