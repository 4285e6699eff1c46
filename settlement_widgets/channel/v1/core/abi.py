"""A small generic Solidity ``abi.encode`` shared by every Nitrolite v1 module that hashes.

Why this module exists: v1 hashes nested tuples, dynamic arrays and strings (state packing,
ids, app sessions, calldata), unlike the fixed v0.5 shapes in
:mod:`settlement_widgets.channel.v0_5.core.abi`. One encoder keeps every hash in the package on the
same, vector-checked rules; out-of-range values raise :class:`SettlementValueError` instead
of being silently wrapped into a different signed message.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ....addresses import validate_address
from ....errors import SettlementValueError

__all__ = ["abi_encode"]


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


def _is_dynamic(abi_type: str) -> bool:
    match = _ARRAY_SUFFIX.match(abi_type)
    if match:
        return match.group(2) == "" or _is_dynamic(match.group(1))
    if abi_type.startswith("("):
        return any(_is_dynamic(part) for part in _split_tuple(abi_type))
    return abi_type in ("bytes", "string")


def _encode_sequence(types: Sequence[str], values: Sequence[Any]) -> bytes:
    if len(types) != len(values):
        raise SettlementValueError(f"abi: {len(types)} types but {len(values)} values")
    heads: list[bytes] = []
    tails: list[bytes] = []
    head_size = sum(32 if _is_dynamic(t) else _static_size(t) for t in types)
    offset = head_size
    for abi_type, value in zip(types, values, strict=True):
        encoded = _encode_one(abi_type, value)
        if _is_dynamic(abi_type):
            heads.append(offset.to_bytes(32, "big"))
            tails.append(encoded)
            offset += len(encoded)
        else:
            heads.append(encoded)
    return b"".join(heads) + b"".join(tails)


def _static_size(abi_type: str) -> int:
    match = _ARRAY_SUFFIX.match(abi_type)
    if match:
        return int(match.group(2)) * _static_size(match.group(1))
    if abi_type.startswith("("):
        return sum(_static_size(part) for part in _split_tuple(abi_type))
    return 32


def _int_word(value: int, signed: bool, bits: int) -> bytes:
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise SettlementValueError(
            f"abi: {value!r} does not fit {'int' if signed else 'uint'}{bits}"
        )
    return (value % 2**256).to_bytes(32, "big")


def _encode_one(abi_type: str, value: Any) -> bytes:
    match = _ARRAY_SUFFIX.match(abi_type)
    if match:
        element, length = match.group(1), match.group(2)
        items = list(value)
        if length and int(length) != len(items):
            raise SettlementValueError(f"abi: {abi_type} needs {length} items, got {len(items)}")
        body = _encode_sequence([element] * len(items), items)
        return body if length else len(items).to_bytes(32, "big") + body
    if abi_type.startswith("("):
        return _encode_sequence(_split_tuple(abi_type), list(value))
    if abi_type == "address":
        return bytes(12) + bytes.fromhex(validate_address(value)[2:])
    if abi_type == "bool":
        return _int_word(int(bool(value)), False, 8)
    if abi_type in ("bytes", "string"):
        raw = value.encode() if isinstance(value, str) else bytes(value)
        padded = raw + bytes(-len(raw) % 32)
        return len(raw).to_bytes(32, "big") + padded
    if abi_type.startswith("bytes"):
        size = int(abi_type[5:])
        raw = bytes(value)
        if len(raw) != size:
            raise SettlementValueError(f"abi: {abi_type} needs {size} bytes, got {len(raw)}")
        return raw + bytes(32 - size)
    if abi_type.startswith(("uint", "int")):
        signed = abi_type.startswith("int")
        bits = int(abi_type[3 if signed else 4 :] or 256)
        return _int_word(value, signed, bits)
    raise SettlementValueError(f"abi: unsupported type {abi_type!r}")


def abi_encode(types: Sequence[str], values: Sequence[Any]) -> bytes:
    """Solidity ``abi.encode(values...)`` for the given canonical types.

    Addresses are hex strings, ``bytesN``/``bytes`` are :class:`bytes`, strings are text,
    integers are ints, tuples are sequences. Out-of-range values raise a
    :class:`SettlementValueError` rather than being silently truncated, because a wrapped
    value would be a different signed message.
    """
    return _encode_sequence(list(types), list(values))
