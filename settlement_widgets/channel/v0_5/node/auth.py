"""Who a connection is: ``auth_request``/``auth_verify`` (EIP-712 policy or JWT), session
keys and user tags (as the v0.5 ClearNode does).

A challenge is kept in memory only (a restarted node forgets pending logins, as the ClearNode
does); a verified login registers the session key in the ledger and returns a JWT the client
can re-authenticate with.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Final

from ....addresses import validate_address
from ....errors import InvalidAddressError, SettlementError
from ....keys import recover_address_bytes
from ..core.amounts import parse_decimal_amount
from ..core.auth import ALLOWANCE_TYPEHASH, POLICY_TYPEHASH
from ..core.eip712 import EIP712Domain, typed_data_digest
from ..core.keccak import keccak256
from .base import CLEARNODE_APPLICATION, Outcome, ServiceBase, Session, _fail, _rfc3339
from .clock import now_ms
from .jwt import decode_jwt, encode_jwt
from .ledger import SessionKeyRecord
from .wire import Incoming

__all__ = ["AuthHandlers"]

_CHALLENGE_TTL_S: Final = 300
_MAX_CHALLENGES: Final = 1000
_TAG_ALPHABET: Final = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


@dataclass(slots=True)
class _Challenge:
    address: str
    session_key: str
    application: str
    allowances: list[tuple[str, str]]
    expires_at: int
    scope: str
    created: float


def _policy_digest(challenge: _Challenge, token: str) -> bytes:
    """The EIP-712 ``Policy`` digest rebuilt from the stored ``auth_request`` values.

    Written out (rather than through :class:`~settlement_widgets.channel.v0_5.core.auth.AuthPolicy`,
    which validates its fields) because the node must first learn *who* signed, and only
    then judge the allowances, answering ``unsupported token: ...`` as the ClearNode does.
    """
    allowances = b"".join(
        keccak256(ALLOWANCE_TYPEHASH + keccak256(a.encode()) + keccak256(b.encode()))
        for a, b in challenge.allowances
    )
    struct = keccak256(
        POLICY_TYPEHASH
        + keccak256(token.encode())
        + keccak256(challenge.scope.encode())
        + bytes(12)
        + bytes.fromhex(challenge.address[2:])
        + bytes(12)
        + bytes.fromhex(challenge.session_key[2:])
        + challenge.expires_at.to_bytes(32, "big")
        + keccak256(allowances)
    )
    return typed_data_digest(EIP712Domain(name=challenge.application).separator, struct)


class AuthHandlers(ServiceBase):
    """``auth_request``, ``auth_verify``, ``get_user_tag`` and ``get_session_keys``."""

    #: set by :class:`~.service.RelayService`: the key JWTs are signed with
    _jwt_secret: bytes
    #: set by :class:`~.service.RelayService`: pending ``auth_request`` challenges by token
    _challenges: dict[str, _Challenge]

    # --- login --------------------------------------------------------------------------------

    def _auth_request(self, session: Session, req: Incoming) -> Outcome:
        p = req.params
        address = p.get("address")
        session_key = p.get("session_key")
        application = p.get("application", "")
        allowances = p.get("allowances") or []
        expires_at = p.get("expires_at", 0)
        scope = p.get("scope", "")
        if not isinstance(address, str) or not isinstance(session_key, str):
            raise _fail("failed to parse auth parameters: address and session_key are required")
        if not isinstance(application, str) or not isinstance(scope, str):
            raise _fail("failed to parse auth parameters: application and scope must be strings")
        if type(expires_at) is not int or not 0 <= expires_at < 2**64:
            raise _fail("failed to parse auth parameters: expires_at must be Unix seconds")
        parsed: list[tuple[str, str]] = []
        if not isinstance(allowances, list):
            raise _fail("failed to parse auth parameters: allowances must be a list")
        for item in allowances:
            if (
                not isinstance(item, dict)
                or not isinstance(item.get("asset"), str)
                or not isinstance(item.get("amount"), str)
            ):
                raise _fail(
                    "failed to parse auth parameters: allowances are {asset, amount} strings"
                )
            parsed.append((item["asset"], item["amount"]))
        try:
            validate_address(address, field="address")
            validate_address(session_key, field="session_key")
        except InvalidAddressError as exc:
            raise _fail(f"failed to parse auth parameters: {exc}") from None
        now = self._clock()
        self._expire_challenges(now)
        token = self._new_challenge_token()
        self._challenges[token] = _Challenge(
            address,
            session_key,
            application or CLEARNODE_APPLICATION,
            parsed,
            expires_at,
            scope,
            now,
        )
        return Outcome("auth_challenge", {"challenge_message": token})

    def _new_challenge_token(self) -> str:
        if self.config.deterministic:
            counter = self.ledger.next_counter("challenge_counter", 1)
            digest = keccak256(b"settlement_widgets sandbox challenge " + str(counter).encode())
            return str(uuid.UUID(bytes=digest[:16], version=4))
        return str(uuid.uuid4())

    def _expire_challenges(self, now: float) -> None:
        stale = [k for k, c in self._challenges.items() if now - c.created > _CHALLENGE_TTL_S]
        for key in stale:
            del self._challenges[key]
        while len(self._challenges) >= _MAX_CHALLENGES:
            del self._challenges[next(iter(self._challenges))]

    def _auth_verify(self, session: Session, req: Incoming) -> Outcome:
        p = req.params
        jwt = p.get("jwt")
        if isinstance(jwt, str) and jwt:
            return self._auth_jwt(session, jwt)
        if not req.sigs:
            raise _fail("invalid authentication method: expected JWT or signature")
        token = p.get("challenge")
        if not isinstance(token, str):
            raise _fail("invalid challenge")
        challenge = self._challenges.get(token)
        now = self._clock()
        if challenge is None or now - challenge.created > _CHALLENGE_TTL_S:
            raise _fail("invalid challenge")
        try:
            recovered = self._checksum(
                recover_address_bytes(_policy_digest(challenge, token), req.sigs[0])
            )
        except SettlementError:
            raise _fail("invalid signature") from None
        if recovered != challenge.address:  # case-sensitive, as the ClearNode compares
            raise _fail("invalid challenge or signature")
        del self._challenges[token]
        for asset, amount in challenge.allowances:
            decimals = self._decimals.get(asset)
            if decimals is None:
                raise _fail(f"unsupported token: asset '{asset}' is not supported")
            try:
                parse_decimal_amount(amount, decimals)
            except SettlementError:
                raise _fail(
                    f"unsupported token: invalid amount '{amount}' for asset '{asset}'"
                ) from None
        wallet = challenge.address
        key_address = challenge.session_key
        existing = self.ledger.session_keys.get(key_address)
        if existing is not None and existing.wallet != wallet:
            raise _fail("signer is already in use for another wallet")
        if existing is not None and not existing.is_active(now):
            raise _fail("session key already exists but is expired")
        if existing is None:
            if challenge.expires_at <= now:
                raise _fail("authentication failed: session key expires_at must be in the future")
            self.ledger.put_session_key(
                SessionKeyRecord(
                    id=self.ledger.new_key_id(),
                    session_key=key_address,
                    wallet=wallet,
                    application=challenge.application,
                    scope=challenge.scope or "all",
                    allowances=list(challenge.allowances),
                    used={},
                    expires_at=challenge.expires_at,
                    created_at=now_ms(self._clock),
                )
            )
        self._ensure_tag(wallet)
        claims = {
            "wallet": wallet,
            "session_key": key_address,
            "application": challenge.application,
            "scope": challenge.scope,
            "allowances": [list(a) for a in challenge.allowances],
            "expires_at": challenge.expires_at,
            "iat": int(now),
            "exp": int(now) + self.config.jwt_ttl_seconds,
        }
        jwt_token = encode_jwt(claims, self._jwt_secret)
        self._login(session, wallet, key_address, challenge.application)
        # Go marshals a map: keys in sorted order
        result = {
            "address": wallet,
            "jwt_token": jwt_token,
            "session_key": key_address,
            "success": True,
        }
        return Outcome("auth_verify", result, authenticated=wallet)

    def _auth_jwt(self, session: Session, token: str) -> Outcome:
        try:
            claims = decode_jwt(token, self._jwt_secret, now=self._clock())
            wallet = validate_address(claims["wallet"], field="wallet")
            key_address = str(claims["session_key"])
            application = str(claims.get("application", CLEARNODE_APPLICATION))
        except (SettlementError, KeyError):
            raise _fail("invalid JWT token") from None
        self._login(session, wallet, key_address, application)
        result = {"address": wallet, "session_key": key_address, "success": True}
        return Outcome("auth_verify", result, authenticated=wallet)

    @staticmethod
    def _login(session: Session, wallet: str, key: str, application: str) -> None:
        session.wallet = wallet
        session.session_key = key
        session.application = application

    # --- user tags and session keys -----------------------------------------------------------

    def _ensure_tag(self, wallet: str) -> str:
        tag = self.ledger.tags.get(wallet)
        if tag is not None:
            return tag
        digest = keccak256(b"user tag " + wallet.encode())
        n = int.from_bytes(digest[:8], "big")
        while True:
            chars = []
            for _ in range(6):
                n, r = divmod(n, len(_TAG_ALPHABET))
                chars.append(_TAG_ALPHABET[r])
            tag = "".join(chars)
            if tag not in self.ledger.tag_wallets:
                break
            n = int.from_bytes(keccak256(digest + tag.encode())[:8], "big")
        self.ledger.put_tag(wallet, tag)
        return tag

    def _get_user_tag(self, session: Session, req: Incoming) -> Outcome:
        self._private_signer(session, req)
        assert session.wallet is not None
        return Outcome("get_user_tag", {"tag": self._ensure_tag(session.wallet)})

    def _get_session_keys(self, session: Session, req: Incoming) -> Outcome:
        self._private_signer(session, req)
        now = self._clock()
        keys = sorted(
            (
                k
                for k in self.ledger.session_keys.values()
                if k.wallet == session.wallet and k.is_active(now)
            ),
            key=lambda k: k.id,
        )
        out = []
        for key in keys:
            allowances = []
            for asset, amount in key.allowances:
                allowances.append(
                    {
                        "asset": asset,
                        "allowance": amount,
                        "used": self.amount_text(key.used.get(asset, 0), asset),
                    }
                )
            entry: dict[str, Any] = {
                "id": key.id,
                "session_key": key.session_key,
                "application": key.application,
                "allowances": allowances,
            }
            if key.scope:
                entry["scope"] = key.scope
            entry["expires_at"] = _rfc3339(key.expires_at * 1000)
            entry["created_at"] = _rfc3339(key.created_at)
            out.append(entry)
        return Outcome("get_session_keys", {"session_keys": out})
