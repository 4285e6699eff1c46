"""The dashboard as a Voila app, served the way ``make lab`` and Binder serve it (issue 17).

Each test runs a throwaway JupyterLab on 127.0.0.1 with the app's Jupyter settings on its
search paths (:func:`browser_helpers.app_env`, the same directories ``make lab`` and
``binder/start`` use), serving a copy of ``notebooks/dashboard.ipynb`` on the local sandbox,
and opens ``/voila/render/dashboard.ipynb`` in Debian's Chromium, where every request that is
not to loopback is aborted and recorded.

- As shipped: the page is the app (no developer notes, no code), it asks nothing of any other
  host (stock Voila pulls Font Awesome and MathJax from public CDNs), and the server runs the
  shipped kernel culler.
- Culling: the same settings with a culling timeout shortened on the command line. A page that
  stays open keeps its kernel; a page that goes away without Voila's shutdown request (a
  crashed browser, a dropped network) leaves a kernel the culler removes.

Synchronisation is on what the page shows (Playwright's auto-waiting ``expect``) and on the
server's kernel list and log, polled with deadlines; never on sleeps.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from browser_helpers import (
    ARTIFACTS,
    JUPYTER_APP_CONFIG,
    ROOT,
    Lab,
    LoopbackPage,
    app_env,
    cleared_copy,
    start_lab,
)
from playwright.sync_api import Page, expect
from traitlets.config import Config, PyFileConfigLoader

from tests.server_banner import process_until_banner

pytestmark = [pytest.mark.browser, pytest.mark.slow]

DASHBOARD = ROOT / "notebooks" / "dashboard.ipynb"
#: generous: two CPU cores shared with other test runs, and each kernel starts a sandbox
T = 240_000
#: from the developer notes (the markdown cell) and from the code cells of dashboard.ipynb
DEVELOPER_TEXT = ("Pick a settlement method, then act on it for real", "SETTLEMENT_PRIVATE_KEY")
CODE_TEXT = ("open_session", "SettlementDashboard.from_session", "filterwarnings")
CULLER_STARTED = re.compile(
    r"Culling kernels with idle durations > (\d+) seconds at (\d+) second intervals"
)
#: the test's culling timeout: long enough for a loaded machine to connect the page to its
#: kernel once Voila has run the notebook, short enough to wait for twice
CULL_IDLE_TIMEOUT = 8
CULL_INTERVAL = 1


def _shipped_server_config() -> Config:
    return PyFileConfigLoader(
        "jupyter_server_config.py", path=str(JUPYTER_APP_CONFIG)
    ).load_config()


def _app_root(tmp: Path) -> Path:
    root = tmp / "root"
    root.mkdir()
    cleared_copy(DASHBOARD, root)
    return root


def _env(tmp: Path) -> dict[str, str]:
    return {
        **app_env(),
        "SETTLEMENT_NETWORK": "local",
        "SETTLEMENT_API_NETWORK": "local",
        "SETTLEMENT_HOME": str(tmp / "home"),
    }


def _wait_until(condition: Callable[[], bool], seconds: float, what: str) -> None:
    """Poll ``condition`` (an observable server state) until it holds; fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"gave up after {seconds} s waiting for {what}"
        time.sleep(0.25)  # a poll interval, not a synchronisation


def _kernels(lab: Lab) -> dict[str, dict[str, object]]:
    r = httpx.get(f"{lab.url}/api/kernels", params={"token": lab.token}, timeout=10)
    r.raise_for_status()
    return {k["id"]: k for k in r.json()}


def _log_match(lab: Lab, pattern: re.Pattern[str]) -> re.Match[str] | None:
    return next((m for line in list(lab.log) if (m := pattern.search(line))), None)


def _open_dashboard(lab: Lab, page: Page) -> str:
    """Open the Voila app, wait for the dashboard, return the id of the page's kernel."""
    page.set_default_timeout(T)
    page.goto(lab.page_url("voila/render/dashboard.ipynb"))
    expect(page.locator(".sw-dashboard")).to_be_visible()
    kernel_id = page.evaluate(
        "() => JSON.parse(document.getElementById('jupyter-config-data').textContent).kernelId"
    )
    assert isinstance(kernel_id, str) and kernel_id
    return kernel_id


