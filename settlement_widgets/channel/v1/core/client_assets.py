"""The client's asset cache: the SDK's ``ClientAssetStore`` over ``node.v1.get_assets``.

Why it matters for the wire: the cache decides *whether* a call sends ``get_assets`` (only
when it is empty, or an asset or token is unknown), and that is part of the request sequence
the SDK sends (Nitrolite v1.4.1 ``sdk/ts/src/asset_store.ts``), so its hit/miss rules are the
SDK's, miss for miss. It also gives the token decimals that state packing scales by.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from ....errors import InvalidFrameError, InvalidStateError

__all__ = ["AssetStore", "parse_assets", "require_text"]


def parse_assets(assets: object) -> list[dict[str, Any]]:
    """``get_assets`` entries checked and normalised (ints for decimals, strings for chains)."""
    if not isinstance(assets, list):
        raise InvalidFrameError("invalid get_assets result: 'assets' must be an array")
    out: list[dict[str, Any]] = []
    try:
        for asset in assets:
            tokens = []
            for token in asset["tokens"]:
                tokens.append(
                    {
                        "name": str(token["name"]),
                        "symbol": str(token["symbol"]),
                        "address": require_text(token["address"], "token address"),
                        "blockchain_id": str(int(token["blockchain_id"])),
                        "decimals": _small_int(token["decimals"], "token decimals"),
                    }
                )
            out.append(
                {
                    "name": str(asset["name"]),
                    "symbol": require_text(asset["symbol"], "asset symbol"),
                    "decimals": _small_int(asset["decimals"], "asset decimals"),
                    "suggested_blockchain_id": str(int(asset["suggested_blockchain_id"])),
                    "tokens": tokens,
                }
            )
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidFrameError(f"invalid get_assets result: {exc!r}") from None
    return out


def require_text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidFrameError(f"invalid {what}: expected a string, got {value!r}")
    return value


def _small_int(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 255:
        raise InvalidFrameError(f"invalid {what}: {value!r}")
    return value


class AssetStore:
    """Asset and token decimals cached from ``node.v1.get_assets`` (SDK ``ClientAssetStore``).

    The cache decides *whether* a call sends ``get_assets`` (only when empty, or when an
    asset is unknown), and that is part of the request sequence the SDK sends, so the rules
    are the SDK's, miss for miss. Not frozen: it is a cache, filled as calls go.
    """

    def __init__(
        self,
        fetch: Callable[[], Awaitable[list[dict[str, Any]]]],
        cached: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self._fetch = fetch
        self._cache: dict[str, dict[str, Any]] = {}
        self._fill(parse_assets(list(cached)))

    def _fill(self, assets: Sequence[dict[str, Any]]) -> None:
        for asset in assets:
            self._cache[asset["symbol"].lower()] = asset

    @property
    def assets(self) -> list[dict[str, Any]]:
        """The cached assets, wire form, in the order they were cached."""
        return list(self._cache.values())

    async def _refresh(self) -> None:
        self._fill(await self._fetch())

    async def asset_decimals(self, asset: str) -> int:
        """The asset's own decimals (the precision an amount may have)."""
        if asset.lower() not in self._cache:
            await self._refresh()
        if asset.lower() not in self._cache:
            raise InvalidStateError(f"asset {asset} not found")
        return int(self._cache[asset.lower()]["decimals"])

    async def token_decimals(self, blockchain_id: int | str, token: str) -> int:
        """The decimals of ``token`` on chain ``blockchain_id`` (what ledgers are scaled by)."""
        if not self._cache:
            await self._refresh()
        return self.cached_token_decimals(int(blockchain_id), token)

    def cached_token_decimals(self, blockchain_id: int, token: str) -> int:
        """As :meth:`token_decimals` from the cache only (a :data:`.state.TokenDecimals`)."""
        for asset in self._cache.values():
            for entry in asset["tokens"]:
                if (
                    int(entry["blockchain_id"]) == int(blockchain_id)
                    and entry["address"].lower() == token.lower()
                ):
                    return int(entry["decimals"])
        raise InvalidStateError(f"token {token} on blockchain {blockchain_id} not found")

    def _token_address(self, asset: str, blockchain_id: int) -> str | None:
        entry = self._cache.get(asset.lower())
        if entry is None:
            return None
        for token in entry["tokens"]:
            if int(token["blockchain_id"]) == blockchain_id:
                return str(token["address"])
        raise InvalidStateError(f"asset {asset} not available on blockchain {blockchain_id}")

    async def token_address(self, asset: str, blockchain_id: int | str) -> str:
        """The token contract of ``asset`` on ``blockchain_id``."""
        chain = int(blockchain_id)
        if not self._cache:
            await self._refresh()
        found = self._token_address(asset, chain)
        if found is None:
            await self._refresh()
            found = self._token_address(asset, chain)
        if found is None:
            raise InvalidStateError(f"asset {asset} not found")
        return found

    async def asset_exists_on_blockchain(self, blockchain_id: int | str, asset: str) -> bool:
        """Whether the node serves ``asset`` on ``blockchain_id`` (fetches only when the
        asset is not cached, as the SDK's ``assetExistsOnBlockchain``)."""
        if asset.lower() not in self._cache:
            await self._refresh()
        entry = self._cache.get(asset.lower())
        return entry is not None and any(
            int(token["blockchain_id"]) == int(blockchain_id) for token in entry["tokens"]
        )

    async def suggested_blockchain_id(self, asset: str) -> int:
        """The chain the node suggests as ``asset``'s home when the caller names none."""
        if asset.lower() not in self._cache:
            await self._refresh()
        entry = self._cache.get(asset.lower())
        if entry is None:
            raise InvalidStateError(f"asset {asset} not found")
        chain = int(entry["suggested_blockchain_id"])
        if chain == 0:
            raise InvalidStateError(f"no suggested blockchain ID for asset {asset}")
        return chain
