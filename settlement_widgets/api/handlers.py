"""Tornado handlers of ``/api/settlement``, shared by the Jupyter extension and the standalone
server (both run them inside a jupyter_server ``ServerApp``, so auth is Jupyter's own).

Every route is ``@tornado.web.authenticated`` and ``@authorized`` (resource ``settlement``, so
a Jupyter Authorizer such as JupyterHub's can allow reads and refuse writes): a token
(``Authorization: token …`` or ``?token=``) or Jupyter's login cookie plus the XSRF header
for POSTs. Every answer is JSON, errors included (``{"error": "…"}``):
:meth:`SettlementAPIHandler.write_error` replaces Jupyter's error bodies, and failures of the
environment (no sandbox profile, an unreadable proof log) are 503s rather than 500s.

``GET /api/settlement`` answers pre-serialised bytes (:class:`~.service.ConfigDocument`)
with their strong ``ETag`` and ``Cache-Control: private, no-cache``
(:data:`~.service.CONFIG_CACHE_CONTROL` says why); a matching ``If-None-Match`` gets a 304
without a body. Authentication and authorization come first, as for every route: an
unauthenticated request is refused whatever ETag it carries.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import tornado.web
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from tornado.httputil import responses

from ..errors import SettlementError
from .openapi import openapi_document
from .protocol import (
    FaucetRequest,
    PublishRequest,
    Reply,
    V4ContractsRequest,
    clip,
    error_reply,
    parse_post,
)
from .service import CONFIG_CACHE_CONTROL, ConfigDocument, SettlementService, with_base_url

__all__ = [
    "ExplorerHandler",
    "OpenAPIHandler",
    "ProofsHandler",
    "SettlementAPIHandler",
    "SettlementHandler",
    "with_base_url",
]


class SettlementAPIHandler(APIHandler):
    """Base: receives the :class:`SettlementService`, answers JSON, never an HTML error page."""

    allowed_methods: tuple[str, ...] = ("GET",)
    #: for Jupyter's Authorizer (e.g. JupyterHub RBAC): GET is "read", POST is "write"
    auth_resource = "settlement"
    service: SettlementService

    def initialize(self, service: SettlementService) -> None:
        self.service = service

    def send_reply(self, reply: Reply) -> None:
        self.set_status(reply.status)
        for name, value in reply.headers.items():
            self.set_header(name, value)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(reply.body))

    async def run(self, answer: Callable[[], Awaitable[Reply]]) -> None:
        """Send ``answer()``. Input was validated before, so a SettlementError here is about
        the environment (no sandbox profile, a broken profile, an unreadable proof log): 503."""
        try:
            reply = await answer()
        except SettlementError as exc:
            self.send_unavailable(exc)
            return
        self.send_reply(reply)

    def send_unavailable(self, exc: SettlementError) -> None:
        """The environment failed us (see :meth:`run`): logged, and a JSON 503."""
        self.log.warning("settlement endpoint unavailable: %s", exc)
        self.send_reply(error_reply(503, clip(str(exc), 500)))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """``{"error": …}`` for every error status (403, 404, 405, 500...)."""
        exc = kwargs.get("exc_info", (None, None, None))[1]
        message = responses.get(status_code, "Unknown HTTP Error")
        if isinstance(exc, tornado.web.HTTPError) and exc.log_message:
            message = exc.log_message % exc.args if exc.args else exc.log_message
        elif exc is not None and not isinstance(exc, tornado.web.HTTPError):
            message = "Internal server error"  # details stay in the server log
        if status_code == 405:
            self.set_header("Allow", ", ".join(self.allowed_methods))
        self.clear_header("Content-Type")
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"error": message}))


class SettlementHandler(SettlementAPIHandler):
    """``GET`` the configuration body (with the last published comparison); ``POST`` an
    action (``channel:faucet``, ``v4:contracts``, ``compare:publish``)."""

    allowed_methods = ("GET", "POST")

    @tornado.web.authenticated
    @authorized
    async def get(self) -> None:
        # the decorators above have authenticated and authorized the request; from here on
        # the common case is a dict lookup and a write of bytes built earlier
        base_url = self.base_url
        document = self.service.cached_config(base_url)
        if document is None:
            try:
                document = await self.service.config_document(base_url)
            except SettlementError as exc:
                self.send_unavailable(exc)
                return
        self.send_document(document)

    def send_document(self, document: ConfigDocument) -> None:
        """``document`` with its ETag and Cache-Control, or 304 (no body) when the request's
        ``If-None-Match`` names that ETag. Setting ``Etag`` here also keeps tornado from
        hashing the body again in ``finish()``."""
        self.set_header("Etag", document.etag)
        self.set_header("Cache-Control", CONFIG_CACHE_CONTROL)
        if "If-None-Match" in self.request.headers and self.check_etag_header():
            self.set_status(304)
            self.finish()
            return
        self.set_header("Content-Type", "application/json")
        self.finish(document.body)

    @tornado.web.authenticated
    @authorized
    async def post(self) -> None:
        request = parse_post(self.request.body)
        if isinstance(request, Reply):
            self.send_reply(request)
            return
        if isinstance(request, FaucetRequest):
            address = request.user_address
            client = self._client_key()
            await self.run(lambda: self.service.faucet(address, client))
        elif isinstance(request, V4ContractsRequest):
            await self.run(self.service.v4_contracts)
        elif isinstance(request, PublishRequest):
            comparison = request.comparison
            await self.run(lambda: self.service.publish(comparison))

    def _client_key(self) -> str:
        """Who asks, for the faucet's per-client limit: the remote address (as the server
        sees it, ``trust_xheaders`` included). Not the Jupyter user: a token client without
        cookies is given a fresh anonymous user name on every request."""
        return f"ip:{self.request.remote_ip}"


class ProofsHandler(SettlementAPIHandler):
    """``GET proofs/{channel|v4}``: the steps this installation performed on its network."""

    @tornado.web.authenticated
    @authorized
    async def get(self, method: str) -> None:
        await self.run(lambda: self.service.proofs(method))


class OpenAPIHandler(SettlementAPIHandler):
    """``GET openapi.json``: an OpenAPI 3.1 description of these routes under this base URL."""

    @tornado.web.authenticated
    @authorized
    async def get(self) -> None:
        self.send_reply(Reply(200, openapi_document(self.base_url)))


class ExplorerHandler(JupyterHandler):
    """``GET {base_url}settlement/explorer[/tx/<hash>|/address/<address>]``: the shared
    sandbox's explorer, HTML, behind Jupyter's login like the notebooks (a browser without a
    session is sent to the login page). Links in notebook outputs point here, so they outlive
    the kernel that made them."""

    auth_resource = "settlement"
    service: SettlementService

    def initialize(self, service: SettlementService) -> None:
        self.service = service

    @property
    def content_security_policy(self) -> str:
        return "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'self'"

    @tornado.web.authenticated
    @authorized
    async def get(self, *parts: str) -> None:
        # (), (kind, value), (chain,) or (chain, kind, value): see explorer_handlers
        chain = parts[0] if len(parts) in (1, 3) else None
        kind, value = parts[-2:] if len(parts) >= 2 else ("", "")
        try:
            status, page = await self.service.explorer_page(kind, value, chain)
        except SettlementError as exc:
            self.log.warning("settlement explorer unavailable: %s", exc)
            from ..sandbox.explorer import not_found_page

            status, page = 503, not_found_page("Sandbox", clip(str(exc), 500))
        self.set_status(status)
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.finish(page)


class KernelExplorerHandler(ExplorerHandler):
    """``GET {base_url}settlement/explorer/kernel/<id>[/tx/<hash>|/address/<address>]``: the
    explorer of a kernel's private sandbox, registered with this server (notebook 06's v1
    sandbox on a v0.5 server), so its links open in a browser on another machine too."""

    @tornado.web.authenticated
    @authorized
    async def get(self, kernel_id: str, kind: str = "", value: str = "") -> None:  # type: ignore[override]
        try:
            status, page = await self.service.kernel_explorer_page(kernel_id, kind, value)
        except SettlementError as exc:
            self.log.warning("settlement explorer of a kernel's sandbox unavailable: %s", exc)
            from ..sandbox.explorer import not_found_page

            status, page = 503, not_found_page("Sandbox", clip(str(exc), 500))
        self.set_status(status)
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.finish(page)
