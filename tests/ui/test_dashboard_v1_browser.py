"""The dashboard on Nitrolite v1, clicked in Voila as a person does: a JupyterLab started as
``SETTLEMENT_PROTOCOL=v1 make lab`` starts it (its sandbox runs a Nitronode and a
ChannelHub), and the channel buttons drive the v1 provider: faucet twice (off-chain v1
transfers), open (``ChannelHub.createChannel`` carrying the faucet's credit), two transfers,
close. Outcomes are read from the page and from the server's explorer; no sleeps."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from browser_helpers import ARTIFACTS, ROOT, Lab, LoopbackPage, app_env, cleared_copy, start_lab
from playwright.sync_api import expect
from test_walkthrough_browser import (
    T,
    _act,
    _balance,
    _explorer_answers,
    _no_error_box,
    _nothing_left_loopback,
    _tx_href,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("v1-lab")
    root = tmp / "root"
    root.mkdir()
    cleared_copy(ROOT / "notebooks" / "dashboard.ipynb", root)
    env = {
        "SETTLEMENT_NETWORK": "local",
        "SETTLEMENT_API_NETWORK": "local",
        "SETTLEMENT_SHARED_SANDBOX": "1",
        "SETTLEMENT_PROTOCOL": "v1",
        "SETTLEMENT_HOME": str(tmp / "home"),
        **app_env(),
    }
    with start_lab(tmp, root, env, {}) as running:
        yield running


def test_the_v1_dashboard_clicked_through_in_voila(lab: Lab, loopback_page: LoopbackPage) -> None:
    page = loopback_page.page
    page.set_default_timeout(T)
    page.goto(lab.page_url("voila/render/dashboard.ipynb"))
    where = "Voila (v1)"
    dashboard = page.locator(".sw-dashboard")
    expect(dashboard).to_be_visible()
    _no_error_box(dashboard, where)

    first, asset = _balance(_act(dashboard, "faucet", where))
    second, _ = _balance(_act(dashboard, "faucet", where))
    assert second == first + 10

    opened = _act(dashboard, "open-channel", where)
    expect(opened).to_contain_text("opened")
    _explorer_answers(page, lab, _tx_href(opened), contains="ChannelCreated")
    status = dashboard.locator(".sw-status-panel .sw-row[data-label='Status'] .sw-value")
    expect(status).to_have_text("ACTIVE")
    expect(dashboard.locator("button.sw-action-open-channel")).to_be_disabled()

    balance = second
    for _ in range(2):
        sent = _act(dashboard, "transfer", where)
        expect(sent).to_contain_text("gas 0")
        now, shown = _balance(sent)
        assert shown == asset and now == pytest.approx(balance - 1)
        balance = now

    closed = _act(dashboard, "close-channel", where)
    expect(closed).to_contain_text("closed on chain")
    expect(status).to_have_text("FINAL")
    _explorer_answers(page, lab, _tx_href(closed), contains="ChannelClosed")
    expect(dashboard.locator("button.sw-action-transfer")).to_be_disabled()
    expect(dashboard.locator("button.sw-action-open-channel")).to_be_enabled()
    page.screenshot(path=str(ARTIFACTS / "voila-v1-dashboard-closed.png"), full_page=True)
    _no_error_box(dashboard, where)
    # every label says v1 (issue 34): the log opens with the node, not a broker; the
    # selector lists the ChannelHub, not v0.5's Custody and Adjudicator; the panel names it
    expect(opened).to_contain_text("opened with the node")
    addresses = dashboard.locator(".sw-selector .sw-address")
    expect(addresses).to_have_count(1)
    expect(addresses.first).to_have_attribute("data-label", "ChannelHub")
    expect(dashboard.locator(".sw-status-panel .sw-row[data-label='ChannelHub']")).to_be_visible()
    assert dashboard.locator(".sw-status-panel .sw-row[data-label='Adjudicator']").count() == 0
    # and the server's start log says v1
    assert any("serving the local network, channel: Nitrolite v1" in line for line in lab.log), (
        "".join(lab.log)[-3000:]
    )
    _nothing_left_loopback(loopback_page)
