"""The walkthrough as a researcher meets it: JupyterLab runs notebook 03, Voila serves the
dashboard, both in Debian's Chromium through Playwright.

One throwaway JupyterLab (with Voila's server extension) on 127.0.0.1 serves cleared copies of
``03_channel_lifecycle.ipynb`` and ``dashboard.ipynb`` with ``SETTLEMENT_NETWORK=local``: each
kernel starts its own deterministic sandbox. Every request that is not to loopback is
aborted. Synchronisation is on what the page shows (Playwright's auto-waiting ``expect``),
never on sleeps. Screenshots go to ``test-artifacts/`` (gitignored).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from browser_helpers import ARTIFACTS, ROOT, Lab, LoopbackPage, cleared_copy, start_lab
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NOTEBOOKS = ROOT / "notebooks"
#: generous: two CPU cores shared with other test runs, and each kernel starts a sandbox
T = 240_000
EXPLORER_TX = re.compile(r"^http://127\.0\.0\.1:\d+/explorer/tx/0x[0-9a-f]{64}$")
EXPLORER_ADDRESS = re.compile(r"^http://127\.0\.0\.1:\d+/explorer/address/(0x[0-9a-fA-F]{40})$")
#: the v4 hook's permission bits (low 14 bits of its address): beforeSwap only
BEFORE_SWAP = 1 << 7
ALL_HOOK_FLAGS = (1 << 14) - 1
COSMETIC_CDNS = {"cdn.jsdelivr.net", "cdnjs.cloudflare.com"}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("walkthrough-lab")
    root = tmp / "root"
    root.mkdir()
    for name in ("03_channel_lifecycle.ipynb", "dashboard.ipynb"):
        cleared_copy(NOTEBOOKS / name, root)
    env = {
        "SETTLEMENT_NETWORK": "local",
        "SETTLEMENT_API_NETWORK": "local",
        "SETTLEMENT_HOME": str(tmp / "home"),
    }
    # every cell in the DOM (no virtual scrolling), so the panel can be found wherever it is
    settings = {"@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"}}
    with start_lab(tmp, root, env, settings) as running:
        yield running


def _fail_on_traceback(page: Page, done: str) -> None:
    """Wait until ``done`` matches or a cell shows a traceback; fail with the traceback."""
    traceback = page.locator(".jp-OutputArea-output:has-text('Traceback (most recent call last)')")
    expect(page.locator(done).or_(traceback).first).to_be_visible(timeout=T)
    if traceback.count():
        pytest.fail("a cell failed in JupyterLab:\n" + traceback.first.inner_text()[-3000:])


def test_channel_lifecycle_runs_in_jupyterlab(lab: Lab, loopback_page: LoopbackPage) -> None:
    page = loopback_page.page
    page.set_default_timeout(T)
    page.goto(lab.page_url("lab/tree/03_channel_lifecycle.ipynb"))
    expect(page.locator(".jp-Notebook .jp-Cell").first).to_be_visible()
    # the execution indicator can say idle before the session is connected; the status bar
    # text only appears once the kernel is really there (toolchain-notes §6.2)
    expect(page.locator("#jp-main-statusbar")).to_contain_text("Python 3 (ipykernel) | Idle")
    assert page.locator(".sw-status-panel").count() == 0  # cleared: nothing before a run

    page.locator(".lm-MenuBar-itemLabel:text-is('Run')").click()
    page.locator(".lm-Menu-itemLabel:text-is('Run All Cells')").click()

    # done when the last code cell has an execution count ("[n]:", not "[*]:" or "[ ]:")
    last_prompt = ".jp-Notebook .jp-CodeCell:last-child .jp-InputArea-prompt"
    _fail_on_traceback(page, f"{last_prompt}:text-matches('\\\\[\\\\d+\\\\]')")

    panel = page.locator(".jp-OutputArea-output .sw-status-panel")
    expect(panel).to_have_count(1)
    status = panel.locator(".sw-row[data-label='Status'] .sw-value")
    expect(status).to_have_text("FINAL")
    link = panel.locator(".sw-tx a")
    expect(link).to_have_attribute("href", EXPLORER_TX)
    href = link.get_attribute("href")
    assert href is not None
    tx_hash = href.rsplit("/", 1)[1]
    expect(link).to_contain_text(tx_hash[:10] + "...")
    # the panel links the dispute's close, the transaction the notebook printed last
    expect(
        page.locator(".jp-OutputArea-output").filter(has_text=f"Custody.close {tx_hash}")
    ).to_have_count(1)
    expect(
        page.locator(".jp-OutputArea-output").filter(
            has_text="panel: final; endpoint running: False"
        )
    ).to_have_count(1)
    panel.locator(".sw-status").screenshot(path=str(ARTIFACTS / "lab-03-status-panel.png"))
    page.screenshot(path=str(ARTIFACTS / "lab-03-channel-lifecycle.png"))
    assert (ARTIFACTS / "lab-03-status-panel.png").stat().st_size > 1000
    _only_cosmetic_requests_left_loopback(loopback_page)


def test_dashboard_in_voila_shows_v4_addresses_and_settles(
    lab: Lab, loopback_page: LoopbackPage
) -> None:
    page = loopback_page.page
    page.set_default_timeout(T)
    page.goto(lab.page_url("voila/render/dashboard.ipynb"))
    dashboard = page.locator(".sw-dashboard")
    expect(dashboard).to_be_visible()
    selector = dashboard.locator(".sw-selector")
    expect(selector.locator(".sw-card-body[data-selected='true']")).to_have_attribute(
        "data-method", "channel"
    )
    page.screenshot(path=str(ARTIFACTS / "voila-dashboard.png"))

    # the click goes to the kernel, which re-renders the cards and the address box
    selector.locator("button.sw-card-v4").click()
    box = selector.locator(".sw-address-box[data-method='v4']")
    expect(box).to_be_visible()
    expect(box.locator(".sw-address")).to_have_count(3)
    for label in ("PolicyHook", "Adapter", "PoolManager"):
        expect(box.locator(f".sw-address[data-label='{label}'] a")).to_have_attribute(
            "href", EXPLORER_ADDRESS
        )
    hook_href = box.locator(".sw-address[data-label='PolicyHook'] a").get_attribute("href")
    assert hook_href is not None
    match = EXPLORER_ADDRESS.match(hook_href)
    assert match is not None
    hook = match.group(1)
    expect(box.locator(".sw-address[data-label='PolicyHook']")).to_contain_text(hook)
    # a real hook address: its low 14 bits are its permissions, and ours only has beforeSwap
    assert int(hook, 16) & ALL_HOOK_FLAGS == BEFORE_SWAP
    # the link opens the sandbox's explorer page of that contract
    explorer = page.request.get(hook_href)
    assert explorer.status == 200 and "PolicyHook" in explorer.text()
    expect(dashboard.locator(".sw-actions-v4")).to_be_visible()
    expect(dashboard.locator(".sw-actions-channel")).to_be_hidden()
    selector.screenshot(path=str(ARTIFACTS / "voila-selector-v4.png"))

    # a real settlement through the policy hook, scheduled on the kernel's loop
    dashboard.locator("button.sw-action-settle-intent").click()
    settled = dashboard.locator(".sw-status[data-mode='v4'] .sw-tx a")
    expect(settled).to_have_attribute("href", EXPLORER_TX)
    expect(dashboard.locator(".sw-log-line[data-level='ok']")).to_contain_text("settled")
    expect(dashboard.locator("button.sw-action-settle-intent")).to_be_enabled()
    page.screenshot(path=str(ARTIFACTS / "voila-dashboard-v4-settled.png"), full_page=True)
    _only_cosmetic_requests_left_loopback(loopback_page)


CHANNEL_ACTIONS = ("faucet", "open-channel", "transfer", "close-channel")


def _click_every_channel_action(page: Page, where: str) -> None:
    """Faucet, open, transfer, close on the dashboard as a person clicks them, each waited
    for on what the page shows (the next log line, the buttons enabled again)."""
    dashboard = page.locator(".sw-dashboard")
    log_lines = dashboard.locator(".sw-log-line")
    for action in CHANNEL_ACTIONS:
        before = log_lines.count()
        button = dashboard.locator(f"button.sw-action-{action}")
        expect(button).to_be_enabled()
        button.click()
        expect(log_lines).not_to_have_count(before)
        expect(dashboard.locator("button.sw-action-faucet")).to_be_enabled()
        errors = dashboard.locator(".sw-log-line[data-level='error']")
        if errors.count():
            pytest.fail(f"{action} failed in {where}: {errors.first.inner_text()}")
    status = dashboard.locator(".sw-status-panel .sw-row[data-label='Status'] .sw-value")
    expect(status).to_have_text("FINAL")
    expect(dashboard.locator(".sw-status-panel .sw-tx a")).to_have_attribute("href", EXPLORER_TX)


def test_dashboard_channel_actions_in_jupyterlab(lab: Lab, loopback_page: LoopbackPage) -> None:
    """JupyterLab 4.6 with ipykernel 7 delivers the clicks on subshell threads: every action
    must still run on the kernel's loop, where the dashboard's providers live."""
    page = loopback_page.page
    page.set_default_timeout(T)
    # a workspace of its own: the default one would reopen the notebooks earlier tests opened,
    # and "Run All Cells" must reach this one
    page.goto(lab.page_url("lab/workspaces/dashboard-clicks/tree/dashboard.ipynb"))
    expect(page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab")).to_have_count(1)
    expect(page.locator("#jp-main-statusbar")).to_contain_text("Python 3 (ipykernel) | Idle")
    page.locator(".lm-MenuBar-itemLabel:text-is('Run')").click()
    page.locator(".lm-Menu-itemLabel:text-is('Run All Cells')").click()
    last_prompt = ".jp-Notebook .jp-CodeCell:last-child .jp-InputArea-prompt"
    _fail_on_traceback(page, f"{last_prompt}:text-matches('\\\\[\\\\d+\\\\]')")
    _click_every_channel_action(page, "JupyterLab")
    page.screenshot(path=str(ARTIFACTS / "lab-dashboard-channel-closed.png"), full_page=True)


def test_dashboard_channel_actions_in_voila(lab: Lab, loopback_page: LoopbackPage) -> None:
    page = loopback_page.page
    page.set_default_timeout(T)
    page.goto(lab.page_url("voila/render/dashboard.ipynb"))
    expect(page.locator(".sw-dashboard")).to_be_visible()
    _click_every_channel_action(page, "Voila")
    page.screenshot(path=str(ARTIFACTS / "voila-dashboard-channel-closed.png"), full_page=True)
    _only_cosmetic_requests_left_loopback(loopback_page)


def _only_cosmetic_requests_left_loopback(page: LoopbackPage) -> None:
    """The page worked offline; what it tried to fetch from elsewhere (and was refused) is
    only the icon font and MathJax that Voila's template links from CDNs (toolchain §6.3)."""
    hosts = {urlsplit(url).hostname for url in page.blocked}
    assert hosts <= COSMETIC_CDNS, page.blocked
