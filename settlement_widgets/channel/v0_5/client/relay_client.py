"""``RelayClient``: one WebSocket connection to a ClearNode v0.5 compatible relay.

What it guarantees to its caller (the channel provider, or a notebook):

- **Every ``res`` frame is the broker's.** The broker address comes from ``get_config`` (the
  first request on every connection; its answer must be signed by the address it names,
  and by ``broker_address`` when one is pinned). Each later frame is verified over its exact
  bytes (:meth:`Response.verify`) before anything reads it; a reply that fails raises
  :class:`~settlement_widgets.errors.InvalidSignatureError` to the waiting caller, a
  notification that fails is dropped and counted in :attr:`RelayClient.rejected_frames`.
- **Replies are matched to requests by id**; a reply that does not arrive within
  ``request_timeout`` raises :class:`~settlement_widgets.errors.SettlementTimeoutError`; an
  ``error`` frame raises :class:`~settlement_widgets.errors.RelayError` carrying the relay's
  message verbatim.
- **Notifications** (``assets``, ``channels``, ``bu``, ``cu``, ``tr``, ``asu``) go to
  callbacks registered with :meth:`RelayClient.on` and into a bounded queue
  (:meth:`RelayClient.next_notification`).
- **Authentication** with a session key: ``auth_request`` -> the wallet signs the EIP-712
  ``Policy`` -> ``auth_verify`` (the relay issues a JWT); with a JWT from an earlier login,
  ``auth_verify {jwt}`` alone.
- **Reconnection**: when the socket drops, requests in flight fail with
  :class:`~settlement_widgets.errors.RelayUnavailableError` (they may or may not have been
  applied; the caller decides), a background task reconnects with exponential backoff and
  logs in again with the JWT (a full login if the JWT is refused), and the next request
  also tries to reconnect at once. A relay that cannot be reached raises
  :class:`~settlement_widgets.errors.RelayUnavailableError` without waiting for the backoff.

The socket has no permessage-deflate (``compression=None``).

Where the code is: :mod:`.relay_connection` (:class:`~.relay_connection.RelayConnection`:
the socket, frame verification, request/reply correlation, notifications, reconnection),
:mod:`.relay_auth` (:class:`~.relay_auth.RelayAuth`: the session-key login and the JWT) and
this module (:class:`RelayClient`: one typed method per relay method).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from ....addresses import validate_address
from ....errors import ConfigurationError
from ..core import messages as M
from ..core.rpc import Request
from .relay_auth import AuthSession, RelayAuth

__all__ = ["AuthSession", "RelayClient"]

_log = logging.getLogger(__name__)


class RelayClient(RelayAuth):
    """A connection to the relay at ``url`` (``ws://`` or ``wss://``).

    ``broker_address`` pins the broker (otherwise the one ``get_config`` names is trusted on
    first use). ``request_timeout`` bounds every request; ``connect_timeout`` the opening
    handshake. ``reconnect`` turns the background reconnection on; ``backoff`` is the first
    and the longest delay between attempts, in seconds.

    Connection, requests and notifications: :class:`~.relay_connection.RelayConnection`;
    :meth:`authenticate`: :class:`~.relay_auth.RelayAuth`; below, the relay's methods with
    their results as the relay sends them.
    """

    async def ping(self) -> float:
        """Round-trip time of a ``ping`` in seconds."""
        start = time.perf_counter()
        await self.call("ping", signed=False)
        return time.perf_counter() - start

    async def get_config(self) -> dict[str, Any]:
        result = await self.call("get_config", signed=False)
        self.config = dict(result)
        return self.config

    async def get_assets(self, chain_id: int | None = None) -> list[dict[str, Any]]:
        result = await self.call(
            "get_assets", {"chain_id": chain_id} if chain_id else {}, signed=False
        )
        assets = list(result.get("assets", []))
        if not chain_id:
            self.assets = assets
        return assets

    async def get_channels(
        self, participant: str | None = None, status: str | None = None, *, limit: int = 100
    ) -> list[dict[str, Any]]:
        params: dict[str, Any] = {}
        if participant:
            params["participant"] = validate_address(participant, field="participant")
        if status:
            params["status"] = status
        params["limit"] = limit
        result = await self.call("get_channels", params, signed=False)
        return list(result.get("channels", []))

    async def get_ledger_balances(self) -> list[dict[str, Any]]:
        result = await self._private(
            lambda key, rid: M.get_ledger_balances_message(key, request_id=rid)
        )
        return list(result.get("ledger_balances", []))

    async def create_channel(self, chain_id: int, token: str) -> dict[str, Any]:
        return dict(
            await self._private(
                lambda key, rid: M.create_channel_message(key, chain_id, token, request_id=rid)
            )
        )

    async def resize_channel(
        self,
        channel_id: str,
        funds_destination: str,
        *,
        resize_amount: int | None = None,
        allocate_amount: int | None = None,
    ) -> dict[str, Any]:
        return dict(
            await self._private(
                lambda key, rid: M.resize_channel_message(
                    key,
                    channel_id,
                    funds_destination,
                    resize_amount=resize_amount,
                    allocate_amount=allocate_amount,
                    request_id=rid,
                )
            )
        )

    async def close_channel(self, channel_id: str, funds_destination: str) -> dict[str, Any]:
        return dict(
            await self._private(
                lambda key, rid: M.close_channel_message(
                    key, channel_id, funds_destination, request_id=rid
                )
            )
        )

    def transfer_request(self, destination: str, allocations: Sequence[tuple[str, str]]) -> Request:
        """A signed ``transfer`` frame (build it first to journal its id, then :meth:`request`)."""
        if self._signer is None:
            raise ConfigurationError("log in first: await relay.authenticate(...)")
        return M.transfer_message(
            self._signer, list(allocations), destination=destination, request_id=self._next_id()
        )

    async def transfer(
        self, destination: str, allocations: Sequence[tuple[str, str]]
    ) -> dict[str, Any]:
        return dict((await self.request(self.transfer_request(destination, allocations))).result)
