"""One sandbox per Jupyter server, shared by its kernels, its endpoint and its explorer.

A notebook that starts a private sandbox and stops it at its end leaves dead explorer links
behind (``http://127.0.0.1:<port>/explorer/...``, which on Binder even points at the reader's
own machine), and the server's ``/api/settlement`` has no sandbox to describe. So under
``make lab`` and on Binder (``SETTLEMENT_SHARED_SANDBOX=1``) the server extension owns the
sandbox (:class:`ServerSandbox`):

* it **adopts** the sandbox whose profile is in the server's ``$SETTLEMENT_HOME`` if that
  sandbox answers (one started by ``python -m settlement_widgets.sandbox``, or by another
  server still running), else it **starts** one as a child process (which exits with the
  server);
* it tells the kernels it starts where that is, through two variables they inherit:
  ``SETTLEMENT_SHARED_PROFILE`` (the profile's path) and ``SETTLEMENT_SHARED_EXPLORER`` (the
  explorer's path under the server's ``base_url``: ``{base_url}settlement/explorer``);
* it serves the explorer under that path with Jupyter's authentication, so a link in a
  notebook's output answers after the notebook's kernel is gone, on Binder too.

:func:`connect_shared` is the kernel's side (``open_session()`` calls it when the variables
are set): the network of the shared sandbox with explorer links under the server, wallets of
the kernel's own (fresh keys generated in the kernel, funded by the sandbox's operator:
:mod:`.visitors`; so nothing one visitor leaves open blocks another), and a
:class:`SharedSandbox` handle whose ``chain`` does time travel over JSON-RPC.
A kernel not started by such a server (nbval, a script) keeps a private sandbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import secrets
import signal
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Self

from ..errors import (
    ConfigurationError,
    SettlementTimeoutError,
    SettlementValueError,
    UnavailableError,
)
from ..networks import Network

if TYPE_CHECKING:
    from ..aggregator.node.deploy import CrossChainDeployment
    from ..keys import PrivateKey
    from ..wallet import WalletClient
    from .chain import RpcChain

__all__ = [
    "EXPLORER_ENV",
    "PROFILE_ENV",
    "ServerSandbox",
    "SharedSandbox",
    "connect_shared",
    "kernel_sandbox_dir",
    "kernel_sandbox_profile",
    "profile_answers",
    "register_kernel_sandbox",
    "shared_profile_path",
]

#: set by the server extension for its kernels: the shared sandbox's profile file
PROFILE_ENV: Final = "SETTLEMENT_SHARED_PROFILE"
#: set by the server extension for its kernels: the explorer's path under the server
EXPLORER_ENV: Final = "SETTLEMENT_SHARED_EXPLORER"
_log = logging.getLogger(__name__)


def shared_profile_path(home: Path) -> Path:
    """Where the sandbox of ``home`` (a ``SETTLEMENT_HOME``) writes its profile."""
    return home / "sandbox" / "profile.json"


def _read_profile(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


async def profile_answers(profile: dict[str, Any], timeout: float = 3.0) -> bool:
    """Whether the sandbox that wrote ``profile`` is running: its HTTP server answers
    ``/profile.json`` with this very profile (a restarted sandbox on a reused port would
    answer with another)."""
    import httpx

    base = (profile.get("extra") or {}).get("httpUrl")
    if not isinstance(base, str) or not base.startswith("http://127.0.0.1:"):
        return False
    try:
        async with httpx.AsyncClient(timeout=timeout) as http:
            response = await http.get(f"{base}/profile.json")
    except httpx.HTTPError:
        return False
    return response.status_code == 200 and response.json() == profile


def _exit_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Linux: the sandbox child gets SIGTERM when the server dies, even by SIGKILL."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _wanted_protocol() -> str:
    """``v1`` when ``SETTLEMENT_PROTOCOL`` says so (the server's sandbox then runs a
    Nitronode and a ChannelHub too, and its profile names Nitrolite v1), else ``v0.5``."""
    chosen = os.environ.get("SETTLEMENT_PROTOCOL", "").strip().lower().removeprefix("nitrolite-")
    return "v1" if chosen == "v1" else "v0.5"


class ServerSandbox:
    """The sandbox a Jupyter server owns (adopted or started), ready after :meth:`ensure`.

    ``home`` is the server's ``SETTLEMENT_HOME``; ``explorer_path`` the explorer's path under
    the server (links in kernels and in ``/api/settlement`` proofs use it).
    """

    def __init__(
        self, home: Path, *, explorer_path: str, start_timeout: float = 300.0, wallets: int = 8
    ) -> None:
        self.home = home
        self.explorer_path = explorer_path.rstrip("/")
        self.start_timeout = start_timeout
        self.wallets = wallets
        self.profile_path = shared_profile_path(home)
        self.process: asyncio.subprocess.Process | None = None
        #: the sandbox's own network (loopback explorer), once ready
        self.network: Network | None = None
        self.adopted = False
        self._ready: asyncio.Task[Network] | None = None
        self._readers: list[asyncio.Task[None]] = []

    def kernel_environment(self) -> dict[str, str]:
        """What the server's kernels inherit to find this sandbox."""
        return {
            PROFILE_ENV: str(self.profile_path),
            EXPLORER_ENV: self.explorer_path,
            "SETTLEMENT_HOME": str(self.home),
        }

    def linked(self, network: Network) -> Network:
        """``network`` with explorer links under the server instead of the sandbox's port."""
        return replace(network, explorer_base=self.explorer_path)

    async def ensure(self) -> Network:
        """The sandbox's network, adopting or starting it on first use; several callers at
        once share one start, and a failed start is retried by the next caller."""
        if self._ready is None or (self._ready.done() and self._ready.exception() is not None):
            self._ready = asyncio.ensure_future(self._adopt_or_start())
        return await asyncio.shield(self._ready)

    async def _adopt_or_start(self) -> Network:
        if self.process is not None and self.process.returncode is None:
            await self._stop_process()
        existing = _read_profile(self.profile_path)
        protocol = _wanted_protocol()
        if (
            existing is not None
            and existing.get("protocol", "nitrolite-v0.5") == f"nitrolite-{protocol}"
            and await profile_answers(existing)
        ):
            self.adopted = True
            self.network = Network.from_json(existing)
            _log.info("settlement_widgets: adopted the sandbox at %s", self.profile_path)
            return self.network
        self.adopted = False
        self.network = await self._start()
        return self.network

    async def _start(self) -> Network:
        started = time.monotonic()
        env = {**os.environ, "SETTLEMENT_HOME": str(self.home)}
        env.pop("SETTLEMENT_PROFILE", None)
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "settlement_widgets.sandbox",
            "--deterministic",
            "--aggregator",
            "--wallets",
            str(self.wallets),
            "--protocol",
            _wanted_protocol(),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            preexec_fn=_exit_with_parent if sys.platform.startswith("linux") else None,
        )
        stdout, stderr = self.process.stdout, self.process.stderr
        assert stdout is not None and stderr is not None
        errors: list[str] = []
        self._readers = [asyncio.ensure_future(_log_lines(stderr, errors))]
        try:
            line = await asyncio.wait_for(stdout.readline(), self.start_timeout)
        except TimeoutError:
            await self._stop_process()
            raise SettlementTimeoutError(
                f"the shared sandbox did not start within {self.start_timeout:g} s"
            ) from None
        if not line:
            code = await self.process.wait()
            self.process = None
            raise UnavailableError(
                f"the shared sandbox exited with code {code} before it was ready: "
                + " | ".join(errors[-5:])
            )
        self._readers.append(asyncio.ensure_future(_drain(stdout)))
        network = Network.from_json(json.loads(line))
        _log.info(
            "settlement_widgets: started the shared sandbox in %.1f s (%s)",
            time.monotonic() - started,
            self.profile_path,
        )
        return network

    async def _stop_process(self, timeout: float = 20.0) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            try:
                await asyncio.wait_for(process.wait(), timeout)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
        for reader in self._readers:
            reader.cancel()
        await asyncio.gather(*self._readers, return_exceptions=True)
        self._readers = []

    async def aclose(self) -> None:
        """Stop the sandbox if this server started it (an adopted one keeps running)."""
        if self._ready is not None and not self._ready.done():
            self._ready.cancel()
            await asyncio.gather(self._ready, return_exceptions=True)
        await self._stop_process()

    def terminate_now(self) -> None:
        """Synchronous last resort at interpreter exit: SIGTERM a sandbox we started."""
        process = self.process
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()


