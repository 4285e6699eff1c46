"""Nitrolite v1 RPC frames: ``[type, request_id, method, payload, timestamp_ms]``.

v1 dropped v0.5's ``{"req": [...], "sig": [...]}`` envelope: every message in both
directions is a bare five-element JSON array, with no signature (authority lives in the
signed objects inside payloads). This module encodes frames byte-exactly as the TS SDK's
``marshalMessage`` does (``JSON.stringify``: compact separators, keys in insertion order,
non-ASCII left as is, JavaScript number formatting, the SDK replacer that forces
``blockchain_id``/``epoch``/``version``/``nonce`` to decimal strings) so our request frames
equal the SDK's, and decodes frames with the SDK's ``unmarshalMessage`` checks and error
texts so a malformed frame is reported the same way a TS client would report it.

The ``node.v1.get_config`` result is parsed by :mod:`.responses` (the SDK's
``transformNodeConfig``, with its defaults for optional fields); :func:`parse_node_config`
is re-exported here.

Everything here is pure: no sockets, no clocks (callers pass ``timestamp_ms``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from enum import IntEnum
from json.encoder import encode_basestring
from typing import Any, Final

from ....errors import InvalidFrameError, RelayError, SettlementValueError
from ....json_depth import check_nesting
from .decimals import sdk_decimal_string
from .responses import parse_node_config

__all__ = [
    "INVALID_MESSAGE_FORMAT",
    "MAX_REQUEST_ID",
    "MAX_SAFE_INTEGER",
    "STRINGIFIED_KEYS",
    "VECTORS",
    "Frame",
    "MessageType",
    "decode_frame",
    "encode_frame",
    "encode_json",
    "error_frame",
    "parse_node_config",
    "raise_for_error",
    "unknown_method_error",
]

#: The error text the Go node sends (type 4, id 0, empty method) for an unparseable frame.
INVALID_MESSAGE_FORMAT = "invalid message format"

#: Request ids are uint64 on the Go side; the SDK draws them below 2^53 so JS keeps them exact.
MAX_REQUEST_ID = 2**64 - 1
MAX_SAFE_INTEGER = 2**53 - 1

#: Keys whose integer values the SDK's JSON replacer always writes as decimal strings.
STRINGIFIED_KEYS = frozenset({"blockchain_id", "epoch", "version", "nonce"})


class MessageType(IntEnum):
    """Element 0 of a frame."""

    REQUEST = 1
    RESPONSE = 2
    EVENT = 3
    ERROR = 4


@dataclass(frozen=True)
class Frame:
    """One v1 message. ``payload`` is always a JSON object (``{}`` when empty, never null)."""

    type: MessageType
    request_id: int
    method: str
    payload: Mapping[str, Any] = field(default_factory=dict)
    timestamp_ms: int = 0

    @property
    def is_error(self) -> bool:
        """True for a type-4 error response."""
        return self.type == MessageType.ERROR

    @property
    def error(self) -> str | None:
        """The error text of a type-4 frame (``payload["error"]``), else None."""
        if not self.is_error:
            return None
        text = self.payload.get("error")
        return text if isinstance(text, str) else json.dumps(text)

    def encode(self) -> str:
        """The exact text of the WebSocket message (see :func:`encode_frame`)."""
        return encode_frame(self)


def unknown_method_error(method: str) -> str:
    """The Go node's error text for a method it does not serve."""
    return f"unknown method: {method}"


def error_frame(request_id: int, method: str, error: str, timestamp_ms: int) -> Frame:
    """A type-4 reply, SDK ``newErrorResponse``: same id and method, ``{"error": text}``."""
    return Frame(MessageType.ERROR, request_id, method, {"error": error}, timestamp_ms)


def raise_for_error(frame: Frame) -> Frame:
    """Return ``frame`` unless it is an error response, which becomes :class:`RelayError`.

    The node's error text is kept verbatim so callers can match the strings the Go node
    documents (e.g. ``"unknown method: …"``).
    """
    if frame.is_error:
        raise RelayError(frame.error or "", code=frame.method or None)
    return frame


#: ``json.dumps(text, ensure_ascii=False)`` without building an encoder per call (a frame
#: holds some twenty strings)
_json_string: Callable[[str], str] = encode_basestring


# --- encoding --------------------------------------------------------------------------


