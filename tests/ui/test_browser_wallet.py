"""The page's own wallet as the signer, in JupyterLab and in Voila (Debian's Chromium).

A test EIP-1193 wallet is injected into every page before it loads
(``eip1193_test_provider.js``); it keeps no key in the page and answers from the test process
(:class:`~dev_key_wallet.DevKeyWallet`: sandbox dev key 9, the sandbox's ``/rpc``), as a
wallet extension does. One JupyterLab (with Voila) runs with ``SETTLEMENT_WALLET=browser``,
so ``open_session()`` makes that wallet the user everywhere: a small notebook connects, signs
typed data, sends a transaction, waits for a held request and sees a rejection; notebooks 03
and 04 run the channel lifecycle and the v4 intent with it; the dashboard is clicked through
in Voila. A page without a wallet gets a clear error in the widget and in the cell. Every
WebSocket frame the page exchanges is kept, to show that no key reaches it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest
from browser_helpers import ARTIFACTS, ROOT, Lab, LoopbackPage, app_env, cleared_copy, start_lab
from dev_key_wallet import REJECTED_MESSAGE, DevKeyWallet
from playwright.sync_api import Page, expect
from test_walkthrough_browser import _click_through, _run_all

from settlement_widgets.sandbox.chain import dev_keys
from settlement_widgets.widgets.browser_wallet import NO_WALLET_MESSAGE

pytestmark = [pytest.mark.browser, pytest.mark.slow]

T = 240_000
NOTEBOOKS = ROOT / "notebooks"
PROVIDER_SCRIPT = str(Path(__file__).with_name("eip1193_test_provider.js"))
#: a personal_sign of this is held in the page until the test releases it
HELD_MESSAGE = b"hold this one"
#: every EIP-1193 method the toolkit may ask a wallet for
WALLET_METHODS = {
    "eth_requestAccounts",
    "eth_accounts",
    "eth_chainId",
    "wallet_switchEthereumChain",
    "wallet_addEthereumChain",
    "personal_sign",
    "eth_signTypedData_v4",
    "eth_sendTransaction",
}
_TYPED = {
    "types": {
        "EIP712Domain": [
            {"name": "name", "type": "string"},
            {"name": "chainId", "type": "uint256"},
        ],
        "Note": [{"name": "text", "type": "string"}, {"name": "amount", "type": "uint256"}],
    },
    "primaryType": "Note",
    "domain": {"name": "settlement_widgets test"},
    "message": {"text": "paid by the browser wallet", "amount": 10**30},
}

WALLET_CHECKS = [
    "from settlement_widgets.notebook import open_session\n"
    "session = await open_session(progress=False)\n"
    "wallet = session.user\n"
    "wallet",
    "account = await wallet.connect()\n"
    'print(f"connected {account} on chain {await wallet.chain_id()}")',
    "from eth_account import Account\n"
    "from eth_account.messages import encode_typed_data\n"
    f"typed = {_TYPED!r}\n"
    'typed["domain"]["chainId"] = session.network.chain_id\n'
    "signature = await wallet.sign_typed_data(typed)\n"
    "signer = Account.recover_message(encode_typed_data(full_message=typed), signature=signature)\n"
    'print(f"typed data signed by {signer}")',
    "receipt = await wallet.transact(to=session.wallets[1].address, value=10**15)\n"
    "tx = receipt['transactionHash'].hex()\n"
    "print(f\"mined 0x{tx.removeprefix('0x')} status {receipt['status']}\")",
    f"held = await wallet.sign_message({HELD_MESSAGE!r})\n"
    'print(f"held request signed: {len(held)} hex characters")',
    f"await wallet.sign_message({REJECTED_MESSAGE!r})",
]
MISSING_CHECKS = [
    "from settlement_widgets import BrowserWallet\nwallet = BrowserWallet()\nwallet",
    "await wallet.connect()",
]


def _notebook(root: Path, name: str, cells: list[str]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, root / name)


@pytest.fixture(scope="module")
def wallet_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("wallet-lab")
    root = tmp / "root"
    root.mkdir()
    for name in ("03_channel_lifecycle.ipynb", "04_v4_contracts.ipynb", "dashboard.ipynb"):
        cleared_copy(NOTEBOOKS / name, root)
    _notebook(root, "wallet_checks.ipynb", WALLET_CHECKS)
    _notebook(root, "wallet_missing.ipynb", MISSING_CHECKS)
    env = {
        "SETTLEMENT_NETWORK": "local",
        "SETTLEMENT_API_NETWORK": "local",
        "SETTLEMENT_SHARED_SANDBOX": "1",
        "SETTLEMENT_WALLET": "browser",
        "SETTLEMENT_HOME": str(tmp / "home"),
        **app_env(),
    }
    settings = {"@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"}}
    with start_lab(tmp, root, env, settings) as running:
        running.home = tmp / "home"  # type: ignore[attr-defined]
        yield running


class _Frames:
    """Every WebSocket frame the page sends or receives (kernel channels included)."""

    def __init__(self, page: Page) -> None:
        self.payloads: list[str] = []
        page.on("websocket", self._attach)

    def _attach(self, ws: Any) -> None:
        ws.on("framesent", self._keep)
        ws.on("framereceived", self._keep)

    def _keep(self, payload: str | bytes) -> None:
        self.payloads.append(
            payload if isinstance(payload, str) else payload.decode("latin-1", "replace")
        )

    def assert_no_key(self) -> None:
        """No dev key (the kernel's WalletClients', the test wallet's) in any frame."""
        assert self.payloads, "no WebSocket frame was seen"
        text = "\n".join(self.payloads).lower()
        for key in dev_keys(10):
            assert key.secret_hex()[2:].lower() not in text

    def wallet_requests(self) -> list[str]:
        """The methods of the wallet requests the kernel sent to the page."""
        found = re.findall(
            r'"type":\s*"request".{0,200}?"method":\s*"(\w+)"', "\n".join(self.payloads)
        )
        return found


def _wallet(lab: Lab) -> DevKeyWallet:
    home: Path = lab.home  # type: ignore[attr-defined]
    profile = json.loads((home / "sandbox" / "profile.json").read_text())
    return DevKeyWallet(
        dev_keys(10)[9].secret_hex(), str(profile["rpcUrl"]), int(profile["chainId"])
    )


def _with_wallet(page: LoopbackPage, lab: Lab) -> _LazyWallet:
    wallet = _LazyWallet(lab)
    page.page.context.expose_function("__swTestWallet", wallet.answer)
    page.page.context.add_init_script(
        script=f"window.__swHoldHex = {('0x' + HELD_MESSAGE.hex())!r};"
    )
    page.page.context.add_init_script(path=PROVIDER_SCRIPT)
    return wallet


class _LazyWallet:
    """The test wallet, built at its first use: the server writes the sandbox's profile when
    it starts the sandbox, which is after the page is set up."""

    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        self._inner: DevKeyWallet | None = None

    @property
    def inner(self) -> DevKeyWallet:
        if self._inner is None:
            self._inner = _wallet(self.lab)
        return self._inner

    def answer(self, method: str, params_json: str) -> str:
        return self.inner.answer(method, params_json)

    @property
    def address(self) -> str:
        return self.inner.address

    @property
    def chain_id(self) -> int:
        return self.inner.chain_id

    @property
    def requests(self) -> list[tuple[str, list[Any]]]:
        return self.inner.requests

    def methods(self) -> set[str]:
        return self.inner.methods()

    def rpc(self, method: str, params: list[Any]) -> Any:
        return self.inner.rpc(method, params)


@dataclass
class _WalletPage:
    """A page with the test wallet injected and its WebSocket frames kept."""

    page: Page
    wallet: _LazyWallet
    frames: _Frames
    loopback: LoopbackPage

    def finish(self) -> None:
        """No key reached the page, and the page asked nothing of another host."""
        self.frames.assert_no_key()
        assert self.loopback.blocked == []


@pytest.fixture
def wallet_page(wallet_lab: Lab, loopback_page: LoopbackPage) -> _WalletPage:
    page = loopback_page.page
    page.set_default_timeout(T)
    frames = _Frames(page)  # before the first navigation: every socket is seen
    return _WalletPage(page, _with_wallet(loopback_page, wallet_lab), frames, loopback_page)


def _output(page: Page, text: str) -> None:
    expect(page.locator(".jp-OutputArea-output").filter(has_text=text).first).to_be_visible()


def test_connect_sign_send_hold_and_reject_in_jupyterlab(
    wallet_lab: Lab, wallet_page: _WalletPage
) -> None:
    page, wallet = wallet_page.page, wallet_page.wallet
    page.goto(wallet_lab.page_url("lab/workspaces/wallet-checks/tree/wallet_checks.ipynb"))
    expect(page.locator("#jp-main-statusbar")).to_contain_text("Python 3 (ipykernel) | Idle")
    page.locator(".lm-MenuBar-itemLabel:text-is('Run')").click()
    page.locator(".lm-Menu-itemLabel:text-is('Run All Cells')").click()

    card = page.locator(".sw-wallet")
    expect(card).to_have_count(1)
    address = wallet.address
    _output(page, f"connected {address} on chain {wallet.chain_id}")
    expect(card.locator(".sw-wallet-account")).to_have_attribute("data-account", address)
    _output(page, f"typed data signed by {address}")
    _output(page, "status 1")
    mined = page.locator(".jp-OutputArea-output").filter(has_text="status 1").first.inner_text()
    tx_hash = re.search(r"mined (0x[0-9a-f]{64})", mined)
    assert tx_hash is not None, mined
    receipt = wallet.rpc("eth_getTransactionReceipt", [tx_hash.group(1)])
    assert receipt["status"] == "0x1" and receipt["from"].lower() == address.lower()

    # the held request is listed in the card while the wallet's window "waits for the person"
    pending = card.locator("li.sw-wallet-request[data-method='personal_sign']")
    expect(pending).to_have_count(1)
    expect(pending).to_contain_text("Waiting for your wallet: sign a message (13 bytes)")
    page.screenshot(path=str(ARTIFACTS / "lab-wallet-pending.png"), full_page=True)
    page.evaluate("window.__swRelease()")
    _output(page, "held request signed: 132 hex characters")
    expect(pending).to_have_count(0)

    # the rejection: the cell's error names it, and so does the card
    traceback = page.locator(".jp-OutputArea-output:has-text('WalletRejectedError')")
    expect(traceback).to_contain_text("rejected in the wallet (EIP-1193 4001)")
    expect(card.locator(".sw-wallet-error")).to_contain_text("rejected in the wallet")
    page.screenshot(path=str(ARTIFACTS / "lab-wallet-rejected.png"), full_page=True)

    assert wallet.methods() <= WALLET_METHODS
    assert {
        "eth_requestAccounts",
        "eth_signTypedData_v4",
        "eth_sendTransaction",
    } <= wallet.methods()
    # the page only ever saw the wallet's requests (no key, and each request is one it passed on)
    sent_to_page = wallet_page.frames.wallet_requests()
    assert sent_to_page and set(sent_to_page) <= WALLET_METHODS
    wallet_page.finish()


def test_channel_lifecycle_signed_by_the_browser_wallet_in_jupyterlab(
    wallet_lab: Lab, wallet_page: _WalletPage
) -> None:
    page, wallet = wallet_page.page, wallet_page.wallet
    _run_all(page, wallet_lab, "wallet-03", "03_channel_lifecycle.ipynb")
    status = page.locator(".sw-status-panel .sw-row[data-label='Status'] .sw-value")
    expect(status).to_have_text("FINAL")
    # the relay login (EIP-712 Policy), the states (EIP-191) and the custody transactions
    typed = [json.loads(p[1]) for m, p in wallet.requests if m == "eth_signTypedData_v4"]
    assert [t["primaryType"] for t in typed] == ["Policy"]
    assert typed[0]["message"]["wallet"] == wallet.address
    methods = [m for m, _ in wallet.requests]
    assert methods.count("personal_sign") >= 3  # create, resize, close (and the challenge)
    assert methods.count("eth_sendTransaction") >= 4  # create, approve, deposit, resize, ...
    page.screenshot(path=str(ARTIFACTS / "lab-wallet-03.png"), full_page=True)
    wallet_page.finish()


def test_v4_intent_signed_by_the_browser_wallet_in_jupyterlab(
    wallet_lab: Lab, wallet_page: _WalletPage
) -> None:
    page, wallet = wallet_page.page, wallet_page.wallet
    _run_all(page, wallet_lab, "wallet-04", "04_v4_contracts.ipynb")
    _output(page, "recovers to the user")
    typed = [json.loads(p[1]) for m, p in wallet.requests if m == "eth_signTypedData_v4"]
    assert typed and all(t["primaryType"] == "Intent" for t in typed)
    assert all(t["message"]["user"] == wallet.address for t in typed)
    assert "eth_sendTransaction" in wallet.methods()  # the adapter's approval
    wallet_page.finish()


def test_dashboard_with_the_browser_wallet_in_voila(
    wallet_lab: Lab, wallet_page: _WalletPage
) -> None:
    page, wallet = wallet_page.page, wallet_page.wallet
    page.goto(wallet_lab.page_url("voila/render/dashboard.ipynb"))
    card = page.locator(".sw-dashboard .sw-wallet")
    expect(card).to_be_visible()
    expect(card.locator(".sw-wallet-account")).to_have_text("not connected")
    card.locator("button.sw-wallet-connect").click()
    expect(card.locator(".sw-wallet-account")).to_have_attribute("data-account", wallet.address)
    _click_through(page, wallet_lab, "Voila-wallet")
    assert {"personal_sign", "eth_signTypedData_v4", "eth_sendTransaction"} <= wallet.methods()
    wallet_page.finish()


def test_a_page_without_a_wallet_says_so_in_jupyterlab_and_voila(
    wallet_lab: Lab, loopback_page: LoopbackPage
) -> None:
    page = loopback_page.page
    page.set_default_timeout(T)
    page.goto(wallet_lab.page_url("lab/workspaces/wallet-missing/tree/wallet_missing.ipynb"))
    expect(page.locator("#jp-main-statusbar")).to_contain_text("Python 3 (ipykernel) | Idle")
    page.locator(".lm-MenuBar-itemLabel:text-is('Run')").click()
    page.locator(".lm-Menu-itemLabel:text-is('Run All Cells')").click()
    card = page.locator(".sw-wallet")
    expect(card.locator(".sw-wallet-missing")).to_be_visible()
    expect(card).to_have_attribute("data-available", "no")
    _fail_on_traceback_expected(page, "WalletUnavailableError")
    # said once, in plain words, by the card's missing-wallet line (issue 34)
    expect(card.locator(".sw-wallet-missing")).to_have_text(NO_WALLET_MESSAGE)
    expect(card.locator(".sw-wallet-error")).to_be_hidden()
    assert card.inner_text().count("No wallet found in this browser") == 1

    page.goto(wallet_lab.page_url("voila/render/dashboard.ipynb"))
    dashboard = page.locator(".sw-dashboard")
    expect(dashboard.locator(".sw-wallet-missing")).to_be_visible()
    dashboard.locator("button.sw-action-faucet").click()
    error = dashboard.locator(".sw-log-line[data-level='error']")
    expect(error).to_contain_text("No wallet found in this browser")
    page.screenshot(path=str(ARTIFACTS / "voila-wallet-missing.png"), full_page=True)
    assert loopback_page.blocked == []


def _fail_on_traceback_expected(page: Page, name: str) -> None:
    """The cell's traceback names ``name`` and says what to do."""
    traceback = page.locator(f".jp-OutputArea-output:has-text('{name}')")
    expect(traceback).to_contain_text("No wallet found in this browser")
