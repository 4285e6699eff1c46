"""``BrowserWallet``: the page's own wallet (EIP-1193) as a :class:`~..signer.Signer`.

On Sepolia a researcher's testnet funds live in a browser wallet, not in a key pasted into an
environment variable (on Binder that would be a real risk). This anywidget lets the kernel
*ask* that wallet: connect (``eth_requestAccounts``), switch or add the chain, sign EIP-712
typed data (``eth_signTypedData_v4``) and EIP-191 messages (``personal_sign``), and send
transactions (``eth_sendTransaction``). The key never reaches Python; Python never sends the
page anything but these requests.

How a request travels: Python sends ``{"type": "request", "page", "id", "method", "params"}``
as a custom comm message to the one page that said ``hello`` last (a second open tab does not
pop up a second prompt); the page's module (``static/browser_wallet.js``) calls the wallet and
answers ``{"type": "reply", "id", "result" | "error"}``. While it waits, the request is listed
in the widget (``pending``), so the person sees what the wallet window is about.

Why awaiting does not block the kernel: the reply is matched to a thread-safe
:class:`concurrent.futures.Future`. JupyterLab 4.4+ and Notebook 7.4+ deliver widget messages
on an ipykernel 7 *subshell* thread, so a reply is handled while a cell awaits (or even blocks
on) the wallet; the awaiting coroutine resumes on its own loop. In Voila (and from the
dashboard's buttons everywhere) the waiting is a task on the kernel's loop, which keeps
handling messages meanwhile. A page that never answers gives :class:`WalletTimeoutError`, a
page with no wallet :class:`WalletUnavailableError`, a rejection :class:`WalletRejectedError`.
"""

from __future__ import annotations

import abc
import asyncio
import concurrent.futures
import itertools
import json
import logging
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anywidget
import traitlets

from ..addresses import validate_address
from ..errors import (
    ConfigurationError,
    InvalidSignatureError,
    SettlementValueError,
    WalletError,
    WalletRejectedError,
    WalletTimeoutError,
    WalletUnavailableError,
)
from ..signer import Signer, TxRequest

if TYPE_CHECKING:
    from web3 import AsyncWeb3

    from ..networks import Network

__all__ = [
    "DEFAULT_REQUEST_TIMEOUT",
    "NO_WALLET_MESSAGE",
    "BrowserWallet",
    "chain_parameters",
    "json_safe",
]

_log = logging.getLogger("settlement_widgets.wallet")
_STATIC = Path(__file__).with_name("static")
#: seconds a person has to answer the wallet's window
DEFAULT_REQUEST_TIMEOUT = 300.0
#: seconds to wait for a page to show the widget before saying nobody can be asked
_HELLO_TIMEOUT = 15.0
_JS_SAFE_INT = 2**53 - 1
_TX_HASH = re.compile(r"^0x[0-9a-fA-F]{64}$")
_SIGNATURE = re.compile(r"^0x[0-9a-fA-F]{130}$")
#: the no-wallet sentence, the page's own (``NO_WALLET_MESSAGE`` in static/browser_wallet.js):
#: plain words, what to do; the card shows it once (its missing-wallet line)
NO_WALLET_MESSAGE = (
    "No wallet found in this browser. Install a wallet extension (such as MetaMask) and "
    "reload this page, or set SETTLEMENT_PRIVATE_KEY to a funded test key and run the "
    "notebook again."
)
_NO_WALLET = NO_WALLET_MESSAGE


def json_safe(value: Any) -> Any:
    """``value`` as the JSON a wallet reads: bytes as 0x-hex, integers beyond what a
    JavaScript number holds exactly as decimal strings (wallets parse them as uint256)."""
    if isinstance(value, bool) or value is None or isinstance(value, str | float):
        return value
    if isinstance(value, int):
        return value if -_JS_SAFE_INT <= value <= _JS_SAFE_INT else str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return "0x" + bytes(value).hex()
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    raise SettlementValueError(f"cannot send a {type(value).__name__} to the wallet")