def _js_number(value: float) -> str:
    """ECMAScript ``Number.prototype.toString`` for a finite float.

    Python's ``repr`` gives the same shortest round-trip digits but places the exponent
    differently (``1e+16`` vs JS ``10000000000000000``), so the digits are re-laid out by
    the ECMAScript rules.
    """
    if value == 0:
        return "0"  # JSON.stringify(-0) is "0"
    sign = "-" if value < 0 else ""
    shortest = Decimal(repr(abs(value)))  # exact value of the shortest round-trip digits
    digits = "".join(str(d) for d in shortest.as_tuple().digits).strip("0")
    n = shortest.adjusted() + 1  # ECMAScript's n: value = 0.digits × 10^n
    k = len(digits)
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        body = (
            digits[0] + ("." + digits[1:] if k > 1 else "") + f"e{'+' if e >= 0 else '-'}{abs(e)}"
        )
    return sign + body


def _encode_value(value: Any, key: str | None, out: list[str]) -> None:
    """Append ``JSON.stringify`` text of ``value`` (after the SDK replacer) to ``out``."""
    if key in STRINGIFIED_KEYS and isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_json_string(value))
    elif isinstance(value, int):
        out.append(str(int(value)))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidFrameError(f"cannot encode non-finite number {value!r} (key {key!r})")
        out.append(_js_number(value))
    elif isinstance(value, Decimal):
        # a decimal.js value serialises through its toJSON(), i.e. toString()
        out.append(json.dumps(sdk_decimal_string(value)))
    elif isinstance(value, Mapping):
        out.append("{")
        first = True
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidFrameError(f"object keys must be strings, got {k!r}")
            if not first:
                out.append(",")
            first = False
            out.append(_json_string(k))
            out.append(":")
            _encode_value(v, k, out)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _encode_value(item, None, out)
        out.append("]")
    else:
        raise InvalidFrameError(f"cannot encode {type(value).__name__} as JSON (key {key!r})")


def encode_json(value: Any) -> str:
    """``JSON.stringify(value, sdkReplacer)`` byte for byte (see the module docstring)."""
    if _plain_json(value):
        return _PLAIN_ENCODER.encode(value)
    out: list[str] = []
    _encode_value(value, None, out)
    return "".join(out)


#: the C encoder, for values :func:`_plain_json` admits: for those its text is the SDK's
#: (compact separators, non-ASCII as is, the same string escapes, ints as digits, keys in
#: insertion order), and it writes a state's frame several times faster than the walk
_PLAIN_ENCODER: Final = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), check_circular=False, allow_nan=False
)


def _plain_json(value: Any) -> bool:
    """Whether ``value`` holds only what :data:`_PLAIN_ENCODER` writes as the SDK does:
    ``str``, ``bool``, ``None``, ``int`` (not under a key the SDK replacer turns into a
    string), and ``dict`` (string keys) / ``list`` / ``tuple`` of those. Floats (JS number
    formatting), ``Decimal`` (its SDK text), other mappings and anything else take the walk."""
    kind = type(value)
    if kind is str or kind is bool or kind is int or value is None:
        return True
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                return False
            item_kind = type(item)
            if item_kind is str:
                continue
            if item_kind is int:
                if key in STRINGIFIED_KEYS:
                    return False
                continue
            if not _plain_json(item):
                return False
        return True
    if kind is list or kind is tuple:
        return all(_plain_json(item) for item in value)
    return False


def encode_frame(frame: Frame) -> str:
    """Encode a frame as the SDK's ``marshalMessage`` does; the fields are checked first.

    Checking before sending means a bad frame fails here with a clear message instead of
    the node answering ``"invalid message format"`` with request id 0.
    """
    _check_fields(frame.type, frame.request_id, frame.method, frame.payload, frame.timestamp_ms)
    return encode_json(
        [int(frame.type), frame.request_id, frame.method, frame.payload, frame.timestamp_ms]
    )


# --- decoding --------------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _as_uint(value: Any, name: str, maximum: int) -> int:
    """A JSON number that must be a non-negative integer (``1.0`` is accepted, as in JS)."""
    if not _is_number(value):
        raise InvalidFrameError(f"invalid {name}: expected number")
    if isinstance(value, float):
        if not value.is_integer():
            raise InvalidFrameError(f"invalid {name}: expected an integer, got {value!r}")
        value = int(value)
    if not 0 <= value <= maximum:
        raise InvalidFrameError(f"invalid {name}: {value} is out of range 0..{maximum}")
    return int(value)


