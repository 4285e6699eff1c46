"""The dashboard's ``aggregator`` action: rank routes (and on the sandbox, run one)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import ipywidgets

from ..channel.v0_5.core.amounts import format_amount
from ..errors import (
    TransactionFailedError,
)
from ..networks import Network
from ..widgets import SettlementSelector
from ..widgets.viewmodels import (
    AggregatorSource,
)
from .view import ROUTE_AMOUNT, ROUTE_REQUEST, LogLine, _routes_html

if TYPE_CHECKING:
    from ..aggregator import AggregatorProvider
    from ..networks import Network
    from ..signer import Signer
    from ..widgets import SettlementSelector
    from ..widgets.viewmodels import AggregatorSource


__all__ = ["RouteActions"]


class RouteActions:
    """The aggregator method's button (a layer of :class:`~.widget.SettlementDashboard`)."""

    if TYPE_CHECKING:  # set and implemented by SettlementDashboard
        network: Network
        user: Signer
        selector: SettlementSelector

        def _add_log(self, line: LogLine) -> None: ...

        def _tx_line(self, text: str, tx_hash: str, url: str | None) -> LogLine: ...

        operator: Signer | None
        _routes: ipywidgets.HTML

        @property
        def routes_source(self) -> AggregatorSource: ...

        def _aggregator_provider(self) -> AggregatorProvider: ...

        async def _mint_sandbox_usdc(self, usdc: str, amount: int) -> None: ...

    # --- aggregator ---------------------------------------------------------------------

    def _sandbox_route(self) -> tuple[int, int, str, str] | None:
        """(from chain, to chain, from USDC, to USDC) of the sandbox's two chains, when the
        network profile carries the aggregator sandbox (``extra["aggregator"]``)."""
        data = self.network.extra.get("aggregator")
        if not data or not self.network.extra.get("lifiUrl"):
            return None
        chains = {int(c["chainId"]): c for c in data.get("chains", ())}
        source = self.network.chain_id
        others = [c for c in chains if c != source]
        if source not in chains or not others:
            return None
        return source, others[0], str(chains[source]["usdc"]), str(chains[others[0]]["usdc"])

    async def _usdc_balances(self, route: tuple[int, int, str, str]) -> tuple[int, int]:
        """The user's test USDC on the source chain (its wallet) and on the destination (read
        through that chain's JSON-RPC from the profile)."""
        from web3 import AsyncHTTPProvider, AsyncWeb3

        from ..contracts import load_artifact

        abi = load_artifact("TestToken").abi
        _, target, usdc_a, usdc_b = route
        here = self.user.w3.eth.contract(address=usdc_a, abi=abi)  # type: ignore[call-overload]
        rpc = next(
            str(c["rpcUrl"])
            for c in self.network.extra["aggregator"]["chains"]
            if int(c["chainId"]) == target
        )
        w3 = AsyncWeb3(AsyncHTTPProvider(rpc, request_kwargs={"timeout": 30}))
        there = w3.eth.contract(address=usdc_b, abi=abi)  # type: ignore[call-overload]
        try:
            return (
                int(await here.functions.balanceOf(self.user.address).call()),
                int(await there.functions.balanceOf(self.user.address).call()),
            )
        finally:
            await w3.provider.disconnect()

    async def show_routes(self) -> None:
        """Rank the routes of 100 USDC on the worst case (see :meth:`_aggregator_provider`
        for where they come from). On the sandbox, also execute the best one: approve and
        bridge on the first chain, follow the status to DONE, and show what moved on both
        chains with explorer links. Against the live API nothing is sent."""
        from ..aggregator.core.frame import routes_frame
        from ..sandbox.local import explorer_tx

        provider = self._aggregator_provider()
        sender = self.user.address
        sandbox = self._sandbox_route() if self.routes_source == "local" else None
        if sandbox is None:
            from_chain, to_chain, from_token, to_token, amount = ROUTE_REQUEST
            title = "100 USDC Arbitrum → Optimism"
        else:
            from_chain, to_chain, from_token, to_token = sandbox
            amount = ROUTE_AMOUNT
            title = f"100 USDC chain {from_chain} → chain {to_chain} (sandbox chains)"
        routes = await provider.routes(from_chain, to_chain, from_token, to_token, amount, sender)
        frame = routes_frame(routes, source=self.routes_source)
        self._routes.value = _routes_html(frame, source=self.routes_source, title=title)
        best = frame.iloc[0]
        where = {"local": "local route server", "live": "live"}[self.routes_source]
        self._add_log(
            LogLine(
                "ok",
                f"{len(frame)} routes ranked ({where}); best: {best['tools']}, "
                f"worst-case net ${float(best['net_min_usd']):.2f}",
            )
        )
        if sandbox is None:
            return
        source = sandbox[0]
        before = await self._usdc_balances(sandbox)
        if before[0] < amount and self.operator is not None:
            # a wallet the sandbox did not fund (a browser wallet): the operator owns the
            # sandbox's test USDC and mints what the route needs, as a faucet would
            await self._mint_sandbox_usdc(sandbox[2], amount - before[0])
            before = await self._usdc_balances(sandbox)
        started = time.monotonic()
        plan = await provider.execute_plan(routes[0], wallet=self.user, send=True)
        for tx in plan.transactions:
            if tx.tx_hash is not None:
                self._add_log(
                    LogLine(
                        "ok",
                        f"{tx.kind} mined on chain {tx.chain_id}",
                        href=explorer_tx(self.network, tx.chain_id, tx.tx_hash),
                        link_text=tx.tx_hash[:10] + "…",
                    )
                )
        final = await provider.track(plan.tx_hashes[-1], poll_interval=0.1)
        took = time.monotonic() - started
        # the table shows the measured time beside the route's own estimate
        self._routes.value = _routes_html(
            frame, source=self.routes_source, title=title, measured={routes[0].id: took}
        )
        after = await self._usdc_balances(sandbox)
        receiving = final.receiving
        if not final.done or receiving is None or not receiving.tx_hash:
            raise TransactionFailedError(
                f"the transfer ended {final.status}/{final.substatus}: "
                f"{final.substatus_message or 'no detail'}",
                tx_hash=plan.tx_hashes[-1],
            )
        self._add_log(
            LogLine(
                "ok" if final.substatus == "COMPLETED" else "error",
                f"{final.status}/{final.substatus} in {took:.1f} s (estimate "
                f"{routes[0].duration:g} s): sent {format_amount(before[0] - after[0], 6, 'USDC')} "
                f"on chain {source}, received {format_amount(after[1] - before[1], 6, 'USDC')} "
                f"on chain {receiving.chain_id}",
                href=explorer_tx(self.network, receiving.chain_id, receiving.tx_hash),
                link_text=receiving.tx_hash[:10] + "…",
            )
        )
