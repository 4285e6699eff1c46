"""The pure part of ``POST /api/settlement``: parse a body, pick the action, shape replies.

No I/O here, so every bad input can be tested without a server. The error bodies keep the
original dashboard's texts where it had them (``hashpass-tech/jack``'s ``route.ts``): ``Invalid
request``, ``Unknown action: <action>`` (``undefined`` when absent, JavaScript's ``String()``
of a non-string) and ``Missing userAddress``; what it lacked (address validation, a body
limit, distinct fallback messages) is added with the same ``{"error": ...}`` shape.

``compare:publish`` (``{"action": "compare:publish", "comparison": <Comparison.to_json()>}``)
is ours: its body may be larger (:data:`MAX_COMPARISON_BODY_BYTES`; every other action keeps
:data:`MAX_BODY_BYTES`), and the comparison is parsed strictly
(:func:`~settlement_widgets.compare.wire.parse_comparison`) before anything is written.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from ..addresses import validate_address
from ..compare.wire import (
    MAX_COMPARISON_BYTES,
    ComparisonView,
    parse_comparison,
    strict_loads,
)
from ..errors import (
    FaucetError,
    FaucetUnavailableError,
    InvalidAddressError,
    SettlementValueError,
)
from ..json_depth import check_nesting

__all__ = [
    "ACTIONS",
    "MAX_BODY_BYTES",
    "MAX_COMPARISON_BODY_BYTES",
    "FaucetRequest",
    "PublishRequest",
    "Reply",
    "V4ContractsRequest",
    "error_reply",
    "faucet_fallback",
    "js_string",
    "parse_post",
]

#: bodies above this get 413 (a valid body is well under 200 bytes)
MAX_BODY_BYTES = 64 * 1024
#: a ``compare:publish`` body may be this large (a comparison carries every transaction)
MAX_COMPARISON_BODY_BYTES = MAX_COMPARISON_BYTES + 1024
ACTIONS = ("channel:faucet", "v4:contracts", "compare:publish")
_MAX_ECHO = 200


@dataclass(frozen=True)
class Reply:
    """An HTTP answer: status, JSON body and extra headers."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class FaucetRequest:
    """``channel:faucet`` with a validated, EIP-55 ``user_address``."""

    user_address: str


@dataclass(frozen=True)
class V4ContractsRequest:
    """``v4:contracts`` (no other fields)."""


@dataclass(frozen=True)
class PublishRequest:
    """``compare:publish`` with its ``comparison``, already parsed (the network it was
    measured on is checked against the served one by the service: 409 when they differ)."""

    comparison: ComparisonView


def clip(text: str, limit: int = _MAX_ECHO) -> str:
    """Echoed input is cut so an error body never grows with the request."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def error_reply(status: int, message: str, **headers: str) -> Reply:
    return Reply(status, {"error": message}, dict(headers))


def js_string(value: Any, _depth: int = 0) -> str:
    """JavaScript's ``String(value)``, as the original's template literal rendered it."""
    if _depth > 20:  # deep nesting cannot grow the stack; the echo is clipped anyway
        return "…"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ",".join("" if v is None else js_string(v, _depth + 1) for v in value)
    return "[object Object]"


class _Undefined:
    def __repr__(self) -> str:
        return "undefined"


_UNDEFINED: Any = _Undefined()


def _too_large(limit: int) -> Reply:
    """413, naming the limit the body broke (the larger one only for a comparison)."""
    return error_reply(413, f"Request body too large: at most {limit} bytes")


def parse_post(body: bytes) -> FaucetRequest | V4ContractsRequest | PublishRequest | Reply:
    """The action a POST body asks for, or the error :class:`Reply` to send.

    A body over :data:`MAX_BODY_BYTES` is refused (413) unless it is a ``compare:publish``
    within :data:`MAX_COMPARISON_BODY_BYTES`; nothing larger is ever parsed."""
    if len(body) > MAX_COMPARISON_BODY_BYTES:
        return _too_large(MAX_COMPARISON_BODY_BYTES)
    large = len(body) > MAX_BODY_BYTES
    try:
        check_nesting(body)
        data = json.loads(body)
    except (ValueError, RecursionError):  # bad UTF-8 or JSON, or absurd nesting
        return _too_large(MAX_BODY_BYTES) if large else error_reply(400, "Invalid request")
    if not isinstance(data, dict):
        return _too_large(MAX_BODY_BYTES) if large else error_reply(400, "Invalid request")
    action = data.get("action", _UNDEFINED)
    if action == "compare:publish":
        try:  # again, strictly: no duplicate keys, no NaN (json.loads takes both)
            data = strict_loads(body)
        except SettlementValueError as exc:
            return error_reply(400, f"Invalid comparison: {clip(str(exc), 400)}")
        return _publish_request(data)
    if large:
        return _too_large(MAX_BODY_BYTES)
    if action == "channel:faucet":
        raw = data.get("userAddress")
        if raw is None or raw is False or raw == "" or raw == 0 or raw != raw:  # JS "falsy"
            return error_reply(400, "Missing userAddress")
        if isinstance(raw, str) and len(raw) > 100:
            return error_reply(
                400,
                f"Invalid userAddress: expected 0x followed by 40 hex digits (20 bytes), "
                f"got a string of {len(raw)} characters",
            )
        try:
            return FaucetRequest(validate_address(raw, field="userAddress"))
        except InvalidAddressError as exc:
            return error_reply(400, f"Invalid userAddress: {clip(str(exc), 300)}")
    if action == "v4:contracts":
        return V4ContractsRequest()
    shown = "undefined" if action is _UNDEFINED else clip(js_string(action))
    return error_reply(400, f"Unknown action: {shown}")


def _publish_request(data: dict[str, Any]) -> PublishRequest | Reply:
    """``compare:publish``: exactly ``action`` and ``comparison`` (an object), parsed."""
    unknown = sorted(str(k) for k in data if k not in ("action", "comparison"))
    if unknown:
        return error_reply(
            400, f"Unknown field for compare:publish: {clip(unknown[0], 60)} (fields: comparison)"
        )
    if "comparison" not in data or data["comparison"] is None:
        return error_reply(400, "Missing comparison")
    if not isinstance(data["comparison"], dict):
        return error_reply(400, "Invalid comparison: expected the object Comparison.to_json()")
    try:
        return PublishRequest(parse_comparison(data["comparison"]))
    except SettlementValueError as exc:
        return error_reply(400, f"Invalid comparison: {clip(str(exc), 400)}")


def faucet_fallback(exc: FaucetError | FaucetUnavailableError) -> Reply:
    """The 200 ``fallback`` answer; the message says what went wrong upstream."""
    if isinstance(exc, FaucetError):
        cause = f"the faucet answered HTTP {exc.status}: {clip(exc.message, 300)}"
    else:
        cause = clip(str(exc), 400)
    message = f"Faucet request failed — {cause}. Try again later or request tokens directly."
    return Reply(200, {"status": "fallback", "message": message})