async def _log_lines(stream: asyncio.StreamReader, keep: list[str]) -> None:
    while line := await stream.readline():
        text = line.decode(errors="replace").rstrip()
        keep.append(text)
        del keep[:-20]
        _log.debug("shared sandbox: %s", text)


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.readline():
        pass


# --- the kernel's side ---------------------------------------------------------------------


@dataclass
class SharedSandbox:
    """A kernel's handle on the server's sandbox: its network (explorer links under the
    server), a JSON-RPC ``chain`` (time travel, snapshots), the kernel's own funded
    ``wallets`` (or the dev wallets, ``connect_shared(own_wallets=False)``), and
    ``http_url``, the sandbox's own loopback HTTP server (faucet, ``/rpc``, explorer) for
    code in the kernel. :meth:`aclose` closes this connection only; the sandbox runs on."""

    network: Network
    chain: RpcChain
    wallets: tuple[WalletClient, ...]
    http_url: str
    #: the aggregator's other chains by id (the server's sandbox runs with ``--aggregator``)
    other_chains: dict[int, RpcChain] = field(default_factory=dict)
    #: the keys of :attr:`wallets` when they are the kernel's own (never shown)
    _keys: tuple[PrivateKey, ...] = field(default=(), repr=False)

    @property
    def lifi_url(self) -> str:
        """The sandbox's LI.FI-schema route server (see ``LocalSandbox.lifi_url``)."""
        url = self.network.extra.get("lifiUrl")
        if not url:
            raise ConfigurationError("the server's sandbox runs no route server")
        return str(url)

    @property
    def chain_ids(self) -> tuple[int, ...]:
        return (self.chain.chain_id, *self.other_chains)

    @property
    def crosschain(self) -> CrossChainDeployment | None:
        """The aggregator's tokens, bridges and pool, as the sandbox's profile lists them."""
        from ..aggregator.node.deploy import CrossChainDeployment

        data = self.network.extra.get("aggregator")
        return None if data is None else CrossChainDeployment.from_json(data)

    def chain_on(self, chain_id: int) -> RpcChain:
        if chain_id == self.chain.chain_id:
            return self.chain
        try:
            return self.other_chains[chain_id]
        except KeyError:
            raise SettlementValueError(
                f"the server's sandbox runs no chain {chain_id!r} (its chains: "
                f"{list(self.chain_ids)})"
            ) from None

    def wallets_on(self, chain_id: int) -> tuple[WalletClient, ...]:
        """The session's wallets bound to chain ``chain_id`` (same keys as :attr:`wallets`)."""
        chain = self.chain_on(chain_id)
        if chain is self.chain:
            return self.wallets
        if self._keys:
            return tuple(chain.wallet_for(key) for key in self._keys)
        return tuple(chain.wallet(i) for i in range(1, len(self.wallets) + 1))

    def explorer_tx(self, chain_id: int, tx_hash: str) -> str:
        from .local import explorer_tx

        self.chain_on(chain_id)
        return explorer_tx(self.network, chain_id, tx_hash)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        for other in self.other_chains.values():
            await other.aclose()
        await self.chain.aclose()

    def __repr__(self) -> str:
        return f"SharedSandbox(chain_id={self.network.chain_id}, rpc={self.network.rpc_url!r})"


