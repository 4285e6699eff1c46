"""Connecting :class:`~.provider.ChannelProvider` to its relay and chain (``_ConnectionMixin``).

On first use the provider connects to the relay, checks that it serves the config's chain,
custody and adjudicator, picks the channel asset from the relay's asset list and logs in with
a session key (reloaded with its JWT from the store, or created and stored before it is
used). Also here: reconnection, :meth:`close`, the "connect first" guards and the wrapper
that turns an unreachable chain node into :class:`ChainUnavailableError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping
from typing import Any, Final, Self

from ....addresses import validate_address
from ....errors import ChainUnavailableError, ConfigurationError, RelayError, SettlementError
from ....keys import PrivateKey
from ....wallet import is_connection_error
from ..core.amounts import to_decimal_string
from ._base import _Asset, _log, _ProviderBase
from .relay_client import RelayClient
from .store import SessionRecord

__all__ = ["DEFAULT_ALLOWANCE_TOKENS", "_ConnectionMixin"]

#: default session-key allowance, in whole asset units (the relay counts it per session key)
DEFAULT_ALLOWANCE_TOKENS: Final = 1_000_000


class _ConnectionMixin(_ProviderBase):
    """Relay and chain connection, login with a session key, reconnect and close."""

    async def __aenter__(self) -> Self:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self) -> Self:
        """Connect, check the relay, log in, then resume unfinished operations (once).

        Raises :class:`RelayUnavailableError` when the relay cannot be reached and
        :class:`ConfigurationError` when it serves another chain, custody or adjudicator.
        Recovery errors are recorded on the operation (see :meth:`pending_work`), not raised:
        await :meth:`recover` to see them.
        """
        if self._closed:
            raise ConfigurationError("this ChannelProvider is closed: create a new one")
        if self._ready_lock is None:
            self._ready_lock = asyncio.Lock()
        async with self._ready_lock:
            if not self._ready:
                await self._connect()
                self._ready = True
                self._start_watcher()
        if self._auto_recover and not self._recovered_once and not self._recovering:
            self._recovered_once = True
            await self._recover(raise_errors=False)
        return self

    async def _connect(self) -> None:
        relay = self._relay
        if relay is None:
            relay = self._relay = RelayClient(
                self.config.node_url, request_timeout=self.config.request_timeout
            )
        if not self._unsubscribe:
            self._unsubscribe.append(relay.on("*", self._on_notification))
            self._unsubscribe.append(relay.on_reconnect(self._on_reconnect))
        await relay.connect()
        self._check_relay_config(relay.config)
        assets = await relay.get_assets()
        self._decimals = {
            str(a["symbol"]): int(a["decimals"])
            for a in assets
            if "symbol" in a and "decimals" in a
        }
        self._asset = self._pick_asset(assets)
        await self._login(relay)

    def _check_relay_config(self, config: Mapping[str, Any]) -> None:
        networks = config.get("networks") or []
        chain = self.config.chain_id
        entry = next((n for n in networks if n.get("chain_id") == chain), None)
        if entry is None:
            served = [n.get("chain_id") for n in networks if isinstance(n, Mapping)]
            raise ConfigurationError(
                f"the relay at {self.config.node_url} serves chains {served}, not {chain}"
            )
        for key, expected in (
            ("custody_address", self.config.custody),
            ("adjudicator_address", self.config.adjudicator),
        ):
            try:
                got = validate_address(entry.get(key), field=key)
            except SettlementError:
                got = entry.get(key)
            if got != expected:
                raise ConfigurationError(
                    f"the relay's {key} on chain {chain} is {got}, but the config says "
                    f"{expected}: the relay and the config describe different deployments"
                )

    def _pick_asset(self, assets: list[dict[str, Any]]) -> _Asset:
        chain = self.config.chain_id
        for asset in assets:
            if asset.get("chain_id") != chain:
                continue
            try:
                token = validate_address(asset.get("token"), field="token")
            except SettlementError:
                continue
            if token == self.config.token:
                return _Asset(str(asset["symbol"]), token, int(asset["decimals"]))
        raise ConfigurationError(
            f"the relay lists no asset for token {self.config.token} on chain {chain}"
        )

    def _allowance_text(self) -> str:
        asset = self._require_asset()
        units = (
            self._allowance
            if self._allowance is not None
            else DEFAULT_ALLOWANCE_TOKENS * 10**asset.decimals
        )
        return to_decimal_string(units, asset.decimals)

    async def _login(self, relay: RelayClient) -> None:
        wallet, app = self.wallet.address, self.config.application
        allowances = ((self._require_asset().symbol, self._allowance_text()),)
        session = self._store.load_session(wallet, app)
        if session is None or not session.is_valid() or session.allowances != allowances:
            session = self._new_session(allowances)
        fresh = session.jwt is None

        def save_jwt(token: str) -> None:
            self._store.save_jwt(wallet, app, token)

        try:
            await relay.authenticate(
                self.wallet,
                session.key,
                application=app,
                allowances=session.allowances,
                expires_at=session.expires_at,
                scope=session.scope,
                jwt=session.jwt,
                on_jwt=save_jwt,
            )
        except RelayError as exc:
            if "session key" not in exc.message and "signer is already in use" not in exc.message:
                raise
            _log.info("the relay refused the stored session key (%s): creating a new one", exc)
            session = self._new_session(allowances)
            fresh = True
            await relay.authenticate(
                self.wallet,
                session.key,
                application=app,
                allowances=session.allowances,
                expires_at=session.expires_at,
                scope=session.scope,
                on_jwt=save_jwt,
            )
        if fresh:
            self._proof(
                "authenticate",
                "off-chain",
                data={"sessionKey": session.session_key, "application": app},
            )

    def _new_session(self, allowances: tuple[tuple[str, str], ...]) -> SessionRecord:
        session = SessionRecord(
            wallet=self.wallet.address,
            application=self.config.application,
            key=PrivateKey.generate(),
            scope="console",
            allowances=allowances,
            expires_at=int(time.time()) + self.config.session_expiry,
        )
        self._store.save_session(session)  # before auth_request: never an unknown key
        return session

    async def _on_reconnect(self) -> None:
        # the relay pushed `channels` and `bu` again; refresh what notifications may have missed
        with contextlib.suppress(SettlementError):
            await self.balances()

    async def close(self) -> None:
        """Stop the watcher, close the relay connection and the store (idempotent)."""
        if self._closed:
            return
        self._closed = True
        await self.flush_proofs()
        self._proof_log.close()
        for task in (self._watcher, *self._tasks):
            if task is not None:
                task.cancel()
        if self._watcher is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._watcher
        for off in self._unsubscribe:
            off()
        if self._relay is not None:
            await self._relay.close()
        if self._own_store:
            self._store.close()

    def _require_asset(self) -> _Asset:
        if self._asset is None:
            raise ConfigurationError("connect first: await provider.connect()")
        return self._asset

    def _require_relay(self) -> RelayClient:
        if self._relay is None or not self._ready:
            raise ConfigurationError("connect first: await provider.connect()")
        return self._relay

    async def _ensure_chain(self) -> None:
        if self._chain_checked:
            return
        chain_id = await self.wallet.chain_id()
        if chain_id != self.config.chain_id:
            raise ConfigurationError(
                f"the wallet's chain is {chain_id}, the channel config's {self.config.chain_id}"
            )
        self._chain_checked = True

    async def _chain(self, awaitable: Any) -> Any:
        """Await a chain read; an unreachable node becomes :class:`ChainUnavailableError`."""
        try:
            return await awaitable
        except SettlementError:
            raise
        except Exception as exc:
            if is_connection_error(exc):
                raise ChainUnavailableError(
                    f"cannot reach the chain at {self.wallet.rpc_url or 'the in-process EVM'}: "
                    f"{exc}"
                ) from exc
            raise
