"""What the walkthrough notebooks share: a session, a progress bar, the endpoint as a process.

A notebook must run top to bottom on the local sandbox by default and against Sepolia with
``SETTLEMENT_NETWORK=sepolia``, with the same cells. :func:`open_session` is the one place
that differs: in a kernel of a Jupyter server that owns a sandbox (``make lab``, Binder) it
connects to that one (:mod:`settlement_widgets.sandbox.shared`: explorer links under the
server, alive after the notebook ends); elsewhere (nbval, a script) it starts a deterministic
:class:`~settlement_widgets.sandbox.LocalSandbox` (fixed keys, so outputs are reproducible);
either way with a private ``SETTLEMENT_HOME`` for the session's stores and proofs.
On Sepolia it takes ``SEPOLIA_RPC_URL`` and the key in ``SETTLEMENT_PRIVATE_KEY``. Everything
after that receives a :class:`~settlement_widgets.networks.Network` and wallets and never asks
which network it is.

:func:`with_progress` (from :mod:`settlement_widgets.progress`) shows a bar while something
slow is awaited.

:func:`start_api_server` runs ``python -m settlement_widgets.api`` as a subprocess on a free
loopback port with a fresh token, so a notebook shows the real endpoint answering over HTTP.
The token stays inside the returned :class:`ApiServer` (requests carry it in a header; it is
never printed). A local server finds the in-notebook sandbox through the profile the session
writes into its ``SETTLEMENT_HOME`` (the profile's ``rpcUrl`` is the sandbox's loopback
JSON-RPC), so the kernel must keep its event loop free while the server works: use the async
methods of :class:`ApiServer`, never a blocking HTTP call, from a cell.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import contextlib
import os
import re
import secrets
import shutil
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import urlsplit

from .errors import (
    ConfigurationError,
    InvalidNetworkError,
    SettlementTimeoutError,
    UnavailableError,
    UnknownOptionError,
)
from .networks import NETWORK_NAMES, PROTOCOL_V05, PROTOCOL_V1, PUBLIC_NETWORKS, Network
from .progress import ProgressBar, progress_percent, with_progress

if TYPE_CHECKING:
    import httpx

    from .sandbox import LocalSandbox
    from .sandbox.shared import SharedSandbox
    from .signer import Signer

__all__ = [
    "ENDPOINT_WITHHELD_ENV",
    "ApiServer",
    "NotebookSession",
    "ProgressBar",
    "open_session",
    "progress_percent",
    "start_api_server",
    "with_progress",
]

_READY = re.compile(r"settlement-api: serving the (\w+) settlement endpoint at (\S+)")
_LOG_LINES = 200


# --- session -------------------------------------------------------------------------------


@dataclass
class NotebookSession:
    """The network a notebook settles on and the wallets it acts with.

    ``user`` acts as the end user; ``operator`` owns the v4 contracts on the sandbox (the
    deployer) and is the same wallet as ``user`` on Sepolia, where only one key is given.
    ``sandbox`` is the running :class:`LocalSandbox` (private) or
    :class:`~settlement_widgets.sandbox.shared.SharedSandbox` (the Jupyter server's), or None
    on Sepolia: a cell that needs a chain we control (deploying a replica, time travel) checks
    it; both have ``chain``, ``wallets`` and ``http_url``. ``home`` is the
    ``SETTLEMENT_HOME`` of this session (a fresh directory for the sandbox, so proofs and
    stores of an earlier run never show up).
    """

    network: Network
    user: Signer
    operator: Signer
    wallets: tuple[Signer, ...]
    sandbox: LocalSandbox | SharedSandbox | None
    home: Path
    _previous_home: str | None = field(default=None, repr=False)
    _own_home: bool = field(default=False, repr=False)
    _closed: bool = field(default=False, repr=False)
    #: a private sandbox the Jupyter server serves (its explorer links are the server's)
    _served: bool = field(default=False, repr=False)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop a private sandbox (or disconnect from the server's, which runs on), restore
        ``SETTLEMENT_HOME`` and remove the session's directory. A private sandbox whose
        explorer the Jupyter server serves runs on until the kernel ends: the links the
        notebook showed keep opening."""
        if self._closed:
            return
        self._closed = True
        if self.sandbox is not None:
            if self._served:
                _LEFT_RUNNING.append(self.sandbox)
            else:
                await self.sandbox.aclose()
        # the user's own read connection (SEPOLIA_RPC_URL, a browser wallet's); a no-op for
        # the sandbox's dev wallets, whose connection is the sandbox's
        await self.user.aclose()
        if self._own_home:
            if self._previous_home is None:
                os.environ.pop("SETTLEMENT_HOME", None)
            else:
                os.environ["SETTLEMENT_HOME"] = self._previous_home
            shutil.rmtree(self.home, ignore_errors=True)

    def __repr__(self) -> str:
        where = (
            "no sandbox"
            if self.sandbox is None
            else "the Jupyter server's sandbox"
            if type(self.sandbox).__name__ == "SharedSandbox"
            else "local sandbox"
        )
        try:
            user = repr(self.user.address)
        except UnavailableError:  # a browser wallet not connected yet
            user = "browser wallet (not connected)"
        return (
            f"NotebookSession(network={self.network.name!r}, chain_id={self.network.chain_id}, "
            f"user={user}, {where})"
        )


def _network_name(network: str | None) -> str:
    chosen = network if network is not None else os.environ.get("SETTLEMENT_NETWORK", "local")
    name = chosen.strip().lower()
    if name not in NETWORK_NAMES:
        raise InvalidNetworkError(
            f"unknown network {chosen!r}; valid networks: {', '.join(NETWORK_NAMES)} "
            "(set SETTLEMENT_NETWORK)"
        )
    return name


async def open_session(
    network: str | None = None,
    *,
    wallets: int = 4,
    progress: bool = True,
    shared: bool | None = None,
    aggregator: bool = False,
    wallet: str | None = None,
    protocol: str | None = None,
    bridge_block_time: float | None = None,
) -> NotebookSession:
    """Start the notebook's network: ``network``, else ``$SETTLEMENT_NETWORK``, else local.

    ``local``: the Jupyter server's sandbox when this kernel's server owns one (``shared``
    None or True; ``shared=True`` without one is a ConfigurationError), else a deterministic
    private sandbox; ``wallets`` funded dev wallets; the profile written to a fresh
    ``SETTLEMENT_HOME`` (set for this process and the processes it starts, restored by
    :meth:`NotebookSession.aclose`). ``sepolia``: needs ``SEPOLIA_RPC_URL`` and
    ``SETTLEMENT_PRIVATE_KEY`` (a funded test key, never printed).

    ``aggregator=True`` gives a private sandbox the aggregator's second chain, bridges and
    LI.FI-schema route server (``session.sandbox.lifi_url``); the Jupyter server's sandbox
    always runs them. ``bridge_block_time`` is that private sandbox's block time while a
    bridge transfer waits for confirmations (default: ``LocalSandbox``'s): notebook 07 settles
    twenty transfers on the slowest route and takes 0.05 s, the confirmations still real blocks.

    ``wallet`` is who signs as the user: ``"key"`` (a :class:`WalletClient`: the sandbox's
    dev key, or ``SETTLEMENT_PRIVATE_KEY`` on Sepolia) or ``"browser"`` (a
    :class:`~settlement_widgets.widgets.BrowserWallet`: the page's wallet, which a cell must
    display and connect). Default: ``$SETTLEMENT_WALLET``, else the key, except on Sepolia
    without ``SETTLEMENT_PRIVATE_KEY``, where the browser wallet is the way in.
    ``protocol`` picks the channel method's protocol: ``"v0.5"`` or ``"v1"`` (default:
    ``$SETTLEMENT_PROTOCOL``, else v0.5)
    (Nitrolite v1: on ``local`` a private sandbox with a Nitronode and a ChannelHub, unless
    the Jupyter server's sandbox runs v1 itself; on Sepolia the ``sepolia-v1`` profile).
    """
    name = _network_name(network)
    v1 = _wants_v1(protocol, name)
    if v1 and name == "sepolia":
        name = "sepolia-v1"
    kind = _wallet_kind(wallet, name)
    if name in PUBLIC_NETWORKS:
        return _sepolia_session(kind, name)
    from .sandbox.shared import EXPLORER_ENV, PROFILE_ENV, register_kernel_sandbox

    shared_profile = os.environ.get(PROFILE_ENV)
    if shared is True and not shared_profile:
        raise ConfigurationError(
            f"open_session(shared=True) needs a Jupyter server that owns a sandbox ({PROFILE_ENV} "
            "is not set): start JupyterLab with `make lab`, or leave shared unset"
        )
    wanted = PROTOCOL_V1 if v1 else PROTOCOL_V05
    if shared is not False and shared_profile:
        # the server may still be writing its profile: connect (which waits for it), then
        # check that its sandbox runs the protocol asked for
        session = await _shared_session(
            Path(shared_profile), os.environ.get(EXPLORER_ENV, ""), wallets, progress
        )
        if session.network.protocol == wanted:
            return _with_wallet(session, kind)
        await session.aclose()
        if shared is True:
            raise ConfigurationError(
                f"open_session(shared=True): the Jupyter server's sandbox runs "
                f"{session.network.protocol}, not {wanted}; leave shared unset for a private "
                "sandbox (or start the server with SETTLEMENT_PROTOCOL)"
            )
    from .sandbox import LocalSandbox

    await _stop_left_running()
    options: dict[str, Any] = {}
    if bridge_block_time is not None:
        options["bridge_block_time"] = bridge_block_time
    sandbox = LocalSandbox(
        deterministic=True,
        wallets=wallets,
        aggregator=aggregator,
        protocol="v1" if v1 else "v0.5",
        **options,
    )
    home = Path(tempfile.mkdtemp(prefix="settlement-notebook-"))
    try:
        starting = sandbox.start()
        if progress:
            await with_progress(starting, "Starting the local sandbox", expected_seconds=8)
        else:
            await starting
        # under a server that owns a sandbox (06's v1 on a v0.5 server, shared=False), the
        # server serves this one's explorer too: links a browser on another machine opens
        served = register_kernel_sandbox(sandbox.network)
        return _with_wallet(_session_on(sandbox, home, served), kind)
    except BaseException:
        await sandbox.aclose()
        shutil.rmtree(home, ignore_errors=True)
        raise


#: served private sandboxes whose session closed: they run on for their links, until this
#: kernel opens another private session (a re-run, whose outputs replace the old links)
_LEFT_RUNNING: list[LocalSandbox | SharedSandbox] = []


async def _stop_left_running() -> None:
    while _LEFT_RUNNING:
        await _LEFT_RUNNING.pop().aclose()


#: the channel protocol a session (and the Jupyter server's sandbox) runs when none is given
PROTOCOL_ENV = "SETTLEMENT_PROTOCOL"


def _wants_v1(protocol: str | None, name: str) -> bool:
    """Whether the session's channel method is Nitrolite v1 (``protocol``, else the
    network's name: ``sepolia-v1`` is v1)."""
    if protocol is None:
        protocol = os.environ.get(PROTOCOL_ENV, "").strip() or None
    if protocol is None:
        return name == "sepolia-v1"
    chosen = protocol.strip().lower().removeprefix("nitrolite-")
    if chosen not in ("v0.5", "v1"):
        raise UnknownOptionError(f"unknown protocol {protocol!r}; valid: v0.5, v1")
    if chosen == "v0.5" and name == "sepolia-v1":
        raise ConfigurationError("the sepolia-v1 network speaks Nitrolite v1, not v0.5")
    return chosen == "v1"


def _session_on(
    sandbox: LocalSandbox | SharedSandbox, home: Path, served: Network | None = None
) -> NotebookSession:
    """A session acting on ``sandbox`` (its first wallet the user, dev account 0 the
    operator), with its profile written to ``home``, this process's ``SETTLEMENT_HOME`` from
    now on (restored by :meth:`NotebookSession.aclose`). ``served``: the private sandbox's
    network with its explorer under the Jupyter server that serves it (it then outlives
    :meth:`NotebookSession.aclose`, and ends with the kernel)."""
    from .sandbox.local import write_profile

    assert sandbox.chain is not None
    network = served or sandbox.network
    write_profile(network, home / "sandbox" / "profile.json")
    previous = os.environ.get("SETTLEMENT_HOME")
    os.environ["SETTLEMENT_HOME"] = str(home)
    return NotebookSession(
        network=network,
        user=sandbox.wallets[0],
        operator=sandbox.chain.wallet(0),
        wallets=sandbox.wallets,
        sandbox=sandbox,
        home=home,
        _previous_home=previous,
        _own_home=True,
        _served=served is not None,
    )


async def _shared_session(
    profile: Path, explorer_base: str, wallets: int, progress: bool
) -> NotebookSession:
    from .sandbox.shared import connect_shared

    connecting = connect_shared(profile, explorer_base or "/settlement/explorer", wallets=wallets)
    if progress:
        sandbox = await with_progress(
            connecting, "Connecting to the Jupyter server's sandbox", expected_seconds=2
        )
    else:
        sandbox = await connecting
    return _session_on(sandbox, Path(tempfile.mkdtemp(prefix="settlement-notebook-")))


_WALLET_KINDS = ("key", "browser")


def _wallet_kind(wallet: str | None, network: str) -> str:
    chosen = wallet if wallet is not None else os.environ.get("SETTLEMENT_WALLET", "")
    kind = chosen.strip().lower()
    if not kind:
        keyless = network in PUBLIC_NETWORKS and not os.environ.get("SETTLEMENT_PRIVATE_KEY")
        return "browser" if keyless else "key"
    if kind not in _WALLET_KINDS:
        raise UnknownOptionError(
            f"unknown wallet {chosen!r}; valid: {', '.join(_WALLET_KINDS)} (set SETTLEMENT_WALLET)"
        )
    return kind


def _with_wallet(session: NotebookSession, kind: str) -> NotebookSession:
    """``session`` with a browser wallet as its user when ``kind`` says so (the sandbox's
    dev wallets stay, for the operator and as recipients)."""
    if kind != "browser":
        return session
    from .widgets.browser_wallet import BrowserWallet

    browser = BrowserWallet(session.network)
    session.user = browser
    session.wallets = (browser, *session.wallets)
    return session


def _sepolia_session(kind: str, name: str = "sepolia") -> NotebookSession:
    from .networks import get_network, settlement_home
    from .wallet import WalletClient

    network = get_network(name)
    if not network.rpc_url:
        raise ConfigurationError(
            "SETTLEMENT_NETWORK=sepolia needs SEPOLIA_RPC_URL (a Sepolia JSON-RPC endpoint for "
            "reads) and a wallet: SETTLEMENT_PRIVATE_KEY (a funded test key) or the browser's"
        )
    wallet: Signer
    if kind == "browser":
        from .widgets.browser_wallet import BrowserWallet

        wallet = BrowserWallet(network)
    else:
        wallet = WalletClient.from_env(network)
    return NotebookSession(
        network=network,
        user=wallet,
        operator=wallet,
        wallets=(wallet,),
        sandbox=None,
        home=settlement_home(),
    )


# --- the endpoint as a subprocess ------------------------------------------------------------


class ApiServer:
    """A running ``python -m settlement_widgets.api`` on 127.0.0.1 (see :func:`start_api_server`).

    ``url`` is the endpoint without its token; :meth:`get` and :meth:`post` send the token in
    the ``Authorization`` header. ``log()`` returns what the server printed (token removed).
    """

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        *,
        network: str,
        url: str,
        token: str,
        log: collections.deque[str],
        readers: list[asyncio.Task[None]],
    ) -> None:
        import httpx

        self.process = process
        self.network = network
        self.url = url
        self._token = token
        self._log = log
        self._readers = readers
        self._client = httpx.AsyncClient(
            headers={"Authorization": f"token {token}"}, timeout=httpx.Timeout(60.0)
        )
        self._exit_hook = _kill_at_exit(process)

    @property
    def running(self) -> bool:
        return self.process.returncode is None

    def endpoint(self, path: str = "") -> str:
        """The URL of ``path`` under ``/api/settlement`` (``"proofs/v4"``, ``"openapi.json"``)."""
        return self.url + ("/" + path.lstrip("/") if path else "")

    async def get(self, path: str = "") -> httpx.Response:
        return await self._client.get(self.endpoint(path))

    async def post(self, body: Any, path: str = "") -> httpx.Response:
        """POST ``body`` as JSON (a ``bytes`` body is sent as is, for malformed requests)."""
        if isinstance(body, bytes):
            return await self._client.post(
                self.endpoint(path), content=body, headers={"Content-Type": "application/json"}
            )
        return await self._client.post(self.endpoint(path), json=body)

    def log(self) -> str:
        return "".join(self._log)

    async def stop(self, timeout: float = 30.0) -> int:
        """Terminate the server (SIGTERM, then SIGKILL after ``timeout``); its exit code."""
        await self._client.aclose()
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.terminate()
            try:
                await asyncio.wait_for(self.process.wait(), timeout)
            except TimeoutError:
                _kill(self.process)
                await self.process.wait()
        for task in self._readers:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(task, 5)
        atexit.unregister(self._exit_hook)
        return int(self.process.returncode or 0)

    def __repr__(self) -> str:
        # no URL: a notebook shows this repr, JupyterLab would make a URL a link, and the
        # loopback port answers no reader of the saved notebook (nor anyone once stopped)
        state = "running" if self.running else f"exited {self.process.returncode}"
        where = urlsplit(self.url)
        return f"ApiServer(network={self.network!r}, {where.path} on port {where.port}, {state})"


