"""A local EVM for the sandbox: in-process py-evm (default), anvil, or any JSON-RPC node.

Every backend is a :class:`Chain` with the same surface: an ``AsyncWeb3`` (``.w3``), the RPC
URL (``None`` in-process), the chain id, ten deterministic dev accounts, ``time_travel`` for
challenge periods, ``mine``, ``snapshot``/``revert`` and ``aclose``. Code that settles never
asks which backend it runs on.

- ``inprocess``: eth-tester's py-evm backend (Prague) wrapped in an ``AsyncWeb3``. No process,
  no port. Its chain id is set to 31337 (eth-tester hard-codes 131277322940537 in both the VM
  and the ``eth_chainId`` endpoint; we override both), so channel ids and EIP-712 domains equal
  anvil's. Reverts are answered like a real node (JSON-RPC error with the revert data), so
  web3 raises the same exceptions on both backends and custom errors decode the same way.
- ``anvil``: the binary from the ``@foundry-rs/anvil`` npm package, on a free loopback port
  (``--port 0``; the port is read from its "Listening on" line), chain id 31337, hardfork Prague.
- any ``http(s)://`` or ``ws(s)://`` URL: an already running node (anvil, hardhat, ...).

The dev accounts are the well-known keys of the mnemonic ``test test ... junk`` (the same ten
on every backend; anvil funds them itself, the in-process genesis funds them with 10,000 ETH
each). They are public test keys: never send real funds to them.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import functools
import os
import platform
import re
import shutil
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ChainUnavailableError, ConfigurationError, SettlementValueError
from ..keys import PrivateKey
from ..wallet import WalletClient

if TYPE_CHECKING:
    from web3 import AsyncWeb3

__all__ = [
    "BACKENDS",
    "DEFAULT_CHAIN_ID",
    "DEV_BALANCE_WEI",
    "DEV_MNEMONIC",
    "AnvilChain",
    "Chain",
    "InProcessChain",
    "RpcChain",
    "derive_dev_key",
    "dev_keys",
    "find_anvil",
    "start_chain",
]

#: The mnemonic of anvil's (and hardhat's) default accounts. Public: test use only.
DEV_MNEMONIC = "test test test test test test test test test test test junk"
#: One chain id for every local backend (anvil's default).
DEFAULT_CHAIN_ID = 31337
#: What each dev account holds at genesis (anvil's default, 10,000 ETH).
DEV_BALANCE_WEI = 10_000 * 10**18
#: Names accepted by :func:`start_chain` besides a URL.
BACKENDS = ("inprocess", "anvil")

_HD_PATH = "m/44'/60'/0'/0"
_LISTENING = re.compile(r"Listening on (?P<host>[0-9.]+|\[[0-9a-f:]+\]|[\w.-]+):(?P<port>\d+)")


# The first ten keys of DEV_MNEMONIC at m/44'/60'/0'/0/i, as anvil prints them. Deriving them
# takes ~0.7 s per key in pure Python, so they are spelled out (tests re-derive two of them).
# Public, well-known test keys: never fund them on a real network.
_WELL_KNOWN_DEV_KEYS = (
    "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
    "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
    "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
    "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
    "0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a",
    "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba",
    "0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e",
    "0x4bbbf85ce3377467afe5d46f804f221813b2bb87f24d81f60f1fcdbf7cbf4356",
    "0xdbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97",
    "0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6",
)


def derive_dev_key(index: int) -> PrivateKey:
    """Key ``index`` of :data:`DEV_MNEMONIC` by BIP-32 derivation (slow; see :func:`dev_keys`)."""
    from eth_account.hdaccount import key_from_seed, seed_from_mnemonic

    return PrivateKey(key_from_seed(seed_from_mnemonic(DEV_MNEMONIC, ""), f"{_HD_PATH}/{index}"))


@functools.cache
def _dev_key(index: int) -> PrivateKey:
    if index < len(_WELL_KNOWN_DEV_KEYS):
        return PrivateKey(_WELL_KNOWN_DEV_KEYS[index])
    return derive_dev_key(index)


def dev_keys(count: int = 10) -> tuple[PrivateKey, ...]:
    """The first ``count`` keys of :data:`DEV_MNEMONIC` (``m/44'/60'/0'/0/i``), anvil's accounts."""
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= 100:
        raise SettlementValueError(f"count must be an integer from 1 to 100, got {count!r}")
    return tuple(_dev_key(i) for i in range(count))


class Chain(abc.ABC):
    """A running EVM with funded dev accounts. Use ``async with`` or call :meth:`aclose`."""

    #: "inprocess", "anvil" or "rpc"
    backend: str = ""

    def __init__(
        self, w3: AsyncWeb3, *, rpc_url: str | None, chain_id: int, keys: Sequence[PrivateKey]
    ):
        self._w3 = w3
        self._rpc_url = rpc_url
        self._chain_id = chain_id
        self._keys = tuple(keys)
        self._wallets: dict[str, WalletClient] = {}
        self._closed = False

    # --- identity ---------------------------------------------------------------------

    @property
    def w3(self) -> AsyncWeb3:
        """The ``AsyncWeb3`` connected to this chain."""
        return self._w3

    @property
    def rpc_url(self) -> str | None:
        """JSON-RPC URL other processes can use; ``None`` for the in-process EVM."""
        return self._rpc_url

    @property
    def chain_id(self) -> int:
        return self._chain_id

    @property
    def accounts(self) -> tuple[PrivateKey, ...]:
        """The funded dev keys (index 0 is the usual deployer)."""
        return self._keys

    @property
    def addresses(self) -> tuple[str, ...]:
        return tuple(k.address for k in self._keys)

    def wallet(self, index: int = 0) -> WalletClient:
        """The :class:`WalletClient` of dev account ``index``, bound to this chain.

        One wallet per account (so one nonce sequence per account); :meth:`revert` resets
        their nonce caches.
        """
        if not isinstance(index, int) or not 0 <= index < len(self._keys):
            raise SettlementValueError(
                f"dev account index must be 0..{len(self._keys) - 1}, got {index!r}"
            )
        return self.wallet_for(self._keys[index])

    def wallet_for(self, key: PrivateKey | str | bytes) -> WalletClient:
        """The :class:`WalletClient` of any key on this chain (fund it first); one per address,
        tracked like :meth:`wallet`."""
        private_key = key if isinstance(key, PrivateKey) else PrivateKey(key)
        wallet = self._wallets.get(private_key.address)
        if wallet is None:
            wallet = WalletClient(private_key, rpc_url=self._rpc_url, w3=self._w3)
            self._wallets[private_key.address] = wallet
        return wallet

    def __repr__(self) -> str:
        where = self._rpc_url or "in-process"
        return f"{type(self).__name__}(chain_id={self._chain_id}, {where})"

    # --- time and blocks --------------------------------------------------------------

    async def block_number(self) -> int:
        return int(await self._w3.eth.block_number)

    async def timestamp(self) -> int:
        """Timestamp of the latest block."""
        block = await self._w3.eth.get_block("latest")
        return int(block["timestamp"])

    async def time_travel(self, seconds: int) -> int:
        """Move the chain clock forward by ``seconds`` and mine a block; returns its timestamp.

        Afterwards the latest block's timestamp is at least the previous one plus ``seconds``,
        so a challenge that expires within ``seconds`` has expired for the next transaction.
        """
        if not isinstance(seconds, int) or isinstance(seconds, bool) or seconds < 0:
            raise SettlementValueError(f"seconds must be a non-negative integer, got {seconds!r}")
        before = await self.timestamp()
        await self._advance(seconds)
        after = await self.timestamp()
        if after < before + seconds:  # pragma: no cover - defensive: a node that ignores us
            raise ChainUnavailableError(
                f"the chain did not move its clock: {after} < {before} + {seconds}"
            )
        return after

    async def mine(self, blocks: int = 1) -> int:
        """Mine ``blocks`` empty blocks; returns the new block number."""
        if not isinstance(blocks, int) or isinstance(blocks, bool) or blocks < 1:
            raise SettlementValueError(f"blocks must be a positive integer, got {blocks!r}")
        await self._mine(blocks)
        return await self.block_number()

    async def snapshot(self) -> Any:
        """Remember the current chain state; pass the returned id to :meth:`revert` (once)."""
        return await self._snapshot()

    async def revert(self, snapshot_id: Any) -> None:
        """Return to a snapshot. Nonce caches of this chain's wallets are reset."""
        await self._revert(snapshot_id)
        for wallet in self._wallets.values():
            wallet.reset_nonce()

    # --- lifecycle --------------------------------------------------------------------

    async def aclose(self) -> None:
        """Release the connection (and stop the node process, if we started one)."""
        if self._closed:
            return
        self._closed = True
        await self._close()

    async def __aenter__(self) -> Chain:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # --- backend hooks ----------------------------------------------------------------

    @abc.abstractmethod
    async def _advance(self, seconds: int) -> None: ...

    @abc.abstractmethod
    async def _mine(self, blocks: int) -> None: ...

    @abc.abstractmethod
    async def _snapshot(self) -> Any: ...

    @abc.abstractmethod
    async def _revert(self, snapshot_id: Any) -> None: ...

    @abc.abstractmethod
    async def _close(self) -> None: ...


# --- in-process py-evm -------------------------------------------------------------------


def _revert_data(exc: BaseException) -> bytes | None:
    """The raw revert bytes inside an eth-tester ``TransactionFailed``."""
    import ast

    arg: Any = exc.args[0] if exc.args else None
    if isinstance(arg, BaseException):
        arg = arg.args[0] if arg.args else None
    if isinstance(arg, bytes | bytearray):
        return bytes(arg)
    if isinstance(arg, str):
        text = arg.removeprefix("execution reverted: ")
        if text.startswith(("b'", 'b"')):
            with contextlib.suppress(ValueError, SyntaxError):
                value = ast.literal_eval(text)
                if isinstance(value, bytes):
                    return value
    return None


def _make_inprocess_provider(tester: Any, chain_id: int) -> Any:
    """An ``AsyncEthereumTesterProvider`` over ``tester`` that reports ``chain_id`` and answers
    reverts as a node does (error code 3 with the revert data)."""
    from eth_tester.exceptions import TransactionFailed
    from web3.providers.async_base import AsyncBaseProvider
    from web3.providers.eth_tester import AsyncEthereumTesterProvider
    from web3.providers.eth_tester.defaults import API_ENDPOINTS

    endpoints = {namespace: dict(methods) for namespace, methods in API_ENDPOINTS.items()}
    endpoints["eth"]["chainId"] = lambda *_args, **_kwargs: chain_id

    class _Provider(AsyncEthereumTesterProvider):
        def __init__(self) -> None:
            AsyncBaseProvider.__init__(self)  # the parent would build its own EthereumTester
            self.ethereum_tester = tester
            self.api_endpoints = endpoints

        async def make_request(self, method: Any, params: Any) -> Any:
            request_id = self._current_request_id
            self._current_request_id += 1
            namespace, _, endpoint = str(method).partition("_")
            delegator = endpoints.get(namespace, {}).get(endpoint)
            if delegator is None:
                return _rpc_error(request_id, -32601, f"Unknown RPC Endpoint: {method}")
            try:
                result = delegator(tester, params)
            except TransactionFailed as exc:
                data = _revert_data(exc)
                if data is None:
                    return _rpc_error(request_id, 3, f"execution reverted: {exc}")
                return _rpc_error(request_id, 3, "execution reverted", "0x" + data.hex())
            except NotImplementedError:
                return _rpc_error(request_id, -32601, f"RPC Endpoint not implemented: {method}")
            return {"id": request_id, "jsonrpc": "2.0", "result": result}

    return _Provider()


def _single_run_gas_estimate(state: Any, transaction: Any) -> int:
    """Gas limit for ``transaction``: run it once with the block gas limit and take what it
    consumed before refunds, plus 1/8 and 10,000 for the 63/64 rule of nested calls (and
    never below the EIP-7623 calldata floor). Raises the VM error if it fails, as py-evm's
    own estimator does, so reverts surface the same way."""
    from eth.vm.spoof import SpoofTransaction

    trial = SpoofTransaction(transaction, gas=state.gas_limit, gas_price=0)
    snapshot = state.snapshot()
    try:
        computation = state.apply_transaction(trial)
        if computation.is_error:
            raise computation.error
        consumed = state.gas_limit - computation.get_gas_remaining()
        floor = int(getattr(computation, "data_floor_gas", 0) or 0)
    finally:
        state.revert(snapshot)
    return int(min(state.gas_limit, max(consumed + consumed // 8 + 10_000, floor)))


def _rpc_error(request_id: int, code: int, message: str, data: str | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"id": request_id, "jsonrpc": "2.0", "error": error}


class InProcessChain(Chain):
    """py-evm in this process (eth-tester), exposed as an ``AsyncWeb3``."""

    backend = "inprocess"

    def __init__(self, tester: Any, w3: AsyncWeb3, *, chain_id: int, keys: Sequence[PrivateKey]):
        super().__init__(w3, rpc_url=None, chain_id=chain_id, keys=keys)
        self._tester = tester

    @property
    def tester(self) -> Any:
        """The underlying ``eth_tester.EthereumTester`` (for tests that need its extras)."""
        return self._tester

    @classmethod
    def create(
        cls,
        *,
        chain_id: int = DEFAULT_CHAIN_ID,
        accounts: int = 10,
        balance_wei: int = DEV_BALANCE_WEI,
        database: Mapping[bytes, bytes] | None = None,
    ) -> InProcessChain:
        """A fresh genesis funding the first ``accounts`` dev keys with ``balance_wei`` each,
        or, given ``database`` (what :meth:`database` returned on a chain created with the same
        ``chain_id``), that chain resumed at its head (see :mod:`.pyevm_database`)."""
        from eth_keys import keys as eth_keys
        from eth_tester import EthereumTester, PyEVMBackend
        from web3 import AsyncWeb3

        keys = dev_keys(accounts)
        genesis = {
            k.address_bytes: {"balance": balance_wei, "storage": {}, "code": b"", "nonce": 0}
            for k in keys
        }
        backend = PyEVMBackend(genesis_state=genesis)
        # eth-tester's own account list (the default "from" of calls) must be our funded keys;
        # from_mnemonic would re-derive them, which is slow.
        backend.account_keys = tuple(
            eth_keys.PrivateKey(bytes.fromhex(k.secret_hex()[2:])) for k in keys
        )
        # eth-tester fixes the chain id as a class attribute of a class it creates per backend;
        # the VM reads it for CHAINID and for transaction signatures.
        chain_class = type(backend.chain)
        chain_class.chain_id = chain_id
        # py-evm estimates gas by binary search (about 15 executions per estimate); one run
        # plus a margin gives the same answer for our contracts at a tenth of the time.
        chain_class.gas_estimator = staticmethod(_single_run_gas_estimate)
        if database is not None:
            from . import pyevm_database

            backend.chain = pyevm_database.restore(chain_class, database)
        backend.chain.gas_estimator = _single_run_gas_estimate
        tester = EthereumTester(backend)
        w3 = AsyncWeb3(_make_inprocess_provider(tester, chain_id))
        return cls(tester, w3, chain_id=chain_id, keys=keys)

    def database(self) -> dict[bytes, bytes]:
        """A copy of the whole chain (py-evm's key-value store): ``create(database=...)``
        resumes it, in this process or another."""
        from . import pyevm_database

        return pyevm_database.dump(self._tester.backend.chain)

    async def _advance(self, seconds: int) -> None:
        latest = await self.timestamp()
        # eth-tester stamps the mined block one second before the target
        self._tester.time_travel(latest + seconds + 1)

    async def _mine(self, blocks: int) -> None:
        self._tester.mine_blocks(blocks)

    async def _snapshot(self) -> Any:
        return self._tester.take_snapshot()

    async def _revert(self, snapshot_id: Any) -> None:
        from eth_tester.exceptions import SnapshotNotFound

        try:
            self._tester.revert_to_snapshot(snapshot_id)
        except SnapshotNotFound:
            raise SettlementValueError(f"unknown snapshot id {snapshot_id!r}") from None

    async def _close(self) -> None:
        return None


# --- JSON-RPC nodes ----------------------------------------------------------------------


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
    of this checkout, or ``anvil`` on ``PATH``."""
    candidates: list[Path] = []
    if path is not None:
        candidates.append(Path(path))
    env = os.environ.get("SETTLEMENT_ANVIL")
    if env:
        candidates.append(Path(env))
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
    raise ConfigurationError(
        "anvil not found: run `npm install` in contracts/ (it brings @foundry-rs/anvil), "
        "or set SETTLEMENT_ANVIL to the binary"
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


async def start_chain(
    backend: str = "inprocess",
    *,
    chain_id: int = DEFAULT_CHAIN_ID,
    accounts: int = 10,
    anvil_path: str | os.PathLike[str] | None = None,
) -> Chain:
    """Start (or connect to) a chain.

    ``backend`` is ``"inprocess"`` (py-evm in this process, the default), ``"anvil"`` (a fresh
    anvil on a free loopback port) or the URL of a running JSON-RPC node. ``chain_id`` applies
    to the chains we start; a node given by URL reports its own.
    """
    if not isinstance(chain_id, int) or isinstance(chain_id, bool) or chain_id <= 0:
        raise SettlementValueError(f"chain_id must be a positive integer, got {chain_id!r}")
    if backend == "inprocess":
        return InProcessChain.create(chain_id=chain_id, accounts=accounts)
    if backend == "anvil":
        return await AnvilChain.start(chain_id=chain_id, accounts=accounts, anvil_path=anvil_path)
    if isinstance(backend, str) and "://" in backend:
        return await RpcChain.connect(backend, accounts=accounts)
    raise SettlementValueError(
        f"unknown chain backend {backend!r}: use one of {', '.join(BACKENDS)} or a JSON-RPC URL"
    )
