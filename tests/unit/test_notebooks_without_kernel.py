"""The committed notebooks read without a kernel (``jupyter nbconvert --to html``, as GitHub and
nbviewer show them): every widget output shows a drawing of the widget, never its repr.

The notebooks carry no widget state, so nbconvert falls back from the widget view to the next
entry of each output's bundle; our widgets put a static snapshot there (``text/html``), and a
finished progress bar leaves a one-line note. A widget without either would show as
``IntProgress(value=100, ...)`` or ``SettlementDashboard(...)``.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbconvert import HTMLExporter

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: what ipywidgets' text/plain repr of a widget looks like: ``IntProgress(value=0, ...)``
WIDGET_REPR = re.compile(
    r"\b(IntProgress|FloatProgress|HBox|VBox|Box|GridBox|HTML|Button|Output|"
    r"SettlementDashboard|SettlementSelector|ChannelStatusPanel)\("
)


def _html(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    assert "widgets" not in nb.metadata, f"{path.name} carries widget state"
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    return body


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_widget_output_has_a_static_drawing(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_VIEW in data:
                assert "text/html" in data, (
                    f"{path.name} cell {index}: a widget output without a static drawing"
                )
    rendered = _html(path)
    shown = WIDGET_REPR.findall(rendered)
    assert not shown, f"{path.name} shows widget reprs without a kernel: {shown}"


def test_the_selector_panel_and_dashboard_are_drawn_without_a_kernel() -> None:
    drawn = {path.name: _html(path) for path in NOTEBOOKS}
    every = "".join(drawn.values())
    for cls in ("sw-selector", "sw-status-panel", "sw-static-snapshot"):
        assert f"{cls}" in every, cls
    assert "sw-dashboard" in drawn["dashboard.ipynb"]
