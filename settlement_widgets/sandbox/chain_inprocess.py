"""The in-process backend: eth-tester's py-evm (Prague) wrapped in an ``AsyncWeb3``.

No process, no port. Its chain id is set to 31337 (eth-tester hard-codes 131277322940537 in
both the VM and the ``eth_chainId`` endpoint; we override both), so channel ids and EIP-712
domains equal anvil's. Reverts are answered like a real node (JSON-RPC error with the revert
data), so web3 raises the same exceptions on both backends and custom errors decode the same
way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import SettlementValueError
from ..keys import PrivateKey
from .chain_base import DEFAULT_CHAIN_ID, DEV_BALANCE_WEI, Chain, dev_keys

if TYPE_CHECKING:
    from web3 import AsyncWeb3

__all__ = ["InProcessChain"]


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

    latest: list[Any] = [None, None]  # [head hash, eth-tester's answer for "latest"]

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
            if method == "eth_getBlockByNumber" and list(params) in (["latest", False], ["latest"]):
                # the Nitronode asks for the head on every request; eth-tester rebuilds and
                # re-validates the whole block each time. The head is named by the pending
                # block's parent hash, which mining, reverting and resuming all change.
                head = tester.backend.chain.header.parent_hash
                if latest[0] != head:
                    latest[:] = [head, delegator(tester, params)]
                return {"id": request_id, "jsonrpc": "2.0", "result": dict(latest[1])}
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
