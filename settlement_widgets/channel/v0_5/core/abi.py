"""Hand-rolled ``abi.encode`` for the few fixed shapes ERC-7824 hashes and signs.

eth_abi spends about 70 µs encoding one packed state; joining pre-laid 32-byte words takes
about 1 µs, and the relay and the client encode a state for every
signature they make or check. The shapes here are fixed by the contracts (Nitrolite v0.5
``Utils.sol``), so each encoder writes the head/tail layout directly. ``eth_abi`` stays the
reference: tests/unit/test_erc7824_abi.py asserts byte equality on random inputs.

Inputs are the plain values eth_abi takes (0x-hex address strings, ints, bytes); validation
of ranges and checksums happens once, when the frozen types in :mod:`.types` are built.
"""

from __future__ import annotations

from collections.abc import Sequence

from ....errors import InvalidStateError

__all__ = [
    "ALLOCATION_TUPLE",
    "CHANNEL_ID_TYPES",
    "PACKED_STATE_TYPES",
    "decode_int256_array",
    "encode_allocations",
    "encode_channel_id_preimage",
    "encode_int256_array",
    "encode_packed_state",
]

ALLOCATION_TUPLE = "(address,address,uint256)"
CHANNEL_ID_TYPES = ("address[]", "address", "uint64", "uint64", "uint256")
"""eth_abi types of ``Utils.getChannelId``'s ``abi.encode``."""
PACKED_STATE_TYPES = ("bytes32", "uint8", "uint256", "bytes", ALLOCATION_TUPLE + "[]")
"""eth_abi types of ``Utils.getPackedState``'s ``abi.encode``."""

_PAD12 = bytes(12)
_INT256_MIN = -(2**255)
_INT256_MAX = 2**255 - 1
_WORD_20 = (0x20).to_bytes(32, "big")
_WORD_A0 = (0xA0).to_bytes(32, "big")

AllocationTuple = tuple[str, str, int]


def _word(value: int) -> bytes:
    return value.to_bytes(32, "big")


def _address_word(address: str) -> bytes:
    return _PAD12 + bytes.fromhex(address[2:])


def _allocation_words(allocations: Sequence[AllocationTuple]) -> bytes:
    return _word(len(allocations)) + b"".join(
        [
            _PAD12 + bytes.fromhex(d[2:]) + _PAD12 + bytes.fromhex(t[2:]) + _word(a)
            for d, t, a in allocations
        ]
    )


def encode_channel_id_preimage(
    participants: Sequence[str], adjudicator: str, challenge: int, nonce: int, chain_id: int
) -> bytes:
    """``abi.encode(address[] participants, address adjudicator, uint64 challenge,
    uint64 nonce, uint256 chainId)``."""
    return b"".join(
        [
            _WORD_A0,  # offset of the dynamic participants array: 5 head words
            _address_word(adjudicator),
            _word(challenge),
            _word(nonce),
            _word(chain_id),
            _word(len(participants)),
            *[_address_word(p) for p in participants],
        ]
    )


def encode_packed_state(
    channel_id: bytes,
    intent: int,
    version: int,
    data: bytes,
    allocations: Sequence[AllocationTuple],
) -> bytes:
    """``abi.encode(bytes32 channelId, uint8 intent, uint256 version, bytes data,
    Allocation[] allocations)``: the packedState every state signature covers."""
    n = len(data)
    padding = -n % 32
    return b"".join(
        [
            channel_id,
            _word(intent),
            _word(version),
            _WORD_A0,  # data starts after the 5 head words
            _word(0xA0 + 32 + n + padding),  # allocations start after data's length + body
            _word(n),
            data,
            bytes(padding),
            _allocation_words(allocations),
        ]
    )


def encode_allocations(allocations: Sequence[AllocationTuple]) -> bytes:
    """``abi.encode(Allocation[] allocations)``, as Custody's EIP-712 struct hash uses it."""
    return _WORD_20 + _allocation_words(allocations)


def encode_int256_array(values: Sequence[int]) -> bytes:
    """``abi.encode(int256[] values)``: the ``data`` of a RESIZE state."""
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int) or not _INT256_MIN <= v <= _INT256_MAX:
            raise InvalidStateError(f"resize delta {v!r} is not an int256")
    return b"".join(
        [_WORD_20, _word(len(values)), *[v.to_bytes(32, "big", signed=True) for v in values]]
    )


def decode_int256_array(data: bytes) -> tuple[int, ...]:
    """Strict inverse of :func:`encode_int256_array` (canonical encoding only)."""
    if len(data) < 64 or len(data) % 32:
        raise InvalidStateError(
            f"resize data must be abi.encode(int256[]): got {len(data)} bytes, "
            "not a whole number of 32-byte words >= 64"
        )
    offset = int.from_bytes(data[:32], "big")
    if offset != 32:
        raise InvalidStateError(f"resize data: array offset is {offset}, expected 32")
    count = int.from_bytes(data[32:64], "big")
    if len(data) != 64 + 32 * count:
        raise InvalidStateError(
            f"resize data: length {len(data)} does not match {count} int256 values"
        )
    return tuple(
        int.from_bytes(data[i : i + 32], "big", signed=True) for i in range(64, len(data), 32)
    )
