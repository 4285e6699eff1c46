"""What the browser tests share: a throwaway JupyterLab on 127.0.0.1 and a Chromium page that
can only reach loopback (the fixture is in ``conftest.py``).

:func:`start_lab` runs ``jupyter lab`` (with Voila's server extension, so
``/voila/render/<notebook>`` works too) on a free port, with its own runtime, config, settings
and workspaces directories, so nothing of the user's setup or of an earlier run leaks in (a
restored workspace would start kernels of its own). The news toast is switched off; it would
cover part of the page. :func:`cleared_copy` writes a notebook without outputs or widget state:
Lab would otherwise show the saved outputs before any cell ran, and a selector would match
without proving anything about the kernel.

The ``loopback_page`` fixture (conftest.py) launches Debian's ``/usr/bin/chromium``
(Playwright cannot download its own here) and aborts every request that is not to
127.0.0.1/localhost; the aborted URLs are kept in ``LoopbackPage.blocked``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import nbformat
from playwright.sync_api import Page

from tests.server_banner import LOOPBACK_SERVER_FLAGS, process_until_banner

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: The settlement app's Jupyter settings (kernel culling, the Voila template, cell tags), as
#: ``make lab`` and ``binder/start`` put them on Jupyter's search paths.
JUPYTER_APP = ROOT / "jupyter-app"
JUPYTER_APP_CONFIG = JUPYTER_APP / "etc" / "jupyter"
JUPYTER_APP_DATA = JUPYTER_APP / "share" / "jupyter"


def app_env() -> dict[str, str]:
    """The environment under which Jupyter loads the app's settings, as ``make lab`` and Binder
    run it; pass it to :func:`start_lab` to test the app as shipped rather than stock Voila."""
    return {"JUPYTER_CONFIG_PATH": str(JUPYTER_APP_CONFIG), "JUPYTER_PATH": str(JUPYTER_APP_DATA)}


@dataclass
class Lab:
    """A running JupyterLab: ``url`` (its origin, no trailing slash), its ``token``, its
    ``root``, and ``base`` (its ``base_url``: ``/`` unless ``--ServerApp.base_url`` says)."""

    url: str
    token: str
    root: Path
    log: list[str] = field(default_factory=list, repr=False)
    base: str = "/"

    def page_url(self, path: str) -> str:
        return f"{self.url}{self.base}{path.lstrip('/')}?token={self.token}"


def cleared_copy(source: Path, target_dir: Path) -> Path:
    """Write ``source`` into ``target_dir`` with no outputs, counts or widget state."""
    nb = nbformat.read(source, as_version=4)
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            cell.metadata.pop("execution", None)
    target = target_dir / source.name
    nbformat.write(nb, target)
    return target


@contextlib.contextmanager
def start_lab(
    tmp: Path,
    root: Path,
    env: Mapping[str, str],
    settings: Mapping[str, Mapping[str, object]] | None = None,
    *,
    extra_args: Sequence[str] = (),
) -> Iterator[Lab]:
    """Run ``jupyter lab`` serving ``root`` with ``env`` added to this process's environment;
    stop it (its whole process group: kernels included) on exit. ``settings`` maps a plugin
    id (``"@jupyterlab/notebook-extension:tracker"``) to user settings for it.
    ``extra_args`` go last on the command line, so they override any config file (a test
    shortens the shipped kernel-culling timeout that way)."""
    plugins: dict[str, Mapping[str, object]] = {
        # no "get notified about Jupyter news?" toast over the page
        "@jupyterlab/apputils-extension:notification": {
            "fetchNews": "false",
            "checkForUpdates": False,
        },
        **(settings or {}),
    }
    for plugin, values in plugins.items():
        package, name = plugin.split(":")
        folder = tmp / "user-settings" / package
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.jupyterlab-settings").write_text(json.dumps(values))
    token = secrets.token_hex(16)
    child_env = {
        **os.environ,
        "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
        "JUPYTER_CONFIG_DIR": str(tmp / "config"),
        **env,
    }
    args = [
        str(Path(sys.executable).with_name("jupyter")),
        "lab",
        *LOOPBACK_SERVER_FLAGS,
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.workspaces_dir={tmp / 'workspaces'}",
        f"--LabApp.user_settings_dir={tmp / 'user-settings'}",
        *extra_args,
    ]
    banner = re.compile(r"(http://127\.0\.0\.1:\d+)(/\S*?)?/?lab\?token=")
    with process_until_banner(args, child_env, banner, what="JupyterLab") as started:
        proc, log = started.proc, started.log
        url = started.match.group(1)
        base = (started.match.group(2) or "").rstrip("/") + "/"
        # the banner can come a moment before the port answers on a loaded machine; a server
        # that exited instead fails here with its log
        deadline = time.monotonic() + 60
        while True:
            try:
                r = httpx.get(f"{url}{base}api/status", params={"token": token}, timeout=10)
                break
            except httpx.TransportError:
                alive = proc.poll() is None
                assert alive and time.monotonic() < deadline, (
                    f"JupyterLab at {url} did not answer "
                    f"({'running' if alive else f'exited {proc.returncode}'}):\n" + "".join(log)
                )
                time.sleep(0.2)  # polling an external process's port: nothing to await on
        assert r.status_code == 200
        yield Lab(url, token, root, log, base)


class LoopbackPage:
    """The Playwright page plus the URLs it was not allowed to fetch."""

    def __init__(self, page: Page, blocked: list[str]) -> None:
        self.page = page
        self.blocked = blocked
