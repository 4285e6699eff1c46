"""What the endpoint does, independent of tornado: config body, faucet proxy, v4 notes, proofs.

One :class:`SettlementService` per server, built from :class:`SettlementConfig` and handed to
the handlers (jupyter-server-proxy's habit: handlers receive their dependencies). The network
is resolved on every request, so a local sandbox started after the server is picked up. When
the server owns the local sandbox (:class:`~settlement_widgets.sandbox.shared.ServerSandbox`),
a request waits for it on first use and the explorer links it answers with are the server's.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..errors import FaucetError, FaucetUnavailableError
from .protocol import Reply, error_reply, faucet_fallback
from .ratelimit import RateLimiter

if TYPE_CHECKING:
    import httpx

    from ..networks import Network
    from ..sandbox.shared import ServerSandbox
    from .config import SettlementConfig

__all__ = ["PROOF_METHODS", "SettlementService"]

#: the proof paths advertised in ``testnetProofs``
PROOF_METHODS = ("channel", "v4")


class SettlementService:
    """The endpoint's behaviour; every method answers with a JSON-able value or a Reply."""

    def __init__(
        self,
        *,
        network: str = "sepolia",
        rpc_url: str | None = None,
        faucet_timeout: float = 10.0,
        faucet_rate_limit: int = 5,
        faucet_rate_window: float = 60.0,
        faucet_client_rate_limit: int = 20,
        rpc_timeout: float = 5.0,
        proofs_path: str | None = None,
        sandbox: ServerSandbox | None = None,
    ) -> None:
        self.network_name = network
        self.rpc_url = rpc_url
        self.faucet_timeout = faucet_timeout
        self.rpc_timeout = rpc_timeout
        self.proofs_path = proofs_path
        self.sandbox = sandbox
        self.limiter = RateLimiter(faucet_rate_limit, faucet_rate_window)
        #: per client too: cycling addresses must not get around the per-address limit
        self.client_limiter = RateLimiter(faucet_client_rate_limit, faucet_rate_window)
        self._explorers: dict[int | None, Any] = {}
        self._explorer_for: str | None = None
        # one HTTP client for every faucet call: building an httpx client loads the CA
        # bundle (~100 ms of CPU on the server's event loop), which under 50 concurrent
        # clients serialised the whole endpoint (benchmarks/reliability load check)
        self._http: httpx.AsyncClient | None = None

    @classmethod
    def from_config(
        cls, config: SettlementConfig, sandbox: ServerSandbox | None = None
    ) -> SettlementService:
        return cls(
            sandbox=sandbox,
            network=config.network,
            rpc_url=config.rpc_url,
            faucet_timeout=config.faucet_timeout,
            faucet_rate_limit=config.faucet_rate_limit,
            faucet_rate_window=config.faucet_rate_window,
            faucet_client_rate_limit=config.faucet_client_rate_limit,
            rpc_timeout=config.rpc_timeout,
            proofs_path=config.proofs_path,
        )

    async def network(self) -> Network:
        """The configured network now (raises ConfigurationError if the sandbox is absent;
        the server's own sandbox is waited for, and started if it is not running)."""
        from ..networks import get_network

        if self.sandbox is not None and self.network_name == "local":
            net = self.sandbox.linked(await self.sandbox.ensure())
        else:
            net = get_network(self.network_name)
        return replace(net, rpc_url=self.rpc_url) if self.rpc_url else net

    async def config_body(self) -> dict[str, Any]:
        from ..methods import settlement_config

        return settlement_config(await self.network())

    async def faucet(self, user_address: str, client: str | None = None) -> Reply:
        """Ask the network's faucet for ``user_address``: at most ``limiter.limit`` requests
        per address and ``client_limiter.limit`` per ``client`` (the handler passes the
        remote address) in each window; beyond, 429 with ``Retry-After``."""
        from ..channel.faucet import request_faucet_tokens

        network = await self.network()
        checks = [(self.limiter, user_address, f"for {user_address}", "address")]
        if client is not None:
            checks.insert(0, (self.client_limiter, client, "from this client", "client"))
        for limiter, key, whom, per in checks:
            wait = limiter.check(key)
            if wait is None:
                continue
            seconds = RateLimiter.retry_after_header(wait)
            return Reply(
                429,
                {
                    "error": (
                        f"Too many faucet requests {whom}: at most {limiter.limit} per "
                        f"{per} per {limiter.window:g} s; retry in {seconds} s"
                    ),
                    "retryAfter": int(seconds),
                },
                {"Retry-After": seconds},
            )
        if self._http is None:
            import httpx

            self._http = httpx.AsyncClient(timeout=self.faucet_timeout)
        try:
            upstream = await request_faucet_tokens(
                user_address, network, timeout=self.faucet_timeout, client=self._http
            )
        except (FaucetError, FaucetUnavailableError) as exc:
            return faucet_fallback(exc)
        return Reply(200, {"status": "ok", "faucet": upstream})

    async def v4_contracts(self) -> Reply:
        from .ownership import contracts_body

        body = await contracts_body(await self.network(), rpc_timeout=self.rpc_timeout)
        return Reply(200, body)

    async def proofs(self, method: str) -> Reply:
        if method not in PROOF_METHODS:
            return error_reply(
                404, f"Unknown proof method: {method[:50]}; valid: {', '.join(PROOF_METHODS)}"
            )
        from ..proofs import list_proofs

        network = await self.network()
        body = await asyncio.to_thread(list_proofs, method, network, path=self.proofs_path)
        return Reply(200, body)

    async def explorer_page(
        self, kind: str, value: str, chain: str | None = None
    ) -> tuple[int, str]:
        """A page of the shared sandbox's explorer (``kind``: ``tx``, ``address`` or ``""`` for
        the index; ``chain``: another of its chains, the aggregator's), rendered here with
        links under the server: 404 without a shared sandbox or for a chain it does not run."""
        from ..sandbox.explorer import not_found_page

        if self.sandbox is None or self.network_name != "local":
            return 404, not_found_page("Explorer", "this server owns no local sandbox")
        own = await self.sandbox.ensure()
        if self._explorer_for != own.instance:
            self._explorers = {}
            self._explorer_for = own.instance
        key = None if chain is None else int(chain)
        explorer = self._explorers.get(key)
        if explorer is None:
            explorer = _explorer_of(own, self.sandbox.explorer_path, key)
            if explorer is None:
                return 404, not_found_page("Chain", str(chain))
            self._explorers[key] = explorer
        if kind == "tx":
            return await explorer.tx(value)  # type: ignore[no-any-return]
        if kind == "address":
            return await explorer.address(value)  # type: ignore[no-any-return]
        return await explorer.index()  # type: ignore[no-any-return]


def _explorer_of(network: Network, base: str, chain: int | None = None) -> Any:
    """The sandbox explorer over the sandbox's JSON-RPC, its links under ``base``; for
    ``chain`` (another of the sandbox's chains) under ``{base}/chain/<id>``, or None."""
    from web3 import AsyncHTTPProvider, AsyncWeb3

    from ..sandbox.explorer import Explorer, network_labels

    if chain is not None:
        for entry in (network.extra.get("aggregator") or {}).get("chains", ()):
            if int(entry["chainId"]) == chain and chain != network.chain_id:
                rpc = AsyncHTTPProvider(str(entry["rpcUrl"]), request_kwargs={"timeout": 10})
                return Explorer(AsyncWeb3(rpc), base=f"{base}/chain/{chain}")
        return None
    w3 = AsyncWeb3(AsyncHTTPProvider(network.rpc_url, request_kwargs={"timeout": 10}))
    token = (network.token, network.asset_symbol, network.asset_decimals) if network.token else None
    return Explorer(
        w3,
        base=base,
        labels=network_labels(network),
        custody=network.contracts.custody,
        token=token,
    )
