"""HS256 JSON Web Tokens for ``auth_verify`` re-login (RFC 7519, the compact form).

The ClearNode issues an ES256 token valid 24 h; clients treat it as opaque and hand it back
in ``auth_verify {jwt}``, so the algorithm is the node's own business. HMAC-SHA256 with a
secret kept in the node's database needs only the standard library and survives restarts.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

from ....errors import ExpiredError, InvalidSignatureError

__all__ = ["decode_jwt", "encode_jwt"]

_HEADER = {"alg": "HS256", "typ": "JWT"}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode("utf-8")


def encode_jwt(claims: dict[str, Any], secret: bytes) -> str:
    """``header.payload.signature`` with ``HMAC-SHA256(secret)``."""
    signing_input = _b64(_json(_HEADER)) + "." + _b64(_json(claims))
    mac = hmac.new(secret, signing_input.encode("ascii"), hashlib.sha256).digest()
    return signing_input + "." + _b64(mac)


def decode_jwt(token: object, secret: bytes, *, now: float) -> dict[str, Any]:
    """The claims of a token we issued; raises if forged, malformed or past ``exp``."""
    if not isinstance(token, str) or token.count(".") != 2:
        raise InvalidSignatureError("not a JWT")
    head, body, mac = token.split(".")
    expected = hmac.new(secret, f"{head}.{body}".encode("ascii"), hashlib.sha256).digest()
    try:
        header = json.loads(_unb64(head))
        claims = json.loads(_unb64(body))
        given = _unb64(mac)
    except (ValueError, UnicodeDecodeError):
        raise InvalidSignatureError("malformed JWT") from None
    if header != _HEADER or not hmac.compare_digest(given, expected):
        raise InvalidSignatureError("JWT signature does not verify")
    if not isinstance(claims, dict):
        raise InvalidSignatureError("JWT claims are not an object")
    exp = claims.get("exp")
    if not isinstance(exp, int) or exp <= now:
        raise ExpiredError("JWT has expired")
    return claims
