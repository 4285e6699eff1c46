"""The settlement app's Jupyter settings in ``jupyter-app/`` (issue 17), without a browser.

``make lab`` and ``binder/start`` put ``jupyter-app/etc/jupyter`` first on
``JUPYTER_CONFIG_PATH`` and ``jupyter-app/share/jupyter`` first on ``JUPYTER_PATH``. From
there the Jupyter server reads ``jupyter_server_config.py`` (kernel culling, cell tags, no CDN
MathJax) and Voila reads ``voila.py`` (the ``settlement`` template, no code), both as the
server's extension and as the standalone ``voila`` command. These tests load the files the way
those programs do and check the effective settings, render the dashboard through the real
template with them, and check that ``make lab`` really sets the paths (``binder/start`` is
checked in test_binder.py). The browser tests in tests/ui/test_voila_app.py check the
running app.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import nbformat
import pytest
from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from nbconvert.preprocessors import TagRemovePreprocessor
from traitlets.config import Config, PyFileConfigLoader
from voila.configuration import VoilaConfiguration

ROOT = Path(__file__).resolve().parents[2]
APP_CONFIG = ROOT / "jupyter-app" / "etc" / "jupyter"
APP_DATA = ROOT / "jupyter-app" / "share" / "jupyter"
TEMPLATE = APP_DATA / "nbconvert" / "templates" / "settlement"
DASHBOARD = ROOT / "notebooks" / "dashboard.ipynb"
HIDE_TAG = "remove-cell"
DEVELOPER_TEXT = "Pick a settlement method, then act on it for real"
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def _load(name: str) -> Config:
    """Load a config file of ``jupyter-app/etc/jupyter`` as traitlets does for Jupyter."""
    return PyFileConfigLoader(name, path=str(APP_CONFIG)).load_config()


@pytest.fixture
def app_paths(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Jupyter's search paths as ``make lab`` sets them, and no user config of this machine."""
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(APP_CONFIG))
    monkeypatch.setenv("JUPYTER_PATH", str(APP_DATA))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "user-config"))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "user-data"))


# --- the server's settings ------------------------------------------------------------------


def test_the_server_culls_idle_kernels_that_no_page_holds() -> None:
    # the effective values of the kernel manager the server runs (a misspelt option would
    # leave the default, 0: no culling)
    km = AsyncMappingKernelManager(config=_load("jupyter_server_config.py"))
    assert 300 <= km.cull_idle_timeout <= 3600, "cull after minutes, not seconds or hours"
    assert 0 < km.cull_interval <= km.cull_idle_timeout / 2
    # an open Voila page or notebook keeps its kernel; a running cell is not interrupted
    assert km.cull_connected is False
    assert km.cull_busy is False


def test_the_server_drops_tagged_cells_and_points_at_no_cdn_mathjax() -> None:
    config = _load("jupyter_server_config.py")
    assert TagRemovePreprocessor(config=config).remove_cell_tags == {HIDE_TAG}
    # Voila's extension mode falls back to a CDN MathJax unless these are set (to None)
    settings = config.ServerApp.tornado_settings
    assert settings == {"mathjax_url": None, "mathjax_config": None}


def test_voila_config_selects_the_app_template_and_the_servers_culling_and_tags() -> None:
    config = _load("voila.py")
    voila = VoilaConfiguration(config=config)
    assert voila.template == "settlement"
    assert voila.strip_sources is True
    assert voila.show_tracebacks is False
    # the standalone ``voila`` command takes culling and tags from the server settings
    server = _load("jupyter_server_config.py")
    assert config.MappingKernelManager == server.MappingKernelManager
    assert config.TagRemovePreprocessor == server.TagRemovePreprocessor


def test_voila_reads_the_app_config_as_a_server_extension(app_paths: None) -> None:
    # the function Voila's server extension calls: voila.py/json from the Jupyter config
    # path and the working directory
    from voila.server_extension import load_config_file

    config = load_config_file()
    assert config is not None
    assert config.VoilaConfiguration.template == "settlement"


def test_standalone_voila_reads_the_app_config(app_paths: None) -> None:
    # a real Voila app (in a subprocess: initialize installs signal handlers) on the dashboard
    probe = (
        "import json, sys\n"
        "from voila.app import Voila\n"
        "app = Voila()\n"
        "app.initialize(['--no-browser', sys.argv[1]])\n"
        "km = app.config.MappingKernelManager\n"
        "print(json.dumps({'template': app.voila_configuration.template,\n"
        "  'template_paths': app.template_paths,\n"
        "  'cull_idle_timeout': km.cull_idle_timeout, 'cull_interval': km.cull_interval,\n"
        "  'remove_cell_tags': list(app.config.TagRemovePreprocessor.remove_cell_tags)}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(DASHBOARD)],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ.copy(),
        check=True,
    ).stdout
    seen = json.loads(out.strip().splitlines()[-1])
    server = _load("jupyter_server_config.py")
    assert seen["template"] == "settlement"
    assert seen["template_paths"][0] == str(TEMPLATE)
    assert seen["cull_idle_timeout"] == server.MappingKernelManager.cull_idle_timeout
    assert seen["cull_interval"] == server.MappingKernelManager.cull_interval
    assert seen["remove_cell_tags"] == [HIDE_TAG]


# --- the notebook's tags ----------------------------------------------------------------------


def test_the_dashboards_developer_notes_are_tagged_out_of_the_app() -> None:
    nb = nbformat.read(DASHBOARD, as_version=4)
    markdown = [c for c in nb.cells if c.cell_type == "markdown"]
    assert any(DEVELOPER_TEXT in c.source for c in markdown)
    for cell in markdown:
        assert HIDE_TAG in cell.metadata.get("tags", []), cell.source[:60]


