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
