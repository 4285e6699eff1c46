"""RESIZE state data: ``abi.encode(int256[] [client_delta, server_delta])``.

``Custody.resize`` decodes ``candidate.data`` as ``int256[]`` of length 2 and checks
``sum(previous allocations) + sum(deltas) == sum(candidate allocations)``; the ClearNode
puts ``[resize_amount, allocate_amount]`` there (Nitrolite v0.5 ``Custody.resize``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ....errors import InvalidStateError
from .abi import decode_int256_array, encode_int256_array
from .types import hex_to_bytes

__all__ = ["decode_resize_data", "resize_data"]

_INT_TEXT = re.compile(r"^-?[0-9]+$")


def _as_int(value: int | str, index: int) -> int:
    if isinstance(value, str) and _INT_TEXT.match(value):
        return int(value)  # the wire sends resize amounts as JSON strings ("5000000")
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidStateError(
            f"resize delta [{index}] must be an integer number of smallest units, got {value!r}"
        )
    return value


def resize_data(deltas: Sequence[int | str]) -> bytes:
    """The ``data`` of a RESIZE state for ``[client_delta, server_delta]`` (signed raw units)."""
    values = [_as_int(v, i) for i, v in enumerate(deltas)]
    if len(values) != 2:
        raise InvalidStateError(
            f"a resize has exactly 2 deltas [client, server], got {len(values)}"
        )
    return encode_int256_array(values)


def decode_resize_data(data: bytes | str) -> tuple[int, int]:
    """``(client_delta, server_delta)`` from RESIZE state data (bytes or 0x-hex); strict."""
    values = decode_int256_array(hex_to_bytes(data, "resize data"))
    if len(values) != 2:
        raise InvalidStateError(
            f"resize data must hold exactly 2 deltas [client, server], got {len(values)}"
        )
    return values[0], values[1]
