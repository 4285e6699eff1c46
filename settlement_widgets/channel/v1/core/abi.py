"""A small generic Solidity ``abi.encode`` shared by every Nitrolite v1 module that hashes.

Why this module exists: v1 hashes nested tuples, dynamic arrays and strings (state packing,
ids, app sessions, calldata), unlike the fixed v0.5 shapes in
:mod:`settlement_widgets.channel.v0_5.core.abi`. One encoder keeps every hash in the package on the
same, vector-checked rules; out-of-range values raise :class:`SettlementValueError` instead
of being silently wrapped into a different signed message.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ....addresses import validate_address
from ....errors import SettlementValueError

__all__ = ["abi_encode", "address_word", "int_word"]


_ARRAY_SUFFIX = re.compile(r"^(.*)\[(\d*)\]$")


def _split_tuple(text: str) -> list[str]:
    """The component type strings of ``"(a,b,(c,d)[])"``."""
    inner, depth, start, parts = text[1:-1], 0, 0, []
    for index, char in enumerate(inner):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(inner[start:index])
            start = index + 1
    if inner:
        parts.append(inner[start:])
    return parts


@dataclass(frozen=True, slots=True)
class _Type:
    """One ABI type, parsed once: whether it is dynamic, its head size when static, and
    the function that encodes a value of it. Every state a node or client signs is encoded
    with the same few type strings, so parsing them per value was most of the encoder's
    time."""

    dynamic: bool
    size: int
    encode: Callable[[Any], bytes]


@dataclass(frozen=True, slots=True)
class _Sequence:
    parts: tuple[_Type, ...]
    head_size: int


def _sequence_of(parts: tuple[_Type, ...]) -> _Sequence:
    return _Sequence(parts, sum(32 if p.dynamic else p.size for p in parts))


@functools.lru_cache(maxsize=256)
def _sequence(types: tuple[str, ...]) -> _Sequence:
    return _sequence_of(tuple(_compile(t) for t in types))


def _encode_sequence(sequence: _Sequence, values: Sequence[Any]) -> bytes:
    parts = sequence.parts
    if len(parts) != len(values):
        raise SettlementValueError(f"abi: {len(parts)} types but {len(values)} values")
    heads: list[bytes] = []
    tails: list[bytes] = []
    offset = sequence.head_size
    for part, value in zip(parts, values, strict=True):
        encoded = part.encode(value)
        if part.dynamic:
            heads.append(offset.to_bytes(32, "big"))
            tails.append(encoded)
            offset += len(encoded)
        else:
            heads.append(encoded)
    return b"".join(heads) + b"".join(tails)


def address_word(address: str) -> bytes:
    """One ``address`` word (any case; validated)."""
    return bytes(12) + bytes.fromhex(validate_address(address)[2:])


def _bounds(signed: bool, bits: int) -> tuple[int, int]:
    return (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)


#: ``(signed, bits) -> (low, high)`` for every ABI integer width, computed once: a state's
#: packing writes sixteen integer words and the powers were most of each word's cost
_BOUNDS: Final = {
    (signed, bits): _bounds(signed, bits) for signed in (False, True) for bits in range(8, 257, 8)
}
_WORD_MODULUS: Final = 2**256


def int_word(value: int, signed: bool, bits: int) -> bytes:
    """One ``uintN``/``intN`` word (two's complement), refusing a value that does not fit."""
    low, high = _BOUNDS.get((signed, bits)) or _bounds(signed, bits)
    # a plain int skips the type checks; bool (an int subclass) and non-ints are refused
    if type(value) is not int and (not isinstance(value, int) or isinstance(value, bool)):
        raise SettlementValueError(
            f"abi: {value!r} does not fit {'int' if signed else 'uint'}{bits}"
        )
    if not low <= value <= high:
        raise SettlementValueError(
            f"abi: {value!r} does not fit {'int' if signed else 'uint'}{bits}"
        )
    if 0 <= value < _WORD_MODULUS:
        return value.to_bytes(32, "big")
    return (value % _WORD_MODULUS).to_bytes(32, "big")


@functools.lru_cache(maxsize=256)
def _compile(abi_type: str) -> _Type:
    match = _ARRAY_SUFFIX.match(abi_type)
    if match:
        return _compile_array(abi_type, _compile(match.group(1)), match.group(2))
    if abi_type.startswith("("):
        sequence = _sequence_of(tuple(_compile(p) for p in _split_tuple(abi_type)))
        dynamic = any(p.dynamic for p in sequence.parts)
        return _Type(dynamic, sequence.head_size, lambda v: _encode_sequence(sequence, list(v)))
    if abi_type == "address":
        return _Type(False, 32, address_word)
    if abi_type == "bool":
        return _Type(False, 32, lambda v: int_word(int(bool(v)), False, 8))
    if abi_type in ("bytes", "string"):
        return _Type(True, 32, _encode_bytes)
    if abi_type.startswith("bytes"):
        size = int(abi_type[5:])

        def fixed(value: Any) -> bytes:
            raw = bytes(value)
            if len(raw) != size:
                raise SettlementValueError(f"abi: {abi_type} needs {size} bytes, got {len(raw)}")
            return raw + bytes(32 - size)

        return _Type(False, 32, fixed)
    if abi_type.startswith(("uint", "int")):
        signed = abi_type.startswith("int")
        bits = int(abi_type[3 if signed else 4 :] or 256)
        return _Type(False, 32, lambda v: int_word(v, signed, bits))
    raise SettlementValueError(f"abi: unsupported type {abi_type!r}")


def _compile_array(abi_type: str, element: _Type, length: str) -> _Type:
    def encode(value: Any) -> bytes:
        items = list(value)
        if length and int(length) != len(items):
            raise SettlementValueError(f"abi: {abi_type} needs {length} items, got {len(items)}")
        body = _encode_sequence(_sequence_of((element,) * len(items)), items)
        return body if length else len(items).to_bytes(32, "big") + body

    dynamic = length == "" or element.dynamic
    return _Type(dynamic, 32 if dynamic else int(length) * element.size, encode)


def _encode_bytes(value: Any) -> bytes:
    raw = value.encode() if isinstance(value, str) else bytes(value)
    padded = raw + bytes(-len(raw) % 32)
    return len(raw).to_bytes(32, "big") + padded


def abi_encode(types: Sequence[str], values: Sequence[Any]) -> bytes:
    """Solidity ``abi.encode(values...)`` for the given canonical types.

    Addresses are hex strings, ``bytesN``/``bytes`` are :class:`bytes`, strings are text,
    integers are ints, tuples are sequences. Out-of-range values raise a
    :class:`SettlementValueError` rather than being silently truncated, because a wrapped
    value would be a different signed message.
    """
    return _encode_sequence(_sequence(tuple(types)), list(values))