async def connect_shared(
    profile_path: Path,
    explorer_base: str,
    *,
    wallets: int = 4,
    timeout: float = 300.0,
    own_wallets: bool = True,
) -> SharedSandbox:
    """Connect to the server's sandbox once its profile is there and it answers.

    The server starts the sandbox when it starts, so a kernel opened right away waits for it
    (up to ``timeout`` s), checking the profile file each 0.2 s. ``own_wallets`` (default):
    ``wallets`` fresh keys of this kernel, funded by the sandbox's operator
    (:mod:`.visitors`); False: the sandbox's deterministic dev wallets, shared by every
    kernel that asks for them.
    """
    from ..keys import PrivateKey
    from .chain import RpcChain
    from .visitors import request_funding

    deadline = time.monotonic() + timeout
    while True:
        profile = _read_profile(profile_path)
        if profile is not None and await profile_answers(profile):
            break
        if time.monotonic() > deadline:
            raise SettlementTimeoutError(
                f"the Jupyter server's sandbox ({profile_path}) did not answer within "
                f"{timeout:g} s; see the server's log, or open a private one with "
                "open_session(shared=False)"
            )
        await asyncio.sleep(0.2)  # another process writes the file: nothing to await on
    own = Network.from_json(profile)
    if not own.rpc_url:
        raise ConfigurationError(f"the sandbox profile at {profile_path} has no rpcUrl")
    chain = await RpcChain.connect(own.rpc_url, accounts=max(wallets + 1, 2))
    others: dict[int, RpcChain] = {}
    try:
        for entry in (own.extra.get("aggregator") or {}).get("chains", ()):
            if int(entry["chainId"]) != chain.chain_id:
                others[int(entry["chainId"])] = await RpcChain.connect(
                    str(entry["rpcUrl"]), accounts=max(wallets + 1, 2)
                )
        http_url = str(own.extra["httpUrl"])
        keys: tuple[PrivateKey, ...] = ()
        if own_wallets:
            keys = tuple(PrivateKey.generate() for _ in range(wallets))
            if not await request_funding(http_url, [key.address for key in keys]):
                _log.warning(
                    "settlement_widgets: the shared sandbox funds no visitor wallets (started "
                    "by an older version): this kernel acts with its dev wallets"
                )
                keys = ()
    except BaseException:
        for other in others.values():
            await other.aclose()
        await chain.aclose()
        raise
    return SharedSandbox(
        network=replace(own, explorer_base=explorer_base.rstrip("/")),
        chain=chain,
        wallets=(
            tuple(chain.wallet_for(key) for key in keys)
            if keys
            else tuple(chain.wallet(i) for i in range(1, wallets + 1))
        ),
        http_url=http_url,
        other_chains=others,
        _keys=keys,
    )


