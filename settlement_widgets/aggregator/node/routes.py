"""A route server that speaks LI.FI's REST schema, answered from the sandbox chains' state.

The endpoints and field names are LI.FI's (``GET /chains``, ``/tokens``, ``/quote``,
``/status``; ``POST /advanced/routes``, ``/advanced/stepTransaction``), so
:class:`~settlement_widgets.aggregator.AggregatorProvider` talks to it with the code it uses
against the live API. What is behind the schema is the sandbox, for real:

- **routes** between the two chains' test tokens, one per bridge (:data:`~.deploy.BRIDGES`):
  USDC to USDC is a single ``cross`` step; from WETH a ``lifi`` step whose included steps
  start with a Uniswap v4 ``swap`` in the source chain's sandbox pool (done by the router in
  the same transaction), to WETH one ending with a ``swap`` on the destination chain (done
  by the relayer through that chain's router). Pools are priced by simulating the swap
  (``SandboxRouter.quoteExactInput`` through eth_call), never from a table.
- **amounts**: ``toAmount`` is what the contracts would pay now (swaps and the bridge's
  fee); ``toAmountMin`` applies the slippage (default 0.5 %) to each swap (a bridge alone
  pays exactly). The bridge fee is a ``feeCosts`` entry with ``included:
  true``; a messaging fee paid in the native coin is ``included: false`` and is the
  transaction's ``value``. Gas: the chain's current gas price times a gas limit measured on
  these contracts (:data:`GAS_UNITS`), priced in USD at the pool's WETH price. Routes whose
  destination bridge holds too little USDC are not offered (``unavailableRoutes``).
- **transactionRequest**: calldata of ``SandboxBridge.startTransfer`` or
  ``SandboxRouter.swapAndBridge`` that the caller's wallet signs and sends; approval to
  ``estimate.approvalAddress`` (the bridge or the router) first.
- **status** reads the chains: the source receipt and its ``TransferStarted`` event, then the
  destination bridge's ``TransferReleased`` (``DONE``/``COMPLETED``, the receiving hash is
  the release transaction on the destination chain) or the source bridge's
  ``TransferRefunded`` (``DONE``/``REFUNDED``); with a destination swap, the router's
  ``Delivered`` (``COMPLETED``, or ``PARTIAL`` when the price moved and the receiver got the
  bridged USDC instead of WETH); before that ``PENDING`` with
  ``WAIT_SOURCE_CONFIRMATIONS`` or ``WAIT_DESTINATION_TRANSACTION``. A reverted source
  transaction is ``FAILED``; an unknown hash ``NOT_FOUND`` (HTTP 200, as LI.FI answers).

Test USDC is valued at 1 USD (it stands for a dollar stablecoin); the native coin and WETH
at the pool's price. Links point at the sandbox explorer of each chain.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_DOWN, Decimal
from typing import TYPE_CHECKING, Any, Final

from ...addresses import ZERO_ADDRESS, is_address, to_checksum
from ...contracts import load_artifact
from ...errors import SettlementValueError

if TYPE_CHECKING:
    from ...sandbox.chain import Chain
    from .deploy import BridgeSpec, ChainDeployment, CrossChainDeployment

__all__ = ["DEFAULT_SLIPPAGE", "GAS_LIMITS", "GAS_UNITS", "LifiError", "RouteServer"]

DEFAULT_SLIPPAGE = 0.005
#: gas of the step transactions as measured on these contracts (a first transfer of a sender:
#: cold storage), and the limit sent with them; a test checks executed transactions stay
#: between the two
GAS_UNITS: Mapping[str, int] = {"cross": 165_000, "swap+cross": 250_000}
GAS_LIMITS: Mapping[str, int] = {"cross": 250_000, "swap+cross": 380_000}
#: what the relayer adds to the confirmations' wait, in seconds, for executionDuration
_RELAY_SECONDS = 0.5
_NAMESPACE = uuid.UUID("5f0c6c1e-58f4-4e8e-9a51-3c1f1f7f7a10")


class LifiError(Exception):
    """An error answered in LI.FI's shape: ``{"message": ..., "code": ...}`` with a status."""

    def __init__(self, status: int, message: str, code: int = 1011) -> None:
        super().__init__(message)
        self.status = status
        self.body = {"message": message, "code": code}


