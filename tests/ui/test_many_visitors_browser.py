"""Many visitors, one server: no visitor's channel blocks another's (issue 34).

One throwaway JupyterLab with Voila, started as ``make lab`` starts it
(``SETTLEMENT_SHARED_SANDBOX=1``: the server owns one sandbox shared by every kernel), in
Debian's Chromium where every request that is not to loopback is aborted:

- tab A opens the dashboard in Voila, opens a channel, and goes away without closing it (the
  page is closed without Voila's shutdown request, as a crashed browser leaves it);
- tab B opens the dashboard afresh: it opens a channel, transfers and closes it, and does it
  again (no "close it first" with Close disabled: each kernel acts with wallets of its own;
  on v0.5 the faucet credits the second round's transfer, the close paid out the first);
- then, on the v0.5 server, notebook 03 runs top to bottom in JupyterLab, in a kernel of the
  same server, on the same sandbox;
- the same on a server started with ``SETTLEMENT_PROTOCOL=v1``: tab A leaves a channel open,
  tab B opens, transfers, closes and opens again (the second open funds the channel from the
  wallet, since after a close an empty v1 channel cannot open) and closes.

Synchronisation is on what the pages show (Playwright's auto-waiting ``expect``); no sleeps.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from browser_helpers import ARTIFACTS, ROOT, Lab, LoopbackPage, app_env, cleared_copy, start_lab
from playwright.sync_api import Locator, Page, Route, expect
from test_walkthrough_browser import (
    T,
    _act,
    _balance,
    _explorer_answers,
    _no_error_box,
    _nothing_left_loopback,
    _run_all,
    _tx_href,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NOTEBOOKS = ROOT / "notebooks"


@pytest.fixture(scope="module", params=["v0.5", "v1"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Lab, str]]:
    """A JupyterLab whose sandbox speaks ``protocol`` (v0.5, or v1 as
    ``SETTLEMENT_PROTOCOL=v1 make lab`` starts it), and that protocol."""
    protocol = request.param
    tmp = tmp_path_factory.mktemp(f"visitors-{protocol}")
    root = tmp / "root"
    root.mkdir()
    for name in ("03_channel_lifecycle.ipynb", "dashboard.ipynb"):
        cleared_copy(NOTEBOOKS / name, root)
    env = {
        "SETTLEMENT_NETWORK": "local",
        "SETTLEMENT_API_NETWORK": "local",
        "SETTLEMENT_SHARED_SANDBOX": "1",
        "SETTLEMENT_PROTOCOL": protocol,
        "SETTLEMENT_HOME": str(tmp / "home"),
        **app_env(),
    }
    settings = {"@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"}}
    with start_lab(tmp, root, env, settings) as running:
        yield running, protocol


def _new_tab(loopback_page: LoopbackPage) -> Page:
    """Another tab of the same browser (same login), loopback only like the first."""
    page = loopback_page.page.context.new_page()

    def only_loopback(route: Route) -> None:
        host = urlsplit(route.request.url).hostname
        if host in ("127.0.0.1", "localhost") or route.request.url.startswith("data:"):
            route.continue_()
        else:
            loopback_page.blocked.append(route.request.url)
            route.abort()

    page.route("**/*", only_loopback)
    page.set_default_timeout(T)
    return page


def _dashboard(page: Page, lab: Lab) -> Locator:
    page.goto(lab.page_url("voila/render/dashboard.ipynb"))
    dashboard = page.locator(".sw-dashboard")
    expect(dashboard).to_be_visible()
    return dashboard


def _status(dashboard: Locator) -> Locator:
    return dashboard.locator(".sw-status-panel .sw-row[data-label='Status'] .sw-value")


def _open(page: Page, lab: Lab, dashboard: Locator, where: str) -> Locator:
    opened = _act(dashboard, "open-channel", where)
    expect(opened).to_contain_text("opened")
    expect(opened).not_to_contain_text("close it first")
    _explorer_answers(page, lab, _tx_href(opened), contains="0x")
    expect(_status(dashboard)).to_have_text("ACTIVE")
    expect(dashboard.locator("button.sw-action-close-channel")).to_be_enabled()
    return opened


def _close(page: Page, lab: Lab, dashboard: Locator, where: str) -> None:
    closed = _act(dashboard, "close-channel", where)
    expect(closed).to_contain_text("closed on chain")
    expect(_status(dashboard)).to_have_text("FINAL")
    _explorer_answers(page, lab, _tx_href(closed), contains="0x")
    expect(dashboard.locator("button.sw-action-open-channel")).to_be_enabled()


def _transfer(dashboard: Locator, where: str) -> None:
    sent = _act(dashboard, "transfer", where)
    expect(sent).to_contain_text("gas 0")


def test_one_visitors_open_channel_blocks_no_other(
    server: tuple[Lab, str], loopback_page: LoopbackPage
) -> None:
    lab, protocol = server
    page_a = loopback_page.page
    page_a.set_default_timeout(T)

    # tab A: opens a channel and goes away without closing it
    board_a = _dashboard(page_a, lab)
    _open(page_a, lab, board_a, "tab A")
    page_a.screenshot(path=str(ARTIFACTS / f"visitors-{protocol}-tab-a.png"), full_page=True)
    page_a.close(run_before_unload=False)

    # tab B: a fresh visitor opens, transfers, closes, and opens again
    page_b = _new_tab(loopback_page)
    board_b = _dashboard(page_b, lab)
    expect(board_b.locator("button.sw-action-open-channel")).to_be_enabled()
    credit, _ = _balance(_act(board_b, "faucet", "tab B"))
    assert credit > 0
    _open(page_b, lab, board_b, "tab B")
    _transfer(board_b, "tab B")
    _close(page_b, lab, board_b, "tab B")
    if protocol == "v0.5":  # the close paid the off-chain balance out: ask for more
        _act(board_b, "faucet", "tab B, again")
    reopened = _open(page_b, lab, board_b, "tab B, again")
    if protocol == "v1":  # an empty v1 channel cannot open after a close: a deposit funds it
        expect(reopened).to_contain_text("deposited from the wallet")
    _transfer(board_b, "tab B, again")
    _close(page_b, lab, board_b, "tab B, again")
    page_b.screenshot(path=str(ARTIFACTS / f"visitors-{protocol}-tab-b.png"), full_page=True)
    _no_error_box(board_b, "tab B")

    if protocol == "v0.5":
        # notebook 03 runs top to bottom in a kernel of the same server, on its sandbox
        page_c = _new_tab(loopback_page)
        _run_all(page_c, lab, "visitors-03", "03_channel_lifecycle.ipynb")
        expect(
            page_c.locator(".jp-OutputArea-output").filter(has_text="the Jupyter server's sandbox")
        ).not_to_have_count(0)
        panel = page_c.locator(".jp-OutputArea-output .sw-status-panel")
        expect(panel.locator(".sw-row[data-label='Status'] .sw-value")).to_have_text("FINAL")
        page_c.screenshot(path=str(ARTIFACTS / "visitors-lab-03.png"))
    _nothing_left_loopback(loopback_page)
