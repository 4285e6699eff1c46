"""The static snapshot our widgets add to their display bundle: what a reader without a kernel
(nbconvert, GitHub, an untrusted notebook in Lab) sees instead of ``SettlementDashboard(...)``."""

from __future__ import annotations

from collections.abc import Iterator

import ipywidgets
import pytest
from html_probe import parse

from settlement_widgets.dashboard import SettlementDashboard
from settlement_widgets.keys import PrivateKey
from settlement_widgets.networks import SEPOLIA
from settlement_widgets.wallet import WalletClient
from settlement_widgets.widgets import ChannelStatusPanel, SettlementSelector
from settlement_widgets.widgets.snapshot import SNAPSHOT_NOTE, static_html

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(autouse=True)
def _close_widgets() -> Iterator[None]:
    yield
    ipywidgets.Widget.close_all()


def _classes(html: str) -> set[str]:
    return {c for e in parse(html).elements for c in e.attrs.get("class", "").split()}


def test_each_widget_keeps_its_live_view_and_adds_a_snapshot() -> None:
    board = SettlementDashboard(SEPOLIA, WalletClient(PrivateKey(b"\x11" * 32)), selected="v4")
    for widget, own_class in (
        (SettlementSelector(network=SEPOLIA, selected="channel"), "sw-selector"),
        (ChannelStatusPanel(network=SEPOLIA, provider="v4"), "sw-status-panel"),
        (board, "sw-dashboard"),
    ):
        bundle = widget._repr_mimebundle_()
        assert bundle is not None
        assert bundle[WIDGET_VIEW]["model_id"] == widget.model_id
        assert bundle["text/plain"].startswith(type(widget).__name__)
        snapshot = bundle["text/html"]
        assert own_class in _classes(snapshot)
        assert SNAPSHOT_NOTE in snapshot
        assert f"{type(widget).__name__}(" not in snapshot  # no object repr


def test_the_dashboard_snapshot_shows_what_is_visible_now() -> None:
    board = SettlementDashboard(SEPOLIA, WalletClient(PrivateKey(b"\x11" * 32)), selected="v4")
    shot = static_html(board)
    classes = _classes(shot)
    # the v4 card is selected: its action bar and the hook's address are shown, the channel's
    # action bar (display none) is not
    assert "sw-actions-v4" in classes and "sw-actions-channel" not in classes
    assert SEPOLIA.contracts.policy_hook in shot
    buttons = [e for e in parse(shot).elements if e.tag == "button"]
    assert [b.text for b in buttons] == ["Settle an intent"]
    assert all("disabled" in b.attrs for b in buttons)
    # the selector's card overlays (buttons without a label) are not drawn
    assert "sw-card-button" not in classes


def test_snapshot_text_stays_escaped() -> None:
    hostile = "<script>alert(1)</script>"
    button = ipywidgets.Button(description=hostile)
    bar = ipywidgets.IntProgress(value=3, max=10, description=hostile)
    shot = static_html(ipywidgets.VBox([button, bar, ipywidgets.Output()]))
    assert "<script>" not in shot and "&lt;script&gt;" in shot
    progress = [e for e in parse(shot).elements if e.tag == "progress"]
    assert [(p.attrs["value"], p.attrs["max"]) for p in progress] == [("3", "10")]


def test_a_closed_widget_has_no_bundle_to_add_to() -> None:
    panel = ChannelStatusPanel(network=SEPOLIA)
    panel.close()
    assert panel._repr_mimebundle_ is None


def test_a_snapshot_links_no_loopback_port() -> None:
    """The snapshot outlives the kernel and its private sandbox: a link to that sandbox's port
    becomes text saying where it was; links under the Jupyter server stay links."""
    from dataclasses import replace

    from settlement_widgets.links import is_loopback_url
    from tests.notebook_links import anchors

    private = replace(SEPOLIA, explorer_base="http://127.0.0.1:38493/explorer")
    served = replace(SEPOLIA, explorer_base="/base/settlement/explorer")
    dead = static_html(SettlementSelector(network=private, selected="v4"))
    assert not [href for href in anchors(dead) if is_loopback_url(href)]
    assert "was at 127.0.0.1:38493/explorer/address/" in dead
    live = static_html(SettlementSelector(network=served, selected="v4"))
    assert [h for h in anchors(live) if h.startswith("/base/settlement/explorer/address/0x")]


def _saved(outputs: list[dict[str, object]], state: dict[str, object] | None = None) -> dict:
    nb: dict[str, object] = {"cells": [{"cell_type": "code", "outputs": outputs}], "metadata": {}}
    if state is not None:
        nb["metadata"] = {
            "widgets": {"application/vnd.jupyter.widget-state+json": {"state": state}}
        }
    return nb


def test_a_saved_notebook_keeps_the_snapshot_not_a_view_without_its_model() -> None:
    """JupyterLab saves no widget state by default: a view kept in the file would reopen as
    "Error displaying widget: model not found"; the pre-save hook leaves the snapshot."""
    from settlement_widgets.widgets.snapshot import drop_orphan_views

    ours = {
        WIDGET_VIEW: {"model_id": "m1", "version_major": 2, "version_minor": 0},
        "text/html": static_html(SettlementSelector(network=SEPOLIA)),
        "text/plain": "SettlementSelector(...)",
    }
    bar = {WIDGET_VIEW: {"model_id": "m2"}, "text/html": '<div class="sw-progress-static">x</div>'}
    other = {WIDGET_VIEW: {"model_id": "m3"}, "text/plain": "IntSlider(value=0)"}
    nb = _saved([{"output_type": "display_data", "data": d} for d in (ours, bar, other)])
    assert drop_orphan_views(nb) == 2
    kept = [o["data"] for o in nb["cells"][0]["outputs"]]  # type: ignore[index]
    assert WIDGET_VIEW not in kept[0] and "text/html" in kept[0]
    assert WIDGET_VIEW not in kept[1]
    assert WIDGET_VIEW in kept[2]  # not ours: no snapshot to fall back on, left alone
    # a view whose model state the file holds can be drawn again: kept
    saved = _saved([{"output_type": "display_data", "data": dict(ours)}], {"m1": {}})
    assert drop_orphan_views(saved) == 0


def test_the_server_extension_registers_the_pre_save_hook() -> None:
    from jupyter_server.services.contents.filemanager import FileContentsManager

    from settlement_widgets.api import extension

    manager = FileContentsManager()
    nb = _saved(
        [
            {
                "output_type": "display_data",
                "data": {
                    WIDGET_VIEW: {"model_id": "gone"},
                    "text/html": static_html(ipywidgets.VBox()),
                },
            }
        ]
    )
    manager.register_pre_save_hook(extension._drop_orphan_views_on_save)
    model = {"type": "notebook", "content": nb}
    manager.run_pre_save_hooks(model=model, path="x.ipynb")
    assert WIDGET_VIEW not in nb["cells"][0]["outputs"][0]["data"]  # type: ignore[index]
