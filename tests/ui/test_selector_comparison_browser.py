"""The dashboard's selector shows the measured figures after a comparison (issue 36), in a
real JupyterLab driven by Debian's Chromium through Playwright.

A throwaway JupyterLab on 127.0.0.1 owns the local sandbox (``SETTLEMENT_SHARED_SANDBOX=1``,
as ``make lab``). Its kernel runs a notebook this test writes: the dashboard, then a
comparison measured for real on that sandbox through the dashboard's own actions
(``measured_run.measure_methods``, the stand-in for ``compare_methods``: see its docstring
for the hook point), shown on the dashboard and published. The test then reads what the page
shows: each card's cost, time and prompts equal the published comparison's, formatted as the
renderer does; the cheapest and the fastest are marked; the method not measured says why; and
``GET /api/settlement`` (with the server's token) carries that comparison, whose gas is the
sum of its transactions' receipts on the sandbox's chain. Synchronisation is on what the page
shows and on the server's answers, never on sleeps.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import nbformat
import pytest
from browser_helpers import ARTIFACTS, Lab, LoopbackPage, app_env, start_lab
from playwright.sync_api import expect

from settlement_widgets.compare import comparison_path, parse_comparison
from settlement_widgets.networks import Network
from settlement_widgets.progress import format_seconds
from settlement_widgets.widgets.measured import format_native, format_prompts

pytestmark = pytest.mark.browser

NOTEBOOK = "compare_selector.ipynb"
#: generous: two CPU cores shared with other test runs
T = 120_000
CELLS = [
    "from settlement_widgets.dashboard import SettlementDashboard\n"
    "from settlement_widgets.notebook import open_session\n"
    "\n"
    "session = await open_session(progress=False)\n"
    "dashboard = SettlementDashboard.from_session(session)\n"
    "dashboard",
    # HOOK POINT: after the merge with i36-core, `comparison = await compare_methods(session,
    # Intent(...))` replaces measure_methods (the dashboard and the endpoint take either)
    "from measured_run import measure_methods\n"
    "from settlement_widgets.compare import publish_comparison\n"
    "\n"
    "comparison = await measure_methods(session, dashboard)\n"
    "dashboard.show_comparison(comparison)\n"
    "publish_comparison(comparison, session.network)\n"
    "print('compared')",
]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("compare-lab")
    root = tmp / "root"
    root.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)"}
    nb.cells = [nbformat.v4.new_code_cell(src) for src in CELLS]  # no outputs, no state
    nbformat.write(nb, root / NOTEBOOK)
    shutil.copy(Path(__file__).with_name("measured_run.py"), root)
    env = {
        "SETTLEMENT_NETWORK": "local",
        "SETTLEMENT_API_NETWORK": "local",
        "SETTLEMENT_SHARED_SANDBOX": "1",
        "SETTLEMENT_HOME": str(tmp / "home"),
        **app_env(),
    }
    # every cell in the DOM (no virtual scrolling)
    settings = {"@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"}}
    with start_lab(tmp, root, env, settings) as running:
        running.home = tmp / "home"  # type: ignore[attr-defined]
        yield running


def _receipt_gas(rpc_url: str, tx_hash: str) -> int:
    answer = httpx.post(
        rpc_url,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "eth_getTransactionReceipt",
            "params": [tx_hash],
        },
        timeout=30,
    ).json()
    return int(answer["result"]["gasUsed"], 16)


def test_the_dashboards_selector_shows_the_measured_figures(
    lab: Lab, loopback_page: LoopbackPage
) -> None:
    page = loopback_page.page
    page.set_default_timeout(T)
    started = time.monotonic()
    page.goto(lab.page_url(f"lab/workspaces/compare/tree/{NOTEBOOK}"))
    expect(page.locator("#jp-main-statusbar")).to_contain_text("Python 3 (ipykernel) | Idle")
    assert page.locator(".sw-measured").count() == 0  # nothing before the kernel runs it
    page.locator(".lm-MenuBar-itemLabel:text-is('Run')").click()
    page.locator(".lm-Menu-itemLabel:text-is('Run All Cells')").click()

    selector = page.locator(".jp-OutputArea-output .sw-dashboard .sw-selector")
    traceback = page.locator(".jp-OutputArea-output:has-text('Traceback (most recent call last)')")
    # done when the last cell has an execution count ("[2]:", not "[*]:") and printed
    last = page.locator(".jp-Notebook .jp-CodeCell").nth(len(CELLS) - 1)
    done = last.locator(".jp-InputArea-prompt").filter(has_text=re.compile(r"\[\d+\]"))
    expect(done.or_(traceback).first).to_be_visible()
    if traceback.count():
        pytest.fail("a cell failed in JupyterLab:\n" + traceback.first.inner_text()[-3000:])
    expect(last.locator(".jp-OutputArea-output")).to_contain_text("compared")
    expect(selector.locator(".sw-measured-run")).to_have_count(2)
    ran = time.monotonic() - started

    # what the kernel published is what the page shows, figure for figure
    published = comparison_path("local", lab.home)  # type: ignore[attr-defined]
    view = parse_comparison(published.read_bytes())
    assert {run.method for run in view.runs} == {"channel", "v4"}
    for run in view.runs:
        line = selector.locator(f".sw-measured[data-method='{run.method}'] .sw-measured-run")
        expect(line).to_have_attribute("data-label", run.label)
        expect(line.locator(".sw-measured-cost")).to_have_text(format_native(run.cost_native_wei))
        expect(line.locator(".sw-measured-time")).to_contain_text(format_seconds(run.wall_seconds))
        expect(line.locator(".sw-measured-time")).to_contain_text(f"{run.blocks} block")
        expect(line.locator(".sw-measured-prompts")).to_have_text(
            format_prompts(run.signature_prompts, run.transaction_prompts)
        )
        expect(line.locator(".sw-measured-usd")).to_have_count(0)  # no price on the sandbox
        marks = [
            m
            for m, label in (("cheapest", view.cheapest), ("fastest", view.fastest))
            if label == run.label
        ]
        expect(line.locator(".sw-mark")).to_have_count(len(marks))
        for mark in marks:
            expect(line.locator(f".sw-mark[data-mark='{mark}']")).to_be_visible()
        assert run.txs and run.gas_used > 0 and run.prompts > 0
    expect(selector.locator(".sw-measured[data-method='aggregator']")).to_contain_text(
        "not measured: " + view.unavailable["aggregator"]
    )
    expect(selector.locator(".sw-comparison")).to_contain_text(
        f"Measured on local, {view.measured_at.strftime('%Y-%m-%d %H:%M')}"
    )
    selector.screenshot(path=str(ARTIFACTS / "selector-comparison.png"))

    # the endpoint carries it, behind Jupyter's auth; its gas is the chain's receipts
    url = f"{lab.url}{lab.base}api/settlement"
    assert httpx.get(url, timeout=30).status_code == 403
    body = httpx.get(url, headers={"Authorization": f"token {lab.token}"}, timeout=30).json()
    assert body["comparison"] == view.to_json()
    profile = next((lab.home / "sandbox").rglob("profile.json"))  # type: ignore[attr-defined]
    rpc_url = Network.from_json(json.loads(profile.read_text())).rpc_url
    assert rpc_url
    for run in view.runs:
        assert run.gas_used == sum(_receipt_gas(rpc_url, tx.hash) for tx in run.txs)
    assert loopback_page.blocked == [], loopback_page.blocked
    print(f"notebook ran and the figures showed in {ran:.1f} s")
