"""JSON-RPC backends: any running node by URL (:class:`RpcChain`) and a fresh anvil.

``anvil`` is the binary from the ``@foundry-rs/anvil`` npm package, started on a free loopback
port (``--port 0``; the port is read from its "Listening on" line), chain id 31337, hardfork
Prague; :func:`find_anvil` says where it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import platform
import re
import shutil
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ChainUnavailableError, ConfigurationError, SettlementValueError
from ..keys import PrivateKey
from .chain_base import BACKENDS, DEFAULT_CHAIN_ID, DEV_BALANCE_WEI, DEV_MNEMONIC, Chain, dev_keys

if TYPE_CHECKING:
    from web3 import AsyncWeb3

__all__ = ["AnvilChain", "RpcChain", "find_anvil"]

_LISTENING = re.compile(r"Listening on (?P<host>[0-9.]+|\[[0-9a-f:]+\]|[\w.-]+):(?P<port>\d+)")


class RpcChain(Chain):
    """Any JSON-RPC node by URL. Time travel and snapshots use the ``evm_*`` methods that
    anvil, hardhat and ganache implement."""

    backend = "rpc"

    @classmethod
    async def connect(
        cls, url: str, *, accounts: int = 10, keys: Sequence[PrivateKey] | None = None
    ) -> RpcChain:
        w3 = await _connect(url)
        try:
            chain_id = await _chain_id(w3, url)
        except BaseException:
            await _disconnect(w3)
            raise
        return cls(w3, rpc_url=url, chain_id=chain_id, keys=keys or dev_keys(accounts))

    async def request(self, method: str, *params: Any) -> Any:
        """A JSON-RPC call to the node, for the methods web3 does not wrap (``anvil_*``,
        ``evm_*``); an error answer is a :class:`ChainUnavailableError` naming the method."""
        return await self._request(method, list(params))

    async def _request(self, method: str, params: list[Any]) -> Any:
        try:
            response = await self._w3.provider.make_request(method, params)  # type: ignore[arg-type]
        except (OSError, ConnectionError) as exc:
            raise ChainUnavailableError(
                f"cannot reach the chain at {self._rpc_url}: {exc}"
            ) from exc
        error = response.get("error")
        if error:
            message = error.get("message", error) if isinstance(error, dict) else error
            raise ChainUnavailableError(f"{method} failed on {self._rpc_url}: {message}")
        return response.get("result")

    async def _advance(self, seconds: int) -> None:
        await self._request("evm_increaseTime", [seconds])
        await self._request("evm_mine", [])

    async def _mine(self, blocks: int) -> None:
        for _ in range(blocks):
            await self._request("evm_mine", [])

    async def _snapshot(self) -> Any:
        return await self._request("evm_snapshot", [])

    async def _revert(self, snapshot_id: Any) -> None:
        ok = await self._request("evm_revert", [snapshot_id])
        if ok is False:
            raise SettlementValueError(f"unknown or already used snapshot id {snapshot_id!r}")

    async def _close(self) -> None:
        await _disconnect(self._w3)


async def _disconnect(w3: AsyncWeb3) -> None:
    with contextlib.suppress(Exception):
        await w3.provider.disconnect()


async def _connect(url: str) -> AsyncWeb3:
    from web3 import AsyncHTTPProvider, AsyncWeb3, WebSocketProvider

    if url.startswith(("ws://", "wss://")):
        w3 = AsyncWeb3(WebSocketProvider(url))
        try:
            await w3.provider.connect()
        except Exception as exc:
            raise ChainUnavailableError(f"cannot connect to {url}: {exc}") from exc
        return w3
    if url.startswith(("http://", "https://")):
        return AsyncWeb3(AsyncHTTPProvider(url))
    raise SettlementValueError(
        f"not a chain backend or JSON-RPC URL: {url!r} (use one of {', '.join(BACKENDS)} "
        "or an http(s):// / ws(s):// URL)"
    )


async def _chain_id(w3: AsyncWeb3, url: str) -> int:
    try:
        return int(await w3.eth.chain_id)
    except Exception as exc:
        raise ChainUnavailableError(f"cannot reach the chain at {url}: {exc}") from exc


def find_anvil(path: str | os.PathLike[str] | None = None) -> Path:
    """The anvil binary: ``path``, ``$SETTLEMENT_ANVIL``, the npm package in ``contracts/``
    of this checkout, or ``anvil`` on ``PATH``.

    A binary named explicitly (``path`` or ``$SETTLEMENT_ANVIL``) that is not executable is
    an error of its own rather than a silent fall back to another anvil."""
    named = path if path is not None else os.environ.get("SETTLEMENT_ANVIL") or None
    if named is not None:
        explicit = Path(named)
        if explicit.is_file() and os.access(explicit, os.X_OK):
            return explicit
        source = "the path given" if path is not None else "SETTLEMENT_ANVIL"
        raise ConfigurationError(f"{source} ({explicit}) is not an executable anvil binary")
    candidates: list[Path] = []
    machine = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower(), platform.machine().lower()
    )
    system = platform.system().lower()
    package = f"anvil-{system}-{machine}"
    repo = Path(__file__).resolve().parents[2]
    candidates.append(
        repo / "contracts" / "node_modules" / "@foundry-rs" / package / "bin" / "anvil"
    )
    which = shutil.which("anvil")
    if which:
        candidates.append(Path(which))
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    if (repo / "contracts" / "package.json").is_file():  # a source checkout
        hint = "run `npm install` in contracts/ (it brings @foundry-rs/anvil)"
    else:
        hint = "install Foundry's anvil (or the @foundry-rs/anvil npm package)"
    raise ConfigurationError(
        f"anvil not found: {hint}, put it on PATH or set SETTLEMENT_ANVIL to the binary; "
        "without it, leave out --chain anvil (the in-process chain needs nothing)"
    )


class AnvilChain(RpcChain):
    """anvil started by us on a free loopback port; stopped by :meth:`aclose`."""

    backend = "anvil"

    def __init__(self, process: subprocess.Popen[bytes], w3: AsyncWeb3, **kwargs: Any):
        super().__init__(w3, **kwargs)
        self._process = process
        self._reader: threading.Thread | None = None

    @property
    def pid(self) -> int:
        return self._process.pid

    @classmethod
    async def start(  # type: ignore[override]
        cls,
        *,
        chain_id: int = DEFAULT_CHAIN_ID,
        accounts: int = 10,
        balance_eth: int = DEV_BALANCE_WEI // 10**18,
        anvil_path: str | os.PathLike[str] | None = None,
        hardfork: str = "prague",
        timeout: float = 30.0,
        extra_args: Sequence[str] = (),
    ) -> AnvilChain:
        """Start anvil; ``extra_args`` are passed on (the Sepolia twin's interval mining)."""
        binary = find_anvil(anvil_path)
        args = [
            str(binary),
            "--host", "127.0.0.1",
            "--port", "0",
            "--chain-id", str(chain_id),
            "--hardfork", hardfork,
            "--accounts", str(accounts),
            "--balance", str(balance_eth),
            "--mnemonic", DEV_MNEMONIC,
            *extra_args,
        ]  # fmt: skip
        # --silent would hide the "Listening on" line that carries the port chosen for
        # --port 0, so anvil runs with its normal output, drained by a thread and discarded
        # (its banner lists the dev keys; it is never logged).
        process = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[str] = loop.create_future()
        tail: list[str] = []

        def settle(value: str | None) -> None:
            if ready.done():
                return
            if value is None:
                ready.set_exception(
                    ChainUnavailableError(f"anvil exited before listening: {' | '.join(tail)}")
                )
            else:
                ready.set_result(value)

        def drain() -> None:
            assert process.stdout is not None
            found = False
            with process.stdout:
                for raw in process.stdout:
                    if found:
                        continue
                    line = raw.decode("utf-8", "replace").strip()
                    match = _LISTENING.search(line)
                    if match:
                        found = True
                        url = f"http://{match['host']}:{match['port']}"
                        loop.call_soon_threadsafe(settle, url)
                    elif line and not line.lower().startswith(("(", "0x")):
                        tail[:] = [*tail[-4:], line[:200]]  # errors only; never key lines
            if not found:
                with contextlib.suppress(RuntimeError):  # the loop may be gone by then
                    loop.call_soon_threadsafe(settle, None)

        reader = threading.Thread(target=drain, name=f"anvil-{process.pid}-stdout", daemon=True)
        reader.start()
        w3: AsyncWeb3 | None = None
        try:
            url = await asyncio.wait_for(ready, timeout)
            w3 = await _connect(url)
            actual = await _chain_id(w3, url)
        except BaseException as exc:
            if w3 is not None:
                await _disconnect(w3)
            _stop(process, reader)
            if isinstance(exc, TimeoutError):
                raise ChainUnavailableError(f"anvil did not start within {timeout} s") from None
            raise
        chain = cls(process, w3, rpc_url=url, chain_id=actual, keys=dev_keys(accounts))
        chain._reader = reader
        return chain

    async def _close(self) -> None:
        await super()._close()
        await asyncio.to_thread(_stop, self._process, self._reader)


def _stop(process: subprocess.Popen[bytes], reader: threading.Thread | None) -> None:
    """Terminate (then kill) the node, and wait for its output reader to see EOF."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
    if reader is not None:
        reader.join(timeout=5)
