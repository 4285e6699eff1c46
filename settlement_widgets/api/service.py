"""What the endpoint does, independent of tornado: config body, faucet proxy, v4 notes, proofs.

One :class:`SettlementService` per server, built from :class:`SettlementConfig` and handed to
the handlers (jupyter-server-proxy's habit: handlers receive their dependencies). The network
is resolved on every request, so a local sandbox started after the server is picked up.
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
        rpc_timeout: float = 5.0,
        proofs_path: str | None = None,
    ) -> None:
        self.network_name = network
        self.rpc_url = rpc_url
        self.faucet_timeout = faucet_timeout
        self.rpc_timeout = rpc_timeout
        self.proofs_path = proofs_path
        self.limiter = RateLimiter(faucet_rate_limit, faucet_rate_window)
        # one HTTP client for every faucet call: building an httpx client loads the CA
        # bundle (~100 ms of CPU on the server's event loop), which under 50 concurrent
        # clients serialised the whole endpoint (benchmarks/reliability load check)
        self._http: httpx.AsyncClient | None = None

    @classmethod
    def from_config(cls, config: SettlementConfig) -> SettlementService:
        return cls(
            network=config.network,
            rpc_url=config.rpc_url,
            faucet_timeout=config.faucet_timeout,
            faucet_rate_limit=config.faucet_rate_limit,
            faucet_rate_window=config.faucet_rate_window,
            rpc_timeout=config.rpc_timeout,
            proofs_path=config.proofs_path,
        )

    def network(self) -> Network:
        """The configured network now (raises ConfigurationError if the sandbox is absent)."""
        from ..networks import get_network

        net = get_network(self.network_name)
        return replace(net, rpc_url=self.rpc_url) if self.rpc_url else net

    def config_body(self) -> dict[str, Any]:
        from ..methods import settlement_config

        return settlement_config(self.network())

    async def faucet(self, user_address: str) -> Reply:
        """Proxy to the network's faucet; 200 ok/fallback, or 429 past the per-address limit."""
        from ..channel.faucet import request_faucet_tokens

        network = self.network()
        wait = self.limiter.check(user_address)
        if wait is not None:
            seconds = RateLimiter.retry_after_header(wait)
            return Reply(
                429,
                {
                    "error": (
                        f"Too many faucet requests for {user_address}: at most "
                        f"{self.limiter.limit} per {self.limiter.window:g} s; "
                        f"retry in {seconds} s"
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

        body = await contracts_body(self.network(), rpc_timeout=self.rpc_timeout)
        return Reply(200, body)

    async def proofs(self, method: str) -> Reply:
        if method not in PROOF_METHODS:
            return error_reply(
                404, f"Unknown proof method: {method[:50]}; valid: {', '.join(PROOF_METHODS)}"
            )
        from ..proofs import list_proofs

        network = self.network()
        body = await asyncio.to_thread(list_proofs, method, network, path=self.proofs_path)
        return Reply(200, body)
