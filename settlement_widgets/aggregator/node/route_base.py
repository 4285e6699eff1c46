"""The route server's chain-facing base: token metadata, prices and request fields.

:class:`RouteServerBase` holds what both halves of :class:`~.routes.RouteServer` need: the
chains and the deployment, token JSON (USDC at 1 USD, ETH and WETH at the pool's price),
prices simulated on the sandbox pool, and the checks of a request's chain and token fields.
:mod:`.route_status` answers ``/status`` on top of it, :mod:`.routes` quotes and builds
transactions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ...addresses import ZERO_ADDRESS, is_address, to_checksum
from ...contracts import load_artifact
from .lifi_schema import LifiError, decimal_str, zero_for_one

if TYPE_CHECKING:
    from ...sandbox.chain import Chain
    from .deploy import CrossChainDeployment


__all__ = ["RouteServerBase"]


class RouteServerBase:
    """The state and the helpers of the route server (see the module docstring).

    ``chains`` maps chain id to a running :class:`~settlement_widgets.sandbox.chain.Chain`;
    ``explorers`` maps chain id to that chain's explorer base URL (links are
    ``{base}/tx/{hash}``); ``block_time`` is the relayer's (for ``executionDuration``).
    """

    def __init__(
        self,
        chains: Mapping[int, Chain],
        deployment: CrossChainDeployment,
        explorers: Mapping[int, str],
        *,
        block_time: float = 0.2,
    ) -> None:
        self.chains = dict(chains)
        self.deployment = deployment
        self.explorers = dict(explorers)
        self.block_time = block_time
        self._bridge_abi = load_artifact("SandboxBridge").abi
        self._router_abi = load_artifact("SandboxRouter").abi
        self._token_abi = load_artifact("TestToken").abi
        self._order = [d.chain_id for d in deployment.chains.values()]

    # --- metadata ---------------------------------------------------------------------------

    def _native(self, chain_id: int, price: Decimal | None) -> dict[str, Any]:
        token = {
            "address": ZERO_ADDRESS,
            "chainId": chain_id,
            "symbol": "ETH",
            "decimals": 18,
            "name": "Sandbox ETH",
            "coinKey": "ETH",
        }
        if price is not None:
            token["priceUSD"] = decimal_str(price, 4)
        return token

    def _usdc(self, chain_id: int) -> dict[str, Any]:
        return {
            "address": self.deployment.chains[chain_id].usdc,
            "chainId": chain_id,
            "symbol": "USDC",
            "decimals": 6,
            "name": "USD Coin (sandbox)",
            "coinKey": "USDC",
            "priceUSD": "1.00",
        }

    def _weth(self, chain_id: int, price: Decimal | None) -> dict[str, Any] | None:
        weth = self.deployment.chains[chain_id].weth
        if weth is None:
            return None
        token = {
            "address": weth,
            "chainId": chain_id,
            "symbol": "WETH",
            "decimals": 18,
            "name": "Wrapped Ether (sandbox)",
            "coinKey": "WETH",
        }
        if price is not None:
            token["priceUSD"] = decimal_str(price, 4)
        return token

    async def chains_body(self) -> dict[str, Any]:
        price = await self.eth_price()
        out = []
        for chain_id in self._order:
            d = self.deployment.chains[chain_id]
            rpc = self.chains[chain_id].rpc_url
            out.append(
                {
                    "id": chain_id,
                    "key": d.key,
                    "name": d.name,
                    "chainType": "EVM",
                    "coin": "ETH",
                    "mainnet": False,
                    "nativeToken": self._native(chain_id, price),
                    "metamask": {
                        "chainId": hex(chain_id),
                        "chainName": d.name,
                        "nativeCurrency": {"name": "Sandbox ETH", "symbol": "ETH", "decimals": 18},
                        "rpcUrls": [rpc] if rpc else [],
                        "blockExplorerUrls": [self.explorers[chain_id] + "/"],
                    },
                }
            )
        return {"chains": out}

    async def tokens_body(self, chains: Sequence[int] | None = None) -> dict[str, Any]:
        price = await self.eth_price()
        out: dict[str, list[dict[str, Any]]] = {}
        for chain_id in self._order:
            if chains and chain_id not in chains:
                continue
            tokens = [self._native(chain_id, price), self._usdc(chain_id)]
            weth = self._weth(chain_id, price)
            if weth is not None:
                tokens.append(weth)
            out[str(chain_id)] = tokens
        return {"tokens": out}

    # --- prices from the chain -----------------------------------------------------------------

    async def swap_quote(self, chain_id: int, sell: str, amount_in: int) -> int:
        """What the pool of ``chain_id`` pays for ``amount_in`` of ``sell`` (``"weth"`` or
        ``"usdc"``), by simulating the swap there (``SandboxRouter.quoteExactInput``)."""
        d = self.deployment.chains[chain_id]
        if d.pool_key is None or d.router is None:
            raise LifiError(404, f"chain {chain_id} has no sandbox pool", 1002)
        router = self.chains[chain_id].w3.eth.contract(address=d.router, abi=self._router_abi)  # type: ignore[call-overload]
        call = router.functions.quoteExactInput(
            d.pool_key.as_abi(), zero_for_one(d, sell), amount_in
        )
        return int(await call.call())

    async def eth_price(self, chain_id: int | None = None) -> Decimal | None:
        """USD per ETH on ``chain_id`` (default: the first chain): what its pool pays for
        0.001 WETH, scaled up; None without a pool (no price rather than an invented one)."""
        try:
            out = await self.swap_quote(chain_id or self._order[0], "weth", 10**15)
        except Exception:
            return None
        return Decimal(out * 1000).scaleb(-6)

    async def _gas_price(self, chain_id: int) -> int:
        block = await self.chains[chain_id].w3.eth.get_block("latest")
        base = int(block.get("baseFeePerGas") or 0)
        return 2 * base + 10**9  # what WalletClient offers (maxFeePerGas), the worst case

    # --- parsing requests -------------------------------------------------------------------

    def _chain(self, value: Any, field: str) -> int:
        try:
            chain_id = int(str(value))
        except (TypeError, ValueError):
            key = str(value).lower()
            for d in self.deployment.chains.values():
                if d.key == key:
                    return d.chain_id
            raise LifiError(400, f"{field} must be a chain id, got {value!r}") from None
        if chain_id not in self.deployment.chains:
            raise LifiError(
                400, f"{field} {chain_id} is not served here (chains: {self._order})", 1011
            )
        return chain_id

    def _token(self, value: Any, chain_id: int, field: str) -> str:
        text = str(value or "")
        d = self.deployment.chains[chain_id]
        by_symbol = {"USDC": d.usdc, "ETH": ZERO_ADDRESS}
        if d.weth is not None:
            by_symbol["WETH"] = d.weth
        if text.upper() in by_symbol:
            return by_symbol[text.upper()]
        if not is_address(text):
            raise LifiError(400, f"{field} must be a token address or symbol, got {text!r}")
        return to_checksum(text)

    def _token_json(self, chain_id: int, kind: str, price: Decimal | None) -> dict[str, Any]:
        token = self._usdc(chain_id) if kind == "usdc" else self._weth(chain_id, price)
        assert token is not None
        return token

    def tx_link(self, chain_id: int, tx_hash: str) -> str:
        return f"{self.explorers[chain_id]}/tx/{tx_hash}"