def _dec(value: Decimal, places: int = 6) -> str:
    q = Decimal(1).scaleb(-places)
    return str(value.quantize(q, rounding=ROUND_DOWN))


@dataclass(frozen=True)
class _Request:
    from_chain: int
    to_chain: int
    from_token: str
    to_token: str
    from_amount: int
    from_address: str
    to_address: str
    slippage: float

    def id_for(self, tool: str) -> str:
        seed = "|".join(
            map(
                str,
                (self.from_chain, self.to_chain, self.from_token.lower(), self.to_token.lower(),
                 self.from_amount, self.from_address.lower(), self.to_address.lower(),
                 self.slippage, tool),
            )
        )  # fmt: skip
        return str(uuid.uuid5(_NAMESPACE, seed))


@dataclass(frozen=True)
class _Legs:
    """A request's token kinds on each side, and what reaches the bridge (after the source
    swap, if any) with its floor under the slippage bound ``slip`` (1 - slippage)."""

    from_kind: str
    to_kind: str
    bridged: int
    bridged_min: int
    slip: Decimal


def _kind_of(chain: ChainDeployment, token: str) -> str | None:
    """``"usdc"`` or ``"weth"`` for the chain's test tokens, None for anything else."""
    if token.lower() == chain.usdc.lower():
        return "usdc"
    if (
        chain.weth is not None
        and chain.pool_key is not None
        and token.lower() == chain.weth.lower()
    ):
        return "weth"
    return None


def _zero_for_one(chain: ChainDeployment, sell: str) -> bool:
    """The v4 swap direction that sells ``sell`` (``"weth"``/``"usdc"``) in the chain's pool."""
    assert chain.pool_key is not None
    selling = chain.weth if sell == "weth" else chain.usdc
    return chain.pool_key.currency0.lower() == str(selling).lower()


def _usd_of(amount: int, token: Mapping[str, Any]) -> Decimal:
    price = Decimal(str(token.get("priceUSD") or 0))
    return Decimal(amount).scaleb(-int(token["decimals"])) * price


