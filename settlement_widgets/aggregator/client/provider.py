"""AggregatorProvider: the ``aggregator`` settlement method (LI.FI, live, multi-chain).

The aggregator "makes direct API calls through an aggregator provider and has no
init function"; :mod:`settlement_widgets.providers` holds a default instance built with no
arguments. Configuration comes from the arguments or, when they are None, from the
environment: ``LIFI_API_URL`` (default ``https://li.quest/v1``) and ``LIFI_API_KEY``.

Every call goes to the API at ``base_url``; if it cannot be reached the caller gets
:class:`~settlement_widgets.errors.AggregatorUnavailableError`, and no rate is ever made up
(the original dashboard's static fallback rates are gone). The provider ships no data of its
own. :attr:`AggregatorProvider.source` says where its answers come from: ``"local"`` when
``base_url`` is on loopback (the local sandbox's LI.FI-schema route server, whose URL the
sandbox profile carries as ``network.extra["lifiUrl"]``, or a test server), ``"live"``
otherwise; its frames carry the same value in ``attrs["source"]``.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import os
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import httpx

from ...errors import (
    AggregatorResponseError,
    ConfigurationError,
    NoRouteError,
    SettlementTimeoutError,
    SettlementValueError,
    TransactionFailedError,
)
from ..core.models import Chain, Quote, Route, Status, Step, Token
from ..core.params import TransferRequest
from ..core.plan import ExecutionPlan, PlannedTransaction, allowance_calldata, plan_step
from ..core.ranking import rank_routes
from ..core.source import DataSource, data_source
from .lifi import DEFAULT_BASE_URL, LifiClient, RetryEvent, RetryPolicy

if TYPE_CHECKING:
    import pandas as pd

    from ...signer import Signer

__all__ = ["DEFAULT_INTEGRATOR", "AggregatorProvider", "ProgressCallback"]

DEFAULT_INTEGRATOR = "settlement_widgets"
_TX_HASH = re.compile(r"^0x[0-9a-fA-F]{64}$")

#: ``on_progress`` of :meth:`AggregatorProvider.track`: sync or async, gets each new Status.
ProgressCallback = Callable[[Status], Awaitable[None] | None]


def _tx_hash(value: object) -> str:
    if not isinstance(value, str) or not _TX_HASH.match(value):
        raise SettlementValueError(f"tx_hash must be 0x followed by 64 hex digits, got {value!r}")
    return value


class AggregatorProvider:
    """Routes, best route, quote, execution plan and status tracking through LI.FI.

    Every network method is ``async``. ``base_url`` defaults to ``LIFI_API_URL``, then the
    LI.FI API; ``transport`` (an httpx transport) replaces the network, for tests.
    ``max_retries``/``backoff_base``/``backoff_max``/``max_retry_after`` tune the client's
    retry policy (see :class:`~settlement_widgets.aggregator.client.lifi.RetryPolicy`);
    ``poll_interval`` is the default wait between status polls in :meth:`track`.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        integrator: str = DEFAULT_INTEGRATOR,
        *,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
        max_retry_after: float = 60.0,
        poll_interval: float = 5.0,
        transport: httpx.AsyncBaseTransport | None = None,
        on_retry: Callable[[RetryEvent], None] | None = None,
    ) -> None:
        if not isinstance(integrator, str) or not integrator.strip():
            raise SettlementValueError("integrator must be a non-empty string (your app's name)")
        self.poll_interval = self._interval(poll_interval)
        retry = RetryPolicy(
            max_retries=max_retries,
            backoff_base=backoff_base,
            backoff_max=backoff_max,
            max_retry_after=max_retry_after,
        )
        base_url = base_url or os.environ.get("LIFI_API_URL") or DEFAULT_BASE_URL
        api_key = api_key if api_key is not None else os.environ.get("LIFI_API_KEY") or None
        self.client = LifiClient(
            base_url,
            api_key,
            integrator,
            timeout=timeout,
            retry=retry,
            transport=transport,
            on_retry=on_retry,
        )

    # -- description ------------------------------------------------------------------------

    @property
    def source(self) -> DataSource:
        """``"local"`` when ``base_url``'s host is loopback (127.0.0.1, ::1, localhost): a
        route server on this machine, not live rates; ``"live"`` otherwise."""
        return data_source(self.client.base_url)

    @property
    def base_url(self) -> str:
        return self.client.base_url

    @property
    def integrator(self) -> str | None:
        return self.client.integrator

    def __repr__(self) -> str:
        return f"AggregatorProvider({self.source}, {self.client!r}, integrator={self.integrator!r})"

    async def close(self) -> None:
        await self.client.aclose()

    async def __aenter__(self) -> AggregatorProvider:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @staticmethod
    def _interval(value: object) -> float:
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not (0 <= value < math.inf)
        ):
            raise SettlementValueError(f"poll_interval must be seconds >= 0, got {value!r}")
        return float(value)

    # -- discovery --------------------------------------------------------------------------

    async def routes(
        self,
        from_chain: int | str,
        to_chain: int | str,
        from_token: str,
        to_token: str,
        from_amount: int,
        from_address: str,
        *,
        to_address: str | None = None,
        slippage: float | None = None,
        order: str | None = None,
    ) -> list[Route]:
        """Every route LI.FI finds, ranked best first by worst-case net received value (see
        :mod:`~settlement_widgets.aggregator.core.ranking`); each carries ``rank``,
        ``net_min_usd`` (the ranking key) and ``net_usd`` (the headline).

        ``from_amount`` is an int in the source token's smallest units; chains are ids or
        names (``"arbitrum"``); tokens are addresses or well-known symbols (``"USDC"``).
        An empty list means LI.FI found no route.
        """
        request = TransferRequest.build(
            from_chain,
            to_chain,
            from_token,
            to_token,
            from_amount,
            from_address,
            to_address=to_address,
            slippage=slippage,
            order=order,
        )
        return rank_routes(await self.client.routes(request))

    async def best_route(
        self,
        from_chain: int | str,
        to_chain: int | str,
        from_token: str,
        to_token: str,
        from_amount: int,
        from_address: str,
        *,
        to_address: str | None = None,
        slippage: float | None = None,
        order: str | None = None,
    ) -> Route:
        """The top route of :meth:`routes`; :class:`NoRouteError` if there is none."""
        ranked = await self.routes(
            from_chain,
            to_chain,
            from_token,
            to_token,
            from_amount,
            from_address,
            to_address=to_address,
            slippage=slippage,
            order=order,
        )
        if not ranked:
            raise NoRouteError(
                f"LI.FI found no route for {from_amount} of {from_token} on chain {from_chain} "
                f"-> {to_token} on chain {to_chain}. Try another amount or token pair.",
                status=200,
            )
        return ranked[0]

    async def routes_frame(
        self,
        from_chain: int | str,
        to_chain: int | str,
        from_token: str,
        to_token: str,
        from_amount: int,
        from_address: str,
        **kwargs: Any,
    ) -> pd.DataFrame:
        """:meth:`routes` as a DataFrame (:func:`~settlement_widgets.aggregator.routes_frame`),
        with ``attrs["source"]`` = :attr:`source`."""
        from ..core.frame import routes_frame

        routes = await self.routes(
            from_chain, to_chain, from_token, to_token, from_amount, from_address, **kwargs
        )
        return routes_frame(routes, source=self.source)

    async def quote(
        self,
        from_chain: int | str,
        to_chain: int | str,
        from_token: str,
        to_token: str,
        from_amount: int,
        from_address: str,
        *,
        to_address: str | None = None,
        slippage: float | None = None,
        order: str | None = None,
    ) -> Quote:
        """``GET /quote``: LI.FI's single best step, with the transaction to sign."""
        request = TransferRequest.build(
            from_chain,
            to_chain,
            from_token,
            to_token,
            from_amount,
            from_address,
            to_address=to_address,
            slippage=slippage,
            order=order,
        )
        return await self.client.quote(request)

    async def chains(self) -> list[Chain]:
        return await self.client.chains()

    async def tokens(self, chains: Sequence[int | str] | None = None) -> dict[int, list[Token]]:
        from ..core.params import resolve_chain

        ids = [resolve_chain(c, field="chains") for c in chains] if chains else None
        return await self.client.tokens(ids)

    # -- status -----------------------------------------------------------------------------

    async def status(
        self,
        tx_hash: str,
        *,
        bridge: str | None = None,
        from_chain: int | str | None = None,
        to_chain: int | str | None = None,
    ) -> Status:
        """``GET /status`` of the transfer started by ``tx_hash``."""
        from ..core.params import resolve_chain

        return await self.client.status(
            _tx_hash(tx_hash),
            bridge=bridge,
            from_chain=None
            if from_chain is None
            else resolve_chain(from_chain, field="from_chain"),
            to_chain=None if to_chain is None else resolve_chain(to_chain, field="to_chain"),
        )

    async def track(
        self,
        tx_hash: str,
        *,
        on_progress: ProgressCallback | None = None,
        poll_interval: float | None = None,
        timeout: float | None = None,
        bridge: str | None = None,
        from_chain: int | str | None = None,
        to_chain: int | str | None = None,
    ) -> Status:
        """Poll :meth:`status` until DONE or FAILED and return the final status.

        ``on_progress`` (sync or async) gets every status whose ``(status, substatus)``
        differs from the previous one, the first and the final included. NOT_FOUND (not
        indexed yet), INVALID and PENDING keep polling. ``timeout`` (seconds, default
        none) raises :class:`SettlementTimeoutError`; calling ``track`` again resumes.
        A FAILED transfer is returned, not raised: check ``status.failed``.
        """
        interval = self.poll_interval if poll_interval is None else self._interval(poll_interval)
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
        ):
            raise SettlementValueError(f"timeout must be positive seconds, got {timeout!r}")
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        last: tuple[str, str | None] | None = None
        while True:
            current = await self.status(
                tx_hash, bridge=bridge, from_chain=from_chain, to_chain=to_chain
            )
            key = (current.status, current.substatus)
            if on_progress is not None and key != last:
                result = on_progress(current)
                if inspect.isawaitable(result):
                    await result
            last = key
            if current.is_final:
                return current
            if deadline is not None and loop.time() + interval > deadline:
                raise SettlementTimeoutError(
                    f"transfer {tx_hash} is still {current.status}"
                    + (f"/{current.substatus}" if current.substatus else "")
                    + f" after {timeout:g} s; call track() again to keep following it"
                )
            await asyncio.sleep(interval)

    # -- execution --------------------------------------------------------------------------

    async def _populated(self, step: Step, *, refresh: bool = False) -> Step:
        """``step`` with its transaction request (fetched unless present and not ``refresh``)."""
        if step.transaction_request is not None and not refresh:
            return step
        populated = await self.client.step_transaction(step)
        if populated.transaction_request is None:
            raise AggregatorResponseError(
                "LI.FI response to POST /advanced/stepTransaction does not follow LI.FI's "
                f"documented schema: transactionRequest is missing for step {step.id}",
                status=200,
            )
        return populated

    async def execute_plan(
        self,
        route: Route | Quote,
        *,
        wallet: Signer | None = None,
        send: bool = False,
    ) -> ExecutionPlan:
        """The transactions a wallet must sign to execute ``route``, in order.

        For each step: an exact-amount ERC-20 ``approve`` of LI.FI's approval address (not
        for a native-coin source) and the step's transaction (from the quote, or populated
        through ``POST /advanced/stepTransaction`` for a route). Nothing is sent unless
        ``send=True`` and a ``wallet`` whose address is the route's sender are given; then
        the approval is skipped if the allowance already covers the amount, each
        transaction is mined before the next, and a later step waits (:meth:`track`) for
        the previous one to be DONE.
        """
        if not isinstance(route, Route | Quote):
            raise SettlementValueError(
                f"execute_plan needs a Route or a Quote, got {type(route).__name__}"
            )
        steps = (route.step,) if isinstance(route, Quote) else route.steps
        sender = steps[0].action.from_address
        if send:
            self._check_send(wallet, sender)
        populated = [await self._populated(step) for step in steps]
        transactions = tuple(t for s in populated for t in plan_step(s))
        plan = ExecutionPlan(
            route_id=route.id,
            from_address=sender or (wallet.address if wallet is not None else ""),
            transactions=transactions,
        )
        if not send:
            return plan
        assert wallet is not None
        return await self._send(plan, populated, wallet)

    @staticmethod
    def _check_send(wallet: Signer | None, sender: str | None) -> None:
        if wallet is None:
            raise SettlementValueError("send=True needs wallet=WalletClient(...) to sign with")
        if sender is not None and sender.lower() != wallet.address.lower():
            raise SettlementValueError(
                f"the route was built for sender {sender}, but the wallet is {wallet.address}; "
                "request routes with from_address=wallet.address"
            )

    async def _send(self, plan: ExecutionPlan, steps: list[Step], wallet: Signer) -> ExecutionPlan:
        chain_id = await wallet.chain_id()
        wrong = [t for t in plan.transactions if t.chain_id != chain_id]
        if wrong:
            raise ConfigurationError(
                f"the wallet is connected to chain {chain_id}, but {wrong[0].description!r} "
                f"is for chain {wrong[0].chain_id}; connect the wallet to that chain. "
                "Nothing was sent."
            )
        previous: str | None = None
        for step in steps:
            if previous is not None:
                # a later step starts from what the previous one delivered: wait for it
                status = await self.track(previous)
                if not status.done:
                    raise TransactionFailedError(
                        f"the step before {step.id} ended {status.status}"
                        f"/{status.substatus}; later steps were not sent",
                        tx_hash=previous,
                    )
                step = await self._populated(step, refresh=True)
            for tx in plan_step(step):
                index = next(
                    i
                    for i, t in enumerate(plan.transactions)
                    if t.step_id == step.id and t.kind == tx.kind
                )
                if tx.kind == "approve":
                    sent = await self._approve(tx, wallet)
                else:
                    tx_hash = await wallet.send(
                        to=tx.to, data=tx.data, value=tx.value, gas=tx.gas_limit
                    )
                    await wallet.wait(tx_hash)
                    sent = replace(tx, tx_hash=tx_hash)
                    previous = tx_hash
                plan = plan.with_transaction(index, sent)
        return plan

    @staticmethod
    async def _approve(tx: PlannedTransaction, wallet: Signer) -> PlannedTransaction:
        assert tx.spender is not None and tx.amount is not None
        raw = await wallet.w3.eth.call(
            {"to": tx.to, "data": allowance_calldata(wallet.address, tx.spender)}  # type: ignore[typeddict-item]
        )
        allowance = int.from_bytes(bytes(raw)[-32:], "big") if raw else 0
        if allowance >= tx.amount:
            return replace(tx, note=f"skipped: allowance {allowance} already covers {tx.amount}")
        tx_hash = await wallet.send(to=tx.to, data=tx.data)
        await wallet.wait(tx_hash)
        return replace(tx, tx_hash=tx_hash)