def _kill(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()


def _kill_at_exit(process: asyncio.subprocess.Process) -> Any:
    """Do not leave a server behind when the kernel exits without stopping it."""

    def kill() -> None:
        _kill(process)

    atexit.register(kill)
    return kill


async def _pump(
    stream: asyncio.StreamReader,
    log: collections.deque[str],
    token: str,
    ready: asyncio.Future[tuple[str, str]] | None,
) -> None:
    while line_bytes := await stream.readline():
        line = line_bytes.decode(errors="replace")
        found = _READY.search(line) if ready is not None else None
        if found and ready is not None and not ready.done():
            ready.set_result((found.group(1), found.group(2)))
        log.append(line.replace(token, "<token>"))
    if ready is not None and not ready.done():
        ready.set_exception(EOFError("the server closed its output"))


#: what the endpoint process is never given: it reads chains and the faucet, signs nothing
ENDPOINT_WITHHELD_ENV: frozenset[str] = frozenset(
    {"SETTLEMENT_PRIVATE_KEY", "LIFI_API_KEY", "PRIVATE_KEY", "JUPYTER_TOKEN"}
)


async def start_api_server(
    network: Network | str | None = None,
    *,
    timeout: float = 120.0,
    env: Mapping[str, str] | None = None,
) -> ApiServer:
    """Start the standalone endpoint for ``network`` (default: ``$SETTLEMENT_NETWORK``).

    The server binds 127.0.0.1 on a free port, with a fresh random token. It inherits this
    process's environment (``SETTLEMENT_HOME``, hence the sandbox profile of a session;
    ``SEPOLIA_RPC_URL``) plus ``env``, minus the secrets it never needs
    (:data:`ENDPOINT_WITHHELD_ENV`: the wallet key, API keys). Raises
    :class:`UnavailableError` if it exits before serving and :class:`SettlementTimeoutError`
    if it is not serving within ``timeout`` s.
    """
    name = _network_name(network.name if isinstance(network, Network) else network)
    token = secrets.token_hex(24)
    child_env = {
        key: value
        for key, value in {**os.environ, **(env or {})}.items()
        if key not in ENDPOINT_WITHHELD_ENV
    }
    child_env["JUPYTER_TOKEN"] = token
    if isinstance(network, Network) and network.rpc_url and name in PUBLIC_NETWORKS:
        child_env["SEPOLIA_RPC_URL"] = network.rpc_url
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "settlement_widgets.api",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--network",
        name,
        "--log-level",
        "WARN",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=child_env,
    )
    assert process.stdout is not None and process.stderr is not None
    log: collections.deque[str] = collections.deque(maxlen=_LOG_LINES)
    ready: asyncio.Future[tuple[str, str]] = asyncio.get_running_loop().create_future()
    readers = [
        asyncio.ensure_future(_pump(process.stdout, log, token, ready)),
        asyncio.ensure_future(_pump(process.stderr, log, token, None)),
    ]
    try:
        served, url = await asyncio.wait_for(ready, timeout)
    except (TimeoutError, EOFError) as exc:
        # EOF: the server is exiting on its own. Signalling it now could reap it behind the
        # child watcher's back (Popen.send_signal polls first) and lose its exit code.
        if isinstance(exc, TimeoutError):
            _kill(process)
        try:
            await asyncio.wait_for(process.wait(), 30)
        except TimeoutError:
            _kill(process)
            await process.wait()
        for task in readers:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(task, 5)
        output = "".join(log).strip()[-2000:]
        if isinstance(exc, TimeoutError):
            raise SettlementTimeoutError(
                f"the settlement endpoint did not start within {timeout:g} s:\n{output}"
            ) from None
        raise UnavailableError(
            f"the settlement endpoint exited with code {process.returncode} before serving:\n"
            f"{output}"
        ) from None
    return ApiServer(
        process,
        network=served,
        url=url.split("?", 1)[0],
        token=token,
        log=log,
        readers=readers,
    )