def _check_fields(
    type_: Any, request_id: Any, method: Any, payload: Any, timestamp_ms: Any
) -> tuple[MessageType, int, str, Mapping[str, Any], int]:
    """The SDK ``unmarshalMessage`` checks, in its order and with its texts, plus ranges."""
    if not _is_number(type_):
        raise InvalidFrameError("invalid type: expected number")
    if not _is_number(request_id):
        raise InvalidFrameError("invalid requestId: expected number")
    if not isinstance(method, str):
        raise InvalidFrameError("invalid method: expected string")
    if not isinstance(payload, Mapping):
        raise InvalidFrameError("invalid payload: expected object")
    if not _is_number(timestamp_ms):
        raise InvalidFrameError("invalid timestamp: expected number")
    type_int = _as_uint(type_, "type", 255)
    message_type = _MESSAGE_TYPES.get(type_int)  # a dict, not the enum's slower call
    if message_type is None:
        raise InvalidFrameError(
            f"invalid type: unknown message type {type_int} "
            "(1 request, 2 response, 3 event, 4 error)"
        )
    return (
        message_type,
        _as_uint(request_id, "requestId", MAX_REQUEST_ID),
        method,
        payload,
        _as_uint(timestamp_ms, "timestamp", MAX_REQUEST_ID),
    )


_MESSAGE_TYPES: dict[int, MessageType] = {int(t): t for t in MessageType}


def _reject_constant(name: str) -> Any:
    raise InvalidFrameError(f"invalid JSON: {name} is not a JSON value")


def decode_frame(text: str | bytes) -> Frame:
    """Parse one WebSocket text message into a :class:`Frame`.

    Raises :class:`InvalidFrameError` with the SDK's texts (``"invalid RPCData: expected 5
    elements in array"``, ``"invalid type: expected number"``, ...) so a v0.5-shaped frame,
    a truncated array or a null payload is named precisely.
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidFrameError(f"invalid frame: not UTF-8 text ({exc})") from exc
    if not isinstance(text, str):
        raise InvalidFrameError(f"invalid frame: expected text, got {type(text).__name__}")
    try:
        check_nesting(text)
        data = json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:
        raise InvalidFrameError(f"invalid JSON: {exc}") from exc
    if not isinstance(data, list) or len(data) != 5:
        raise InvalidFrameError("invalid RPCData: expected 5 elements in array")
    return Frame(*_check_fields(*data))


# --- response parsing: see :mod:`.responses` (re-exported here for existing callers) ----


# --- published vectors -----------------------------------------------------------------


def _vector_rpc_encoding(inputs: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    """``rpc_encoding``: encode the five fields, or decode ``inputs.frame`` (errors as text)."""
    if "frame" in inputs:
        try:
            frame = decode_frame(inputs["frame"])
        except InvalidFrameError as exc:
            return {"error": str(exc)}
        return {
            "type": int(frame.type),
            "request_id": frame.request_id,
            "method": frame.method,
            "payload": dict(frame.payload),
            "timestamp_ms": frame.timestamp_ms,
        }
    frame = Frame(
        MessageType(inputs["type"]),
        inputs["request_id"],
        inputs["method"],
        inputs["payload"],
        inputs["timestamp_ms"],
    )
    text = encode_frame(frame)
    return {
        "frame": text,
        "frame_utf8_hex": "0x" + text.encode("utf-8").hex(),
        "reencodes_identically": encode_frame(decode_frame(text)) == text,
    }


def _vector_response_parsing(inputs: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    """``response_parsing``: each ``payload_<form>`` -> ``parsed_from_<form>``."""
    outputs: dict[str, Any] = {}
    for key, payload in inputs.items():
        if not key.startswith("payload_"):
            raise SettlementValueError(f"unexpected response_parsing input {key!r}")
        outputs["parsed_from_" + key.removeprefix("payload_")] = parse_node_config(payload)
    return outputs


#: Vector group name -> function computing a vector's ``outputs`` from its ``inputs``.
VECTORS: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]]] = {
    "rpc_encoding": _vector_rpc_encoding,
    "response_parsing": _vector_response_parsing,
}