# --- a kernel's private sandbox, served by the server ----------------------------------------
#
# A kernel of such a server may still run a private sandbox: notebook 06 asks for Nitrolite v1
# on a server whose sandbox runs v0.5, and open_session(shared=False) asks for one. Its own
# explorer is on a loopback port of the server's machine: no link for a browser elsewhere
# (Binder). So the kernel registers the sandbox's profile in the server's home, and the server
# serves its explorer at {explorer}/kernel/<id>, behind Jupyter's login like the shared one,
# for as long as the sandbox answers.

#: a registered kernel sandbox's id: 16 lowercase hex digits (nothing else reaches the disk)
_KERNEL_ID: Final = re.compile(r"[0-9a-f]{16}")


def kernel_sandbox_dir(profile_path: Path) -> Path:
    """Where the kernels of the server whose sandbox writes ``profile_path`` register theirs."""
    return profile_path.parent / "kernels"


def register_kernel_sandbox(network: Network) -> Network | None:
    """Kernel side: under a server that owns a sandbox, register ``network`` (a private
    sandbox's, as its ``/profile.json`` answers) with it; the same network with its explorer
    links under the server, or None when no such server started this kernel."""
    profile, explorer = os.environ.get(PROFILE_ENV), os.environ.get(EXPLORER_ENV)
    if not profile or not explorer:
        return None
    from ..atomic_file import write_atomic

    kernel_id = secrets.token_hex(8)
    folder = kernel_sandbox_dir(Path(profile))
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / f"{kernel_id}.json", json.dumps(network.to_json()) + "\n")
    return replace(network, explorer_base=f"{explorer.rstrip('/')}/kernel/{kernel_id}")


def kernel_sandbox_profile(profile_path: Path, kernel_id: str) -> dict[str, Any] | None:
    """Server side: the profile a kernel registered under ``kernel_id``, if any."""
    if not _KERNEL_ID.fullmatch(kernel_id):
        return None
    return _read_profile(kernel_sandbox_dir(profile_path) / f"{kernel_id}.json")
