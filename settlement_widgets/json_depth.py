"""How deep a JSON text nests, checked before the standard library parses it.

``json.loads`` recurses on the C stack once per ``[`` or ``{``, and stops only at Python's
recursion limit. py-evm (the in-process sandbox chain) raises that limit to 100,000 when it
is imported, far past what the C stack holds, so a body of 100,000 ``[`` sent to the
endpoint, the relay, the faucet or a WebSocket killed the whole process with a segmentation
fault instead of a ``RecursionError``. Every parser of text that arrives from outside calls
:func:`check_nesting` first; what we send never nests more than a few levels.
"""

from __future__ import annotations

import re
from typing import Final

from .errors import SettlementValueError

__all__ = ["MAX_JSON_NESTING", "check_nesting", "nesting_within"]

#: far deeper than any message of these protocols, far shallower than the C stack's limit
MAX_JSON_NESTING: Final = 64

_STRUCTURE = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def nesting_within(text: str | bytes, limit: int = MAX_JSON_NESTING) -> bool:
    """Whether the brackets of ``text`` (outside strings) nest at most ``limit`` deep.

    Texts with fewer opening brackets than ``limit`` (nearly every frame) are answered by
    two counts in C; only the others are scanned token by token, stopping at the first
    level too deep.
    """
    if isinstance(text, bytes | bytearray | memoryview):
        text = bytes(text).decode("utf-8", errors="replace")
    if text.count("[") + text.count("{") <= limit:
        return True
    depth = 0
    for match in _STRUCTURE.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                return False
        elif token in "]}":
            depth -= 1
    return True


def check_nesting(text: str | bytes, limit: int = MAX_JSON_NESTING) -> None:
    """Raise :class:`~settlement_widgets.errors.SettlementValueError` (a ``ValueError``, as
    ``json.loads`` raises for bad JSON) when ``text`` nests deeper than ``limit``, so
    callers' existing handling of malformed JSON applies."""
    if not nesting_within(text, limit):
        raise SettlementValueError(f"JSON nested deeper than {limit} levels")
