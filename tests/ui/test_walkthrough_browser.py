"""The walkthrough as a researcher meets it: JupyterLab runs notebook 03, and the dashboard is
clicked through in JupyterLab and in Voila, in Debian's Chromium through Playwright.

One throwaway JupyterLab (with Voila's server extension) on 127.0.0.1 serves cleared copies of
``03_channel_lifecycle.ipynb`` and ``dashboard.ipynb`` as ``make lab`` does: with
``SETTLEMENT_SHARED_SANDBOX=1``, so the server owns one local sandbox and every kernel (Lab's
and Voila's) settles on it, and its explorer links are paths under the server
(``/settlement/explorer/...``) that answer with Jupyter's login. Every request that is not to
loopback is aborted. Synchronisation is on what the page shows (Playwright's auto-waiting
``expect``), never on sleeps. Screenshots go to ``test-artifacts/`` (gitignored; CI keeps them).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from browser_helpers import ARTIFACTS, ROOT, Lab, LoopbackPage, app_env, cleared_copy, start_lab
from playwright.sync_api import Locator, Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NOTEBOOKS = ROOT / "notebooks"
#: generous: two CPU cores shared with other test runs, and the server starts a sandbox
T = 240_000
#: the server's explorer (under its base_url: "/" here, another in test_links_open.py), not a
#: sandbox port that dies with a kernel
_BASE = r"^(?:/[\w.-]+)*"
EXPLORER_TX = re.compile(_BASE + r"/settlement/explorer/tx/0x[0-9a-f]{64}$")
EXPLORER_ADDRESS = re.compile(_BASE + r"/settlement/explorer/address/(0x[0-9a-fA-F]{40})$")
EXPLORER_CHAIN_TX = re.compile(_BASE + r"/settlement/explorer/chain/31338/tx/0x[0-9a-f]{64}$")
#: the v4 hook's permission bits (low 14 bits of its address): beforeSwap only
BEFORE_SWAP = 1 << 7
ALL_HOOK_FLAGS = (1 << 14) - 1
#: "balance 12 ytest.usd" in the dashboard's faucet and transfer log lines
BALANCE = re.compile(r"balance (\d+(?:\.\d+)?) (\S+)")


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
        "SETTLEMENT_SHARED_SANDBOX": "1",
        "SETTLEMENT_HOME": str(tmp / "home"),
        **app_env(),  # the app's Jupyter settings (Voila template, culling), as `make lab`
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


def _run_all(page: Page, lab: Lab, workspace: str, notebook: str) -> None:
    """Open ``notebook`` in a workspace of its own (the default one would reopen what earlier
    tests opened, and "Run All Cells" must reach this one) and run it to its last cell."""
    page.goto(lab.page_url(f"lab/workspaces/{workspace}/tree/{notebook}"))
    expect(page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab")).to_have_count(1)
    # the execution indicator can say idle before the session is connected; the status bar
    # text only appears once the kernel is really there
    expect(page.locator("#jp-main-statusbar")).to_contain_text("Python 3 (ipykernel) | Idle")
    page.locator(".lm-MenuBar-itemLabel:text-is('Run')").click()
    page.locator(".lm-Menu-itemLabel:text-is('Run All Cells')").click()
    # done when the last code cell has an execution count ("[n]:", not "[*]:" or "[ ]:")
    last_prompt = ".jp-Notebook .jp-CodeCell:last-child .jp-InputArea-prompt"
    _fail_on_traceback(page, f"{last_prompt}:text-matches('\\\\[\\\\d+\\\\]')")


def _explorer_answers(page: Page, lab: Lab, href: str, *, contains: str) -> None:
    """The link opens the server's explorer page (the page's login cookie goes along)."""
    response = page.request.get(f"{lab.url}{href}")
    assert response.status == 200, (href, response.status)
    assert contains in response.text()


def test_channel_lifecycle_runs_in_jupyterlab(lab: Lab, loopback_page: LoopbackPage) -> None:
    page = loopback_page.page
    page.set_default_timeout(T)
    _run_all(page, lab, "walkthrough-03", "03_channel_lifecycle.ipynb")

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
    _explorer_answers(page, lab, href, contains=tx_hash)
    panel.locator(".sw-status").screenshot(path=str(ARTIFACTS / "lab-03-status-panel.png"))
    page.screenshot(path=str(ARTIFACTS / "lab-03-channel-lifecycle.png"))
    assert (ARTIFACTS / "lab-03-status-panel.png").stat().st_size > 1000
    _nothing_left_loopback(loopback_page)


# --- the dashboard, clicked through ----------------------------------------------------------


def _act(dashboard: Locator, action: str, where: str) -> Locator:
    """Click ``action``'s button as a person does and wait for what it shows: new log lines,
    then the buttons enabled again (the lines are written before the action ends). Fails
    with the message of any error line or error box. Returns the first new log line."""
    lines = dashboard.locator(".sw-log-line")
    before = lines.count()
    button = dashboard.locator(f"button.sw-action-{action}")
    expect(button).to_be_enabled()
    button.click()
    expect(lines).not_to_have_count(before)
    expect(dashboard.locator("button.sw-action-faucet")).to_be_enabled()
    errors = dashboard.locator(".sw-log-line[data-level='error']")
    if errors.count():
        pytest.fail(f"{action} failed in {where}: {errors.first.inner_text()}")
    _no_error_box(dashboard, where)
    line = lines.nth(before)
    expect(line).to_have_attribute("data-level", "ok")
    return line


def _no_error_box(dashboard: Locator, where: str) -> None:
    # one error box per composite (dashboard, selector, panel): all of them stay empty
    text = "\n".join(dashboard.locator(".sw-error-output").all_inner_texts()).strip()
    assert not text, f"an error box appeared in {where}:\n{text[-2000:]}"


def _balance(line: Locator) -> tuple[float, str]:
    match = BALANCE.search(line.inner_text())
    assert match is not None, line.inner_text()
    return float(match.group(1)), match.group(2)


def _tx_href(line: Locator) -> str:
    link = line.locator("a")
    expect(link).to_have_attribute("href", EXPLORER_TX)
    href = link.get_attribute("href")
    assert href is not None
    return href


def _click_through(page: Page, lab: Lab, where: str) -> None:
    """Faucet twice, open, transfer twice, close; then settle two intents on v4 and rank the
    routes twice: each click's outcome is asserted on the page, and a click that is not
    allowed (a second open, a transfer after the close) is a disabled button."""
    shot = where.lower()
    dashboard = page.locator(".sw-dashboard")
    expect(dashboard).to_be_visible()
    selector = dashboard.locator(".sw-selector")
    expect(selector.locator(".sw-card-body[data-selected='true']")).to_have_attribute(
        "data-method", "channel"
    )
    _no_error_box(dashboard, where)
    page.screenshot(path=str(ARTIFACTS / f"{shot}-dashboard.png"), full_page=True)

    # channel: the faucet credits the off-chain balance, twice
    first, asset = _balance(_act(dashboard, "faucet", where))
    second, _ = _balance(_act(dashboard, "faucet", where))
    assert second > first > 0

    opened = _act(dashboard, "open-channel", where)
    expect(opened).to_contain_text("opened")
    _explorer_answers(page, lab, _tx_href(opened), contains="Created")
    panel = dashboard.locator(".sw-status-panel")
    status = panel.locator(".sw-row[data-label='Status'] .sw-value")
    expect(status).to_have_text("ACTIVE")
    # one channel per asset with the broker: a second open is not offered
    expect(dashboard.locator("button.sw-action-open-channel")).to_be_disabled()

    # two off-chain transfers of one token: instant, no gas, the balance goes down by one each
    balance = second
    for _ in range(2):
        sent = _act(dashboard, "transfer", where)
        expect(sent).to_contain_text("gas 0")
        now, shown_asset = _balance(sent)
        assert shown_asset == asset and now == pytest.approx(balance - 1)
        balance = now
    page.screenshot(path=str(ARTIFACTS / f"{shot}-dashboard-transferred.png"), full_page=True)

    closed = _act(dashboard, "close-channel", where)
    expect(closed).to_contain_text("closed on chain")
    expect(status).to_have_text("FINAL")
    settlement = panel.locator(".sw-status[data-mode='channel'] .sw-tx a")
    expect(settlement).to_have_attribute("href", _tx_href(closed))
    _explorer_answers(page, lab, _tx_href(closed), contains="Closed")
    expect(dashboard.locator("button.sw-action-transfer")).to_be_disabled()
    expect(dashboard.locator("button.sw-action-close-channel")).to_be_disabled()
    expect(dashboard.locator("button.sw-action-open-channel")).to_be_enabled()
    page.screenshot(path=str(ARTIFACTS / f"{shot}-dashboard-channel-closed.png"), full_page=True)

    # v4: the selector shows the real contracts, then two intents settle through the hook
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
    # a real hook address: its low 14 bits are its permissions, and ours only has beforeSwap
    assert int(match.group(1), 16) & ALL_HOOK_FLAGS == BEFORE_SWAP
    _explorer_answers(page, lab, hook_href, contains="PolicyHook")
    expect(dashboard.locator(".sw-actions-v4")).to_be_visible()
    expect(dashboard.locator(".sw-actions-channel")).to_be_hidden()
    settled: list[str] = []
    for _ in range(2):
        line = _act(dashboard, "settle-intent", where)
        expect(line).to_contain_text("settled")
        settled.append(_tx_href(line))
        link = dashboard.locator(".sw-status[data-mode='v4'] .sw-tx a")
        expect(link).to_have_attribute("href", settled[-1])
    assert settled[0] != settled[1]
    _explorer_answers(page, lab, settled[-1], contains="IntentSettled")
    page.screenshot(path=str(ARTIFACTS / f"{shot}-dashboard-v4-settled.png"), full_page=True)

    # aggregator, twice: the sandbox route server's routes ranked, the best executed on the
    # first chain and followed to DONE on the second, the receiving transaction linked
    selector.locator("button.sw-card-aggregator").click()
    expect(dashboard.locator(".sw-actions-aggregator")).to_be_visible()
    expect(selector.locator(".sw-card-body[data-method='aggregator'] .sw-pill")).to_have_text(
        "local"
    )
    received: list[str] = []
    for _ in range(2):
        line = _act(dashboard, "show-routes", where)
        expect(line).to_contain_text("routes ranked (local route server)")
        table = dashboard.locator(".sw-routes-table")
        expect(table).to_be_visible()
        expect(table).to_contain_text("LOCAL route server on this machine")
        assert table.locator("tbody tr").count() == 3
        done = dashboard.locator(".sw-log-line").last
        # the measured time beside the route's estimate, the amount exact with its symbol
        expect(done).to_contain_text("DONE/COMPLETED in ")
        expect(done).to_contain_text("s): sent 100 USDC on chain")
        expect(table.locator("th", has_text="Measured")).to_be_visible()
        link = done.locator("a")
        expect(link).to_have_attribute("href", EXPLORER_CHAIN_TX)
        href = link.get_attribute("href")
        assert href is not None
        received.append(href)
    assert received[0] != received[1]
    _explorer_answers(page, lab, received[-1], contains="TransferReleased")
    page.screenshot(path=str(ARTIFACTS / f"{shot}-dashboard-routes.png"), full_page=True)
    _no_error_box(dashboard, where)


def test_dashboard_clicked_through_in_jupyterlab(lab: Lab, loopback_page: LoopbackPage) -> None:
    """JupyterLab 4.6 with ipykernel 7 delivers the clicks on subshell threads: every action
    must still run on the kernel's loop, where the dashboard's providers live."""
    page = loopback_page.page
    page.set_default_timeout(T)
    _run_all(page, lab, "dashboard-clicks", "dashboard.ipynb")
    _click_through(page, lab, "Lab")
    _nothing_left_loopback(loopback_page)


def test_dashboard_clicked_through_in_voila(lab: Lab, loopback_page: LoopbackPage) -> None:
    page = loopback_page.page
    page.set_default_timeout(T)
    page.goto(lab.page_url("voila/render/dashboard.ipynb"))
    _click_through(page, lab, "Voila")
    _nothing_left_loopback(loopback_page)


def _nothing_left_loopback(page: LoopbackPage) -> None:
    """The page worked offline: it did not even try to fetch from another host (no CDN)."""
    assert page.blocked == [], page.blocked
