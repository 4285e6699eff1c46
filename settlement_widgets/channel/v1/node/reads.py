"""The Nitronode's read handlers: node info, balances, transactions, channels.

:class:`NodeReads` is the first layer of :class:`~.handlers.NitronodeService`; it declares
the attributes the service sets, so each later layer may rely on them.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from ....keys import PrivateKey
from ..core.decimals import (
    from_units,
    parse_decimal,
    plain_decimal_string,
)
from .backing import BackingGuard
from .chain_view import ConfirmedChainView
from .config import NitronodeConfig
from .ledger import NitronodeLedger, wallet_key
from .params import (
    FAILED_TO_PARSE,
    _fail,
    _page,
    _pagination,
    _req_text,
    _text,
    _uint,
    _wallet,
)
from .rescue import ChallengeRescues

__all__ = ["NodeReads"]


class NodeReads(ChallengeRescues):
    """``node.v1.*``, ``user.v1.*`` and the ``channels.v1.get_*`` reads."""

    config: NitronodeConfig
    ledger: NitronodeLedger
    chain_view: ConfirmedChainView | None
    backing: BackingGuard
    _key: PrivateKey
    _decimals: Callable[[int, str], int]
    _clock_ms: Callable[[], int]

    @property
    def node_address(self) -> str:
        return self._key.address

    # --- node -----------------------------------------------------------------------------

    async def ping(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    async def get_config(self, params: Mapping[str, Any]) -> dict[str, Any]:
        validators = bytes(self.config.supported_sig_validators)
        return {  # the Go node marshals the top level sorted by key
            "blockchains": [c.to_json() for c in self.config.chains],
            "node_address": self.node_address.lower(),
            "node_version": self.config.node_version,
            "supported_sig_validators": base64.b64encode(validators).decode(),
        }

    async def get_assets(self, params: Mapping[str, Any]) -> dict[str, Any]:
        chain = params.get("blockchain_id")
        assets = [a.to_json() for a in self.config.assets]
        if chain is not None:  # the Go node keeps only that chain's tokens
            wanted = str(_uint(chain))
            assets = [
                {**a, "tokens": [t for t in a["tokens"] if t["blockchain_id"] == wanted]}
                for a in assets
            ]
            assets = [a for a in assets if a["tokens"]]
        return {"assets": assets}

    # --- users ----------------------------------------------------------------------------

    async def get_balances(self, params: Mapping[str, Any]) -> dict[str, Any]:
        wallet = _wallet(params.get("wallet"))
        balances = []
        for asset in self.ledger.assets_of(wallet):
            await self._settle_closed(wallet, asset)
            state = self.ledger.latest_state(wallet, asset)
            assert state is not None
            enforced = await self._enforced(wallet, asset)
            balances.append(
                {
                    "asset": asset,
                    "amount": plain_decimal_string(state["home_ledger"]["user_balance"]),
                    "enforced": plain_decimal_string(enforced),
                }
            )
        return {"balances": balances}

    async def _enforced(self, wallet: str, asset: str) -> Decimal:
        channel = self._current_channel(wallet, asset)
        if channel is None:
            return Decimal(0)
        if self.chain_view is not None:
            units = await self.chain_view.enforced_user_balance(channel["channel_id"])
            token = self._decimals(int(channel["blockchain_id"]), channel["token_address"])
            return from_units(units, token)
        return parse_decimal(channel.get("enforced_balance", "0"))

    async def get_transactions(self, params: Mapping[str, Any]) -> dict[str, Any]:
        wallet = wallet_key(_wallet(params.get("wallet")))
        asset = _text(params, "asset", optional=True)
        tx_type = params.get("tx_type")
        if tx_type is not None and (isinstance(tx_type, bool) or not isinstance(tx_type, int)):
            raise _fail(FAILED_TO_PARSE)
        start = _uint(params.get("from_time"), optional=True, default=0)
        end = _uint(params.get("to_time"), optional=True, default=2**64 - 1)
        offset, limit, sort = _pagination(params)
        found = [
            tx
            for tx in self.ledger.transactions
            if wallet in (tx["from_account"].lower(), tx["to_account"].lower())
            and (asset is None or tx["asset"] == asset)
            and (tx_type is None or tx["tx_type"] == tx_type)
            and start <= tx["created_at_ms"] // 1000 <= end
        ]
        if sort == "desc":
            found.reverse()
        page, metadata = _page(found, offset, limit)
        return {
            "transactions": [{k: v for k, v in tx.items() if k != "created_at_ms"} for tx in page],
            "metadata": metadata,
        }

    # --- channels: reads ------------------------------------------------------------------

    def _current_channel(self, wallet: str, asset: str) -> dict[str, Any] | None:
        channels = self.ledger.channels_of(wallet, asset)
        return channels[-1] if channels else None

    async def _status(self, channel: Mapping[str, Any]) -> str:
        if self.chain_view is not None:
            return await self.chain_view.channel_status(channel["channel_id"])
        return str(channel["status"])

    async def _channel_json(self, channel: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "channel_id": channel["channel_id"],
            "user_wallet": channel["user_wallet"],
            "asset": channel["asset"],
            "type": "home",
            "blockchain_id": channel["blockchain_id"],
            "token_address": channel["token_address"],
            "challenge_duration": channel["challenge_duration"],
            "challenge_expires_at": None,
            "nonce": channel["nonce"],
            "approved_sig_validators": channel["approved_sig_validators"],
            "status": await self._status(channel),
            "state_version": channel["state_version"],
        }

    async def get_home_channel(self, params: Mapping[str, Any]) -> dict[str, Any]:
        wallet = _wallet(params.get("wallet"))
        channel = self._current_channel(wallet, _req_text(params, "asset"))
        return {} if channel is None else {"channel": await self._channel_json(channel)}

    async def get_escrow_channel(self, params: Mapping[str, Any]) -> dict[str, Any]:
        _req_text(params, "escrow_channel_id")
        return {}  # escrow operations are not supported by this node

    async def get_channels(self, params: Mapping[str, Any]) -> dict[str, Any]:
        wallet = _wallet(params.get("wallet"))
        asset = _text(params, "asset", optional=True)
        status = _text(params, "status", optional=True)
        kind = _text(params, "channel_type", optional=True)
        offset, limit, sort = _pagination(params)
        channels = [] if kind == "escrow" else self.ledger.channels_of(wallet, asset)
        rendered = [await self._channel_json(c) for c in channels]
        if status is not None:
            rendered = [c for c in rendered if c["status"] == status]
        if sort == "desc":
            rendered.reverse()
        page, metadata = _page(rendered, offset, limit)
        return {"channels": page, "metadata": metadata}

    async def get_latest_state(self, params: Mapping[str, Any]) -> dict[str, Any]:
        wallet = _wallet(params.get("wallet"))
        only_signed = params.get("only_signed", False)
        if not isinstance(only_signed, bool):
            raise _fail(FAILED_TO_PARSE)
        asset = _req_text(params, "asset")
        await self._settle_closed(wallet, asset)
        state = self.ledger.latest_state(wallet, asset, only_signed=only_signed)
        return {} if state is None else {"state": state}
