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
from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ...addresses import is_address, to_checksum
from ...errors import SettlementValueError
from .lifi_schema import (
    DEFAULT_SLIPPAGE,
    GAS_LIMITS,
    GAS_UNITS,
    RELAY_SECONDS,
    V4_TOOL,
    Legs,
    LifiError,
    RouteRequest,
    decimal_str,
    kind_of,
    step_json,
    usd_of,
    zero_for_one,
)
from .route_status import RouteStatusMixin

if TYPE_CHECKING:
    from .deploy import BridgeSpec


__all__ = ["DEFAULT_SLIPPAGE", "GAS_LIMITS", "GAS_UNITS", "LifiError", "RouteServer"]


class RouteServer(RouteStatusMixin):
    """LI.FI's REST API over the sandbox chains (see the module docstring).

    ``chains`` maps chain id to a running :class:`~settlement_widgets.sandbox.chain.Chain`;
    ``explorers`` maps chain id to that chain's explorer base URL (links are
    ``{base}/tx/{hash}``); ``block_time`` is the relayer's (for ``executionDuration``).
    """

    def _request(self, data: Mapping[str, Any], *, body: bool) -> RouteRequest:
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
        return RouteRequest(
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

    async def _routes(
        self, request: RouteRequest
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        if request.from_chain == request.to_chain:
            return [], [{"reason": "same-chain swaps are not served here"}]
        source = self.deployment.chains[request.from_chain]
        target = self.deployment.chains[request.to_chain]
        from_kind = kind_of(source, request.from_token)
        to_kind = kind_of(target, request.to_token)
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

    async def _legs(self, request: RouteRequest, from_kind: str, to_kind: str) -> Legs:
        """The source swap's output (and its slippage floor), before any bridge fee."""
        slip = 1 - Decimal(repr(request.slippage))
        if from_kind == "weth":
            swap_out = await self.swap_quote(request.from_chain, "weth", request.from_amount)
            return Legs(from_kind, to_kind, swap_out, int(Decimal(swap_out) * slip), slip)
        return Legs(from_kind, to_kind, request.from_amount, request.from_amount, slip)

    async def _liquidity(self, chain_id: int, bridge: str) -> int:
        d = self.deployment.chains[chain_id]
        token = self.chains[chain_id].w3.eth.contract(address=d.usdc, abi=self._token_abi)  # type: ignore[call-overload]
        return int(await token.functions.balanceOf(d.bridges[bridge]).call())

    async def _route(
        self,
        request: RouteRequest,
        spec: BridgeSpec,
        legs: Legs,
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
                "amountUSD": decimal_str(Decimal(fee).scaleb(-6), 4),
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
                    "amountUSD": decimal_str(messaging_usd, 4)
                    if messaging_usd is not None
                    else "0",
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
                "amountUSD": decimal_str(gas_usd, 4) if gas_usd is not None else "0",
                "token": native,
            }
        ]
        duration = round(spec.confirmations * self.block_time + RELAY_SECONDS, 3)
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
        step = step_json(
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
        estimate["fromAmountUSD"] = decimal_str(usd_of(request.from_amount, from_token), 4)
        estimate["toAmountUSD"] = decimal_str(usd_of(to_amount, to_token), 4)
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
        request: RouteRequest,
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
        return step_json(
            request.id_for(f"swap:{chain_id}"),
            "swap",
            "sandbox-v4",
            V4_TOOL,
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
        request: RouteRequest,
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
        return step_json(
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
        from_kind, to_kind = kind_of(source, from_token), kind_of(target, to_token)
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
                    zero_for_one(source, "weth"),
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
