"""The kernel half of the BrowserWallet: requests matched to replies that arrive on another
thread (as a JupyterLab subshell delivers them), EIP-1193 errors mapped to the exception
tree, timeouts, and what goes to the page. The page half runs for real in
``tests/ui/test_browser_wallet.py``; here the page's messages are fed to the handler the
kernel would call, from a thread of their own."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from eth_account import Account
from eth_account.messages import encode_defunct

from settlement_widgets.errors import (
    InvalidSignatureError,
    WalletError,
    WalletRejectedError,
    WalletTimeoutError,
    WalletUnavailableError,
)
from settlement_widgets.keys import PrivateKey
from settlement_widgets.signer import Signer
from settlement_widgets.wallet import WalletClient
from settlement_widgets.widgets.browser_wallet import BrowserWallet, json_safe

ACCOUNT = "0x0000000000000000000000000000000000000001"


class _Page:
    """A page that answers each request on its own thread with ``answer(method, params)``."""

    def __init__(self, wallet: BrowserWallet, answer: Any, page: str = "page-1") -> None:
        self.wallet, self.answer, self.page = wallet, answer, page
        self.sent: list[dict[str, Any]] = []
        self.threads: set[int] = set()
        wallet._to_page = self.receive  # type: ignore[method-assign]
        wallet._on_page_message(wallet, {"type": "hello", "page": page}, [])

    def receive(self, content: dict[str, Any]) -> None:
        self.sent.append(content)
        threading.Thread(target=self._reply, args=(content,)).start()

    def _reply(self, content: dict[str, Any]) -> None:
        self.threads.add(threading.get_ident())
        # the request is listed in the widget while the page works on it
        assert any(p["id"] == content["id"] for p in self.wallet.pending)
        reply = {"type": "reply", "page": self.page, "id": content["id"]}
        reply.update(self.answer(content["method"], content["params"]))
        self.wallet._on_page_message(self.wallet, reply, [])


async def test_a_reply_from_another_thread_resolves_the_request() -> None:
    wallet = BrowserWallet()
    page = _Page(wallet, lambda m, p: {"result": [ACCOUNT]} if "Acc" in m else {"result": "0x1"})
    assert await wallet.connect() == ACCOUNT
    assert wallet.wallet_chain_id == 1 and wallet.pending == [] and wallet.error == ""
    assert [m["method"] for m in page.sent] == ["eth_requestAccounts", "eth_chainId"]
    assert all(m["type"] == "request" and m["page"] == "page-1" for m in page.sent)
    assert threading.get_ident() not in page.threads


@pytest.mark.parametrize(
    ("error", "raised", "text"),
    [
        ({"code": 4001, "message": "User rejected"}, WalletRejectedError, "rejected in the wallet"),
        ({"code": 4200, "message": "unsupported"}, WalletError, "answered 4200: unsupported"),
    ],
)
async def test_wallet_errors_become_the_toolkits_errors_and_show_in_the_widget(
    error: dict[str, Any], raised: type[Exception], text: str
) -> None:
    wallet = BrowserWallet()
    _Page(wallet, lambda m, p: {"error": error})
    with pytest.raises(raised, match=text):
        await wallet.request("eth_requestAccounts")
    assert text in wallet.error and wallet.pending == []


async def test_no_page_no_answer_and_a_foreign_page_are_clear_errors() -> None:
    wallet = BrowserWallet(hello_timeout=0.01)
    with pytest.raises(WalletUnavailableError, match="no page shows this BrowserWallet"):
        await wallet.request("eth_chainId")
    # a page that never answers: the person did not click
    silent = BrowserWallet(timeout=0.05)
    silent._to_page = lambda content: None  # type: ignore[method-assign]
    silent._on_page_message(silent, {"type": "hello", "page": "p"}, [])
    with pytest.raises(WalletTimeoutError, match="did not answer"):
        await silent.request("personal_sign", ["0x00", ACCOUNT])
    assert silent.pending == []
    # a reply from a page that is not the one asked is ignored
    other = BrowserWallet(timeout=0.05)
    _Page(other, lambda m, p: {"result": "0x1"}, page="old-tab")
    other._on_page_message(other, {"type": "hello", "page": "new-tab"}, [])
    with pytest.raises(WalletTimeoutError):
        await other.request("eth_chainId")


async def test_signatures_are_checked_and_the_account_is_required() -> None:
    key = PrivateKey.generate()
    wallet = BrowserWallet()
    with pytest.raises(WalletUnavailableError, match="not connected"):
        await wallet.sign_message(b"x")
    wallet.account = key.address

    def sign(method: str, params: list[Any]) -> dict[str, Any]:
        message = bytes.fromhex(params[0][2:])
        if message == b"garbage":
            return {"result": "0x1234"}
        signed = Account.sign_message(encode_defunct(primitive=message), key.secret_hex())
        return {"result": "0x" + bytes(signed.signature).hex()}

    _Page(wallet, sign)
    signature = await wallet.sign_message(b"state")
    assert signature == WalletClient(key).sign_message_now(b"state")
    with pytest.raises(InvalidSignatureError):
        await wallet.sign_message(b"garbage")


async def test_both_signers_implement_one_interface() -> None:
    key = PrivateKey.generate()
    for signer in (WalletClient(key), BrowserWallet()):
        assert isinstance(signer, Signer)
    # the Signer's send (transactions) is not the widget's comm send
    assert BrowserWallet.send is Signer.send
    signature = await WalletClient(key).sign_message(b"abc")
    recovered = Account.recover_message(encode_defunct(primitive=b"abc"), signature=signature)
    assert recovered == key.address


def test_values_reach_the_wallet_as_json_it_reads() -> None:
    assert json_safe({"a": 2**200, "b": b"\x01\x02", "c": [1, True, None]}) == {
        "a": str(2**200),
        "b": "0x0102",
        "c": [1, True, None],
    }


def test_malformed_page_messages_are_ignored(caplog: pytest.LogCaptureFixture) -> None:
    wallet = BrowserWallet()
    for content in ("not an object", {"type": "reply", "id": "x"}, {"type": "other"}):
        wallet._on_page_message(wallet, content, [])
    assert caplog.text.count("ignored a wallet message") == 3


def test_the_session_signs_with_the_key_unless_told_or_keyless_on_sepolia(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from settlement_widgets.errors import UnknownOptionError
    from settlement_widgets.notebook import _wallet_kind

    monkeypatch.delenv("SETTLEMENT_WALLET", raising=False)
    monkeypatch.delenv("SETTLEMENT_PRIVATE_KEY", raising=False)
    assert _wallet_kind(None, "local") == "key"
    assert _wallet_kind(None, "sepolia") == "browser"
    monkeypatch.setenv("SETTLEMENT_PRIVATE_KEY", "0x" + "01" * 32)
    assert _wallet_kind(None, "sepolia") == "key"
    monkeypatch.setenv("SETTLEMENT_WALLET", "browser")
    assert _wallet_kind(None, "local") == "browser"
    assert _wallet_kind("key", "local") == "key"
    with pytest.raises(UnknownOptionError, match="unknown wallet 'ledger'"):
        _wallet_kind("ledger", "local")


async def test_ensure_connected_asks_the_wallet_once_and_a_key_never() -> None:
    wallet = BrowserWallet()
    page = _Page(wallet, lambda m, p: {"result": [ACCOUNT]} if "Acc" in m else {"result": "0x1"})
    await wallet.ensure_connected()
    await wallet.ensure_connected()
    assert [m["method"] for m in page.sent] == ["eth_requestAccounts", "eth_chainId"]
    key_wallet = WalletClient(PrivateKey.generate())
    await key_wallet.ensure_connected()  # no connection needed, nothing asked


async def test_no_wallet_is_said_once_in_plain_words() -> None:
    """The card's missing-wallet line says it; the error line does not repeat it (issue
    34), and the sentence is the page's own, with no jargon (EIP-1193, WalletClient)."""
    import re
    from pathlib import Path

    from settlement_widgets.widgets.browser_wallet import NO_WALLET_MESSAGE

    wallet = BrowserWallet()
    _Page(wallet, lambda m, p: {"error": {"code": None, "reason": "no_wallet"}})
    with pytest.raises(WalletUnavailableError) as info:
        await wallet.request("eth_requestAccounts")
    assert str(info.value) == NO_WALLET_MESSAGE
    assert wallet.available == "no" and wallet.error == "" and wallet.pending == []
    for jargon in ("WalletClient", "EIP-1193", "page:"):
        assert jargon not in NO_WALLET_MESSAGE
    js = Path(__file__).parents[2] / "settlement_widgets/widgets/static/browser_wallet.js"
    found = re.search(r"NO_WALLET_MESSAGE =\s*((?:\"[^\"]*\"\s*\+?\s*)+);", js.read_text())
    assert found is not None
    assert "".join(re.findall(r'"([^"]*)"', found.group(1))) == NO_WALLET_MESSAGE