def test_no_code_cell_of_the_dashboard_is_removed() -> None:
    # a removed code cell is not run either: the app would lose its session or its dashboard
    nb = nbformat.read(DASHBOARD, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code
    for cell in code:
        assert HIDE_TAG not in cell.metadata.get("tags", []), cell.source[:60]


# --- the template, rendered -------------------------------------------------------------------


class _Resources(HTMLParser):
    """Every URL the HTML makes a browser load by itself, and its visible text."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.text: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "link" and values.get("href"):
            self.urls.append(str(values["href"]))
        if tag in ("script", "img", "iframe") and values.get("src"):
            self.urls.append(str(values["src"]))
        if tag in ("script", "style"):
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.text.append(data)


def _render_dashboard(config: Config, template: str) -> str:
    """The page Voila sends for dashboard.ipynb with ``config`` (the server's, as in
    extension mode) and ``template``, with its saved outputs standing in for a kernel's."""
    from voila.exporter import VoilaExporter
    from voila.paths import collect_template_paths

    nb = nbformat.read(DASHBOARD, as_version=4)

    def kernel_start(nb: object) -> str:
        return "00000000-0000-0000-0000-000000000000"

    async def cell_generator(nb: nbformat.NotebookNode, kernel_id: str) -> AsyncIterator[object]:
        for cell in nb.cells:
            yield cell

    exporter = VoilaExporter(
        template_paths=collect_template_paths(["voila", "nbconvert"], template),
        template_name=template,
        config=config,
        base_url="/",
        theme="light",
        show_margins=False,
    )
    # what strip_sources=True does in Voila's NotebookRenderer
    exporter.exclude_input = True
    exporter.exclude_input_prompt = True
    exporter.exclude_output_prompt = True
    resources = {
        "base_url": "/",
        "theme": "light",
        "template": template,
        "metadata": {"name": "dashboard"},
        "page_config": {},
    }
    context = {
        "frontend": "voila",
        "main_js": "voila.js",
        "kernel_start": kernel_start,
        "cell_generator": cell_generator,
        "progressive_rendering": False,
    }

    async def render() -> str:
        parts = []
        async for html, _ in exporter.generate_from_notebook_node(
            nb, resources=resources, extra_context=context, page_config={}
        ):
            parts.append(html)
        return "".join(parts)

    return asyncio.run(render())


def _outside(urls: list[str]) -> list[str]:
    return [u for u in urls if urlsplit(u).hostname not in (None, *LOOPBACK)]


def test_the_app_template_renders_the_dashboard_from_this_server_only(app_paths: None) -> None:
    html = _render_dashboard(_load("jupyter_server_config.py"), "settlement")
    page = _Resources()
    page.feed(html)
    assert page.urls, "the page loads nothing: not a Voila page"
    assert _outside(page.urls) == []
    # Voila's own bundle (Font Awesome included) is still loaded, from this server
    assert any(re.search(r"static/voila-style\.js", u) for u in page.urls), page.urls
    shown = " ".join(page.text)
    assert DEVELOPER_TEXT not in html
    assert "open_session" not in html
    assert "Settlement dashboard" not in shown


def test_stock_voila_would_load_from_outside_and_show_the_notes(app_paths: None) -> None:
    # the same rendering with Voila's "lab" template and no tag setting: what the app fixes
    html = _render_dashboard(Config(), "lab")
    page = _Resources()
    page.feed(html)
    assert _outside(page.urls) != []
    assert DEVELOPER_TEXT in html


def test_the_app_data_path_leaves_voilas_data_directory_alone(app_paths: None) -> None:
    # Voila takes the first share/jupyter/voila on the data path as its data directory (its
    # themes); the app's data directory must not have one, or it would hide Voila's own
    from voila.utils import get_data_dir

    assert not (APP_DATA / "voila").exists()
    assert Path(get_data_dir()) != APP_DATA / "voila"


def test_the_template_extends_voilas_lab_template() -> None:
    assert json.loads((TEMPLATE / "conf.json").read_text()) == {"base_template": "lab"}
    source = (TEMPLATE / "index.html.j2").read_text()
    assert re.search(r"\{%-?\s*extends\s+'lab/index\.html\.j2'\s*-?%\}", source)
    # no host in the template itself
    assert not re.search(r"https?://", source)


# --- make lab -------------------------------------------------------------------------------


def test_make_lab_puts_the_app_settings_first_on_jupyters_paths(tmp_path: Path) -> None:
    # run the real `lab` recipe (-o setup: not its setup prerequisites) with a stand-in
    # `jupyter` that records the environment and arguments it was started with
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    record = tmp_path / "jupyter.json"
    jupyter = fake_bin / "jupyter"
    jupyter.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        f"open({str(record)!r}, 'w').write(json.dumps({{'argv': sys.argv[1:], "
        "'env': dict(os.environ)}))\n"
    )
    jupyter.chmod(0o755)
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER_", "MAKE", "SETTLEMENT_"))
    }
    env["JUPYTER_CONFIG_PATH"] = "/somewhere/else"  # a user's own entries stay, after ours
    subprocess.run(
        ["make", "--no-print-directory", "-o", "setup", "lab", f"BIN={fake_bin}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    seen = json.loads(record.read_text())
    assert seen["argv"][0] == "lab"
    assert seen["env"]["JUPYTER_CONFIG_PATH"].split(os.pathsep) == [
        str(APP_CONFIG),
        "/somewhere/else",
    ]
    assert seen["env"]["JUPYTER_PATH"].split(os.pathsep) == [str(APP_DATA)]
    assert seen["env"]["SETTLEMENT_SHARED_SANDBOX"] == "1"
