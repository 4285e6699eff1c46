"""What the endpoint does, independent of tornado: config body, faucet proxy, v4 notes, proofs.

One :class:`SettlementService` per server, built from :class:`SettlementConfig` and handed to
the handlers (jupyter-server-proxy's habit: handlers receive their dependencies). The network
is resolved for every action and proof listing, so a local sandbox started after the server
is picked up. When the server owns the local sandbox
(:class:`~settlement_widgets.sandbox.shared.ServerSandbox`), a request waits for it on first
use and the explorer links it answers with are the server's.

``GET /api/settlement`` is pre-serialised (:class:`ConfigDocument`): its bytes and ETag are
built once, and again only when what they depend on changes
(:meth:`SettlementService.cached_config` says what that is), so a GET costs Jupyter's
authentication and little else.

The body carries the last comparison published for the served network as ``comparison``
(null when none): ``<home>/comparisons/<network>.json``
(:mod:`settlement_widgets.compare.published`), written by ``POST compare:publish`` here or by
a kernel's ``publish_comparison``. A publication here drops the cached body before it answers;
one by another process changes the file's stat, which the next GET sees.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ..errors import FaucetError, FaucetUnavailableError, SettlementError
from .protocol import Reply, error_reply, faucet_fallback
from .ratelimit import RateLimiter

if TYPE_CHECKING:
    import httpx

    from ..compare.wire import ComparisonView
    from ..networks import Network
    from ..sandbox.shared import ServerSandbox
    from .config import SettlementConfig

__all__ = [
    "CONFIG_CACHE_CONTROL",
    "PROOF_METHODS",
    "ConfigDocument",
    "SettlementService",
    "with_base_url",
]

#: the proof paths advertised in ``testnetProofs``
PROOF_METHODS = ("channel", "v4")

#: ``Cache-Control`` of ``GET /api/settlement``. ``private``: the answer is behind Jupyter's
#: login, so a shared cache (a proxy in front of JupyterHub or Binder) must not keep it.
#: ``no-cache``: a browser may keep it but must revalidate before each use, because it
#: changes without notice when the local sandbox restarts (new relay/faucet ports, new
#: contracts); revalidation costs a 304 without a body thanks to the strong ETag. Not
#: ``max-age``: a stale ``nodeUrl`` for even a minute sends a notebook to a dead relay; not
#: ``no-store``: that would forbid the cheap 304 path.
CONFIG_CACHE_CONTROL: Final = "private, no-cache"

#: a profile modified less than this long before it was read may still be rewritten within
#: the same file-timestamp tick (coarse kernel clock, 2-s FAT-style granularity), leaving
#: its stat unchanged: such a read is not trusted, the next GET reads the file again
_SETTLE_NS: Final = 2_000_000_000

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConfigDocument:
    """The ``GET /api/settlement`` answer, serialised once: ``body`` (the JSON bytes, exactly
    ``json.dumps`` of the JACK dashboard's object) and ``etag`` (strong: a hash of those bytes,
    quoted, so equal bytes always get the same ETag, whichever server process built them)."""

    body: bytes
    etag: str

    @classmethod
    def of(cls, value: dict[str, Any], previous: ConfigDocument | None = None) -> ConfigDocument:
        """Serialise ``value``; ``previous`` is returned instead if its bytes are the same
        (a rebuild that changed nothing keeps its ETag without hashing again)."""
        body = json.dumps(value).encode()
        if previous is not None and previous.body == body:
            return previous
        return cls(body, '"' + hashlib.sha256(body).hexdigest()[:40] + '"')


def with_base_url(body: dict[str, Any], base_url: str) -> dict[str, Any]:
    """``body`` with its ``testnetProofs`` paths under the server's ``base_url``, so a client
    can fetch them as given: ``/api/settlement/proofs/channel`` on a server at ``/``
    (exactly the JACK dashboard's shape), ``/user/ada/api/settlement/proofs/channel`` under
    ``/user/ada/`` (JupyterHub, Binder). Pure."""
    if base_url in ("", "/") or "testnetProofs" not in body:
        return body
    from jupyter_server.utils import url_path_join

    proofs = {key: url_path_join(base_url, path) for key, path in body["testnetProofs"].items()}
    return {**body, "testnetProofs": proofs}


def _stamp(path: os.PathLike[str] | str) -> tuple[int, int, int, int] | None:
    """What a ``stat`` says of ``path``, enough to see it replaced (the sandbox writes its
    profile by rename: a new inode) or rewritten in place (size, mtime, ctime); None when
    absent."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


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
        home: os.PathLike[str] | str | None = None,
    ) -> None:
        from ..networks import settlement_home

        self._network_name = network
        #: the server's settlement home, read once at start (as Jupyter reads its config):
        #: published comparisons live in its ``comparisons/`` folder
        self.home = Path(home) if home is not None else settlement_home()
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
        #: explorers of kernels' private sandboxes the server serves, by registration id
        self._kernel_explorers: dict[str, Any] = {}
        # one HTTP client for every faucet call: building an httpx client loads the CA
        # bundle (~100 ms of CPU on the server's event loop), which under 50 concurrent
        # clients serialised the whole endpoint (benchmarks/reliability load check)
        self._http: httpx.AsyncClient | None = None
        # the pre-serialised GET body per base_url, and what it was built from (see
        # cached_config): the sandbox network object, or the profile's path and stamp
        self._documents: dict[str, ConfigDocument] = {}
        self._built_from: Network | None = None
        self._profile: tuple[str, tuple[int, int, int, int] | None] | None = None
        #: the published comparison's stamp when the body was built (None: untrusted)
        self._comparison: tuple[str, tuple[int, int, int, int] | None] | None = None
        self._generation = 0  # bumped by invalidate_config: a build begun before is not kept

    @property
    def network_name(self) -> str:
        """The network served; setting it drops the pre-serialised GET body."""
        return self._network_name

    @network_name.setter
    def network_name(self, value: str) -> None:
        self._network_name = value
        self.invalidate_config()

    async def aclose(self) -> None:
        """Close what the service opened (explorer sessions, the faucet client); a server
        that stops, or a test that built one, calls it."""
        explorers = [*self._explorers.values(), *self._kernel_explorers.values()]
        self._explorers, self._kernel_explorers = {}, {}
        await _close_explorers(explorers)
        if self._http is not None:
            http, self._http = self._http, None
            await http.aclose()

    def invalidate_config(self) -> None:
        """Forget the pre-serialised GET body: the next GET builds it again."""
        self._documents = {}
        self._built_from = None
        self._profile = None
        self._comparison = None
        self._generation += 1

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

        body = settlement_config(await self.network())
        body["comparison"] = self.published_comparison()
        return body

    def comparison_path(self) -> Path:
        """Where the comparison of the served network is published."""
        from ..compare.published import comparison_path

        return comparison_path(self._network_name, self.home)

    def published_comparison(self) -> dict[str, Any] | None:
        """The comparison published for the served network, as the wire writes it (None when
        there is none). A file that does not read as one (edited by hand, another network)
        is logged and served as none: the configuration must not fail for it."""
        from ..compare.published import read_published

        try:
            view = read_published(self._network_name, home=self.home)
        except SettlementError as exc:
            _log.warning("settlement endpoint: ignoring the published comparison: %s", exc)
            return None
        return None if view is None else view.to_json()

    async def publish(self, comparison: ComparisonView) -> Reply:
        """``compare:publish``: write ``comparison`` as the served network's (409 when it was
        measured on another network), then drop the cached GET body, so the next GET carries
        it: the answer comes once the publication is visible."""
        from ..compare.published import publish_comparison

        if comparison.network != self._network_name:
            return error_reply(
                409,
                f"This server serves the {self._network_name!r} network; the comparison was "
                f"measured on {comparison.network[:64]!r}",
            )
        await asyncio.to_thread(publish_comparison, comparison, self._network_name, home=self.home)
        self.invalidate_config()
        return Reply(
            200,
            {
                "status": "ok",
                "network": comparison.network,
                "measuredAt": comparison.measured_at_text,
                "runs": len(comparison.runs),
            },
        )

    def cached_config(self, base_url: str) -> ConfigDocument | None:
        """The pre-serialised GET body for ``base_url`` if it is still what
        :meth:`config_document` would build, else None. Called on every GET, so it reads
        nothing: what the body depends on, and what is checked here, is

        * the network name (a setter that drops the body) and ``base_url`` (the key);
        * on ``sepolia``: the process environment (``SETTLEMENT_RELAY_URL``,
          ``SETTLEMENT_FAUCET_URL``), read once, as Jupyter reads its configuration once;
        * with a sandbox this server owns: the network :meth:`ServerSandbox.ensure`
          produced, compared by identity (a new start or adoption replaces it);
        * on ``local`` otherwise: the sandbox profile another process writes, and rewrites
          when that sandbox restarts: one ``os.stat`` per GET (about a microsecond; no
          read, no parse), compared with the stat taken before it was last read. A read
          of a file modified within ``_SETTLE_NS`` of it is not trusted (an in-place
          rewrite in the same timestamp tick would leave the stat unchanged);
        * the published comparison (``<home>/comparisons/<network>.json``), which a kernel
          may publish at any time: one more ``os.stat``, by the same rule.
        """
        document = self._documents.get(base_url)
        if document is None:
            return None
        if self._comparison is None:
            return None
        path, stamp = self._comparison
        if stamp is not None and _stamp(path) != stamp:
            return None
        if stamp is None and os.path.lexists(path):  # absent when built: must stay absent
            return None
        if self._profile is not None:
            path, stamp = self._profile
            if stamp is None or _stamp(path) != stamp:
                return None
        elif (
            self.sandbox is not None
            and self._network_name == "local"
            and self.sandbox.network is not self._built_from
        ):
            return None
        return document

    async def config_document(self, base_url: str) -> ConfigDocument:
        """Build the GET body for ``base_url`` (and remember it, with what it was built
        from, for :meth:`cached_config`). Raises what :meth:`network` raises (no sandbox
        profile...): errors are not remembered, the next GET tries again."""
        from ..methods import settlement_config

        generation = self._generation
        comparison = self._comparison_stamp()
        profile = None
        if self._network_name == "local" and self.sandbox is None:
            from ..networks import _profile_path

            path = str(_profile_path())
            started = time.time_ns()
            stamp = _stamp(path)  # before reading: a later rewrite changes it
            profile = (path, stamp if stamp and started - stamp[2] > _SETTLE_NS else None)
        network = await self.network()
        built_from = self.sandbox.network if self.sandbox is not None else None
        value = with_base_url(settlement_config(network), base_url)
        value["comparison"] = await asyncio.to_thread(self.published_comparison)
        document = ConfigDocument.of(value, self._documents.get(base_url))
        if generation != self._generation:  # the network changed meanwhile: answer, keep nothing
            return document
        if built_from is not self._built_from or profile != self._profile:
            self._documents = {}
        self._documents[base_url] = document
        self._built_from = built_from
        self._profile = profile
        self._comparison = comparison
        return document

    def _comparison_stamp(self) -> tuple[str, tuple[int, int, int, int] | None] | None:
        """The published comparison's path and stamp, taken before it is read (None: a file
        modified within ``_SETTLE_NS``, not trusted: the next GET reads it again). The stamp
        of an absent file is None: the next GET checks it is still absent."""
        path = str(self.comparison_path())
        started = time.time_ns()
        stamp = _stamp(path)
        if stamp is not None and started - stamp[2] <= _SETTLE_NS:
            return None
        return (path, stamp)

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
            stale, self._explorers = self._explorers, {}
            self._explorer_for = own.instance
            await _close_explorers(stale.values())
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

    async def kernel_explorer_page(self, kernel_id: str, kind: str, value: str) -> tuple[int, str]:
        """A page of the explorer of a kernel's private sandbox that the kernel registered
        with this server (:func:`~settlement_widgets.sandbox.shared.register_kernel_sandbox`),
        its links under ``{explorer}/kernel/<id>``: 404 once that sandbox stopped answering."""
        from ..networks import Network
        from ..sandbox.explorer import not_found_page
        from ..sandbox.shared import kernel_sandbox_profile, profile_answers

        if self.sandbox is None or self.network_name != "local":
            return 404, not_found_page("Explorer", "this server owns no local sandbox")
        profile = kernel_sandbox_profile(self.sandbox.profile_path, kernel_id)
        if profile is None or not await profile_answers(profile):
            gone = self._kernel_explorers.pop(kernel_id, None)
            if gone is not None:
                await _close_explorers((gone,))
            return 404, not_found_page(
                "Sandbox", "this kernel's own sandbox is not running (its kernel has ended)"
            )
        explorer = self._kernel_explorers.get(kernel_id)
        if explorer is None:
            base = f"{self.sandbox.explorer_path}/kernel/{kernel_id}"
            explorer = _explorer_of(Network.from_json(profile), base)
            self._kernel_explorers[kernel_id] = explorer
        if kind == "tx":
            return await explorer.tx(value)  # type: ignore[no-any-return]
        if kind == "address":
            return await explorer.address(value)  # type: ignore[no-any-return]
        return await explorer.index()  # type: ignore[no-any-return]


async def _close_explorers(explorers: Iterable[Any]) -> None:
    """Close explorers the service no longer serves (their sandbox restarted or ended)."""
    for explorer in explorers:
        await explorer.aclose()


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