def _step_json(
    step_id: str,
    kind: str,
    tool: str,
    tool_details: Mapping[str, Any],
    *,
    chains: tuple[int, int],
    tokens: tuple[Mapping[str, Any], Mapping[str, Any]],
    amounts: tuple[int, int, int],
    parties: tuple[str | None, str | None],
    slippage: float,
    approval: str | None,
    duration: float,
    fee_costs: list[dict[str, Any]] | None = None,
    gas_costs: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One LI.FI step (``action`` and ``estimate``): ``amounts`` is (from, to, to minimum),
    ``parties`` (from address, to address)."""
    from_amount, to_amount, to_amount_min = amounts
    return {
        "id": step_id,
        "type": kind,
        "tool": tool,
        "toolDetails": dict(tool_details),
        "action": {
            "fromChainId": chains[0],
            "toChainId": chains[1],
            "fromToken": tokens[0],
            "toToken": tokens[1],
            "fromAmount": str(from_amount),
            "fromAddress": parties[0],
            "toAddress": parties[1],
            "slippage": slippage,
        },
        "estimate": {
            "tool": tool,
            "fromAmount": str(from_amount),
            "toAmount": str(to_amount),
            "toAmountMin": str(to_amount_min),
            "approvalAddress": approval,
            "executionDuration": duration,
            "feeCosts": fee_costs or [],
            "gasCosts": gas_costs or [],
        },
    }


_V4_TOOL: Final = {"key": "sandbox-v4", "name": "Uniswap v4 (sandbox pool)", "logoURI": ""}


class RouteServer:
    """LI.FI's REST API over the sandbox chains (see the module docstring).

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
            token["priceUSD"] = _dec(price, 4)
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
            token["priceUSD"] = _dec(price, 4)
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
            d.pool_key.as_abi(), _zero_for_one(d, sell), amount_in
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

    def _request(self, data: Mapping[str, Any], *, body: bool) -> _Request:
        keys = (
            ("fromChainId", "toChainId", "fromTokenAddress", "toTokenAddress")
            if body
            else ("fromChain", "toChain", "fromToken", "toToken")
        )
        for key in (*keys, "fromAmount", "fromAddress"):
            if data.get(key) in (None, ""):
                raise LifiError(400, f"{key} is required")
        from_chain = self._chain(data[keys[0]], keys[0])
        to_chain = self._chain(data[keys[1]], keys[1])
        amount_text = str(data["fromAmount"])
        if not amount_text.isdigit() or int(amount_text) <= 0:
            raise LifiError(
                400, f"fromAmount must be a positive integer string, got {amount_text!r}"
            )
        sender = str(data["fromAddress"])
        if not is_address(sender) or int(sender, 16) == 0:
            raise LifiError(400, f"fromAddress must be a non-zero address, got {sender!r}")
        receiver = str(data.get("toAddress") or sender)
        if not is_address(receiver) or int(receiver, 16) == 0:
            raise LifiError(400, f"toAddress must be a non-zero address, got {receiver!r}")
        options = data.get("options") if body else data
        slippage = (options or {}).get("slippage", DEFAULT_SLIPPAGE)
        try:
            slippage = float(slippage)
        except (TypeError, ValueError):
            raise LifiError(400, f"slippage must be a number, got {slippage!r}") from None
        if not 0 <= slippage < 1 or math.isnan(slippage):
            raise LifiError(400, f"slippage must be a fraction in [0, 1), got {slippage}")
        return _Request(
            from_chain=from_chain,
            to_chain=to_chain,
            from_token=self._token(data[keys[2]], from_chain, keys[2]),
            to_token=self._token(data[keys[3]], to_chain, keys[3]),
            from_amount=int(amount_text),
            from_address=to_checksum(sender),
            to_address=to_checksum(receiver),
            slippage=slippage,
        )

    # --- routes -----------------------------------------------------------------------------

    async def routes_body(self, data: Mapping[str, Any]) -> dict[str, Any]:
        request = self._request(data, body=True)
        routes, unavailable = await self._routes(request)
        return {
            "routes": routes,
            "unavailableRoutes": {"filteredOut": unavailable, "failed": []},
        }

    async def quote_body(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The single best step (LI.FI's ``order``: CHEAPEST by default = most received at
        worst; FASTEST = shortest duration), with its transaction request."""
        request = self._request(params, body=False)
        routes, _ = await self._routes(request)
        if not routes:
            raise LifiError(404, "No available quotes for the requested transfer", 1002)
        order = str(params.get("order") or "CHEAPEST").upper()
        if order == "FASTEST":
            best = min(routes, key=lambda r: r["steps"][0]["estimate"]["executionDuration"])
        else:
            best = max(routes, key=lambda r: int(r["toAmountMin"]))
        step = dict(best["steps"][0])
        step["transactionRequest"] = await self._transaction(step)
        return step

    async def step_transaction_body(self, step: Mapping[str, Any]) -> dict[str, Any]:
        """The step (as sent) with a fresh ``transactionRequest`` built from its action and
        estimate; the amounts are re-checked against the chain first."""
        if not isinstance(step, Mapping) or not isinstance(step.get("action"), Mapping):
            raise LifiError(400, "the body must be a step object with an action")
        out = dict(step)
        out["transactionRequest"] = await self._transaction(out)
        return out

    async def _routes(self, request: _Request) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        if request.from_chain == request.to_chain:
            return [], [{"reason": "same-chain swaps are not served here"}]
        source = self.deployment.chains[request.from_chain]
        target = self.deployment.chains[request.to_chain]
        from_kind = _kind_of(source, request.from_token)
        to_kind = _kind_of(target, request.to_token)
        if from_kind is None:
            return [], [{"reason": f"no route from token {request.from_token}"}]
        if to_kind is None:
            return [], [{"reason": f"no route to token {request.to_token}"}]
        try:
            legs = await self._legs(request, from_kind, to_kind)
        except Exception as exc:  # a pool that cannot take the amount
            return [], [{"reason": f"the pool cannot take this amount: {exc}"}]
        gas_price = await self._gas_price(request.from_chain)
        prices = (await self.eth_price(request.from_chain), await self.eth_price(request.to_chain))
        routes: list[dict[str, Any]] = []
        unavailable: list[dict[str, Any]] = []
        for spec in self.deployment.bridges:
            if spec.key not in source.bridges or spec.key not in target.bridges:
                continue
            route = await self._route(request, spec, legs, gas_price, prices)
            if route is None:
                unavailable.append({"tool": spec.key, "reason": "INSUFFICIENT_LIQUIDITY"})
            else:
                routes.append(route)
        return routes, unavailable

    async def _legs(self, request: _Request, from_kind: str, to_kind: str) -> _Legs:
        """The source swap's output (and its slippage floor), before any bridge fee."""
        slip = 1 - Decimal(repr(request.slippage))
        if from_kind == "weth":
            swap_out = await self.swap_quote(request.from_chain, "weth", request.from_amount)
            return _Legs(from_kind, to_kind, swap_out, int(Decimal(swap_out) * slip), slip)
        return _Legs(from_kind, to_kind, request.from_amount, request.from_amount, slip)

    async def _liquidity(self, chain_id: int, bridge: str) -> int:
        d = self.deployment.chains[chain_id]
        token = self.chains[chain_id].w3.eth.contract(address=d.usdc, abi=self._token_abi)  # type: ignore[call-overload]
        return int(await token.functions.balanceOf(d.bridges[bridge]).call())

    def _token_json(self, chain_id: int, kind: str, price: Decimal | None) -> dict[str, Any]:
        token = self._usdc(chain_id) if kind == "usdc" else self._weth(chain_id, price)
        assert token is not None
        return token

    async def _route(
        self,
        request: _Request,
        spec: BridgeSpec,
        legs: _Legs,
        gas_price: int,
        prices: tuple[Decimal | None, Decimal | None],
    ) -> dict[str, Any] | None:
        source = self.deployment.chains[request.from_chain]
        target = self.deployment.chains[request.to_chain]
        bridged = legs.bridged
        fee = bridged * spec.fee_bps // 10_000
        released = bridged - fee
        released_min = legs.bridged_min - legs.bridged_min * spec.fee_bps // 10_000
        if released <= 0 or released_min <= 0:
            return None
        if await self._liquidity(request.to_chain, spec.key) < released:
            return None
        if legs.to_kind == "weth":
            to_amount = await self.swap_quote(request.to_chain, "usdc", released)
            worst = await self.swap_quote(request.to_chain, "usdc", released_min)
            to_amount_min = int(Decimal(worst) * legs.slip)
        else:
            to_amount, to_amount_min = released, released_min
        price_from, price_to = prices
        usdc_from = self._usdc(request.from_chain)
        usdc_to = self._usdc(request.to_chain)
        from_token = self._token_json(request.from_chain, legs.from_kind, price_from)
        to_token = self._token_json(request.to_chain, legs.to_kind, price_to)
        kind = "swap+cross" if legs.from_kind == "weth" else "cross"
        gas_units = GAS_UNITS[kind]
        native = self._native(request.from_chain, price_from)
        gas_wei = gas_units * gas_price
        gas_usd = Decimal(gas_wei).scaleb(-18) * price_from if price_from is not None else None
        fee_costs: list[dict[str, Any]] = [
            {
                "name": "Bridge fee",
                "description": f"{spec.fee_bps / 100:g} % of the amount, kept by {spec.name}",
                "token": usdc_from,
                "amount": str(fee),
                "amountUSD": _dec(Decimal(fee).scaleb(-6), 4),
                "percentage": str(Decimal(spec.fee_bps) / 10_000),
                "included": True,
            }
        ]
        if spec.messaging_fee_wei:
            messaging_usd = (
                Decimal(spec.messaging_fee_wei).scaleb(-18) * price_from
                if price_from is not None
                else None
            )
            fee_costs.append(
                {
                    "name": "Messaging fee",
                    "description": f"paid on top in ETH to {spec.name}",
                    "token": native,
                    "amount": str(spec.messaging_fee_wei),
                    "amountUSD": _dec(messaging_usd, 4) if messaging_usd is not None else "0",
                    "percentage": "0",
                    "included": False,
                }
            )
        gas_costs = [
            {
                "type": "SEND",
                "price": str(gas_price),
                "estimate": str(gas_units),
                "limit": str(GAS_LIMITS[kind]),
                "amount": str(gas_wei),
                "amountUSD": _dec(gas_usd, 4) if gas_usd is not None else "0",
                "token": native,
            }
        ]
        duration = round(spec.confirmations * self.block_time + _RELAY_SECONDS, 3)
        approval = source.bridges[spec.key] if legs.from_kind == "usdc" else source.router
        assert approval is not None
        tool_details = {"key": spec.key, "name": spec.name, "logoURI": ""}
        included: list[dict[str, Any]] = []
        if legs.from_kind == "weth":
            included.append(
                self._included_swap(
                    request, request.from_chain, from_token, usdc_from,
                    request.from_amount, legs.bridged, legs.bridged_min, source.router,
                )
            )  # fmt: skip
        if included or legs.to_kind == "weth":
            included.append(
                self._included_cross(
                    request, spec, usdc_from, usdc_to, bridged, released, released_min,
                    fee_costs, duration, tool_details,
                    receiver=target.router if legs.to_kind == "weth" else request.to_address,
                )
            )  # fmt: skip
        if legs.to_kind == "weth":
            included.append(
                self._included_swap(
                    request, request.to_chain, usdc_to, to_token,
                    released, to_amount, to_amount_min, target.router,
                )
            )  # fmt: skip
        step = _step_json(
            request.id_for(spec.key + ":step"),
            "lifi" if included else "cross",
            spec.key,
            tool_details,
            chains=(request.from_chain, request.to_chain),
            tokens=(from_token, to_token),
            amounts=(request.from_amount, to_amount, to_amount_min),
            parties=(request.from_address, request.to_address),
            slippage=request.slippage,
            approval=approval,
            duration=duration,
            fee_costs=fee_costs,
            gas_costs=gas_costs,
        )
        estimate = step["estimate"]
        estimate["fromAmountUSD"] = _dec(_usd_of(request.from_amount, from_token), 4)
        estimate["toAmountUSD"] = _dec(_usd_of(to_amount, to_token), 4)
        step |= {
            "includedSteps": included,
            # how this server rebuilds the transaction (stepTransaction): sandbox-specific
            "sandbox": {
                "minSwapOut": str(legs.bridged_min),
                "messagingFee": str(spec.messaging_fee_wei),
            },
        }
        return {
            "id": request.id_for(spec.key),
            "fromChainId": request.from_chain,
            "fromAmountUSD": estimate["fromAmountUSD"],
            "fromAmount": str(request.from_amount),
            "fromToken": from_token,
            "fromAddress": request.from_address,
            "toChainId": request.to_chain,
            "toAmountUSD": estimate["toAmountUSD"],
            "toAmount": str(to_amount),
            "toAmountMin": str(to_amount_min),
            "toToken": to_token,
            "toAddress": request.to_address,
            "gasCostUSD": gas_costs[0]["amountUSD"],
            "containsSwitchChain": False,
            "steps": [step],
            "tags": [],
        }

    def _included_swap(
        self,
        request: _Request,
        chain_id: int,
        token_in: dict[str, Any],
        token_out: dict[str, Any],
        amount_in: int,
        amount_out: int,
        amount_out_min: int,
        router: str | None,
    ) -> dict[str, Any]:
        """The swap in ``chain_id``'s pool, by its router (before or after the bridge)."""
        receiver = router if chain_id == request.from_chain else request.to_address
        return _step_json(
            request.id_for(f"swap:{chain_id}"),
            "swap",
            "sandbox-v4",
            _V4_TOOL,
            chains=(chain_id, chain_id),
            tokens=(token_in, token_out),
            amounts=(amount_in, amount_out, amount_out_min),
            parties=(router, receiver),
            slippage=request.slippage,
            approval=router,
            duration=0,
        )

    def _included_cross(
        self,
        request: _Request,
        spec: BridgeSpec,
        usdc: dict[str, Any],
        to_token: dict[str, Any],
        bridged: int,
        to_amount: int,
        to_amount_min: int,
        fee_costs: list[dict[str, Any]],
        duration: float,
        tool_details: dict[str, Any],
        *,
        receiver: str | None,
    ) -> dict[str, Any]:
        """The bridge leg of a route with swaps (its sender the router after a swap)."""
        source = self.deployment.chains[request.from_chain]
        sender = source.router if bridged != request.from_amount else request.from_address
        return _step_json(
            request.id_for(spec.key + ":cross"),
            "cross",
            spec.key,
            tool_details,
            chains=(request.from_chain, request.to_chain),
            tokens=(usdc, to_token),
            amounts=(bridged, to_amount, to_amount_min),
            parties=(sender, receiver),
            slippage=request.slippage,
            approval=source.bridges[spec.key],
            duration=duration,
            fee_costs=fee_costs,
        )

    # --- transactions -----------------------------------------------------------------------

    async def _transaction(self, step: Mapping[str, Any]) -> dict[str, Any]:
        action, estimate = step.get("action"), step.get("estimate")
        if not isinstance(action, Mapping) or not isinstance(estimate, Mapping):
            raise LifiError(400, "the step needs action and estimate objects")
        tool = str(step.get("tool") or "")
        try:
            spec = self.deployment.bridge_spec(tool)
        except SettlementValueError:
            raise LifiError(400, f"unknown tool {tool!r}") from None
        try:
            from_chain = self._chain(action.get("fromChainId"), "action.fromChainId")
            to_chain = self._chain(action.get("toChainId"), "action.toChainId")
            from_token = self._token(
                (action.get("fromToken") or {}).get("address"), from_chain, "action.fromToken"
            )
            to_token = self._token(
                (action.get("toToken") or {}).get("address"), to_chain, "action.toToken"
            )
            sender = to_checksum(str(action.get("fromAddress")))
            receiver = to_checksum(str(action.get("toAddress") or sender))
            amount = int(str(action.get("fromAmount")))
            to_amount_min = int(str(estimate.get("toAmountMin")))
        except LifiError:
            raise
        except Exception as exc:
            raise LifiError(400, f"the step's action is not valid: {exc}") from None
        source = self.deployment.chains[from_chain]
        target = self.deployment.chains[to_chain]
        from_kind, to_kind = _kind_of(source, from_token), _kind_of(target, to_token)
        if from_kind is None or to_kind is None:
            raise LifiError(400, f"no route from {from_token} to {to_token}")
        destination_token = target.usdc if to_kind == "usdc" else target.weth
        w3 = self.chains[from_chain].w3
        if from_kind == "usdc":
            bridge = w3.eth.contract(address=source.bridges[spec.key], abi=self._bridge_abi)  # type: ignore[call-overload]
            data = bridge.encode_abi(
                "startTransfer",
                args=[
                    source.usdc, amount, to_chain, receiver, destination_token, to_amount_min,
                    sender,
                ],
            )  # fmt: skip
            to, gas = source.bridges[spec.key], GAS_LIMITS["cross"]
        else:
            assert source.pool_key is not None and source.router is not None
            extra = step.get("sandbox") or {}
            min_swap_out = int(str(extra.get("minSwapOut", "0")))
            router = w3.eth.contract(address=source.router, abi=self._router_abi)  # type: ignore[call-overload]
            data = router.encode_abi(
                "swapAndBridge",
                args=[
                    source.pool_key.as_abi(),
                    _zero_for_one(source, "weth"),
                    amount,
                    min_swap_out,
                    source.bridges[spec.key],
                    to_chain,
                    receiver,
                    destination_token,
                    to_amount_min,
                ],
            )
            to, gas = source.router, GAS_LIMITS["swap+cross"]
        return {
            "from": sender,
            "to": to,
            "chainId": from_chain,
            "data": data,
            "value": hex(spec.messaging_fee_wei),
            "gasLimit": hex(gas),
            "gasPrice": hex(await self._gas_price(from_chain)),
        }

    # --- status -------------------------------------------------------------------------------

    def tx_link(self, chain_id: int, tx_hash: str) -> str:
        return f"{self.explorers[chain_id]}/tx/{tx_hash}"

    async def status_body(self, params: Mapping[str, Any]) -> dict[str, Any]:
        tx_hash = str(params.get("txHash") or "")
        if len(tx_hash) != 66 or not tx_hash.startswith("0x"):
            raise LifiError(400, f"txHash must be 0x followed by 64 hex digits, got {tx_hash!r}")
        try:
            bytes.fromhex(tx_hash[2:])
        except ValueError:
            raise LifiError(400, f"txHash is not hex: {tx_hash!r}") from None
        chains = self._order
        if params.get("fromChain"):
            chains = [self._chain(params["fromChain"], "fromChain")]
        for chain_id in chains:
            receipt = await self._receipt(chain_id, tx_hash)
            if receipt is not None:
                return await self._status_of(chain_id, tx_hash, receipt)
        return {"status": "NOT_FOUND", "substatusMessage": "the transaction is not mined yet"}

    async def _receipt(self, chain_id: int, tx_hash: str) -> Any:
        from web3.exceptions import TransactionNotFound

        try:
            return await self.chains[chain_id].w3.eth.get_transaction_receipt(tx_hash)  # type: ignore[arg-type]
        except TransactionNotFound:
            return None

    async def _status_of(self, chain_id: int, tx_hash: str, receipt: Any) -> dict[str, Any]:
        w3 = self.chains[chain_id].w3
        tx = await w3.eth.get_transaction(tx_hash)  # type: ignore[arg-type]
        block = await w3.eth.get_block(receipt["blockNumber"])
        gas_price = int(receipt.get("effectiveGasPrice") or 0)
        price = await self.eth_price()
        gas_wei = gas_price * int(receipt["gasUsed"])
        sending: dict[str, Any] = {
            "txHash": tx_hash,
            "txLink": self.tx_link(chain_id, tx_hash),
            "chainId": chain_id,
            "gasPrice": str(gas_price),
            "gasUsed": str(int(receipt["gasUsed"])),
            "gasToken": self._native(chain_id, price),
            "gasAmount": str(gas_wei),
            "value": str(int(tx["value"])),
            "timestamp": int(block["timestamp"]),
        }
        if price is not None:
            sending["gasAmountUSD"] = _dec(Decimal(gas_wei).scaleb(-18) * price, 4)
        base = {"sending": sending, "fromAddress": tx["from"]}
        if receipt["status"] != 1:
            return base | {
                "status": "FAILED",
                "substatus": "UNKNOWN_ERROR",
                "substatusMessage": "the source transaction reverted; nothing was bridged",
            }
        started = self._started(chain_id, receipt)
        if started is None:
            return base | {
                "status": "INVALID",
                "substatusMessage": "the transaction started no sandbox bridge transfer",
            }
        tool, args = started
        transfer_id = "0x" + bytes(args["transferId"]).hex()
        to_chain = int(args["destinationChainId"])
        swapped = self._swapped(chain_id, receipt)
        if swapped is not None:  # a source swap: the user sent WETH
            amount, token = int(swapped["amountIn"]), self._weth(chain_id, price)
        else:
            amount, token = int(args["amount"]), self._usdc(chain_id)
        assert token is not None
        sending |= {
            "amount": str(amount),
            "token": token,
            "amountUSD": _dec(_usd_of(amount, token), 4),
        }
        common = base | {
            "transactionId": transfer_id,
            "tool": tool,
            "toAddress": args["receiver"],
            "lifiExplorerLink": self.tx_link(chain_id, tx_hash),
        }
        refunded = await self._event(chain_id, tool, "TransferRefunded", transfer_id)
        if refunded is not None:
            log, event = refunded
            return common | {
                "status": "DONE",
                "substatus": "REFUNDED",
                "substatusMessage": f"the bridge refunded the tokens on the source chain: "
                f"{event['args']['reason']}",
                "receiving": await self._receiving(
                    chain_id, log, int(event["args"]["amount"]), self._usdc(chain_id)
                ),
            }
        target = self.deployment.chains.get(to_chain)
        released = None
        if target is not None and to_chain in self.chains:
            released = await self._event(to_chain, tool, "TransferReleased", transfer_id)
        if target is not None and released is not None:
            wants_weth = _kind_of(target, str(args["destinationToken"])) == "weth"
            if not wants_weth:
                log, event = released
                return common | {
                    "status": "DONE",
                    "substatus": "COMPLETED",
                    "substatusMessage": "the transfer is complete",
                    "receiving": await self._receiving(
                        to_chain, log, int(event["args"]["amount"]), self._usdc(to_chain)
                    ),
                }
            delivered = await self._delivered(to_chain, transfer_id)
            if delivered is not None:
                log, event = delivered
                ok = bool(event["args"]["swapped"])
                price_to = await self.eth_price(to_chain)
                kind = "weth" if ok else "usdc"
                return common | {
                    "status": "DONE",
                    "substatus": "COMPLETED" if ok else "PARTIAL",
                    "substatusMessage": (
                        "the transfer is complete"
                        if ok
                        else "the destination swap would have paid less than the minimum "
                        "(the price moved): you received the bridged USDC instead"
                    ),
                    "receiving": await self._receiving(
                        to_chain,
                        log,
                        int(event["args"]["amount"]),
                        self._token_json(to_chain, kind, price_to),
                    ),
                }
        head = await self.chains[chain_id].block_number()
        confirmations = head - int(receipt["blockNumber"]) + 1
        needed = self.deployment.bridge_spec(tool).confirmations
        waiting = confirmations < needed
        return common | {
            "status": "PENDING",
            "substatus": "WAIT_SOURCE_CONFIRMATIONS" if waiting else "WAIT_DESTINATION_TRANSACTION",
            "substatusMessage": (
                f"{confirmations} of {needed} source confirmations"
                if waiting
                else "waiting for the relayer's transaction on the destination chain"
            ),
            "receiving": {"chainId": to_chain},
        }

    def _started(self, chain_id: int, receipt: Any) -> tuple[str, Any] | None:
        for log in receipt["logs"]:
            tool = self.deployment.bridge_at(chain_id, log["address"])
            if tool is None:
                continue
            contract = self.chains[chain_id].w3.eth.contract(
                address=log["address"], abi=self._bridge_abi
            )  # type: ignore[call-overload]
            try:
                event = contract.events.TransferStarted().process_log(log)
            except Exception:
                continue
            return tool, event["args"]
        return None

    async def _event(
        self, chain_id: int, tool: str, name: str, transfer_id: str
    ) -> tuple[Any, Any] | None:
        """The first ``name`` event of ``transfer_id`` on ``tool``'s bridge: (log, decoded)."""
        d = self.deployment.chains[chain_id]
        address = d.bridges.get(tool)
        if address is None:
            return None
        contract = self.chains[chain_id].w3.eth.contract(address=address, abi=self._bridge_abi)  # type: ignore[call-overload]
        event = getattr(contract.events, name)()
        logs = await event.get_logs(
            from_block=0, argument_filters={"transferId": bytes.fromhex(transfer_id[2:])}
        )
        return (logs[0], logs[0]) if logs else None

    def _swapped(self, chain_id: int, receipt: Any) -> Any:
        """The router's ``SwappedAndBridged`` arguments in ``receipt``, or None."""
        router = self.deployment.chains[chain_id].router
        if router is None:
            return None
        contract = self.chains[chain_id].w3.eth.contract(address=router, abi=self._router_abi)  # type: ignore[call-overload]
        for log in receipt["logs"]:
            if str(log["address"]).lower() != router.lower():
                continue
            try:
                return contract.events.SwappedAndBridged().process_log(log)["args"]
            except Exception:
                continue
        return None

    async def _delivered(self, chain_id: int, transfer_id: str) -> tuple[Any, Any] | None:
        """The destination router's ``Delivered`` event of ``transfer_id``: (log, decoded)."""
        router = self.deployment.chains[chain_id].router
        if router is None:
            return None
        contract = self.chains[chain_id].w3.eth.contract(address=router, abi=self._router_abi)  # type: ignore[call-overload]
        logs = await contract.events.Delivered().get_logs(
            from_block=0, argument_filters={"transferId": bytes.fromhex(transfer_id[2:])}
        )
        return (logs[0], logs[0]) if logs else None

    async def _receiving(
        self, chain_id: int, log: Any, amount: int, token: dict[str, Any]
    ) -> dict[str, Any]:
        tx_hash = "0x" + bytes(log["transactionHash"]).hex()
        w3 = self.chains[chain_id].w3
        receipt = await w3.eth.get_transaction_receipt(tx_hash)  # type: ignore[arg-type]
        block = await w3.eth.get_block(receipt["blockNumber"])
        gas_price = int(receipt.get("effectiveGasPrice") or 0)
        return {
            "txHash": tx_hash,
            "txLink": self.tx_link(chain_id, tx_hash),
            "chainId": chain_id,
            "amount": str(amount),
            "token": token,
            "amountUSD": _dec(_usd_of(amount, token), 4),
            "gasPrice": str(gas_price),
            "gasUsed": str(int(receipt["gasUsed"])),
            "timestamp": int(block["timestamp"]),
        }