def chain_parameters(network: Network) -> dict[str, Any]:
    """The EIP-3085 ``wallet_addEthereumChain`` parameters of ``network``."""
    params: dict[str, Any] = {
        "chainId": hex(network.chain_id),
        "chainName": network.extra.get("chainName") or network.name.capitalize(),
        "nativeCurrency": {"name": "Ether", "symbol": "ETH", "decimals": 18},
        "rpcUrls": [network.rpc_url] if network.rpc_url else [],
    }
    base = getattr(network.explorer, "base_url", None)
    if isinstance(base, str) and base.startswith(("http://", "https://")):
        params["blockExplorerUrls"] = [base]
    return params


def _summary(method: str, params: Sequence[Any]) -> str:
    """What the widget lists while the wallet's window waits for the person."""
    if method == "eth_requestAccounts":
        return "connect: share your account"
    if method in ("wallet_switchEthereumChain", "wallet_addEthereumChain") and params:
        chain = params[0].get("chainId", "?") if isinstance(params[0], Mapping) else "?"
        verb = "switch to" if method == "wallet_switchEthereumChain" else "add"
        return f"{verb} chain {int(chain, 16) if isinstance(chain, str) else chain}"
    if method == "personal_sign":
        return f"sign a message ({(len(str(params[0])) - 2) // 2} bytes)"
    if method == "eth_signTypedData_v4" and len(params) > 1:
        try:
            typed = json.loads(params[1])
            return f"sign {typed['primaryType']} for {typed['domain'].get('name', '?')}"
        except (ValueError, KeyError, TypeError, AttributeError):
            return "sign typed data"
    if method == "eth_sendTransaction" and params and isinstance(params[0], Mapping):
        to = str(params[0].get("to") or "a new contract")
        return f"send a transaction to {to[:6]}…{to[-4:]}" if len(to) == 42 else f"deploy {to}"
    return method


class _WidgetSignerMeta(type(anywidget.AnyWidget), abc.ABCMeta):  # type: ignore[misc]
    """traitlets' metaclass and ABCMeta together: the widget *is* a Signer."""


