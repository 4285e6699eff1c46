"""WalletClient: one private key plus an ``AsyncWeb3`` connection.

Every on-chain step (custody create/resize/close/withdraw, v4 settlement) goes through
:meth:`WalletClient.transact`, which signs locally, sends the raw transaction, waits for the
receipt and turns a revert into :class:`~settlement_widgets.errors.TransactionFailedError`
with the custom error decoded. The same code serves the in-process EVM and any JSON-RPC node.

The key is held in a :class:`~settlement_widgets.keys.PrivateKey`, whose repr shows the
address only; ``repr(wallet)`` never shows the key.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .errors import (
    ChainUnavailableError,
    ConfigurationError,
    SettlementTimeoutError,
    TransactionFailedError,
)
from .keys import PrivateKey

if TYPE_CHECKING:
    from web3 import AsyncWeb3

    from .networks import Network

__all__ = ["WalletClient", "is_connection_error"]


@functools.cache
def _connection_errors() -> tuple[type[BaseException], ...]:
    """The exception types that mean "the node could not be reached", built once.

    aiohttp and web3 are imported here rather than at module level so that importing the
    wallet stays cheap; either may be missing in a stripped-down environment.
    """
    errors: list[type[BaseException]] = [ConnectionError, OSError]
    try:
        import aiohttp

        errors.append(aiohttp.ClientError)
    except ImportError:  # pragma: no cover
        pass
    try:
        from web3.exceptions import ProviderConnectionError

        errors.append(ProviderConnectionError)
    except ImportError:  # pragma: no cover
        pass
    return tuple(errors)


def is_connection_error(exc: BaseException) -> bool:
    """True when ``exc`` means the chain node could not be reached (not that it refused).

    The single detector for the package: a socket/OS error, an aiohttp client error or
    web3's ``ProviderConnectionError``. Callers use it to turn an unreachable node into
    :class:`~settlement_widgets.errors.ChainUnavailableError` instead of misreporting it as a
    revert, so the wallet and the channel provider must agree on what counts.
    """
    return isinstance(exc, _connection_errors())


def _eth_tester_revert_bytes(exc: BaseException) -> bytes | None:
    """Revert data from a plain ``AsyncEthereumTesterProvider``, whose errors carry it only as
    the repr of a bytes object (``execution reverted: b'\\x9aB...'``), not as hex."""
    import ast

    for arg in (*getattr(exc, "args", ()), getattr(exc, "message", None), str(exc)):
        if not isinstance(arg, str):
            continue
        _, found, literal = arg.partition("execution reverted: ")
        if found and literal.startswith(("b'", 'b"')):
            try:
                value = ast.literal_eval(literal)
            except (ValueError, SyntaxError):
                continue
            if isinstance(value, bytes) and len(value) >= 4:
                return value
    return None


class WalletClient:
    """A signing wallet bound to one chain.

    ``w3`` may be given directly (the sandbox passes its in-process provider); otherwise it is
    created lazily from ``rpc_url`` (HTTP or WebSocket JSON-RPC).
    """

    def __init__(
        self,
        private_key: str | bytes | PrivateKey,
        *,
        rpc_url: str | None = None,
        w3: AsyncWeb3 | None = None,
        receipt_timeout: float = 120.0,
    ) -> None:
        self._key = private_key if isinstance(private_key, PrivateKey) else PrivateKey(private_key)
        self._rpc_url = rpc_url
        self._w3 = w3
        #: the connection is ours to close only when we opened it from ``rpc_url``
        self._owns_w3 = w3 is None
        self._nonce_lock = asyncio.Lock()
        self._next_nonce: int | None = None
        self.receipt_timeout = receipt_timeout

    # --- construction -------------------------------------------------------------------

    @classmethod
    def from_env(
        cls, network: Network | None = None, *, var: str = "SETTLEMENT_PRIVATE_KEY"
    ) -> WalletClient:
        """A wallet from ``$SETTLEMENT_PRIVATE_KEY`` and the network's RPC URL."""
        secret = os.environ.get(var)
        if not secret:
            raise ConfigurationError(
                f"{var} is not set: export a funded test key (never a key holding real funds)"
            )
        rpc = network.rpc_url if network is not None else os.environ.get("SEPOLIA_RPC_URL")
        return cls(secret.strip(), rpc_url=rpc)

    # --- identity -----------------------------------------------------------------------

    @property
    def address(self) -> str:
        return self._key.address

    @property
    def key(self) -> PrivateKey:
        """The signing key object (its repr never reveals the secret)."""
        return self._key

    @property
    def rpc_url(self) -> str | None:
        return self._rpc_url

    @property
    def w3(self) -> AsyncWeb3:
        if self._w3 is None:
            if not self._rpc_url:
                raise ConfigurationError(
                    "this wallet has no chain connection: pass rpc_url= or w3= "
                    "(on Sepolia set SEPOLIA_RPC_URL)"
                )
            from web3 import AsyncHTTPProvider, AsyncWeb3, WebSocketProvider

            if self._rpc_url.startswith(("ws://", "wss://")):
                self._w3 = AsyncWeb3(WebSocketProvider(self._rpc_url))
            else:
                self._w3 = AsyncWeb3(AsyncHTTPProvider(self._rpc_url))
        return self._w3

    async def aclose(self) -> None:
        """Close the connection this wallet opened from ``rpc_url`` (an HTTP session or a
        WebSocket); a ``w3`` passed in belongs to its owner. The wallet reconnects if used
        again."""
        w3, self._w3 = self._w3, (None if self._owns_w3 else self._w3)
        if self._owns_w3 and w3 is not None:
            with contextlib.suppress(Exception):
                await w3.provider.disconnect()

    def __repr__(self) -> str:
        return f"WalletClient(address={self.address!r}, rpc_url={self._rpc_url!r})"

    __str__ = __repr__

    def __reduce__(self) -> str | tuple[Any, ...]:
        raise TypeError("WalletClient holds a private key and cannot be pickled")

    # --- signing ------------------------------------------------------------------------

    def sign_hash(self, digest: bytes) -> str:
        """Raw ECDSA over a 32-byte digest, 0x-hex ``r||s||v`` with v 27/28."""
        return self._key.sign_hash_hex(digest)

    def sign_typed_data(self, full_message: dict[str, Any]) -> str:
        """EIP-712 signature of a full typed-data message (domain, types, primaryType, message)."""
        from eth_account.messages import encode_typed_data

        signable = encode_typed_data(full_message=full_message)
        from eth_hash.auto import keccak

        digest = keccak(b"\x19" + signable.version + signable.header + signable.body)
        return self.sign_hash(digest)

    def sign_message(self, message: bytes) -> str:
        """EIP-191 ``personal_sign`` over raw bytes."""
        from eth_hash.auto import keccak

        digest = keccak(b"\x19Ethereum Signed Message:\n" + str(len(message)).encode() + message)
        return self.sign_hash(digest)

    # --- transactions -------------------------------------------------------------------

    async def chain_id(self) -> int:
        try:
            return int(await self.w3.eth.chain_id)
        except Exception as exc:
            if not is_connection_error(exc):
                raise
            raise ChainUnavailableError(
                f"cannot reach the chain at {self._rpc_url}: {exc}"
            ) from exc

    def reset_nonce(self) -> None:
        """Forget the cached next nonce; the next send asks the node again.

        Needed when the chain went back (a sandbox snapshot revert, a reorg): the cache would
        otherwise stay ahead of the chain and every later transaction would wait forever.
        """
        self._next_nonce = None

    async def _nonce(self) -> int:
        count = await self.w3.eth.get_transaction_count(
            self.address,  # type: ignore[arg-type]
            "pending",
        )
        pending = int(count)
        if self._next_nonce is None or pending > self._next_nonce:
            self._next_nonce = pending
        nonce = self._next_nonce
        self._next_nonce += 1
        return nonce

    async def send(
        self,
        call: Any = None,
        *,
        to: str | None = None,
        data: bytes | str | None = None,
        value: int = 0,
        gas: int | None = None,
        abis: Sequence[list[dict[str, Any]]] = (),
        on_signed: Callable[[str], Any] | None = None,
    ) -> str:
        """Sign and send a transaction; return its hash without waiting.

        ``call`` is a web3 contract function call (``contract.functions.f(...)``); or give
        ``to``/``data``. Gas is estimated first, so a call that would revert raises
        :class:`TransactionFailedError` here and nothing is sent. A node that cannot be
        reached raises :class:`ChainUnavailableError` (never a "would revert").

        ``on_signed(tx_hash)`` runs after signing and *before* broadcasting, so a caller can
        persist the hash first (write-ahead): a process killed mid-send then still knows
        which transaction may be in flight.
        """
        from eth_account import Account

        try:
            async with self._nonce_lock:
                params: dict[str, Any] = {"from": self.address, "value": value}
                if gas is not None:
                    params["gas"] = gas
                if call is not None:
                    try:
                        tx = await call.build_transaction(params)
                    except Exception as exc:
                        if is_connection_error(exc):
                            raise  # the node is unreachable: not a revert
                        raise self._revert(exc, abis) from exc
                else:
                    tx = {**params, "to": to, "data": data or b""}
                    if gas is None:
                        try:
                            tx["gas"] = await self.w3.eth.estimate_gas(tx)  # type: ignore[arg-type]
                        except Exception as exc:
                            if is_connection_error(exc):
                                raise
                            raise self._revert(exc, abis) from exc
                    tx["chainId"] = int(await self.w3.eth.chain_id)
                    block = await self.w3.eth.get_block("latest")
                    base = int(block.get("baseFeePerGas") or 0)
                    tx["maxPriorityFeePerGas"] = 10**9
                    tx["maxFeePerGas"] = 2 * base + 10**9
                tx["nonce"] = await self._nonce()
                tx.setdefault("chainId", int(await self.w3.eth.chain_id))
                signed = Account.sign_transaction(tx, self._key.secret_hex())
                if on_signed is not None:
                    on_signed("0x" + bytes(signed.hash).hex())
                try:
                    tx_hash = await self.w3.eth.send_raw_transaction(signed.raw_transaction)
                except Exception as exc:
                    self._next_nonce = None  # resync from the node next time
                    if is_connection_error(exc):
                        raise
                    raise self._revert(exc, abis) from exc
        except TransactionFailedError:
            raise
        except Exception as exc:
            if not is_connection_error(exc):
                raise
            self._next_nonce = None
            raise ChainUnavailableError(
                f"cannot reach the chain at {self._rpc_url or 'the in-process EVM'}: {exc}"
            ) from exc
        return "0x" + bytes(tx_hash).hex()

    async def wait(self, tx_hash: str, *, abis: Sequence[list[dict[str, Any]]] = ()) -> Any:
        """The receipt of ``tx_hash``; raises :class:`TransactionFailedError` if it reverted."""
        try:
            receipt = await self.w3.eth.wait_for_transaction_receipt(
                tx_hash,  # type: ignore[arg-type]
                timeout=self.receipt_timeout,
                poll_latency=0.05,
            )
        except Exception as exc:
            if is_connection_error(exc):
                raise ChainUnavailableError(
                    f"lost the chain while waiting for {tx_hash}: {exc}"
                ) from exc
            from web3.exceptions import TimeExhausted

            if isinstance(exc, TimeExhausted):
                raise SettlementTimeoutError(
                    f"transaction {tx_hash} was not mined within {self.receipt_timeout} s"
                ) from exc
            raise
        if receipt["status"] != 1:
            raise TransactionFailedError(
                f"transaction {tx_hash} reverted", tx_hash=tx_hash, error_name=None
            )
        return receipt

    async def transact(
        self,
        call: Any = None,
        *,
        to: str | None = None,
        data: bytes | str | None = None,
        value: int = 0,
        gas: int | None = None,
        abis: Sequence[list[dict[str, Any]]] = (),
    ) -> Any:
        """:meth:`send` then :meth:`wait`: the mined receipt (status 1) or an error."""
        tx_hash = await self.send(call, to=to, data=data, value=value, gas=gas, abis=abis)
        return await self.wait(tx_hash, abis=abis)

    @staticmethod
    def _revert(exc: Exception, abis: Sequence[list[dict[str, Any]]]) -> Exception:
        """Turn a web3/eth-tester revert into :class:`TransactionFailedError`."""
        from .contracts import decode_revert

        data = getattr(exc, "data", None)
        if isinstance(data, dict):
            data = data.get("data")
        if not isinstance(data, str | bytes):
            # eth-tester / anvil put the revert data in args or the message
            for arg in getattr(exc, "args", ()):
                if isinstance(arg, str) and arg.startswith("0x") and len(arg) >= 10:
                    data = arg
                    break
                if isinstance(arg, dict) and isinstance(arg.get("data"), str):
                    data = arg["data"]
                    break
        if not isinstance(data, str | bytes):
            data = _eth_tester_revert_bytes(exc)
        name, args = decode_revert(data if isinstance(data, str | bytes) else None, *abis)
        if name is None:
            message = getattr(exc, "message", None) or str(exc)
            return TransactionFailedError(f"transaction would revert: {message}")
        if name == "Error" and args:
            return TransactionFailedError(
                f"transaction would revert: {args[0]}", error_name=name, error_args=args
            )
        shown = ", ".join(repr(a.hex() if isinstance(a, bytes) else a) for a in args)
        return TransactionFailedError(
            f"transaction would revert with {name}({shown})", error_name=name, error_args=args
        )
