"""Logging in to the relay with a session key (:class:`RelayAuth`, a layer of
:class:`~.relay_client.RelayClient`).

The 3-step login: ``auth_request`` (the wallet, the session key, the application, its
allowances and expiry) -> the relay's ``auth_challenge`` -> the wallet signs the EIP-712
``Policy`` with the challenge and ``auth_verify`` sends it; the relay answers with a JWT.
With a JWT from an earlier login, ``auth_verify {jwt}`` alone (and the full login if the
relay refuses it). The login is remembered and repeated after every reconnect (through
:meth:`~.relay_connection.RelayConnection._after_handshake`); from then on private requests
are signed by the session key, never the wallet.

The wallet is a key (fast, in scripts) or any :class:`~settlement_widgets.signer.Signer`: a
browser wallet signs the ``Policy`` once with ``eth_signTypedData_v4`` (its person sees the
allowances), and the session key does the rest.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ....errors import InvalidFrameError, InvalidSignatureError, RelayError
from ....keys import PrivateKey
from ....signer import Signer
from ..core import messages as M
from ..core.auth import Allowance, AuthPolicy
from ..core.signing import KeyLike, as_private_key
from .relay_connection import RELAY_LOGGER, RelayConnection

__all__ = ["AuthSession", "RelayAuth"]

_log = logging.getLogger(RELAY_LOGGER)


@dataclass(frozen=True)
class AuthSession:
    """The result of a login: who we are on the relay and the JWT to log in again."""

    wallet: str
    session_key: str
    jwt: str | None


@dataclass
class _Auth:
    """What the client needs to log in again after a reconnect."""

    wallet_key: PrivateKey | Signer
    session_key: PrivateKey
    application: str
    allowances: tuple[Allowance, ...]
    expires_at: int
    scope: str
    jwt: str | None
    on_jwt: Callable[[str], Any] | None


class RelayAuth(RelayConnection):
    """A :class:`~.relay_connection.RelayConnection` that logs in with a session key and
    logs in again after every reconnect."""

    #: the last successful login's parameters (None: never logged in)
    _auth: _Auth | None = None

    @property
    def authenticated(self) -> bool:
        return self._auth is not None and self._connected

    async def _after_handshake(self) -> None:
        """Log in again (the JWT first) on a reconnection, if we were logged in."""
        if self._auth is not None:
            await self._login(self._auth)

    async def authenticate(
        self,
        wallet_key: KeyLike | Signer,
        session_key: KeyLike,
        *,
        application: str,
        allowances: Sequence[Allowance | tuple[str, str] | Mapping[str, Any]],
        expires_at: int,
        scope: str = "console",
        jwt: str | None = None,
        on_jwt: Callable[[str], Any] | None = None,
    ) -> AuthSession:
        """Log in: with ``jwt`` if given (and still accepted), else the 3-step EIP-712 flow
        (``auth_request``, the wallet signs the ``Policy``, ``auth_verify``).

        ``on_jwt(token)`` is called with every new JWT (persist it there). The login is
        remembered and repeated after a reconnect.
        """
        auth = _Auth(
            wallet_key=wallet_key if isinstance(wallet_key, Signer) else as_private_key(wallet_key),
            session_key=as_private_key(session_key),
            application=application,
            allowances=tuple(Allowance.of(a) for a in allowances),  # type: ignore[arg-type]
            expires_at=expires_at,
            scope=scope,
            jwt=jwt,
            on_jwt=on_jwt,
        )
        if not self._connected:
            await self._connect_once()
        session = await self._login(auth)
        self._auth = auth
        return session

    async def _login(self, auth: _Auth) -> AuthSession:
        if auth.jwt:
            try:
                reply = await self._send(
                    M.auth_verify_jwt_message(auth.jwt, request_id=self._next_id())
                )
                result = reply.result if isinstance(reply.result, Mapping) else {}
                if result.get("success") and result.get("address") == auth.wallet_key.address:
                    self._signer = auth.session_key
                    return AuthSession(auth.wallet_key.address, auth.session_key.address, auth.jwt)
            except RelayError as exc:
                _log.info("JWT login refused (%s): logging in with the wallet", exc.message)
            auth.jwt = None
        policy = AuthPolicy(
            auth.wallet_key.address,
            auth.session_key.address,
            auth.application,
            auth.allowances,
            auth.expires_at,
            auth.scope,
        )
        challenge = await self._send(policy.request(request_id=self._next_id()))
        result = challenge.result if isinstance(challenge.result, Mapping) else {}
        token = result.get("challenge_message")
        if challenge.method != "auth_challenge" or not isinstance(token, str):
            raise InvalidFrameError(
                f"auth_request was answered with {challenge.method}, not a challenge"
            )
        if isinstance(auth.wallet_key, Signer):
            signature = await auth.wallet_key.sign_typed_data(policy.typed_data(token))
            if policy.recover(token, signature) != policy.wallet:
                raise InvalidSignatureError(
                    f"the wallet signed the relay's auth policy with another account than "
                    f"{policy.wallet}: select that account in the wallet"
                )
            verify = M.auth_verify_message(token, signature, request_id=self._next_id())
        else:
            verify = policy.verify_request(token, auth.wallet_key, request_id=self._next_id())
        reply = await self._send(verify)
        result = reply.result if isinstance(reply.result, Mapping) else {}
        if not result.get("success"):
            raise RelayError(f"auth_verify did not succeed: {result!r}")
        jwt = result.get("jwt_token")
        auth.jwt = jwt if isinstance(jwt, str) and jwt else None
        if auth.jwt and auth.on_jwt is not None:
            auth.on_jwt(auth.jwt)
        self._signer = auth.session_key
        return AuthSession(auth.wallet_key.address, auth.session_key.address, auth.jwt)
