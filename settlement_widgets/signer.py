"""``Signer``: the one interface through which the toolkit signs and sends.

Two kinds of account hold a researcher's testnet funds: a private key in the process
(:class:`~settlement_widgets.wallet.WalletClient`, the default for the sandbox and scripts)
and a wallet in the browser (:class:`~settlement_widgets.widgets.BrowserWallet`, EIP-1193),
which never gives its key away and can only be *asked*. The providers depend on what both can
do, and nothing more:

- ``address`` and ``await chain_id()``;
- ``await sign_typed_data(full_message)``: EIP-712 (the relay's session-key ``Policy``, the
  v4 intent);
- ``await sign_message(data)``: EIP-191 ``personal_sign`` over raw bytes (channel states and
  challenges, which the custody accepts in that form);
- ``await send_transaction(tx)``: sign and broadcast, returning the hash.

All four are coroutines because a browser wallet answers when its person clicks. Reads
(``w3``) go straight to the network's JSON-RPC: asking a person's wallet to relay every
``eth_call`` would be slow and is not what wallets are for.

:meth:`Signer.send`, :meth:`Signer.wait` and :meth:`Signer.transact` are built on the
interface once, here: the gas estimate before anything is signed (so a call that would revert
raises :class:`~settlement_widgets.errors.TransactionFailedError` with the custom error
decoded, and the person is never asked to sign a doomed transaction), the receipt, and the
revert decoding.
"""

from __future__ import annotations

import abc
import contextlib
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self

from .errors import (
    ChainUnavailableError,
    ConfigurationError,
    SettlementTimeoutError,
    TransactionFailedError,
)

if TYPE_CHECKING:
    from web3 import AsyncWeb3

__all__ = ["Signer", "TxRequest", "is_connection_error"]

#: A transaction to send: ``from``, ``to``, ``data`` (bytes or 0x-hex), ``value``, ``gas``,
#: and, when the caller chose them, ``chainId``/``maxFeePerGas``/``maxPriorityFeePerGas``.
TxRequest = dict[str, Any]


