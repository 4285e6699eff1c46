"""The browser tests' page fixture: Debian's Chromium, loopback only (see browser_helpers)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from browser_helpers import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, LoopbackPage
from playwright.sync_api import Route, expect, sync_playwright

#: ``expect`` waits as long as the pages do (each test sets its page's default timeout to its
#: own T); Playwright's 5 s default is shorter than an action that mines on two chains, and a
#: person at the browser waits for it too
expect.set_options(timeout=240_000)


@pytest.fixture
def loopback_page() -> Iterator[LoopbackPage]:
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: apt-get install -y chromium"
    ARTIFACTS.mkdir(exist_ok=True)
    blocked: list[str] = []

    def only_loopback(route: Route) -> None:
        host = urlsplit(route.request.url).hostname
        if host in ("127.0.0.1", "localhost") or route.request.url.startswith("data:"):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 1000})
        page = context.new_page()
        page.route("**/*", only_loopback)
        try:
            yield LoopbackPage(page, blocked)
        finally:
            context.close()
            browser.close()