def test_voila_serves_the_app_without_notes_code_or_outside_requests(
    tmp_path: Path, loopback_page: LoopbackPage
) -> None:
    page = loopback_page.page
    with start_lab(tmp_path, _app_root(tmp_path), _env(tmp_path)) as lab:
        _open_dashboard(lab, page)
        # everything the page loads on its own (stylesheets, fonts, the typesetter) has been
        # asked for by now
        page.wait_for_load_state("networkidle")
        shown = page.locator("body").inner_text()
        source = page.content()
        # the app is there (so the absences below are about a rendered page) ...
        expect(page.locator(".sw-dashboard .sw-selector")).to_be_visible()
        assert page.locator(".sw-dashboard").inner_text().strip()
        # ... and neither the developer notes nor the code, not even hidden in the page
        for text in (*DEVELOPER_TEXT, *CODE_TEXT):
            assert text not in shown, f"{text!r} is shown in the Voila app"
            assert text not in source, f"{text!r} is in the Voila page's HTML"
        # no request tried to leave loopback: no CDN stylesheet, font or script
        assert loopback_page.blocked == []
        # Font Awesome (for widget icons) still comes from Voila's own bundle, served locally
        icon_font = page.evaluate(
            """() => {
                const i = document.createElement('i');
                i.className = 'fa fa-check';
                document.body.appendChild(i);
                const family = getComputedStyle(i, '::before').fontFamily;
                i.remove();
                return family;
            }"""
        )
        assert "Font Awesome" in icon_font
        page.screenshot(path=str(ARTIFACTS / "voila-app.png"), full_page=True)
        assert (ARTIFACTS / "voila-app.png").stat().st_size > 1000

        # the server runs the culler with the shipped settings (it starts with the first kernel)
        shipped = _shipped_server_config().MappingKernelManager
        _wait_until(lambda: _log_match(lab, CULLER_STARTED) is not None, 30, "the culler's log")
        started = _log_match(lab, CULLER_STARTED)
        assert started is not None
        assert (int(started.group(1)), int(started.group(2))) == (
            shipped.cull_idle_timeout,
            shipped.cull_interval,
        )
        # ... and leaves the kernels of open pages and running cells alone
        for flag in ("even with connected clients", "even if busy"):
            assert not any(f"Culling kernels {flag}" in ln for ln in lab.log), flag


def test_an_open_page_keeps_its_kernel_and_an_abandoned_one_is_culled(
    tmp_path: Path, loopback_page: LoopbackPage
) -> None:
    page = loopback_page.page
    override = [
        f"--MappingKernelManager.cull_idle_timeout={CULL_IDLE_TIMEOUT}",
        f"--MappingKernelManager.cull_interval={CULL_INTERVAL}",
    ]
    with start_lab(tmp_path, _app_root(tmp_path), _env(tmp_path), extra_args=override) as lab:
        kernel_id = _open_dashboard(lab, page)
        _wait_until(lambda: _log_match(lab, CULLER_STARTED) is not None, 30, "the culler's log")
        started = _log_match(lab, CULLER_STARTED)
        assert started is not None and started.groups() == (
            str(CULL_IDLE_TIMEOUT),
            str(CULL_INTERVAL),
        )

        # While the page is open its kernel stays, however idle: wait until the server reports
        # it idle for longer than the timeout plus two culler rounds, then it must still be
        # there, with the page connected.
        def idle_long_enough() -> bool:
            kernel = _kernels(lab).get(kernel_id)
            if kernel is None:
                return True  # culled while open: the assertion below says so
            last = datetime.fromisoformat(str(kernel["last_activity"]))
            idle = (datetime.now(UTC) - last).total_seconds()
            return idle > CULL_IDLE_TIMEOUT + 2 * CULL_INTERVAL

        _wait_until(idle_long_enough, 120, "the open page's kernel to be idle")
        kernel = _kernels(lab).get(kernel_id)
        assert kernel is not None, "the kernel of an open page was culled"
        assert int(str(kernel["connections"])) >= 1
        assert kernel["execution_state"] == "idle"

        # The page goes away without Voila's shutdown request (closing without running
        # beforeunload is what a crash or a lost network looks like to the server): the
        # kernel is left with no connection, and the culler shuts it down.
        page.close(run_before_unload=False)
        _wait_until(
            lambda: kernel_id not in _kernels(lab),
            CULL_IDLE_TIMEOUT + 60,
            "the abandoned kernel to be culled",
        )
        culled = re.compile(
            rf"Culling '\w+' kernel '[^']+' \({kernel_id}\) with 0 connections due to \d+ "
            r"seconds of inactivity"
        )
        _wait_until(lambda: _log_match(lab, culled) is not None, 10, "the culler's log line")