@functools.cache
def _connection_errors() -> tuple[type[BaseException], ...]:
    """The exception types that mean "the node could not be reached", built once.

    aiohttp and web3 are imported here rather than at module level so that importing the
    signer stays cheap; either may be missing in a stripped-down environment.
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


class Signer(abc.ABC):
    """An account that signs and sends on one chain (see the module docstring).

    Subclasses implement ``address``, :meth:`sign_typed_data`, :meth:`sign_message` and
    :meth:`send_transaction`, and call :meth:`_read_connection`; everything else is shared.
    """

    #: seconds to wait for a receipt
    receipt_timeout: float = 120.0

    # --- the interface ------------------------------------------------------------------

    @property
    @abc.abstractmethod
    def address(self) -> str:
        """The account's EIP-55 address."""

    @abc.abstractmethod
    async def sign_typed_data(self, full_message: Mapping[str, Any]) -> str:
        """EIP-712 signature (0x-hex ``r||s||v``) of a full typed-data message
        (``types`` with ``EIP712Domain``, ``primaryType``, ``domain``, ``message``)."""

    @abc.abstractmethod
    async def sign_message(self, message: bytes) -> str:
        """EIP-191 ``personal_sign`` over ``message`` (raw bytes, not their hash)."""

    @abc.abstractmethod
    async def send_transaction(
        self, tx: TxRequest, *, on_signed: Callable[[str], Any] | None = None
    ) -> str:
        """Sign and broadcast ``tx``; return its hash. ``on_signed(hash)`` runs as soon as the
        hash is known: before broadcasting for a local key (write-ahead), right after the
        wallet broadcast it for a browser wallet (which never shows the hash earlier)."""

    async def chain_id(self) -> int:
        """The chain this account signs for (the node's, for a key; the wallet's, for a
        browser wallet)."""
        try:
            return int(await self.w3.eth.chain_id)
        except Exception as exc:
            if not is_connection_error(exc):
                raise
            raise ChainUnavailableError(
                f"cannot reach the chain at {self.rpc_url or 'the in-process EVM'}: {exc}"
            ) from exc

    # --- shared ---------------------------------------------------------------------------

    # --- the read connection ------------------------------------------------------------

    #: what to say when there is no read connection (subclasses name their own way to one)
    _no_connection_hint = "pass rpc_url= or w3="
    _rpc_url: str | None = None
    _w3: AsyncWeb3 | None = None
    _owns_w3: bool = True

    def _read_connection(self, rpc_url: str | None, w3: AsyncWeb3 | None) -> None:
        """Use ``w3`` (its owner closes it), else open one from ``rpc_url`` at first use."""
        self._rpc_url, self._w3, self._owns_w3 = rpc_url, w3, w3 is None

    @property
    def rpc_url(self) -> str | None:
        """The JSON-RPC URL of the read connection, when it has one."""
        return self._rpc_url

    @property
    def w3(self) -> AsyncWeb3:
        """The read connection to the chain (HTTP or WebSocket JSON-RPC), also used to
        estimate gas; opened from ``rpc_url`` at first use."""
        if self._w3 is None:
            if not self._rpc_url:
                raise ConfigurationError(f"no chain connection: {self._no_connection_hint}")
            from web3 import AsyncHTTPProvider, AsyncWeb3, WebSocketProvider

            if self._rpc_url.startswith(("ws://", "wss://")):
                self._w3 = AsyncWeb3(WebSocketProvider(self._rpc_url))
            else:
                self._w3 = AsyncWeb3(AsyncHTTPProvider(self._rpc_url))
        return self._w3

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection opened from ``rpc_url`` (an HTTP session or a WebSocket); a
        ``w3`` passed in belongs to its owner. The signer reconnects if used again."""
        w3, self._w3 = self._w3, (None if self._owns_w3 else self._w3)
        if self._owns_w3 and w3 is not None:
            with contextlib.suppress(Exception):
                await w3.provider.disconnect()

    async def ensure_connected(self) -> None:
        """Make ``address`` usable: a key always is; a browser wallet asks its person to
        connect (``eth_requestAccounts``) the first time."""
        return None

    def reset_nonce(self) -> None:
        """Forget any cached nonce (after the chain went back); a no-op unless the signer
        assigns nonces itself."""
        return None

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
        """Estimate, sign and send a transaction; return its hash without waiting.

        ``call`` is a web3 contract function call (``contract.functions.f(...)``); or give
        ``to``/``data``. Gas is estimated first, so a call that would revert raises
        :class:`TransactionFailedError` here and nothing is signed. A node that cannot be
        reached raises :class:`ChainUnavailableError` (never a "would revert").
        """
        try:
            tx = await self._prepare(call, to=to, data=data, value=value, gas=gas, abis=abis)
            return await self.send_transaction(tx, on_signed=on_signed)
        except TransactionFailedError:
            raise
        except Exception as exc:
            if not is_connection_error(exc):
                raise
            self.reset_nonce()
            raise ChainUnavailableError(
                f"cannot reach the chain at {self.rpc_url or 'the in-process EVM'}: {exc}"
            ) from exc

    async def _prepare(
        self,
        call: Any,
        *,
        to: str | None,
        data: bytes | str | None,
        value: int,
        gas: int | None,
        abis: Sequence[list[dict[str, Any]]],
    ) -> TxRequest:
        params: dict[str, Any] = {"from": self.address, "value": value}
        if gas is not None:
            params["gas"] = gas
        if call is not None:
            try:
                return dict(await call.build_transaction(params))
            except Exception as exc:
                if is_connection_error(exc):
                    raise  # the node is unreachable: not a revert
                raise self._revert(exc, abis) from exc
        tx = {**params, "to": to, "data": data or b""}
        if gas is None:
            try:
                tx["gas"] = await self.w3.eth.estimate_gas(tx)  # type: ignore[arg-type]
            except Exception as exc:
                if is_connection_error(exc):
                    raise
                raise self._revert(exc, abis) from exc
        return tx

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
