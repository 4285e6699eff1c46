"""Both widgets in a real JupyterLab, driven by Debian's Chromium through Playwright.

A throwaway JupyterLab on 127.0.0.1 opens a notebook this test writes (outputs cleared, so
nothing is shown until the kernel runs it), runs all cells, clicks the ``channel`` card and
checks that the custody and adjudicator addresses appeared: a round trip through the kernel.
Screenshots of both widgets go to ``test-artifacts/`` (gitignored). Every request that is
not to loopback is aborted. Lab runs with ``SETTLEMENT_NETWORK=sepolia`` so no sandbox is
needed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from browser_helpers import ARTIFACTS, Lab, LoopbackPage, start_lab
from playwright.sync_api import Page, expect

from settlement_widgets.networks import SEPOLIA
from settlement_widgets.widgets.viewmodels import RED

pytestmark = pytest.mark.browser

CID = "0x" + "ab" * 32
TX = "0x" + "cd" * 32
C = SEPOLIA.contracts
NOTEBOOK = "widgets_demo.ipynb"
#: generous: two CPU cores shared with other test runs
T = 90_000

CELLS = [
    "from settlement_widgets.widgets import ChannelStatusPanel, SettlementSelector\n"
    "selector = SettlementSelector()\n"
    "selector",
    "panel = ChannelStatusPanel.from_props({\n"
    f"    'channelId': '{CID}', 'channelStatus': 'dispute', 'stateIntent': 'OPERATE',\n"
    f"    'stateVersion': 3, 'stateHash': '0x' + '12' * 32, 'adjudicator': '{C.adjudicator}',\n"
    f"    'challengePeriod': 3600, 'settlementTx': '{TX}', 'provider': 'channel',\n"
    "    'providerMetadata': {'erc7824': {'proofsCount': 2, 'nonce': 7}},\n"
    "})\n"
    "panel",
]


def _write_notebook(root: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)"}
    nb.cells = [nbformat.v4.new_code_cell(src) for src in CELLS]  # no outputs, no widget state
    nbformat.write(nb, root / NOTEBOOK)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("lab")
    root = tmp / "root"
    root.mkdir()
    _write_notebook(root)
    env = {"SETTLEMENT_NETWORK": "sepolia", "SETTLEMENT_HOME": str(tmp / "home")}
    with start_lab(tmp, root, env) as running:
        yield running


@pytest.fixture
def lab_page(loopback_page: LoopbackPage) -> Page:
    return loopback_page.page


def test_widgets_render_and_react_in_jupyterlab(lab: Lab, lab_page: Page) -> None:
    page = lab_page
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_default_timeout(T)
    page.goto(f"{lab.url}/lab/tree/{NOTEBOOK}?token={lab.token}")
    expect(page.locator(".jp-Notebook .jp-Cell").first).to_be_visible(timeout=T)
    # the execution indicator can say idle before the session is connected; the status bar
    # text only appears once the kernel is really there
    expect(page.locator("#jp-main-statusbar")).to_contain_text(
        "Python 3 (ipykernel) | Idle", timeout=T
    )
    # a cleared notebook: nothing rendered before the kernel runs it
    assert page.locator(".sw-selector").count() == 0

    page.locator(".lm-MenuBar-itemLabel:text-is('Run')").click()
    page.locator(".lm-Menu-itemLabel:text-is('Run All Cells')").click()

    selector = page.locator(".jp-OutputArea-output .sw-selector")
    panel = page.locator(".jp-OutputArea-output .sw-status-panel")
    expect(selector).to_be_visible(timeout=T)
    expect(panel).to_be_visible(timeout=T)
    expect(selector.locator(".sw-card-body")).to_have_count(3, timeout=T)
    expect(selector.locator(".sw-card-body[data-selected='true']")).to_have_attribute(
        "data-method", "aggregator", timeout=T
    )
    expect(selector.locator(".sw-address")).to_have_count(0, timeout=T)  # aggregator: no addresses
    selector.screenshot(path=str(ARTIFACTS / "selector-aggregator.png"))

    # the click goes to the kernel, which re-renders the cards and the address box
    selector.locator("button.sw-card-channel").click()
    box = selector.locator(".sw-address-box[data-method='channel']")
    expect(box).to_be_visible(timeout=T)
    expect(box.locator(".sw-address[data-label='Custody']")).to_contain_text(C.custody, timeout=T)
    expect(box.locator(".sw-address[data-label='Adjudicator']")).to_contain_text(
        C.adjudicator, timeout=T
    )
    expect(box.locator(".sw-address")).to_have_count(2, timeout=T)
    expect(box.get_by_text(C.custody, exact=True)).to_be_visible(timeout=T)
    expect(box.get_by_text(C.adjudicator, exact=True)).to_be_visible(timeout=T)
    expect(box.locator("a").first).to_have_attribute(
        "href", f"https://sepolia.etherscan.io/address/{C.custody}", timeout=T
    )
    expect(selector.locator(".sw-card-body[data-selected='true']")).to_have_attribute(
        "data-method", "channel", timeout=T
    )
    selector.screenshot(path=str(ARTIFACTS / "selector-channel.png"))

    # the panel: DISPUTE in the theme's red, truncated id, explorer links
    status = panel.locator(".sw-row[data-label='Status'] .sw-value")
    expect(status).to_have_text("DISPUTE", timeout=T)
    # the theme's error colour, made strong enough for text (viewmodels.RED), as the browser
    # resolves it in this page
    red = page.evaluate(
        "(c) => { const p = document.createElement('span'); p.style.color = c;"
        " document.body.appendChild(p); const v = getComputedStyle(p).color; p.remove();"
        " return v; }",
        RED,
    )
    assert red.startswith(("rgb", "color(srgb")), red
    assert red != page.evaluate("getComputedStyle(document.body).color")  # really resolved
    expect(status).to_have_css("color", red, timeout=T)
    expect(panel.locator(".sw-row[data-label='Channel ID'] .sw-value")).to_have_text(
        CID[:10] + "..." + CID[-8:], timeout=T
    )
    expect(panel.locator(".sw-tx a")).to_have_attribute(
        "href", f"https://sepolia.etherscan.io/tx/{TX}", timeout=T
    )
    expect(panel.locator(".sw-erc7824")).to_contain_text("Nonce: 7", timeout=T)
    panel.locator(".sw-status").screenshot(path=str(ARTIFACTS / "status-panel.png"))
    page.screenshot(path=str(ARTIFACTS / "jupyterlab-widgets.png"), full_page=True)

    for name in ("selector-aggregator", "selector-channel", "status-panel"):
        assert (ARTIFACTS / f"{name}.png").stat().st_size > 1000