# --- the standalone command (issue 34) -------------------------------------------------------

#: a standalone Voila command of the dashboard, as inline code or a line of a code block
STANDALONE = re.compile(
    r"^\s*(\S[^`\n]*voila notebooks/dashboard\.ipynb)\s*$"
    r"|`([^`\n]*voila notebooks/dashboard\.ipynb)`",
    re.M,
)
#: the texts that give the command; each must show the same one, which the test below runs
#: (a notebook's markdown cells are read as its text)
COMMAND_TEXTS = (ROOT / "README.md", ROOT / "notebooks" / "dashboard.ipynb")


def _text_of(path: Path) -> str:
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text())["cells"]
        return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return path.read_text()


def _standalone_command() -> str:
    """The one standalone Voila command the texts show."""
    found = {
        (m.group(1) or m.group(2)).strip()
        for text in COMMAND_TEXTS
        for m in STANDALONE.finditer(_text_of(text))
    }
    assert len(found) == 1, f"the texts show {len(found)} standalone Voila commands: {found}"
    return found.pop()


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_standalone_voila_command_in_the_text_serves_the_app(
    tmp_path: Path, loopback_page: LoopbackPage
) -> None:
    """The exact command the README shows, run from the repository root as a person runs it
    (a shell, the user's own Jupyter config dir only saying which port and not to open a
    browser), serves the app: the dashboard, no developer notes or code, no request that
    leaves loopback (stock ``voila notebooks/dashboard.ipynb`` shows the notes and asks a
    CDN for Font Awesome)."""
    import os

    command = _standalone_command()
    assert "JUPYTER_CONFIG_PATH=jupyter-app/etc/jupyter" in command  # the app's config ...
    assert "JUPYTER_PATH=jupyter-app/share/jupyter" in command  # ... and its template
    port = _free_port()
    user_config = tmp_path / "config"
    user_config.mkdir()
    (user_config / "voila.py").write_text(
        f"c.Voila.port = {port}\nc.Voila.ip = '127.0.0.1'\nc.Voila.open_browser = False\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("JUPYTER_CONFIG_PATH", "JUPYTER_PATH")}
    env.update(
        JUPYTER_CONFIG_DIR=str(user_config),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
        SETTLEMENT_HOME=str(tmp_path / "home"),
        SETTLEMENT_NETWORK="local",
    )
    banner = re.compile(re.escape(f"http://127.0.0.1:{port}/"))
    page = loopback_page.page
    with process_until_banner(["bash", "-c", command], env, banner, what="Voila", cwd=ROOT) as app:
        proc, log = app.proc, app.log
        assert proc.poll() is None, "Voila did not start:\n" + "".join(log)
        page.set_default_timeout(T)
        page.goto(f"http://127.0.0.1:{port}/")
        expect(page.locator(".sw-dashboard .sw-selector")).to_be_visible()
        page.wait_for_load_state("networkidle")
        shown = page.locator("body").inner_text()
        source = page.content()
        for text in (*DEVELOPER_TEXT, *CODE_TEXT):
            assert text not in shown, f"{text!r} is shown by the standalone command"
            assert text not in source, f"{text!r} is in the standalone page's HTML"
        assert loopback_page.blocked == []
        # the app's template and config are the ones in use: Voila says it culls kernels
        # with the shipped settings (from the app's jupyter_server_config.py)
        shipped = _shipped_server_config().MappingKernelManager
        _wait_until(
            lambda: any(CULLER_STARTED.search(line) for line in log), 30, "the culler's log"
        )
        started = next(m for line in log if (m := CULLER_STARTED.search(line)))
        assert (int(started.group(1)), int(started.group(2))) == (
            shipped.cull_idle_timeout,
            shipped.cull_interval,
        )
