"""Every link a reader can click opens: each walkthrough notebook run in JupyterLab under a
shared-sandbox server with a non-default ``base_url`` (as on Binder, ``/user/<name>/``), and
the dashboard after its actions.

One throwaway JupyterLab on 127.0.0.1 (``SETTLEMENT_SHARED_SANDBOX=1``, the app's settings, as
``make lab`` and Binder run it) with ``--ServerApp.base_url=/reader/x/`` serves cleared copies
of the notebooks. Each is run top to bottom in the page; then every ``<a href>`` in the cell
outputs (our tables and widgets, pandas', and the URLs JupyterLab makes links in text) is
resolved as the browser resolves it and fetched with the page's own login (its cookie): each
must answer 200, and none may point at a loopback port (a private sandbox's, dead for a reader
elsewhere). Synchronisation is on what the page shows, never on sleeps.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from browser_helpers import ROOT, Lab, LoopbackPage, app_env, cleared_copy, start_lab
from playwright.sync_api import Page
from test_walkthrough_browser import T, _click_through, _run_all

from settlement_widgets.links import is_loopback_url

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NOTEBOOKS = ROOT / "notebooks"
BASE = "/reader/x/"
#: notebooks whose outputs must hold explorer links under the server (02 shows none; 06 runs
#: a private v1 sandbox on a v0.5 server, whose hashes are text, not links)
LINKED = {
    "01_settlement_methods.ipynb",
    "03_channel_lifecycle.ipynb",
    "04_v4_contracts.ipynb",
    "05_aggregator_routes.ipynb",
}
WALKTHROUGHS = sorted(p.name for p in NOTEBOOKS.glob("0*.ipynb"))


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("links-lab")
    root = tmp / "root"
    root.mkdir()
    for path in NOTEBOOKS.glob("*.ipynb"):
        cleared_copy(path, root)
    env = {
        "SETTLEMENT_NETWORK": "local",
        "SETTLEMENT_API_NETWORK": "local",
        "SETTLEMENT_SHARED_SANDBOX": "1",
        "SETTLEMENT_HOME": str(tmp / "home"),
        **app_env(),
    }
    settings = {"@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"}}
    with start_lab(
        tmp, root, env, settings, extra_args=[f"--ServerApp.base_url={BASE}"]
    ) as running:
        assert running.base == BASE
        yield running


def _links(page: Page, scope: str) -> list[str]:
    """Every link under ``scope``, absolute, as the browser resolves its ``href``."""
    found: list[str] = page.eval_on_selector_all(
        f"{scope} a[href]", "anchors => anchors.map(a => a.href)"
    )
    return sorted(set(found))


def _all_open(page: Page, lab: Lab, links: list[str], where: str) -> None:
    loopback = [link for link in links if is_loopback_url(link) and not link.startswith(lab.url)]
    assert not loopback, f"{where}: links to a loopback port: {loopback}"
    for link in links:
        assert link.startswith(lab.url + BASE), f"{where}: {link} is not under the server"
        assert urlsplit(link).path.startswith(BASE)
        response = page.request.get(link)  # the page's cookie: the reader's login
        assert response.status == 200, (where, link, response.status)


@pytest.mark.parametrize("name", WALKTHROUGHS)
def test_every_link_of_a_notebook_run_under_the_server_opens(
    name: str, lab: Lab, loopback_page: LoopbackPage
) -> None:
    page = loopback_page.page
    page.set_default_timeout(T)
    _run_all(page, lab, f"links-{name.split('_')[0]}", name)
    links = _links(page, ".jp-OutputArea-output")
    if name in LINKED:
        explorer = [link for link in links if "/settlement/explorer/" in link]
        assert explorer, f"{name} shows no explorer link: {links}"
    _all_open(page, lab, links, name)
    assert loopback_page.blocked == []


def test_every_dashboard_link_opens_after_its_actions(
    lab: Lab, loopback_page: LoopbackPage
) -> None:
    page = loopback_page.page
    page.set_default_timeout(T)
    _run_all(page, lab, "links-dashboard", "dashboard.ipynb")
    _click_through(page, lab, "Links")
    links = _links(page, ".sw-dashboard")
    assert [link for link in links if "/settlement/explorer/chain/31338/tx/" in link], links
    _all_open(page, lab, links, "the dashboard")
    assert loopback_page.blocked == []
