"""The sandbox faucet: the real v0 faucet's HTTP contract over our relay's ledger.

``POST /faucet/requestTokens`` with ``{"userAddress": "0x…"}`` pays 10 ``ytest.usd`` by an
off-chain ledger transfer from the faucet's account to the user's unified balance, exactly as
the public faucet does through its ClearNode (``erc7824/faucet-app``): same success body,
same error bodies and statuses. The one addition is an optional per-address cooldown answered
with 429 (the v1 faucet has one; the v0 code has none, so it is off by default).

:meth:`Faucet.request` is transport-free (body bytes in; status, headers, JSON out), so the
HTTP handler stays a thin adapter.

On a Nitrolite v1 sandbox the same endpoint pays as Yellow's v1 faucet does, by an off-chain
v1 transfer (a ``transfer_send`` state the node co-signs) from the faucet's home channel: a
:class:`FaucetPayer` (:class:`V1FaucetPayer`) stands in for the v0.5 relay's ledger.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

from ..addresses import to_checksum
from ..errors import RelayError, SettlementError
from ..json_depth import check_nesting

if TYPE_CHECKING:
    from ..channel.v0_5.node.server import RelayNode
    from ..channel.v1.client.provider import ChannelProviderV1

__all__ = [
    "ERR_CLEARNODE",
    "ERR_FORMAT",
    "ERR_INVALID_ADDRESS",
    "ERR_SEND",
    "ERR_UNAVAILABLE",
    "SUCCESS_MESSAGE",
    "Faucet",
    "FaucetConfig",
    "FaucetPayer",
    "V1FaucetPayer",
]

ERR_FORMAT: Final = "Invalid request format. Expected JSON with 'userAddress' field."
ERR_INVALID_ADDRESS: Final = "Invalid address format."
ERR_CLEARNODE: Final = "Failed to connect to Clearnode."
ERR_UNAVAILABLE: Final = "Faucet service is currently unavailable."
ERR_SEND: Final = "Failed to send tokens."
SUCCESS_MESSAGE: Final = "Tokens sent successfully"
_HEX_ADDRESS = re.compile(r"^0x[0-9a-fA-F]{40}$")


@dataclass(frozen=True)
class FaucetConfig:
    """The public faucet's settings: a tip of 10 ``ytest.usd`` (6 decimals), unavailable
    below 5 tips of balance (``MIN_TRANSFER_COUNT``), no cooldown unless asked for."""

    asset: str = "ytest.usd"
    decimals: int = 6
    tip_units: int = 10 * 10**6
    min_transfer_count: int = 5
    cooldown_seconds: float = 0.0

    @property
    def tip_text(self) -> str:
        from ..channel.v0_5.core.amounts import to_decimal_string

        return to_decimal_string(self.tip_units, self.decimals)


class FaucetPayer(Protocol):
    """Where a faucet's tips come from, other than the v0.5 relay's ledger."""

    def balance(self, asset: str) -> int | None:
        """What the faucet can still pay, in units (None: not connected)."""
        ...

    async def pay(self, destination: str, asset: str, units: int) -> str:
        """Pay ``units`` to ``destination`` off-chain; the transaction id."""
        ...


class V1FaucetPayer:
    """Pays from the faucet account's Nitrolite v1 home channel: each tip is a transfer the
    node co-signs (the receiver needs no channel; it holds a receive state until it opens
    one). The balance is the channel's latest co-signed state, read from the provider's
    store (no request)."""

    def __init__(self, provider: ChannelProviderV1) -> None:
        self.provider = provider

    def balance(self, asset: str) -> int | None:
        if asset != self.provider.asset:
            return 0
        state = self.provider.store.latest_state(asset, signed=True)
        if state is None:
            return 0
        from ..channel.v1.core.decimals import to_units

        return to_units(state["home_ledger"]["user_balance"], self.provider.decimals)

    async def pay(self, destination: str, asset: str, units: int) -> str:
        await self.provider.transfer(None, units, destination)
        state = self.provider.store.latest_state(asset)
        assert state is not None  # the transfer just stored it
        return str(state["transition"]["tx_id"])


class Faucet:
    """Pays tips from ``account`` through ``relay`` (``None`` until a relay is attached), or
    through ``payer`` when one is set (a v1 sandbox's :class:`V1FaucetPayer`)."""

    def __init__(
        self,
        relay: RelayNode | None,
        account: str,
        config: FaucetConfig | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.relay = relay
        self.payer: FaucetPayer | None = None
        self.account = account
        self.config = config or FaucetConfig()
        self._clock = clock
        self._last: dict[str, float] = {}

    def _error(self, status: int, message: str) -> tuple[int, dict[str, str], dict[str, Any]]:
        return status, {}, {"error": message}

    async def request(self, body: bytes) -> tuple[int, dict[str, str], dict[str, Any]]:
        """Handle one ``requestTokens`` body: ``(status, extra headers, JSON body)``."""
        try:
            check_nesting(body)
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError, RecursionError):
            return self._error(400, ERR_FORMAT)
        if not isinstance(data, dict) or not isinstance(data.get("userAddress"), str):
            return self._error(400, ERR_FORMAT)
        address = data["userAddress"].strip()
        if not _HEX_ADDRESS.match(address):
            return self._error(400, ERR_INVALID_ADDRESS)
        destination = to_checksum(address)
        cooldown = self.config.cooldown_seconds
        now = self._clock()
        if cooldown > 0:
            last = self._last.get(destination)
            if last is not None and now - last < cooldown:
                wait = max(1, math.ceil(cooldown - (now - last)))
                return (
                    429,
                    {"Retry-After": str(wait)},
                    {
                        "error": f"Too many requests for {destination}: this faucet pays each "
                        f"address once every {cooldown:g} s. Try again in {wait} s."
                    },
                )
        cfg = self.config
        balance = self._balance()
        if balance is None:
            return self._error(503, ERR_CLEARNODE)
        if balance < cfg.min_transfer_count * cfg.tip_units:
            return self._error(503, ERR_UNAVAILABLE)
        if destination == self.account:
            return self._error(500, ERR_SEND)
        try:
            tx_id = await self._pay(destination)
        except RelayError:
            return self._error(500, ERR_SEND)
        except SettlementError:
            return self._error(503, ERR_CLEARNODE)
        if cooldown > 0:
            self._last[destination] = now
        return (
            200,
            {},
            {
                "success": True,
                "message": SUCCESS_MESSAGE,
                "txId": tx_id,
                "amount": cfg.tip_text,
                "asset": cfg.asset,
                "destination": destination,
            },
        )

    def _balance(self) -> int | None:
        if self.payer is not None:
            return self.payer.balance(self.config.asset)
        relay = self.relay
        if relay is None or relay.service is None or relay.ledger is None:
            return None
        return relay.ledger.balance(self.account, self.config.asset)

    async def _pay(self, destination: str) -> str:
        cfg = self.config
        if self.payer is not None:
            return await self.payer.pay(destination, cfg.asset, cfg.tip_units)
        assert self.relay is not None  # _balance checked it
        tx = await self.relay.transfer_from(self.account, destination, cfg.asset, cfg.tip_units)
        return str(tx["id"])

    def info(self) -> dict[str, Any]:
        """``GET /faucet/info``: what a request pays and whether the faucet can pay it."""
        balance = self._balance() or 0
        return {
            "asset": self.config.asset,
            "amount": self.config.tip_text,
            "available": balance >= self.config.min_transfer_count * self.config.tip_units,
            "cooldownSeconds": self.config.cooldown_seconds,
        }
