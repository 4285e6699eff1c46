"""The sandbox's one HTTP server (tornado, loopback): faucet, chain JSON-RPC, explorer.

- ``POST /faucet/requestTokens`` (and ``GET /faucet/info``): :class:`~.faucet.Faucet`, CORS
  ``*`` like the public faucet;
- ``POST /rpc``: the in-process chain as JSON-RPC (:class:`~.jsonrpc.InProcessJsonRpc`), the
  ``rpcUrl`` other processes use; absent when the chain is a real node (anvil, a URL);
- ``GET /explorer/``, ``/explorer/tx/<hash>``, ``/explorer/address/<address>``: the local block
  explorer (:class:`~.explorer.Explorer`), the network profile's ``explorer_base``;
- ``GET /profile.json``: the network profile of this sandbox;
- ``POST /operator/fund``: the operator funds a shared sandbox's visitor wallets
  (:mod:`.visitors`); answers loopback clients only;
- with the aggregator's second chain: ``POST /chain/<id>/rpc`` (when in-process) and ``GET
  /explorer/chain/<id>/...`` for each other chain, and the LI.FI-schema route
  server under ``/lifi/v1/`` (:class:`~.crosschain.routes.RouteServer`).

Handlers only translate HTTP; the logic lives in those classes.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import tornado.httpserver
import tornado.netutil
import tornado.web

from ..json_depth import check_nesting

if TYPE_CHECKING:
    from ..aggregator.node.routes import RouteServer
    from .explorer import Explorer
    from .faucet import Faucet
    from .jsonrpc import InProcessJsonRpc

__all__ = ["SandboxHttpServer"]

_MAX_BODY = 1 << 20


@dataclass
class _Services:
    faucet: Faucet | None
    rpc: InProcessJsonRpc | None
    explorer: Explorer | None
    profile: dict[str, Any] | None = None
    #: other chains by id: their JSON-RPC (None when served by their own node) and explorer
    chains: dict[int, tuple[InProcessJsonRpc | None, Explorer | None]] = field(default_factory=dict)
    lifi: RouteServer | None = None
    #: funds visitor wallets (:func:`.visitors.fund_visitors` bound to the sandbox)
    funder: Callable[[list[str]], Awaitable[dict[str, Any]]] | None = None


class _Base(tornado.web.RequestHandler):
    def initialize(self, services: _Services) -> None:
        self.services = services

    def write_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        for key, value in (headers or {}).items():
            self.set_header(key, value)
        self.finish(json.dumps(body, separators=(",", ":")))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        self.write_json(status_code, {"error": self._reason})

    def check_xsrf_cookie(self) -> None:  # JSON APIs without cookies
        return None

    def _other(self, chain: str) -> tuple[InProcessJsonRpc | None, Explorer | None]:
        return self.services.chains.get(int(chain), (None, None))


class _FaucetHandler(_Base):
    def set_default_headers(self) -> None:
        self.set_header("Access-Control-Allow-Origin", "*")
        self.set_header("Access-Control-Allow-Headers", "Content-Type")
        self.set_header("Access-Control-Allow-Methods", "POST, OPTIONS")

    def options(self) -> None:
        self.set_status(204)
        self.finish()

    async def post(self) -> None:
        faucet = self.services.faucet
        if faucet is None:
            self.write_json(503, {"error": "Faucet service is currently unavailable."})
            return
        status, headers, body = await faucet.request(self.request.body)
        self.write_json(status, body, headers)


class _FaucetInfoHandler(_Base):
    def get(self) -> None:
        faucet = self.services.faucet
        if faucet is None:
            self.write_json(503, {"error": "Faucet service is currently unavailable."})
            return
        self.write_json(200, faucet.info())


class _RpcHandler(_Base):
    async def post(self, chain: str | None = None) -> None:
        rpc = self.services.rpc if chain is None else self._other(chain)[0]
        if rpc is None:
            self.write_json(404, {"error": "this sandbox's chain is served by its own node"})
            return
        try:
            check_nesting(self.request.body)
            payload = json.loads(self.request.body)
        except (ValueError, UnicodeDecodeError):
            self.write_json(
                200,
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}},
            )
            return
        self.write_json(200, await rpc.handle(payload))


class _ExplorerHandler(_Base):
    async def get(self, kind: str = "", value: str = "") -> None:
        await self.show(self.services.explorer, kind, value)

    async def show(self, explorer: Explorer | None, kind: str, value: str) -> None:
        if explorer is None:
            self.set_status(404)
            self.finish("no explorer")
            return
        if kind == "tx":
            status, page = await explorer.tx(value)
        elif kind == "address":
            status, page = await explorer.address(value)
        else:
            status, page = await explorer.index()
        self.set_status(status)
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.set_header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
        self.finish(page)


class _ChainExplorerHandler(_ExplorerHandler):
    async def get(self, chain: str = "", kind: str = "", value: str = "") -> None:  # type: ignore[override]
        await self.show(self._other(chain)[1], kind, value)


class _LifiHandler(_Base):
    """LI.FI's REST endpoints; errors in LI.FI's ``{"message", "code"}`` shape."""

    def set_default_headers(self) -> None:
        self.set_header("Access-Control-Allow-Origin", "*")

    async def _answer(self, produce: Any) -> None:
        from ..aggregator.node.routes import LifiError

        if self.services.lifi is None:
            self.write_json(404, {"message": "this sandbox has no route server", "code": 1000})
            return
        try:
            body = await produce(self.services.lifi)
        except LifiError as exc:
            self.write_json(exc.status, exc.body)
            return
        self.write_json(200, body)

    async def get(self, endpoint: str) -> None:
        args = {k: self.get_query_argument(k) for k in self.request.query_arguments}
        if endpoint == "chains":
            await self._answer(lambda s: s.chains_body())
        elif endpoint == "tokens":
            wanted = [int(c) for c in args.get("chains", "").split(",") if c.strip().isdigit()]
            await self._answer(lambda s: s.tokens_body(wanted or None))
        elif endpoint == "quote":
            await self._answer(lambda s: s.quote_body(args))
        elif endpoint == "status":
            await self._answer(lambda s: s.status_body(args))
        else:
            self.write_json(404, {"message": f"unknown endpoint {endpoint}", "code": 1000})

    async def post(self, endpoint: str) -> None:
        try:
            check_nesting(self.request.body)
            payload = json.loads(self.request.body)
        except (ValueError, UnicodeDecodeError):
            self.write_json(400, {"message": "the body is not JSON", "code": 1011})
            return
        if not isinstance(payload, dict):
            self.write_json(400, {"message": "the body must be a JSON object", "code": 1011})
            return
        if endpoint == "routes":
            await self._answer(lambda s: s.routes_body(payload))
        else:
            await self._answer(lambda s: s.step_transaction_body(payload))


class _FundHandler(_Base):
    """The operator funds a visitor's fresh wallets; only a client on this machine (a
    kernel of the Jupyter server that shares the sandbox) may ask."""

    async def post(self) -> None:
        from ..errors import SettlementValueError
        from .visitors import parse_fund_request

        if self.request.remote_ip not in ("127.0.0.1", "::1"):
            self.write_json(403, {"error": "loopback clients only"})
            return
        funder = self.services.funder
        if funder is None:
            self.write_json(503, {"error": "this sandbox funds no visitor wallets"})
            return
        try:
            addresses = parse_fund_request(self.request.body)
        except SettlementValueError as exc:
            self.write_json(400, {"error": str(exc)})
            return
        self.write_json(200, await funder(addresses))


class _ProfileHandler(_Base):
    def get(self) -> None:
        profile = self.services.profile
        if profile is None:
            self.write_json(404, {"error": "the sandbox is still starting"})
            return
        self.write_json(200, profile)


class SandboxHttpServer:
    """Binds 127.0.0.1 (``port`` 0: a free port); ``url`` once started."""

    def __init__(
        self,
        *,
        faucet: Faucet | None = None,
        rpc: InProcessJsonRpc | None = None,
        explorer: Explorer | None = None,
    ) -> None:
        self.services = _Services(faucet, rpc, explorer)
        self._server: tornado.httpserver.HTTPServer | None = None
        self.port = 0

    def set_profile(self, profile: dict[str, Any]) -> None:
        self.services.profile = profile

    def start(self, port: int = 0) -> str:
        args = {"services": self.services}
        app = tornado.web.Application(
            [
                (r"/faucet/requestTokens", _FaucetHandler, args),
                (r"/faucet/info", _FaucetInfoHandler, args),
                (r"/rpc/?", _RpcHandler, args),
                (r"/explorer/?", _ExplorerHandler, args),
                (r"/explorer/(tx|address)/([^/]+)", _ExplorerHandler, args),
                (r"/profile\.json", _ProfileHandler, args),
                (r"/operator/fund", _FundHandler, args),
                (r"/chain/(\d+)/rpc/?", _RpcHandler, args),
                (r"/explorer/chain/(\d+)/?", _ChainExplorerHandler, args),
                (r"/explorer/chain/(\d+)/(tx|address)/([^/]+)", _ChainExplorerHandler, args),
                (r"/lifi/v1/(chains|tokens|quote|status)", _LifiHandler, args),
                (r"/lifi/v1/advanced/(routes|stepTransaction)", _LifiHandler, args),
            ]
        )
        sockets = tornado.netutil.bind_sockets(port, "127.0.0.1")
        self._server = tornado.httpserver.HTTPServer(app, max_body_size=_MAX_BODY)
        self._server.add_sockets(sockets)
        self.port = int(sockets[0].getsockname()[1])
        return self.url

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.stop()
            await self._server.close_all_connections()
            self._server = None