# Signer first: ``send``/``chain_id`` are the Signer's (what the providers call); messages to
# the page go through ``anywidget.AnyWidget.send`` by name (:meth:`BrowserWallet._to_page`).
class BrowserWallet(Signer, anywidget.AnyWidget, metaclass=_WidgetSignerMeta):  # type: ignore[misc]
    """The page's EIP-1193 wallet, shown as a small card, usable wherever a
    :class:`~settlement_widgets.wallet.WalletClient` is.

    ``network`` gives the chain to switch to (``target_chain``) and the read connection
    (``w3`` from ``network.rpc_url``; or pass ``w3``/``rpc_url``). Display it, then
    ``await wallet.connect()`` or click its *Connect wallet* button.
    """

    _no_connection_hint = "pass network= (with an RPC URL), rpc_url= or w3= for the reads"
    _esm = _STATIC / "browser_wallet.js"
    _css = _STATIC / "browser_wallet.css"

    # set by the page
    account = traitlets.Unicode("").tag(sync=True)
    wallet_chain_id = traitlets.Int(0).tag(sync=True)
    wallet_name = traitlets.Unicode("").tag(sync=True)
    wallets = traitlets.List(traitlets.Dict()).tag(sync=True)
    selected_wallet = traitlets.Unicode("").tag(sync=True)
    available = traitlets.Unicode("unknown").tag(sync=True)
    # set by Python
    pending = traitlets.List(traitlets.Dict()).tag(sync=True)
    target_chain = traitlets.Dict().tag(sync=True)
    label = traitlets.Unicode("Browser wallet").tag(sync=True)
    # both
    error = traitlets.Unicode("").tag(sync=True)

    def __init__(
        self,
        network: Network | None = None,
        *,
        rpc_url: str | None = None,
        w3: AsyncWeb3 | None = None,
        timeout: float = DEFAULT_REQUEST_TIMEOUT,
        hello_timeout: float = _HELLO_TIMEOUT,
        **kwargs: Any,
    ) -> None:
        if network is not None:
            kwargs.setdefault("target_chain", chain_parameters(network))
        super().__init__(**kwargs)
        self.network = network
        self._read_connection(rpc_url or (network.rpc_url if network is not None else None), w3)
        self.timeout = float(timeout)
        self.hello_timeout = float(hello_timeout)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._replies: dict[int, concurrent.futures.Future[dict[str, Any]]] = {}
        self._page: str | None = None
        self._hello = threading.Event()
        self.on_msg(self._on_page_message)

    # --- the page's messages (any thread) ---------------------------------------------------

    def _on_page_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        """A ``hello`` or a ``reply`` from the page. Runs on whichever thread the kernel
        delivers widget messages on (a JupyterLab subshell's): it only resolves futures."""
        if not isinstance(content, Mapping):
            _log.warning("ignored a wallet message that is not an object")
            return
        kind = content.get("type")
        if kind == "hello" and isinstance(content.get("page"), str):
            self._page = content["page"]
            self._hello.set()
        elif kind == "reply" and isinstance(content.get("id"), int):
            with self._lock:
                future = self._replies.pop(content["id"], None)
            if future is not None and not future.done() and content.get("page") == self._page:
                future.set_result(dict(content))
        else:
            _log.warning("ignored a wallet message of type %r", kind)

    # --- requests ----------------------------------------------------------------------------

    def _to_page(self, content: dict[str, Any]) -> None:
        """A custom message to the page (the widget's ``send``, which the Signer's shadows)."""
        anywidget.AnyWidget.send(self, content)

    async def request(
        self,
        method: str,
        params: Sequence[Any] = (),
        *,
        summary: str | None = None,
        timeout: float | None = None,
    ) -> Any:
        """Ask the wallet (EIP-1193 ``request``) and await its answer; the request is listed
        in the widget until then. Raises :class:`WalletRejectedError` (4001),
        :class:`WalletError` (another code), :class:`WalletUnavailableError` (no wallet, no
        page) or :class:`WalletTimeoutError`."""
        if not self._hello.is_set():
            loop = asyncio.get_running_loop()
            shown = await loop.run_in_executor(None, self._hello.wait, self.hello_timeout)
            if not shown:
                raise WalletUnavailableError(
                    "no page shows this BrowserWallet: display it (make it a cell's last "
                    "line) in JupyterLab, Notebook 7 or Voila, then try again"
                )
        what = summary or _summary(method, params)
        request_id = next(self._ids)
        future: concurrent.futures.Future[dict[str, Any]] = concurrent.futures.Future()
        with self._lock:
            self._replies[request_id] = future
        entry = {"id": request_id, "method": method, "summary": what}
        self.pending = [*self.pending, entry]
        self.error = ""
        wait = self.timeout if timeout is None else timeout
        try:
            self._to_page(
                {
                    "type": "request",
                    "page": self._page,
                    "id": request_id,
                    "method": method,
                    "params": json_safe(list(params)),
                }
            )
            try:
                reply = await asyncio.wait_for(asyncio.wrap_future(future), wait)
            except TimeoutError:
                raise WalletTimeoutError(
                    f"the wallet did not answer {what!r} within {wait:g} s (no click, or its "
                    "window was closed); nothing was signed"
                ) from None
        except Exception as exc:
            self.error = str(exc)
            raise
        finally:
            with self._lock:
                self._replies.pop(request_id, None)
            self.pending = [p for p in self.pending if p.get("id") != request_id]
        error = reply.get("error")
        if error is not None:
            failure = self._failure(what, error)
            if isinstance(failure, WalletUnavailableError):
                # the card's missing-wallet line says it (once); no second copy below it
                self.available = "no"
                self.error = ""
            else:
                self.error = str(failure)
            raise failure
        return reply.get("result")

    @staticmethod
    def _failure(what: str, error: Any) -> Exception:
        error = error if isinstance(error, Mapping) else {}
        code, message = error.get("code"), str(error.get("message") or "no message")
        if error.get("reason") == "no_wallet":
            return WalletUnavailableError(_NO_WALLET)
        if code == 4001:
            return WalletRejectedError(f"{what}: rejected in the wallet (EIP-1193 4001)", code=code)
        return WalletError(f"{what}: the wallet answered {code}: {message}", code=code)

    # --- connecting ----------------------------------------------------------------------

    async def connect(self, *, switch: bool = True) -> str:
        """Ask for the account (``eth_requestAccounts``) and, when a network was given and
        ``switch``, move the wallet to its chain. Returns the account."""
        accounts = await self.request("eth_requestAccounts")
        if not isinstance(accounts, list) or not accounts:
            raise WalletError("the wallet shared no account", code=None)
        self.account = validate_address(str(accounts[0]), field="account")
        await self._read_chain()
        if switch and self.network is not None and self.wallet_chain_id != self.network.chain_id:
            await self.switch_chain()
        return self.account

    async def ensure_connected(self) -> None:
        if not self.account:
            await self.connect()

    async def _read_chain(self) -> int:
        raw = await self.request("eth_chainId")
        try:
            self.wallet_chain_id = int(str(raw), 16)
        except ValueError:
            raise WalletError(f"the wallet's eth_chainId was {raw!r}", code=None) from None
        return self.wallet_chain_id

    async def switch_chain(self, chain_id: int | None = None) -> int:
        """``wallet_switchEthereumChain`` to ``chain_id`` (default: the network's), adding the
        chain (``wallet_addEthereumChain``) when the wallet does not know it (4902)."""
        target = chain_id if chain_id is not None else (self.network and self.network.chain_id)
        if not target:
            raise ConfigurationError("switch_chain() needs a chain id (or a network)")
        try:
            await self.request("wallet_switchEthereumChain", [{"chainId": hex(target)}])
        except WalletError as exc:
            if exc.code != 4902 or not self.target_chain:
                raise
            await self.request("wallet_addEthereumChain", [dict(self.target_chain)])
        if await self._read_chain() != target:
            raise WalletError(
                f"the wallet stayed on chain {self.wallet_chain_id}, not {target}", code=None
            )
        return target

    # --- Signer ------------------------------------------------------------------------------

    @property
    def address(self) -> str:
        if not self.account:
            raise WalletUnavailableError(
                "the browser wallet is not connected: click Connect wallet (or await "
                "wallet.connect())"
            )
        return validate_address(self.account, field="account")

    async def chain_id(self) -> int:
        """The chain the wallet is on now (it may differ from the network's)."""
        return self.wallet_chain_id or await self._read_chain()

    async def _on_network_chain(self) -> None:
        """Before a signature or a transaction that names a chain: be on the network's."""
        if self.network is not None and await self.chain_id() != self.network.chain_id:
            await self.switch_chain()

    async def sign_typed_data(self, full_message: Mapping[str, Any]) -> str:
        address = self.address
        await self._on_network_chain()
        typed = json.dumps(json_safe(dict(full_message)), separators=(",", ":"))
        return self._signature(await self.request("eth_signTypedData_v4", [address, typed]))

    async def sign_message(self, message: bytes) -> str:
        address = self.address
        return self._signature(await self.request("personal_sign", ["0x" + message.hex(), address]))

    @staticmethod
    def _signature(raw: Any) -> str:
        if not isinstance(raw, str) or not _SIGNATURE.match(raw):
            raise InvalidSignatureError(f"the wallet returned {raw!r}, not a 65-byte signature")
        return raw.lower()

    async def send_transaction(
        self, tx: TxRequest, *, on_signed: Callable[[str], Any] | None = None
    ) -> str:
        """``eth_sendTransaction``: the wallet chooses the nonce and the fees and broadcasts;
        the gas is ours (estimated, so a revert is caught before the person is asked)."""
        fields: dict[str, Any] = {"from": self.address}
        await self._on_network_chain()
        if tx.get("to"):
            fields["to"] = validate_address(str(tx["to"]), field="to")
        data = tx.get("data") or b""
        fields["data"] = data if isinstance(data, str) else "0x" + bytes(data).hex()
        for name in ("value", "gas"):
            if tx.get(name) is not None:
                fields[name] = hex(int(tx[name]))
        raw = await self.request("eth_sendTransaction", [fields])
        if not isinstance(raw, str) or not _TX_HASH.match(raw):
            raise WalletError(f"the wallet returned {raw!r}, not a transaction hash", code=None)
        tx_hash = raw.lower()
        if on_signed is not None:
            on_signed(tx_hash)
        return tx_hash

    def __repr__(self) -> str:
        return (
            f"BrowserWallet(account={self.account or None!r}, "
            f"chain_id={self.wallet_chain_id or None}, available={self.available!r})"
        )
