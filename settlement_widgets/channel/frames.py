"""Which protocol a relay speaks, from one frame it sent (pure).

Yellow's network moved from Nitrolite v0.5 (ClearNode) to Nitrolite v1 (Nitronode), and a
URL that served v0.5 may now answer in v1, or with something else entirely (an HTTP error
page through a proxy, a different service). Our client speaks v0.5; when the first frames
do not parse, :func:`identify_frame` says what they are, so the user gets "this is a
Nitrolite v1 node" instead of a timeout.

The shapes, from the Nitrolite v0.5 and v1.4.1 SDKs:

- v0.5: a JSON object ``{"res": [id, method, params, ts], "sig": [...]}`` (or ``"req"``),
  4-element inner arrays;
- v1: a bare JSON array ``[type, id, method, payload, ts]`` with ``type`` 1 (request),
  2 (response), 3 (event) or 4 (error), no signatures; a v0.5 request sent to a v1 node is
  answered ``[4, 0, "", {"error": "invalid message format"}, ts]``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final, Literal

from ..json_depth import check_nesting
from ..networks import PROTOCOL_V05, PROTOCOL_V1

__all__ = ["V05", "V1", "FrameKind", "RelayProtocol", "identify_frame"]

FrameKind = Literal["nitrolite-v0.5", "nitrolite-v1", "json", "binary", "text"]

#: the protocol values, spelt as :data:`~settlement_widgets.networks.PROTOCOL_V05` and
#: :data:`~settlement_widgets.networks.PROTOCOL_V1` spell them (one spelling)
V05: Final = PROTOCOL_V05
V1: Final = PROTOCOL_V1
_V1_TYPES: Final = {1: "request", 2: "response", 3: "event", 4: "error response"}
_SHOWN: Final = 120


@dataclass(frozen=True)
class RelayProtocol:
    """What a frame is: ``kind`` and a sentence naming it (``found``) for error messages."""

    kind: FrameKind
    found: str
    sample: str

    @property
    def is_v05(self) -> bool:
        return self.kind == V05


def _sample(text: str) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= _SHOWN else one_line[: _SHOWN - 1] + "…"


def _is_v1(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 5
        and isinstance(value[0], int)
        and not isinstance(value[0], bool)
        and value[0] in _V1_TYPES
        and isinstance(value[1], int)
        and isinstance(value[2], str)
        and isinstance(value[4], int)
    )


def _is_v05(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    inner = value.get("res", value.get("req"))
    return isinstance(inner, list) and len(inner) == 4 and isinstance(inner[1], str)


def identify_frame(message: str | bytes) -> RelayProtocol:
    """Classify one WebSocket message from a relay (never raises)."""
    if isinstance(message, bytes | bytearray):
        try:
            text = bytes(message).decode("utf-8")
        except UnicodeDecodeError:
            return RelayProtocol(
                "binary", f"a binary frame of {len(message)} bytes", message[:40].hex()
            )
    else:
        text = message
    sample = _sample(text)
    try:
        check_nesting(text)
        value = json.loads(text)
    except ValueError:
        return RelayProtocol("text", "text that is not JSON", sample)
    if _is_v05(value):
        return RelayProtocol(V05, "a Nitrolite v0.5 (ClearNode) frame", sample)
    if _is_v1(value):
        kind = _V1_TYPES[value[0]]
        error = value[3].get("error") if isinstance(value[3], dict) else None
        detail = f", error {error!r}" if isinstance(error, str) else ""
        return RelayProtocol(
            V1,
            f"a Nitrolite v1 (Nitronode) {kind} frame [type, id, method, payload, ts]{detail}",
            sample,
        )
    shape = type(value).__name__ if not isinstance(value, dict) else "object"
    return RelayProtocol("json", f"JSON of another protocol (a {shape})", sample)
